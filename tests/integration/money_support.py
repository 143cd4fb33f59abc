"""Helpers for the money live tests: the wallet and bet-settlement as processes, a scripted
table writing real, hash-chained `table.events` and `round.results` records, and a reader
of the money topics."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from services.infra import topic_admin
from services.infra.consumer import group_reading
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.infra.processes import ServiceProcess
from services.infra.settings import Settings
from shared.events.canonical import GENESIS_HASH
from shared.events.results import RoundResultPublished, result_id
from shared.events.table import (
    BettingClosed,
    CardDealt,
    RoundCompleted,
    RoundOpened,
    RoundVoided,
    ShoeStarted,
    seal,
)
from shared.profile import load_profile, pinned
from shared.rounds import evaluate_round
from shared.simulate import deal_rounds
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
    topic_catalogue,
    wallet_commands_topic,
)
from tests.conftest import free_port, instance_for
from tests.event_keys import events_key

RUN = uuid.uuid4().hex[:6]
OPERATOR = {"Authorization": f"Bearer {Settings().operator_token}"}


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 60.0,
             explain: Callable[[], str] | None = None) -> None:
    """Return once `check()`; else fail naming `what`, with what `explain()` says of it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}"
                         + (f"\n{explain()}" if explain is not None else ""))


class WalletPlayers:
    """Players at the wallet's HTTP door: accounts funded by the operator, their tokens, their
    bets and balances (`http`: a client of the wallet)."""

    http: httpx.Client
    tokens: dict[str, str]

    def player(self, name: str, deposit: int, currency: str = "IDR") -> str:
        player_id = f"{name}-{RUN}"
        assert self.http.post("/accounts", json={"player_id": player_id, "currency": currency},
                              headers=OPERATOR).status_code == 201
        r = self.http.post(f"/accounts/{player_id}/deposits", headers=OPERATOR,
                           json={"request_id": f"dep-{player_id}", "amount": deposit})
        assert r.status_code == 201, r.text
        self.tokens[player_id] = self.http.post(f"/players/{player_id}/token",
                                                headers=OPERATOR).json()["token"]
        return player_id

    def auth(self, player_id: str) -> dict:
        return {"Authorization": f"Bearer {self.tokens[player_id]}"}

    def bet(self, player_id: str, table: ScriptedTable, round_id: str, bet: str, stake: int,
            position=None, bet_id: str | None = None, as_player: str | None = None
            ) -> httpx.Response:
        body = {"bet_id": bet_id or f"{uuid.uuid4().hex}", "table_id": table.table_id,
                "round_id": round_id, "bet": bet, "stake": stake, "position": position}
        return self.http.post(f"/players/{player_id}/bets", json=body,
                              headers=self.auth(as_player or player_id))

    def balance(self, player_id: str) -> int:
        return self.http.get(f"/accounts/{player_id}", headers=OPERATOR).json()["balance"]

    def wait_round_open(self, table: ScriptedTable, round_id: str) -> None:
        def is_open() -> bool:
            r = self.http.get(f"/tables/{table.table_id}/current-round")
            return r.status_code == 200 and r.json()["round_id"] == round_id
        wait_for(is_open, f"round {round_id} open in the wallet's view")


class WalletAt(WalletPlayers):
    """Players at a wallet already running at `base_url` (a test module's own services)."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.tokens = {}


class Platform(WalletPlayers):
    def __init__(self, bootstrap: str, home, wallet_port: int, settlement_port: int,
                 env: dict[str, str] | None = None) -> None:
        env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "CROUPIER_HOME": str(home),
               "CROUPIER_INSTANCE": instance_for(home),
               "CROUPIER_WALLET_PORT": str(wallet_port),
               "CROUPIER_BET_SETTLEMENT_PORT": str(settlement_port), **(env or {})}
        self.bootstrap = bootstrap
        self.instance = instance_for(home)
        self.wallet = ServiceProcess("wallet", wallet_port, home / "wallet.log", env)
        self.settlement = ServiceProcess("bet-settlement", settlement_port,
                                         home / "bet-settlement.log", env)
        self.http = httpx.Client(base_url=self.wallet.base_url, timeout=30)
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
        self.tokens: dict[str, str] = {}

    def start(self) -> None:
        for service in (self.wallet, self.settlement):
            service.start()
        for service in (self.wallet, self.settlement):
            service.wait_ready(90)

    def wait_applied(self, timeout_s: float = 60.0) -> None:
        """Return once bet-settlement and the wallet have applied every record on the topics
        they consume: each group has committed up to the end of each partition (a batch's
        offsets are committed only after it was applied and what it wrote acknowledged), and
        no end moved meanwhile, so what those records led to (a forwarded ending, a command)
        is applied too. A check made after this cannot pass because a consumer lagged."""
        groups = consumed_topics(self.instance)
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, **kafka_python_options(ADMIN))
        ends_reader = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None,
                                    **kafka_python_options(ADMIN))
        topics = [topic for names in groups.values() for topic in names]
        deadline = time.monotonic() + timeout_s
        try:
            ends = end_offsets(ends_reader, topics)
            while True:
                wait_for(lambda ends=ends: not behind(admin, groups, ends),
                         "bet-settlement and the wallet to apply every record",
                         max(0.0, deadline - time.monotonic()))
                now = end_offsets(ends_reader, topics)
                if now == ends:
                    return
                ends = now  # what was applied wrote more: apply that too
        finally:
            ends_reader.close()
            admin.close()

    def stop(self) -> None:
        self.producer.close()
        self.http.close()
        for service in (self.wallet, self.settlement):
            service.stop()

    def wait_accepted(self, bet_ids: set[str], timeout_s: float = 60.0) -> None:
        """Return once bet-settlement accepted every bet of `bet_ids`; fail on a refusal. A
        placed bet (201) is decided later: a round closed before its decision refuses it,
        as the rules say, so a test that wants bets settled waits for this before closing."""
        decided: dict[str, dict] = {}  # the last read of bets.decisions, kept for the verdict

        def all_decided() -> bool:
            decided.clear()
            decided.update({d["bet_id"]: d for d in read_topic(self.bootstrap,
                                                               BETS_DECISIONS_TOPIC)
                            if d.get("bet_id") in bet_ids
                            and d["type"] in ("bet_accepted", "bet_rejected")})
            return set(decided) == bet_ids
        wait_for(all_decided, "bet-settlement's decisions", timeout_s,
                 explain=lambda: self.bets_story(bet_ids))
        refused = {b: d.get("reason_code") for b, d in decided.items()
                   if d["type"] != "bet_accepted"}
        assert not refused, f"bets refused: {refused}"

    def bets_story(self, bet_ids: set[str]) -> str:
        """What the topics say of each bet (placed, decided, settled), then the tails of
        both services' logs: the message of a wait for a settlement that timed out."""
        lines = []
        for topic in (BETS_PLACED_TOPIC, BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC):
            for record in read_topic(self.bootstrap, topic):
                if record.get("bet_id") in bet_ids:
                    lines.append(f"{topic}: {record['bet_id']} {record['type']} "
                                 f"{record.get('reason_code') or record.get('outcome') or ''}")
        for service in (self.settlement, self.wallet):
            lines.append(f"--- {service.name}'s log:\n{service.log_tail(30)}")
        return "\n".join(lines)


def consumed_topics(instance: str) -> dict[str, tuple[str, ...]]:
    """The consumer group of each money service and the topics its agents read."""
    reads = [("bet-settlement", BETS_PLACED_TOPIC), ("bet-settlement", TABLE_EVENTS_TOPIC),
             ("bet-settlement", ROUND_RESULTS_TOPIC), ("wallet", WALLET_ENDINGS_TOPIC),
             ("wallet", wallet_commands_topic(instance))]
    groups: dict[str, tuple[str, ...]] = {}
    for service, topic in reads:
        group = group_reading(instance, service, topic)
        groups[group] = (*groups.get(group, ()), topic)
    return groups


def end_offsets(consumer: KafkaConsumer, topics: list[str]) -> dict[TopicPartition, int]:
    tps = []
    for topic in topics:
        partitions = consumer.partitions_for_topic(topic)
        assert partitions, f"topic {topic} does not exist"
        tps += [TopicPartition(topic, p) for p in sorted(partitions)]
    return consumer.end_offsets(tps)


def behind(admin: KafkaAdminClient, groups: dict[str, tuple[str, ...]],
           ends: dict[TopicPartition, int]) -> list[str]:
    """Each partition a group has not committed up to `ends` yet (no commit counts as 0)."""
    late = []
    for group, topics in groups.items():
        committed = {tp: meta.offset for tp, meta in
                     admin.list_group_offsets(group).get(group, {}).items()}
        for tp, end in ends.items():
            if tp.topic in topics and max(committed.get(tp, 0), 0) < end:
                late.append(f"{group} {tp.topic}[{tp.partition}] {committed.get(tp)} < {end}")
    return late


@contextmanager
def money_platform(bootstrap: str, home, env: dict[str, str] | None = None
                   ) -> Iterator[Platform]:
    """The topics applied, the wallet and bet-settlement started (free ports, `env` added
    to their environment), stopped on exit."""
    admin = topic_admin.admin_client(bootstrap)
    topic_admin.apply(admin, topic_catalogue(), acls_for=instance_for(home))
    admin.close()
    platform = Platform(bootstrap, home, free_port(), free_port(), env)
    platform.start()
    try:
        yield platform
    finally:
        platform.stop()


def money_platform_fixture(home_name: str):
    """A test module's `platform` fixture: its money platform (`money_platform`, in a fresh
    home named after `home_name`), started once for the module. Use as
    `platform = money_platform_fixture("...-home")`."""
    @pytest.fixture(scope="module")
    def platform(platform_kafka: str, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[Platform]:
        with money_platform(platform_kafka, tmp_path_factory.mktemp(home_name)) as p:
            yield p
    return platform


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
                     occurred_at=datetime.now(UTC), key=events_key(), **fields)
        self.prev_hash = event.hash
        self.producer.send(TABLE_EVENTS_TOPIC, key=self.table_id.encode(),
                           value=event.model_dump_json().encode())
        self.producer.flush()
        return event

    def open(self, round_id: str, window_s: float = 120, pin: bool = False) -> None:
        """Open a round; `pin`: under the profile's current version, as dealer-event opens one
        (else unpinned, as rounds recorded before versions: version 1)."""
        self.rounds_opened += 1
        version, digest = pinned(self.profile_name)
        pins = {"profile_version": version, "profile_digest": digest} if pin else {}
        self.emit(RoundOpened, shoe_id=self.shoe_id, round_id=round_id,
                  round_number=self.rounds_opened, dealer="Dana", profile=self.profile_name,
                  betting_closes_at=datetime.now(UTC) + timedelta(seconds=window_s), **pins)

    def close(self, round_id: str) -> None:
        self.emit(BettingClosed, round_id=round_id, reason="dealer")

    def complete(self, round_id: str, deal_cards: bool = False) -> RoundResultPublished:
        """RoundCompleted on table.events and the evaluated result on round.results; with
        `deal_cards`, every card's CardDealt on table.events first (what a rebuild recomputes
        the result from)."""
        cards = next(self._deals)
        if deal_cards:
            for i, card in enumerate(cards):
                self.emit(CardDealt, round_id=round_id, card=card, shoe_position=i,
                          round_position=i)
        done = self.emit(RoundCompleted, round_id=round_id, cards=tuple(cards))
        published = RoundResultPublished(
            result_id=result_id(self.table_id, round_id), table_id=self.table_id,
            round_id=round_id, shoe_id=self.shoe_id, profile=self.profile_name, dealer="Dana",
            cards=tuple(cards), completed_seq=done.seq, completed_hash=done.hash,
            occurred_at=done.occurred_at, result=evaluate_round(self.profile, cards))
        self.publish_result(published)
        return published

    def publish_result(self, published: RoundResultPublished) -> None:
        self.producer.send(ROUND_RESULTS_TOPIC, key=self.table_id.encode(),
                           value=published.model_dump_json().encode())
        self.producer.flush()

    def void(self, round_id: str) -> None:
        self.emit(RoundVoided, round_id=round_id, reason_code="misdeal",
                  reason_text="two cards dealt at once", supervisor="Sam")


def read_topic(bootstrap: str, name: str) -> list[dict]:
    """Every record of a topic, from the beginning up to its current end, as dicts."""
    return [json.loads(r.value) for r in read_to_end(bootstrap, name)]
