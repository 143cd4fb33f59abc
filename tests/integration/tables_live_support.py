"""Support for the live table tests: services as processes, reading topics back, a hand driver."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from services.game_evaluation.evaluation_fold import EVALUATION_FOLD
from services.infra import topic_admin
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.infra.own_log import PartitionState, broker_time, entries_of, fold_entry
from services.infra.processes import ServiceProcess
from services.infra.settings import Settings
from services.infra.table_keys import table_key
from services.simulators.tables.inputs import InputFactory
from shared.events.chain import verify_chain
from shared.events.evaluation_log import EvaluationEntry
from shared.events.rejections import InputRefused
from shared.events.results import RoundResultPublished
from shared.events.table import parse_table_event
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.topics import (
    DEALER_REJECTIONS_TOPIC,
    EVALUATION_LOG_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    topic_catalogue,
)
from tests.conftest import free_port, instance_for


def port_setting(service: str) -> str:
    return f"CROUPIER_{service.upper().replace('-', '_')}_PORT"


@contextmanager
def running_services(bootstrap: str, home: Path, names: list[str], **env: str
                     ) -> Iterator[dict[str, ServiceProcess]]:
    """The topics applied and one worker of each named service started as a process (each
    on a free port, state under `home`), ready; stopped on exit. `env`: extra settings."""
    with running_workers(bootstrap, home, dict.fromkeys(names, 1), **env) as procs:
        yield procs


@contextmanager
def running_workers(bootstrap: str, home: Path, workers: dict[str, int], **env: str
                    ) -> Iterator[dict[str, ServiceProcess]]:
    """Like `running_services`, with `workers[name]` workers of each service (each its own
    port; labels `dealer-event`, `dealer-event/1`, ...), ready; stopped on exit."""
    admin = topic_admin.admin_client(bootstrap)
    topic_admin.apply(admin, topic_catalogue(), acls_for=instance_for(home))
    admin.close()
    base = {name: free_port() for name in workers}
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "CROUPIER_HOME": str(home),
           "CROUPIER_INSTANCE": instance_for(home), **env,
           **{port_setting(name): str(port) for name, port in base.items()}}
    procs: dict[str, ServiceProcess] = {}
    for name, count in workers.items():
        for i in range(count):
            port = base[name] if i == 0 else free_port()
            proc = ServiceProcess(name, port, home / "logs" / f"{name}-{i}.log", env, worker=i)
            procs[proc.label] = proc
    try:
        for proc in procs.values():
            proc.start()
        for proc in procs.values():
            proc.wait_ready(90)
        yield procs
    finally:
        for proc in procs.values():
            proc.stop()


def table_and_money_fixture(home_name: str):
    """A test module's `services` fixture: dealer-event, game-evaluation, bet-settlement and
    the wallet as processes (in a fresh home named after `home_name`), started once for the
    module, with a 60-second betting window (a supervisor closes it early, with a reason)."""
    @pytest.fixture(scope="module")
    def services(platform_kafka: str, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[dict[str, ServiceProcess]]:
        with running_services(platform_kafka, tmp_path_factory.mktemp(home_name),
                              ["dealer-event", "game-evaluation", "bet-settlement", "wallet"],
                              CROUPIER_BETTING_WINDOW_SECONDS="60") as procs:
            yield procs
    return services


def rounds_from_events(events) -> tuple[dict[str, list], set[str], set[str]]:
    """Cards per round (dealt, never surplus), completed and voided round ids."""
    cards, completed, voided = {}, set(), set()
    for event in events:
        if event.type == "card_dealt":
            cards.setdefault(event.round_id, []).append(event.card)
        elif event.type == "round_completed":
            completed.add(event.round_id)
        elif event.type == "round_voided":
            voided.add(event.round_id)
    return cards, completed, voided


def check_results_match_rules(bootstrap: str, tables: dict[str, str]) -> int:
    """Every table's chain is whole (seq continuous, hashes linked, no event twice) and
    each completed round has exactly one result, equal to the rule engine's verdict on
    the cards read back. Returns the number of results."""
    events = table_events(bootstrap, set(tables))
    expected = 0
    for table_id in tables:
        assert verify_chain(events[table_id]) == [], table_id
        assert [e.seq for e in events[table_id]] == list(range(1, len(events[table_id]) + 1))
        assert len({e.event_id for e in events[table_id]}) == len(events[table_id])
        expected += sum(e.type == "round_completed" for e in events[table_id])
    got = wait_for_results(bootstrap, set(tables), expected)
    by_id = {}
    for result in got:
        assert by_id.setdefault(result.result_id, result) == result, "a redelivery differs"
    assert len(by_id) == expected
    for table_id, profile_name in tables.items():
        cards, completed, voided = rounds_from_events(events[table_id])
        mine = {r.round_id: r for r in by_id.values() if r.table_id == table_id}
        assert set(mine) == completed and not (set(mine) & voided)
        for round_id, result in mine.items():
            assert list(result.cards) == cards[round_id]
            assert result.result == evaluate_round(load_profile(profile_name), cards[round_id])
    return expected


def table_events(bootstrap: str, tables: set[str]) -> dict[str, list]:
    """Each table's events as its readers follow them: a record published again (the same
    seq and hash: dealer-event's outbox publishes the entries a recovering worker cannot
    know were acknowledged, at least once) is not news and is left out; two different
    events of one seq are both kept."""
    out: dict[str, list] = defaultdict(list)
    seen: set[tuple[str, int, str]] = set()
    for record in read_to_end(bootstrap, TABLE_EVENTS_TOPIC):
        if record.key is not None and record.key.decode() in tables:
            event = parse_table_event(record.value)
            if (event.table_id, event.seq, event.hash) in seen:
                continue
            seen.add((event.table_id, event.seq, event.hash))
            out[event.table_id].append(event)
    return out


def fold_evaluation_log(bootstrap: str) -> tuple[dict[str, Any], list[EvaluationEntry]]:
    """game-evaluation's state as the fold of `evaluation.log` (the live worker's own fold,
    every partition from its start), and its valid entries."""
    states: dict[int, PartitionState] = {}
    valid: list[EvaluationEntry] = []
    for record in read_to_end(bootstrap, EVALUATION_LOG_TOPIC):
        state = states.setdefault(record.partition, PartitionState(record.partition))
        for entry in entries_of(record.value, EvaluationEntry.model_validate_json):
            if fold_entry(state, record.offset, entry, EVALUATION_FOLD,
                          broker_time(record.timestamp)):
                valid.append(entry)
    return {k: v for state in states.values() for k, v in state.kv.items()}, valid


def rejections(bootstrap: str, tables: set[str]) -> list[InputRefused]:
    return [InputRefused.model_validate_json(r.value)
            for r in read_to_end(bootstrap, DEALER_REJECTIONS_TOPIC)
            if r.key is not None and r.key.decode() in tables]


def results(bootstrap: str, tables: set[str]) -> list[RoundResultPublished]:
    return [RoundResultPublished.model_validate_json(r.value)
            for r in read_to_end(bootstrap, ROUND_RESULTS_TOPIC)
            if r.key is not None and r.key.decode() in tables]


def wait_for_results(bootstrap: str, tables: set[str], want: int, timeout_s: float = 60.0
                     ) -> list[RoundResultPublished]:
    deadline = time.monotonic() + timeout_s
    while True:
        got = results(bootstrap, tables)
        if len({r.result_id for r in got}) >= want or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def factory(table_id: str) -> InputFactory:
    secret = Settings().table_signing_secret
    return InputFactory(table_id, lambda t, r: table_key(secret, t, r),
                        lambda: datetime.now(UTC), run_tag="live")


class HandDriver:
    """Sends inputs one by one over HTTP and keeps the answers."""

    def __init__(self, base_url: str, table_id: str) -> None:
        self.url = base_url
        self.make = factory(table_id)
        self.table_id = table_id

    def post(self, body: bytes) -> tuple[int, dict]:
        response = httpx.post(f"{self.url}/inputs", content=body, timeout=30)
        return response.status_code, response.json()

    def send(self, inp) -> dict:
        return self.post(inp.model_dump_json().encode())[1]

    def ok(self, command_type, **fields) -> dict:
        report = self.send(self.make.make(command_type, **fields))
        assert report["status"] == "accepted", report
        return report

    def close(self, round_id: str) -> dict:
        """A supervisor's early close, with a reason (a device may not, seed 002)."""
        from shared.events.inputs import CloseBetting

        return self.ok(CloseBetting, round_id=round_id, role="supervisor",
                       reason_text="test: close before the timer")

    def code(self, command_type, **fields) -> str:
        report = self.send(self.make.make(command_type, **fields))
        assert report["status"] == "refused", report
        return report["reason_code"]


def commit_past(bootstrap: str, group: str, tp: TopicPartition, offset: int,
                 timeout_s: float = 30.0) -> None:
    """Commit `offset` for the (now empty) group, as a faulty commit would have."""
    deadline = time.monotonic() + timeout_s
    while True:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                 enable_auto_commit=False, **kafka_python_options(ADMIN))
        try:
            consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
            assert consumer.committed(tp) == offset
            return
        except KafkaError:  # the stopped member may not have left the group yet
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
        finally:
            consumer.close()
