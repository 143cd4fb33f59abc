"""bet-settlement after a crash: a round's header and its bets' entries share one changelog
partition (header written last), so the log keeps a prefix of a batch's writes; an entry
whose ordinal is past its header's count was never recorded, and its redelivered bet is
recorded (once)."""

from datetime import UTC, datetime

import pytest

from croupier.services.bet_settlement import app as settlement
from croupier.services.bet_settlement import round_book
from croupier.shared.events.bet_events import BetPlaced

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def placed(bet_id: str) -> BetPlaced:
    return BetPlaced(bet_id=bet_id, player_id="p1", table_id="T1", round_id="R1",
                     bet="player", stake=100, currency="IDR", debit_tx_id=f"stake_debit:{bet_id}",
                     placed_at=NOW)


@pytest.fixture
def store(monkeypatch) -> dict:
    data: dict = {}
    monkeypatch.setattr(settlement, "rounds", data, raising=False)  # no app built
    return data


def test_an_entry_past_its_header_was_never_recorded_and_is_recorded_again(store):
    first = round_book.place(None, settlement.StoredBets("T1", "R1", None), placed("b1"), NOW)
    header = first.header
    for bet_id, entry in first.entries.items():  # the entry reached the log ...
        store[round_book.bet_key("T1", "R1", bet_id)] = entry.model_dump(mode="json")
    lost_header = None  # ... its header's update did not
    bets = settlement.StoredBets("T1", "R1", lost_header)
    assert bets.entry("b1") is None
    again = round_book.place(lost_header, bets, placed("b1"), NOW)
    assert again.header.received == 1 and again.order == {1: "b1"}
    assert settlement.StoredBets("T1", "R1", header).entry("b1") is not None
