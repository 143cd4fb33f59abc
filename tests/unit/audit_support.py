"""A correct platform's log written record by record into the audit's books, so a test can
break one record (the audit and id tests)."""

from __future__ import annotations

from datetime import UTC, datetime

from services.operator.audit import Books
from shared.cards import parse_cards
from shared.events.bet_events import (
    BetPlaced,
    BetRejected,
    BetSettled,
    settlement_id,
)
from shared.events.results import RoundResultPublished, result_id
from shared.events.wallet_events import CREDITS, WalletTransaction, tx_id
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.settlement import Bet, settle

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PROFILE = "sbo-baccarat"
CARDS = parse_cards("AS,3H,2D,3C,9S")  # banker wins with 6 on two cards


class Ledger:
    """Writes the records a correct platform would write, so tests can then break one."""

    def __init__(self) -> None:
        self.books = Books()
        self.balance: dict[str, int] = {}
        self.result = evaluate_round(load_profile(PROFILE), CARDS)
        self.books.add(RoundResultPublished(
            result_id=result_id("T1", "R1"), table_id="T1", round_id="R1", shoe_id="S1",
            profile=PROFILE, dealer="Ana", cards=CARDS, completed_seq=9, completed_hash="0" * 64,
            occurred_at=NOW, result=self.result))

    def move(self, player: str, kind: str, amount: int, cause: str) -> None:
        sign = 1 if kind in CREDITS else -1
        self.balance[player] = self.balance.get(player, 0) + sign * amount
        self.books.add(WalletTransaction(
            tx_id=tx_id(kind, cause), player_id=player, kind=kind, amount=amount,
            balance_after=self.balance[player], currency="IDR", cause_id=cause, occurred_at=NOW))

    def bet(self, player: str, bet_id: str, bet: str, stake: int) -> BetPlaced:
        self.move(player, "stake_debit", stake, bet_id)
        placed = BetPlaced(bet_id=bet_id, player_id=player, table_id="T1", round_id="R1",
                           bet=bet, stake=stake, currency="IDR",
                           debit_tx_id=tx_id("stake_debit", bet_id), placed_at=NOW)
        self.books.add(placed)
        return placed

    def settle(self, placed: BetPlaced) -> BetSettled:
        outcome = settle(Bet(bet=placed.bet, stake=placed.stake), self.result,
                         load_profile(PROFILE))
        record = BetSettled(**placed.model_dump(exclude={"type", "debit_tx_id", "placed_at"}),
                            settlement_id=settlement_id(placed.bet_id), outcome=outcome.outcome,
                            returned=outcome.returned, cause=result_id("T1", "R1"),
                            settled_at=NOW)
        self.books.add(record)
        if record.returned:
            self.move(placed.player_id, "payout", record.returned, record.settlement_id)
        return record

    def reject(self, placed: BetPlaced) -> None:
        self.books.add(BetRejected(**placed.model_dump(exclude={"type", "debit_tx_id", "placed_at"}),
                                   reason_code="round_closed", message="closed", decided_at=NOW))
        self.move(placed.player_id, "bet_refund", placed.stake, placed.bet_id)
