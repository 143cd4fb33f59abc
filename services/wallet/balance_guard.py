"""The last line of defence of every balance, checked before an account change is stored."""

from __future__ import annotations

import logging

from services.wallet import handlers
from services.wallet.ledger import UNCOVERED_DEBITS

log = logging.getLogger("croupier.wallet")


def guarded(outcome: handlers.CommandResult) -> handlers.CommandResult:
    """An account change that would leave a negative balance is never stored (the ledger
    rules make it impossible; if it happens, it is a breach). The one exception: a payout
    reversal (a management void) the balance could not cover, and credits after it while
    the balance is still below zero."""
    change = outcome.change
    if change is None or change.account.balance >= 0:
        return outcome
    if change.tx is not None and (change.tx.kind in UNCOVERED_DEBITS
                                  or change.tx.signed_amount > 0):
        return outcome
    if change.tx is None:  # no movement: the balance is what an earlier entry left
        return outcome
    log.error("MONEY: a command would leave %r at balance %d; nothing stored",
              change.account.player_id, change.account.balance)
    return handlers.CommandResult(handlers.Answer.error(500, "invariant_breach",
                                                  "the movement would make a balance negative"),
                            breach="negative_balance")
