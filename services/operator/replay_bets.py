"""A replayed round's bets (`replay`): each bet's recorded settlement, corrections, annulment
and wallet movements against what bet-settlement's and the wallet's own functions
(`settlement_terms`, `handlers.ending_movement`) say they are; the manifest against the
decisions."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeVar

import services.bet_settlement.settlement_terms as terms
from services.operator.replay_calls import BetCalls, CallBook, check_bet, wanted_calls
from services.operator.replay_difference import Difference
from services.operator.replay_report import BetLine, SettlementStep
from services.operator.replay_result import Stage
from services.wallet.commands import ending_of
from services.wallet.handlers import ending_movement, reversal_movement, stake_movement
from shared.events.bet_events import (
    BetAccepted,
    BetRejected,
    BetSettled,
    RoundManifest,
    SettlementReversed,
    annul_refund_id,
    reversal_id,
    settlement_id,
)
from shared.events.table import RoundAnnulled, RoundVoided
from shared.events.wallet_events import CREDITS, WalletTransaction, tx_id
from shared.profile import AnyProfile
from shared.rounds import AnyResult

Decision = BetAccepted | BetRejected


@dataclass(frozen=True)
class Calls:
    """Seamless mode's part of `bet_lines`: the round's calls, the replay's time, the round's end."""

    book: CallBook
    now: datetime
    ended_at: datetime | None


def bet_lines(decisions: Sequence[Decision | RoundManifest],
              settlements: Sequence[BetSettled | SettlementReversed],
              wallet: Sequence[WalletTransaction], recomputed: AnyResult | None,
              profile: AnyProfile | None, voided: RoundVoided | None, player_id: str | None,
              diffs: list[Difference], annulled: RoundAnnulled | None = None,
              stages: Sequence[Stage] = (), calls: Calls | None = None) -> list[BetLine]:
    """Each bet of the round (the complaining player's alone with `player_id`): its recorded
    settlement against the rule engine's, each correction's reversal and settlement again,
    an annulment's reversal and refund, and the wallet movements they call for, in that
    order for each bet; a settlement record of the bet none of them calls for is named."""
    pools = _records_by_bet(settlements)
    txs: dict[str, dict[str, WalletTransaction]] = {}
    for tx in wallet:
        txs.setdefault(tx.player_id, {})[tx.tx_id] = tx
    lines = []
    for d in _bet_decisions(decisions, player_id):
        pool = pools.pop((d.player_id, d.bet_id), {})
        recorded = _take(pool, settlement_id(d.bet_id), BetSettled)
        decision, expected_outcome, expected_returned = _expected_settlement(
            d, recorded, recomputed, profile, voided, diffs)
        history = [_step("settled", settlement_id(d.bet_id), 0, recorded,
                         expected_outcome, expected_returned)] if recorded or expected_outcome \
            else []
        changes, (standing_id, standing, standing_returned) = _corrected(
            d, recorded, (expected_outcome, expected_returned), stages, profile, pool, history,
            diffs)
        reversal = _take(pool, reversal_id(standing_id), SettlementReversed)
        refund = _take(pool, terms.annul_refund(d).settlement_id, BetSettled)
        annul = _annulment_of(d, standing_id, standing, standing_returned, reversal, refund,
                              annulled is not None and isinstance(d, BetAccepted), diffs)
        own = {i for n in range(len(stages) + 1)
               for i in (settlement_id(d.bet_id, n), reversal_id(settlement_id(d.bet_id, n)))}
        moves, net, expected_net = _check_wallet(
            d, (expected_outcome, expected_returned), txs.get(d.player_id, {}), diffs, changes,
            annul, own)
        diffs += [Difference(where=f"bets.settled {record_id}",
                             expected="no such record for the bet",
                             recorded=f"{record.type} (cause {record.cause})")
                  for record_id, record in pool.items()]
        operator_calls = []
        if calls is not None and calls.book.seamless:
            wanted = wanted_calls(bet_calls(
                d, expected_returned, changes, voided is not None,
                annulled if annul is not None else None, calls.ended_at or d.decided_at))
            operator_calls = check_bet(d.player_id, d.bet_id, d.currency, wanted, calls.book,
                                       calls.now, diffs)
        lines.append(BetLine(
            bet_id=d.bet_id, player_id=d.player_id, bet=d.bet, position=d.position,
            stake=d.stake, decision=decision,
            outcome=recorded.outcome if recorded else None,
            returned=recorded.returned if recorded else None,
            expected_outcome=expected_outcome, expected_returned=expected_returned,
            wallet=moves, reversed=reversal.amount if reversal else None,
            expected_reversed=annul[0] if annul else None,
            refund=refund.returned if refund else None,
            expected_refund=annul[1] if annul else None,
            history=history, net=net, expected_net=expected_net,
            operator_calls=operator_calls))
    return lines


BetKey = tuple[str, str]  # (player, bet id)


Record = BetSettled | SettlementReversed


R = TypeVar("R", BetSettled, SettlementReversed)


def _records_by_bet(settlements: Sequence[Record]) -> dict[BetKey, dict[str, Record]]:
    """Each bet's settlement records by their own id (a settlement's, a reversal's), the bets
    by (player, bet id) as the wallet keys them: two players may use the same bet id (the
    second is rejected `duplicate_bet_id` and refunded). A record published again is one."""
    pools: dict[BetKey, dict[str, Record]] = {}
    for s in settlements:
        own = s.reversal_id if isinstance(s, SettlementReversed) else s.settlement_id
        pools.setdefault((s.player_id, s.bet_id), {}).setdefault(own, s)
    return pools


def _take(pool: dict[str, Record], record_id: str, kind: type[R], cause: str | None = None
          ) -> R | None:
    """The bet's record `record_id` of `kind` (and `cause`, given one), taken out of its pool:
    what is left once every check took its own is a record nothing called for."""
    record = pool.get(record_id)
    if not isinstance(record, kind) or (cause is not None and record.cause != cause):
        return None
    del pool[record_id]
    return record


def _step(what: str, record_id: str, correction: int, record: Record | None,
          expected_outcome: str | None, expected_amount: int | None) -> SettlementStep:
    outcome: str | None = None
    amount: int | None = None
    if isinstance(record, SettlementReversed):
        outcome, amount = record.original_outcome, record.amount
    elif record is not None:
        outcome, amount = record.outcome, record.returned
    return SettlementStep(what=what, record_id=record_id, correction=correction,
                          cause=record.cause if record else None, outcome=outcome,
                          amount=amount, expected_outcome=expected_outcome,
                          expected_amount=expected_amount)


@dataclass(frozen=True)
class Change:
    """A correction that changes a bet: the standing settlement reversed (what it returned
    taken back), then the bet settled again."""

    reversal_id: str
    taken_back: int
    settlement_id: str
    returned: int
    at: datetime  # the correction's time: its calls to the operator's wallet came due then


def _corrected(d: Decision, recorded: BetSettled | None,
               expected: tuple[str | None, int | None], stages: Sequence[Stage],
               profile: AnyProfile | None, pool: dict[str, Record],
               history: list[SettlementStep], diffs: list[Difference]
               ) -> tuple[list[Change], tuple[str, BetSettled | None, int | None]]:
    """Each correction's records for the bet, against the rule engine's settlement of the
    corrected cards: where it changes the settlement standing (outcome or amount), a reversal
    naming that settlement and taking back exactly what it returned, caused by the corrected
    result, then a settlement again (`settle:<bet>:c<n>`, the same cause) of the new amount;
    where it does not, no record. Returns the changes and the settlement standing at the end
    (its id, its record, what the rule engine says it returns)."""
    standing_id, standing, (outcome, returned) = settlement_id(d.bet_id), recorded, expected
    changes: list[Change] = []
    if not isinstance(d, BetAccepted) or outcome is None or returned is None or profile is None:
        return changes, (standing_id, standing, returned)
    for stage in stages:
        if stage.recomputed is None:
            continue
        n = stage.event.correction
        want_outcome, want_returned = want = terms.by_rules(d, stage.recomputed, profile)
        back = terms.take_back(standing_id,
                               standing.returned if standing is not None else returned)
        rev_id, again_id = back.reversal_id, terms.settled_again_id(d.bet_id, n)
        reversal = _take(pool, rev_id, SettlementReversed, cause=stage.result_id)
        again = _take(pool, again_id, BetSettled)
        if not terms.changed_by_correction((outcome, returned), want):
            diffs += [Difference(where=f"bets.settled {record_id}",
                                 expected=f"nothing: correction {n} does not change the bet "
                                          f"({outcome} {returned} either way)",
                                 recorded=f"{record.type} (cause {record.cause})")
                      for record_id, record in ((rev_id, reversal), (again_id, again)) if record]
            continue
        _check_reversal(back, standing.outcome if standing else outcome, stage.result_id,
                        reversal, diffs)
        history.append(_step("reversed", rev_id, n, reversal, outcome, back.amount))
        expected_again = f"{want_outcome} {want_returned} (cause {stage.result_id})"
        if again is None:
            diffs.append(Difference(where=f"bets.settled {again_id}", expected=expected_again,
                                    recorded="no settlement"))
        elif (again.outcome, again.returned, again.cause) != (want_outcome, want_returned,
                                                              stage.result_id):
            diffs.append(Difference(where=f"bets.settled {again_id}", expected=expected_again,
                                    recorded=f"{again.outcome} {again.returned} "
                                             f"(cause {again.cause})"))
        history.append(_step("settled", again_id, n, again, want_outcome, want_returned))
        changes.append(Change(rev_id, back.amount, again_id, want_returned,
                               stage.event.occurred_at))
        standing_id, standing, outcome, returned = again_id, again, want_outcome, want_returned
    return changes, (standing_id, standing, returned)


def _check_reversal(back: terms.TakeBack, outcome: str, cause: str,
                    reversal: SettlementReversed | None, diffs: list[Difference]) -> None:
    """A correction's reversal takes back exactly the settlement it names, the one standing
    (`back`: bet-settlement's `take_back` of it)."""
    expected = (f"{back.settlement_id} ({outcome}) reversed: {back.amount} taken back "
                f"(cause {cause})")
    if reversal is None:
        diffs.append(Difference(where=f"bets.settled {back.reversal_id}", expected=expected,
                                recorded="no reversal"))
    elif (reversal.settlement_id, reversal.original_outcome, reversal.amount) != (
            back.settlement_id, outcome, back.amount):
        diffs.append(Difference(
            where=f"bets.settled {back.reversal_id}", expected=expected,
            recorded=f"{reversal.settlement_id} ({reversal.original_outcome}) reversed: "
                     f"{reversal.amount} taken back (cause {reversal.cause})"))


def _bet_decisions(decisions: Sequence[Decision | RoundManifest], player_id: str | None
                   ) -> list[Decision]:
    """The round's bet decisions (the player's alone with `player_id`), each bet once: a
    decision published again after a crash is the same bet."""
    listed: set[BetKey] = set()
    kept: list[Decision] = []
    for d in decisions:
        if isinstance(d, RoundManifest) or (player_id and d.player_id != player_id):
            continue
        if (d.player_id, d.bet_id) not in listed:
            listed.add((d.player_id, d.bet_id))
            kept.append(d)
    return kept


def _expected_settlement(d: Decision, recorded: BetSettled | None, recomputed: AnyResult | None,
                         profile: AnyProfile | None, voided: RoundVoided | None,
                         diffs: list[Difference]) -> tuple[str, str | None, int | None]:
    """(the decision, the outcome and return bet-settlement's own terms give the bet),
    checked against its recorded settlement: a rejected bet is never settled; an accepted one
    is refunded when the round is voided (`void_refund`), and otherwise settled by the rule
    engine under the profile the round opened with (`by_rules`)."""
    if isinstance(d, BetRejected):
        if recorded is not None:
            diffs.append(Difference(where=f"bets.settled {recorded.settlement_id}",
                                    expected="no settlement for a rejected bet",
                                    recorded=f"{recorded.outcome} {recorded.returned}"))
        return f"rejected ({d.reason_code})", None, None
    if voided:
        expected_outcome, expected_returned = terms.void_refund(d)
    elif recomputed is not None and profile is not None:
        expected_outcome, expected_returned = terms.by_rules(d, recomputed, profile)
    else:
        return "accepted", None, None
    expected = f"{expected_outcome} {expected_returned}"
    if recorded is None:
        diffs.append(Difference(where=f"bets.settled {settlement_id(d.bet_id)}",
                                expected=expected, recorded="no settlement"))
    elif (recorded.outcome, recorded.returned) != (expected_outcome, expected_returned):
        diffs.append(Difference(where=f"bets.settled {recorded.settlement_id}",
                                expected=expected,
                                recorded=f"{recorded.outcome} {recorded.returned}"))
    return "accepted", expected_outcome, expected_returned


def _annulment_of(decision: Decision, standing_id: str, recorded: BetSettled | None,
                  expected_returned: int | None, reversal: SettlementReversed | None,
                  refund: BetSettled | None, annulled: bool, diffs: list[Difference]
                  ) -> tuple[int, int, str] | None:
    """For a bet of an annulled round, (what the reversal must take back, the refund, the
    reversal's id), as bet-settlement's `take_back` and `annul_refund` give them: the
    settlement standing (`standing_id`: the original, or a correction's settlement again),
    its return taken back whole, then the stake. Elsewhere a reversal or a refund is itself
    the difference."""
    wanted_refund = terms.annul_refund(decision)
    reversal_where = f"bets.settled {reversal_id(standing_id)}"
    refund_where = f"bets.settled {wanted_refund.settlement_id}"
    if not annulled:
        for record, where in ((reversal, reversal_where), (refund, refund_where)):
            if record is not None:
                diffs.append(Difference(where=where, expected="nothing: the round was not "
                                        "annulled (or its annulment was not read)",
                                        recorded=record.type))
        return None
    back = terms.take_back(standing_id,
                     recorded.returned if recorded is not None else expected_returned or 0)
    expected = f"{back.settlement_id} reversed: {back.amount} taken back"
    if reversal is None:
        diffs.append(Difference(where=reversal_where, expected=expected,
                                recorded="no reversal"))
    elif (reversal.settlement_id, reversal.amount) != (back.settlement_id, back.amount):
        diffs.append(Difference(where=reversal_where, expected=expected,
                                recorded=f"{reversal.settlement_id} reversed: {reversal.amount} "
                                         "taken back"))
    want = f"{wanted_refund.outcome} {wanted_refund.returned}"
    if refund is None:
        diffs.append(Difference(where=refund_where, expected=want, recorded="no refund"))
    elif (refund.outcome, refund.returned) != (wanted_refund.outcome, wanted_refund.returned):
        diffs.append(Difference(where=refund_where, expected=want,
                                recorded=f"{refund.outcome} {refund.returned}"))
    return back.amount, wanted_refund.returned, back.reversal_id


def bet_calls(d: Decision, expected_returned: int | None, changes: Sequence[Change],
              voided: bool, annulled: RoundAnnulled | None, ended_at: datetime) -> BetCalls:
    """What the bet's records say the operator's wallet was owed: a rejected or voided bet's
    stake back; a settled bet's credit, then for each correction that changes it the
    rollback of the standing credit and the credit again, then (`annulled`: the round was
    annulled after the bet was settled) the rollback of the standing credit and of the
    debit."""
    if isinstance(d, BetRejected):
        return BetCalls(d.bet_id, d.stake, refund_at=d.decided_at)
    if voided:
        return BetCalls(d.bet_id, d.stake, refund_at=ended_at)
    if expected_returned is None:
        return BetCalls(d.bet_id, d.stake)
    steps: list[tuple[Literal["credit", "reverse"], str, int, datetime]] = [
        ("credit", settlement_id(d.bet_id), expected_returned, ended_at)]
    standing = settlement_id(d.bet_id)
    for change in changes:
        steps += [("reverse", standing, 0, change.at), ("credit", change.settlement_id,
                                                          change.returned, change.at)]
        standing = change.settlement_id
    if annulled is None:
        return BetCalls(d.bet_id, d.stake, tuple(steps))
    steps.append(("reverse", standing, 0, annulled.occurred_at))
    return BetCalls(d.bet_id, d.stake, tuple(steps), refund_at=annulled.occurred_at)


def _signed(kind: str, amount: int) -> int:
    return amount if kind in CREDITS else -amount


def _check_wallet(decision: Decision, expected: tuple[str | None, int | None],
                  txs: dict[str, WalletTransaction], diffs: list[Difference],
                  changes: Sequence[Change] = (), annul: tuple[int, int, str] | None = None,
                  own: frozenset[str] | set[str] = frozenset()
                  ) -> tuple[list[str], int, int]:
    """The stake debit, and the refund or credit the decision calls for, each exactly once;
    for each correction that changes the bet the reversal's debit and the settlement's
    credit again; for an annulled round also the reversal's debit and the refund that follows
    it. A payout or payout reversal of one of the bet's settlements (`own`: their ids) that
    none of them calls for is named. `txs`: the decision's player's transactions by tx id.
    Returns the movements, and the bet's net as moved and as called for."""
    moves, net, expected_net = [], 0, 0
    wanted = _wanted_moves(decision, expected, txs, changes, annul)
    for wanted_id, amount in wanted:
        expected_net += _signed(wanted_id.split(":", 1)[0], amount)
        tx = txs.get(wanted_id)
        if tx is None:
            diffs.append(Difference(where=f"wallet.transactions {wanted_id}",
                                    expected=f"{amount} moved", recorded="no transaction"))
            continue
        moves.append(f"{tx.kind} {tx.amount} -> balance {tx.balance_after} ({tx.tx_id})")
        net += _signed(tx.kind, tx.amount)
        if tx.amount != amount:
            diffs.append(Difference(where=f"wallet.transactions {wanted_id}",
                                    expected=str(amount), recorded=str(tx.amount)))
    called = dict(wanted)
    diffs += [Difference(where=f"wallet.transactions {tx.tx_id}",
                         expected="no such movement for the bet",
                         recorded=f"{tx.kind} {tx.amount}")
              for tx in txs.values() if tx.kind in ("payout", "payout_reversal")
              and tx.cause_id in own and tx.tx_id not in called]
    return moves, net, expected_net


def _wanted_moves(decision: Decision, expected: tuple[str | None, int | None],
                  txs: dict[str, WalletTransaction], changes: Sequence[Change],
                  annul: tuple[int, int, str] | None) -> list[tuple[str, int]]:
    """(tx id, amount) of each wallet movement the bet calls for, each keyed as the wallet's
    own `ending_movement` and `reversal_movement` key it; a credit an older wallet keyed
    otherwise (`OLDER_KEYS`) is found under that key when today's is not there."""
    bet_id = decision.bet_id
    wanted = [(tx_id(*stake_movement(bet_id)), decision.stake)]
    expected_outcome, expected_returned = expected
    if isinstance(decision, BetRejected):
        wanted.append((tx_id(*ending_movement("rejected", bet_id, None)), decision.stake))
    elif expected_returned and expected_outcome is not None:
        today = tx_id(*ending_movement(ending_of(expected_outcome), bet_id,
                                       settlement_id(bet_id)))
        wanted.append((_keyed(txs, today, _older_settlement_keys(bet_id)), expected_returned))
    for change in changes:  # a lost bet returned nothing: nothing taken back, nothing paid
        if change.taken_back:
            wanted.append((tx_id(*reversal_movement(change.reversal_id)), change.taken_back))
        if change.returned:
            wanted.append((tx_id(*ending_movement("settled", bet_id, change.settlement_id)),
                           change.returned))
    if annul is not None:
        taken_back, refund, reversed_id = annul
        if taken_back:
            wanted.append((tx_id(*reversal_movement(reversed_id)), taken_back))
        refunded = terms.annul_refund(decision)
        today = tx_id(*ending_movement(ending_of(refunded.outcome), bet_id,
                                       refunded.settlement_id))
        wanted.append((_keyed(txs, today, _older_refund_keys(bet_id), taken=dict(wanted)),
                       refund))
    return wanted


def _older_settlement_keys(bet_id: str) -> tuple[str, ...]:
    """Where wallets before today's `ending_movement` may have put a settlement's credit."""
    return tx_id("payout", settlement_id(bet_id)), tx_id("bet_refund", bet_id)


def _older_refund_keys(bet_id: str) -> tuple[str, ...]:
    """Where wallets before today's `ending_movement` may have put an annulment's refund:
    under the refund's own settlement id."""
    return tx_id("bet_refund", annul_refund_id(bet_id)), tx_id("payout", annul_refund_id(bet_id))


def _keyed(txs: dict[str, WalletTransaction], today: str, older: Sequence[str],
           taken: Collection[str] = ()) -> str:
    """The key the credit stands under in `txs`: today's, else an older one (none `taken`
    by another movement of the bet); missing, today's is the one reported."""
    return next((key for key in (today, *older) if key in txs and key not in taken), today)
