"""Issue 11 findings 1, 2 and 4 through the real services: poison records on every topic
game-evaluation and bet-settlement consume are dead-lettered (source, offset, error), a
dealer input nested 100,000 deep is refused with its reason instead of hanging
dealer-event, no service stops or says it is healthy while stuck, dealer-event restarts
over a log holding them, and tables still play and settle to the rule engine's amounts."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
from kafka import KafkaProducer

from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.simulators.tables.driver import SimConfig
from services.simulators.tables.run import run_tables
from shared.events.dead_letters import DeadLetter
from shared.topics import (
    BETS_PLACED_TOPIC,
    DEAD_LETTERS_TOPIC,
    DEALER_INPUTS_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.integration.money_support import read_topic, wait_for
from tests.integration.tables_live_support import (
    check_results_match_rules,
    results,
    running_services,
)

pytestmark = pytest.mark.kafka
SERVICES = ["dealer-event", "game-evaluation", "bet-settlement"]


@pytest.fixture(scope="module")
def services(platform_kafka, tmp_path_factory):
    home = tmp_path_factory.mktemp("dead-letters-home")
    with running_services(platform_kafka, home, SERVICES,
                          CROUPIER_BETTING_WINDOW_SECONDS="2") as procs:
        yield procs


def _play(url: str, profile: str, rounds: int) -> tuple[str, int]:
    table = f"DL-{uuid.uuid4().hex[:6]}"
    (summary,) = asyncio.run(run_tables(
        [SimConfig(profile=profile, table_id=table, rounds=rounds, seed=7)], url=url))
    assert summary.unexpected == [], summary.unexpected
    return table, summary.rounds_completed


def _poison(bootstrap: str, records: list[tuple[str, bytes, bytes]]) -> dict[tuple, int]:
    """Write the records straight onto the topics; their (topic, key) -> offset."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all",
                             max_request_size=2 * 1024 * 1024, **kafka_python_options(ADMIN))
    where = {}
    for topic, key, value in records:
        sent = producer.send(topic, key=key, value=value).get(timeout=30)
        where[(topic, key)] = (sent.partition, sent.offset)
    producer.close()
    return where


def test_poison_records_are_dead_lettered_and_the_tables_play_on(services, platform_kafka):
    url = services["dealer-event"].base_url
    table, completed = _play(url, "sbo-baccarat", 2)
    good = results(platform_kafka, {table})[0]
    unknown_profile = json.loads(good.model_dump_json())
    unknown_profile.update(result_id=f"forged-{uuid.uuid4().hex[:6]}", table_id="PX-5",
                           profile="no-such-profile", round_id="R-forged")
    deep = b"[" * 100_000 + b"]" * 100_000
    poison = [
        (DEALER_INPUTS_TOPIC, b"PX-1", deep),
        (TABLE_EVENTS_TOPIC, b"PX-2", b"\x00\x01 seventeen bytes"),
        (TABLE_EVENTS_TOPIC, b"PX-3", deep),
        (ROUND_RESULTS_TOPIC, b"PX-5", json.dumps(unknown_profile).encode()),
        (BETS_PLACED_TOPIC, b"PX-4", b'{"type": "bet_placed", "stake": 1e309}'),
    ]
    where = _poison(platform_kafka, poison)

    expected = {("game-evaluation", TABLE_EVENTS_TOPIC, b"PX-2"),
                ("game-evaluation", TABLE_EVENTS_TOPIC, b"PX-3"),
                ("bet-settlement", TABLE_EVENTS_TOPIC, b"PX-2"),
                ("bet-settlement", TABLE_EVENTS_TOPIC, b"PX-3"),
                ("bet-settlement", ROUND_RESULTS_TOPIC, b"PX-5"),
                ("bet-settlement", BETS_PLACED_TOPIC, b"PX-4")}

    def letters() -> dict[tuple, DeadLetter]:
        found = {}
        for raw in read_topic(platform_kafka, DEAD_LETTERS_TOPIC):
            letter = DeadLetter.model_validate(raw)
            for service, topic, key in expected:
                if (letter.service, letter.topic) == (service, topic) and \
                        (letter.partition, letter.offset) == where[(topic, key)]:
                    found[(service, topic, key)] = letter
        return found

    try:
        wait_for(lambda: set(letters()) == expected, "every poison record dead-lettered", 90)
    except AssertionError as timed_out:
        raise AssertionError(f"not dead-lettered: {expected - set(letters())}") from timed_out
    found = letters()
    assert found[("game-evaluation", TABLE_EVENTS_TOPIC, b"PX-3")].value_b64 is None  # digest only
    # a dealer input nested 100,000 deep is an input refused with its reason, not a hang
    wait_for(lambda: any(r.get("reason_code") == "malformed_input" and "too deep" in r["message"]
                         for r in read_topic(platform_kafka, DEALER_REJECTIONS_TOPIC)),
             "the deep input refused", 60)
    assert found[("bet-settlement", ROUND_RESULTS_TOPIC, b"PX-5")].value_b64 is not None

    for proc in services.values():
        assert httpx.get(f"{proc.base_url}/health", timeout=10).status_code == 200, proc.label

    # finding 2: a restart rebuilds the tables from a log holding those records (and a
    # schema-valid round_opened for a table with no shoe): only their tables are out of play
    opened = next(json.loads(r.value) for r in read_to_end(platform_kafka, TABLE_EVENTS_TOPIC)
                  if r.key == table.encode() and b'"round_opened"' in r.value)
    opened.update(table_id="PX-6", seq=1, event_id="PX-6:1")
    _poison(platform_kafka, [(TABLE_EVENTS_TOPIC, b"PX-6", json.dumps(opened).encode())])
    dealer = services["dealer-event"]
    dealer.stop()
    dealer.start().wait_ready(90)
    table2, completed2 = _play(url, "triple-face-id", 3)
    assert completed2 >= 2
    assert check_results_match_rules(platform_kafka, {table: "sbo-baccarat",
                                                      table2: "triple-face-id"}) \
        == completed + completed2
