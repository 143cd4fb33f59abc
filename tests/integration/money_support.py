"""Helpers for the money live tests: a scripted table writing real, hash-chained
`table.events` and `round.results` records, and a reader of the money topics."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from kafka import KafkaProducer

from services.infra.log_reader import read_to_end
from shared.events.canonical import GENESIS_HASH
from shared.events.results import RoundResultPublished, result_id
from shared.events.table import (
    BettingClosed,
    RoundCompleted,
    RoundOpened,
    RoundVoided,
    ShoeStarted,
    seal,
)
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.simulate import deal_rounds


@dataclass
class ScriptedTable:
    producer: KafkaProducer
    table_id: str
    profile_name: str
    seed: int = 7
    seq: int = 0
    prev_hash: str = GENESIS_HASH
    rounds_opened: int = 0
    cards: dict[str, list] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.profile = load_profile(self.profile_name)
        self._deals = deal_rounds(self.profile, random.Random(self.seed))
        self.shoe_id = f"{self.table_id}-shoe1"
        self.emit(ShoeStarted, shoe_id=self.shoe_id, profile=self.profile_name,
                  decks=self.profile.decks)

    def emit(self, event_type, **fields):
        self.seq += 1
        event = seal(event_type, table_id=self.table_id, seq=self.seq, prev_hash=self.prev_hash,
                     occurred_at=datetime.now(UTC), **fields)
        self.prev_hash = event.hash
        self.producer.send("table.events", key=self.table_id.encode(),
                           value=event.model_dump_json().encode())
        self.producer.flush()
        return event

    def open(self, round_id: str, window_s: float = 120) -> None:
        self.rounds_opened += 1
        self.emit(RoundOpened, shoe_id=self.shoe_id, round_id=round_id,
                  round_number=self.rounds_opened, dealer="Dana", profile=self.profile_name,
                  betting_closes_at=datetime.now(UTC) + timedelta(seconds=window_s))

    def close(self, round_id: str) -> None:
        self.emit(BettingClosed, round_id=round_id, reason="dealer")

    def complete(self, round_id: str) -> RoundResultPublished:
        """RoundCompleted on table.events and the evaluated result on round.results."""
        cards = next(self._deals)
        done = self.emit(RoundCompleted, round_id=round_id, cards=tuple(cards))
        published = RoundResultPublished(
            result_id=result_id(self.table_id, round_id), table_id=self.table_id,
            round_id=round_id, shoe_id=self.shoe_id, profile=self.profile_name, dealer="Dana",
            cards=tuple(cards), completed_seq=done.seq, completed_hash=done.hash,
            occurred_at=done.occurred_at, result=evaluate_round(self.profile, cards))
        self.publish_result(published)
        return published

    def publish_result(self, published: RoundResultPublished) -> None:
        self.producer.send("round.results", key=self.table_id.encode(),
                           value=published.model_dump_json().encode())
        self.producer.flush()

    def void(self, round_id: str) -> None:
        self.emit(RoundVoided, round_id=round_id, reason_code="misdeal",
                  reason_text="two cards dealt at once", supervisor="Sam")


def read_topic(bootstrap: str, name: str) -> list[dict]:
    """Every record of a topic, from the beginning up to its current end, as dicts."""
    return [json.loads(r.value) for r in read_to_end(bootstrap, name)]
