"""Issue 11 finding 3 through the real services: a forged `card_dealt` (valid hash chain, no
valid HMAC) written straight onto `table.events` before the real card used to be evaluated
and paid the banker bettor against the real cards. Now game-evaluation and bet-settlement
dead-letter it and flag the table, nothing is settled on it, the wallet takes no bet on the
flagged table, replay reports the forgery, and once a supervisor closes and reopens the
table its rounds settle again (docs/decisions/table-event-auth.md)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest

from services.infra.processes import ServiceProcess
from services.operator.replay_service import ReplayRequest, run_replay
from shared.cards import parse_card
from shared.events.dead_letters import DeadLetter
from shared.events.table import CardDealt, RoundCompleted, TableClosed, TableReopened, seal
from shared.topics import (
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.conftest import free_port
from tests.integration.money_support import (
    OPERATOR,
    Platform,
    ScriptedTable,
    money_platform,
    read_topic,
    wait_for,
)

pytestmark = pytest.mark.kafka
TAG = uuid.uuid4().hex[:6]  # not money_support.RUN: these bets stay open on purpose
# sbo-baccarat, cards in shoe order P B P B: player 8H KC (natural 8), banker KD + 2S (2):
# the player bettor wins on the real cards; the forged 9D gives the banker a natural 9
FIRST_CARDS = ["8H", "KD", "KC"]
REAL, FORGED = "2S", "9D"


@pytest.fixture(scope="module")
def platform(platform_kafka, tmp_path_factory):
    home = tmp_path_factory.mktemp("forged-home")
    with money_platform(platform_kafka, home) as p:
        evaluation = ServiceProcess("game-evaluation", free_port(), home / "game-evaluation.log",
                                    p.wallet.env)
        evaluation.start()
        try:
            evaluation.wait_ready(90)
            yield p
        finally:
            evaluation.stop()


def _player(platform: Platform, name: str) -> str:
    player_id = f"{name}-{TAG}"
    assert platform.http.post("/accounts", json={"player_id": player_id, "currency": "IDR"},
                              headers=OPERATOR).status_code == 201
    r = platform.http.post(f"/accounts/{player_id}/deposits", headers=OPERATOR,
                           json={"request_id": f"dep-{player_id}", "amount": 100_000})
    assert r.status_code == 201, r.text
    platform.tokens[player_id] = platform.http.post(f"/players/{player_id}/token",
                                                    headers=OPERATOR).json()["token"]
    return player_id


def _deal(table: ScriptedTable, round_id: str, cards: list[str], start: int = 0) -> None:
    for i, card in enumerate(cards, start):
        table.emit(CardDealt, round_id=round_id, card=parse_card(card), shoe_position=i,
                   round_position=i)


def _round_records(bootstrap: str, topic: str, round_id: str) -> list[dict]:
    return [r for r in read_topic(bootstrap, topic) if r.get("round_id") == round_id]


def test_a_forged_card_is_dead_lettered_flags_the_table_and_is_never_settled_on(
        platform, platform_kafka):
    table = ScriptedTable(platform.producer, f"FORGE-{TAG}", "sbo-baccarat")
    r1 = f"{table.table_id}-r1"
    table.open(r1)
    platform.wait_round_open(table, r1)
    banker, punter = _player(platform, "banker"), _player(platform, "punter")
    for who, bet in ((banker, "banker"), (punter, "player")):
        r = platform.bet(who, table, r1, bet, 10_000)
        assert r.status_code == 201, r.text
    table.close(r1)
    _deal(table, r1, FIRST_CARDS)

    # the attacker read the head hash and appends a valid-looking card, without the key
    forged = seal(CardDealt, table_id=table.table_id, seq=table.seq + 1,
                  prev_hash=table.prev_hash, occurred_at=datetime.now(UTC), round_id=r1,
                  card=parse_card(FORGED), shoe_position=3, round_position=3)
    sent = platform.producer.send(TABLE_EVENTS_TOPIC, key=table.table_id.encode(),
                                  value=forged.model_dump_json().encode()).get(timeout=30)
    _deal(table, r1, [REAL], start=3)  # the real card, at the same seq
    table.emit(RoundCompleted, round_id=r1,
               cards=tuple(parse_card(c) for c in [*FIRST_CARDS, REAL]))

    def letters() -> set[str]:
        found = set()
        for raw in read_topic(platform_kafka, DEAD_LETTERS_TOPIC):
            letter = DeadLetter.model_validate(raw)
            if (letter.topic, letter.partition, letter.offset) == \
                    (TABLE_EVENTS_TOPIC, sent.partition, sent.offset):
                assert "unsigned" in letter.error, letter.error
                found.add(letter.service)
        return found

    wait_for(lambda: letters() == {"game-evaluation", "bet-settlement"},
             "the forged card dead-lettered by game-evaluation and bet-settlement", 90)
    time.sleep(8)  # the real card and the completion come after it: give them time
    assert _round_records(platform_kafka, ROUND_RESULTS_TOPIC, r1) == [], \
        "a result was published for a flagged table"
    assert _round_records(platform_kafka, BETS_SETTLED_TOPIC, r1) == [], \
        "a bet was settled on a flagged table"
    assert platform.balance(banker) == platform.balance(punter) == 90_000

    # the wallet takes no bet on the flagged table
    r2 = f"{table.table_id}-r2"
    table.open(r2)
    platform.wait_round_open(table, r2)
    refused = platform.bet(punter, table, r2, "player", 1_000)
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "table_flagged")

    # replay reports the forged event and rebuilds the round from the real cards
    report, _, _ = run_replay(platform_kafka, ReplayRequest(table.table_id, r1, forged.occurred_at))
    assert report.verdict != "MATCH"
    assert any(d.where == f"table.events seq {forged.seq} (card_dealt)" and
               "unsigned" in d.recorded for d in report.differences), report.differences
    assert [str(c) for c in report.cards] == [*FIRST_CARDS, REAL]
    assert report.winner == "player"

    # a supervisor closes the table and reopens it after review: its rounds settle again
    table.void(r2)
    table.emit(TableClosed, reason_code="other", reason_text="forged table event",
               supervisor="Sam")
    table.emit(TableReopened, reason_text="reviewed: the forgery never counted",
               supervisor="Sam")
    r3 = f"{table.table_id}-r3"
    table.open(r3)
    platform.wait_round_open(table, r3)
    wait_for(lambda: platform.bet(punter, table, r3, "player", 1_000).status_code == 201,
             "a bet accepted on the reopened table", 30)
    table.close(r3)
    _deal(table, r3, [*FIRST_CARDS, REAL])
    wait_for(lambda: len(_round_records(platform_kafka, BETS_SETTLED_TOPIC, r3)) == 1,
             "the reopened table's round settled", 90)
    (settled,) = _round_records(platform_kafka, BETS_SETTLED_TOPIC, r3)
    assert settled["outcome"] == "win"
    assert _round_records(platform_kafka, BETS_SETTLED_TOPIC, r1) == []
