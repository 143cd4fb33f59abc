"""Builds one table's shoes as dealer-event records them (hash-chained, signed
`table.events`), round by round from the cards, for the roads' tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.cards import parse_cards
from shared.events.canonical import GENESIS_HASH
from shared.events.table import (
    RoundCompleted,
    RoundOpened,
    ShoeStarted,
    TableEventBase,
    seal,
)
from tests.event_keys import events_key

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
# four-card rounds, both hands standing on a natural
BANKER = "2S,9C,3H,TD"  # Player 5, Banker 9
PLAYER = "9S,2C,TH,3D"  # Player 9, Banker 5
TIE = "9S,9C,TH,TD"  # 9 and 9
PAIRS = "8S,9C,8H,9D"  # Player 8 8 (6), Banker 9 9 (8): Banker, both pairs


class Table:
    """One table's hash-chained, signed events, as dealer-event writes them."""

    def __init__(self, table_id: str = "T1", profile: str = "sbo-baccarat",
                 t0: datetime = T0, spacing: timedelta = timedelta(seconds=1)) -> None:
        self.table_id, self.profile = table_id, profile
        self.t0, self.spacing = t0, spacing  # the first event's time, and the step after it
        self.events: list[TableEventBase] = []
        self.rounds = 0

    def add(self, kind, **fields) -> TableEventBase:
        prev = self.events[-1].hash if self.events else GENESIS_HASH
        event = seal(kind, table_id=self.table_id, seq=len(self.events) + 1, prev_hash=prev,
                     occurred_at=self.t0 + self.spacing * len(self.events), key=events_key(),
                     **fields)
        self.events.append(event)
        return event

    def shoe(self, shoe_id: str) -> None:
        self.add(ShoeStarted, shoe_id=shoe_id, profile=self.profile, decks=8)
        self.shoe_id, self.rounds = shoe_id, 0

    def open(self) -> str:
        self.rounds += 1
        round_id = f"{self.shoe_id}-r{self.rounds}"
        self.add(RoundOpened, shoe_id=self.shoe_id, round_id=round_id, round_number=self.rounds,
                 dealer="Ana", profile=self.profile, betting_closes_at=T0)
        return round_id

    def play(self, cards: str) -> str:
        round_id = self.open()
        self.add(RoundCompleted, round_id=round_id, cards=tuple(parse_cards(cards)))
        return round_id


def wallet_view(events):
    """The wallet's view of a table after its events (each authenticated, none refused)."""
    from services.wallet.rounds_view import fold_verified

    view = None
    for event in events:
        view, refused = fold_verified(view, event, events_key())
        assert refused is None
    return view


def played(*hands: str, shoe_id: str = "S1") -> Table:
    """A table (T1) that started shoe `shoe_id` and dealt `hands`, one round each."""
    table = Table()
    table.shoe(shoe_id)
    for cards in hands:
        table.play(cards)
    return table
