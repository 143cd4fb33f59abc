"""Issue 11, deliverable 8: the hostile corpus (`tests/hostile/`) against one platform of the
four services and the operator API.

Every HTTP request of the corpus is answered 2xx or a named 4xx, never a 5xx, never a hang;
every record of the corpus is produced onto its topic, and each is then handled as its case
says (dead-lettered by source topic, partition and offset; or refused with a reason; or
consumed with no effect), with every consumer moved past it; dealer-event restarts over the
poisoned `table.events`; every service is healthy; a normal session (tables and players
through the wallet) settles to the rule engine's amounts with every invariant; and the
rebuild from the log equals the live wallet."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from kafka import KafkaAdminClient, KafkaProducer

from services.demo.session import DemoConfig, play
from services.demo.stack import Stack, ensure_kafka
from services.demo.summary import summarise, wait_until_settled
from services.infra.consumer import group_reading
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.infra.processes import service_env
from services.infra.service_table import SERVICE_NAMES
from services.infra.settings import Settings
from services.infra.table_keys import table_key
from services.operator.rebuild import rebuild
from services.operator.wallet_client import live_balances
from shared.events.inputs import DEALER_INPUT, NewShoe, OpenRound
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    DEALER_INPUTS_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
    wallet_commands_topic,
)
from tests.conftest import free_port, instance_for
from tests.hostile import corpus
from tests.integration.tables_live_support import (
    HandDriver,
    check_results_match_rules,
)

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]
HTTP_TIMEOUT_S = 12.0  # dealer-event answers 202 "queued" after 10 s; nothing may take longer
WALLET_READS = {BETS_DECISIONS_TOPIC: WALLET_ENDINGS_TOPIC, BETS_SETTLED_TOPIC: WALLET_ENDINGS_TOPIC}
CONSUMERS = {  # topic -> services whose consumer group reads it
    DEALER_INPUTS_TOPIC: ["dealer-event"], TABLE_EVENTS_TOPIC: ["game-evaluation", "bet-settlement"],
    ROUND_RESULTS_TOPIC: ["bet-settlement"], BETS_PLACED_TOPIC: ["bet-settlement"],
    BETS_DECISIONS_TOPIC: ["wallet"], BETS_SETTLED_TOPIC: ["wallet"], "wallet.commands": ["wallet"],
}


def _settings(bootstrap: str, home: Path) -> Settings:
    return Settings(kafka_bootstrap_servers=bootstrap, home=home, instance=instance_for(home),
                    env="development", dealer_event_port=free_port(),
                    game_evaluation_port=free_port(), bet_settlement_port=free_port(),
                    wallet_port=free_port(), operator_api_port=free_port(),
                    betting_window_seconds=4)


def _operator_api(settings: Settings) -> subprocess.Popen:
    log = open(settings.home / "logs" / "operator-api.log", "ab")  # noqa: SIM115
    env = {**os.environ, **service_env(settings),
           "CROUPIER_OPERATOR_API_PORT": str(settings.operator_api_port)}
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "operator-api"], env=env,
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    log.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{settings.operator_api_port}/health", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    raise TimeoutError("operator API not up")


class Context:
    """The live values the corpus's templates name."""

    def __init__(self, settings: Settings, stack: Stack) -> None:
        self.settings, self.stack = settings, stack
        run = uuid.uuid4().hex[:6]
        self.table, self.round = f"hx-live-{run}", f"hx-live-{run}-r1"
        self.values = {"RUN": run, "OPERATOR": settings.operator_token, "TABLE": self.table,
                       "ROUND": self.round, "COMMANDS": wallet_commands_topic(settings.instance)}
        wallet = httpx.Client(base_url=stack.url("wallet"), timeout=30)
        operator = {"Authorization": f"Bearer {settings.operator_token}"}
        for role in ("PLAYER", "OTHER"):
            player = f"hx-{role.lower()}-{run}"
            assert wallet.post("/accounts", json={"player_id": player, "currency": "IDR"},
                               headers=operator).status_code == 201
            assert wallet.post(f"/accounts/{player}/deposits", headers=operator,
                               json={"request_id": f"hx-seed-{run}", "amount": 1_000_000}
                               ).status_code == 201
            token = wallet.post(f"/players/{player}/token", headers=operator).json()["token"]
            self.values[role], self.values[f"{role}_TOKEN"] = player, token
        wallet.close()
        driver = HandDriver(stack.url("dealer-event"), self.table)
        driver.ok(NewShoe, shoe_id=f"{self.table}-s1", profile="sbo-baccarat",
                  role="supervisor")
        driver.ok(OpenRound, round_id=self.round, dealer="Ayu")

    def url(self, service: str) -> str:
        if service == "operator-api":
            return f"http://127.0.0.1:{self.settings.operator_api_port}"
        return self.stack.url(service)

    def signed(self, body: bytes, role: str) -> bytes:
        data = {k: v for k, v in json.loads(body).items() if v is not None}
        data.update(sent_at=datetime.now(UTC).isoformat(), role=role, signature="")
        inp = DEALER_INPUT.validate_python(data)
        key = table_key(self.settings.table_signing_secret, inp.table_id, role)
        return inp.signed(key).model_dump_json().encode()


def _send(ctx: Context, case: dict) -> dict:
    path = corpus.fill(case["path"].encode(), ctx.values).decode()
    headers = [(name.encode(), corpus.fill(corpus.unb64(value), ctx.values))
               for name, value in case["headers"]]
    body = corpus.fill(corpus.http_body(case), ctx.values)
    if case.get("sign"):
        body = ctx.signed(body, case["sign"])
    began = time.monotonic()
    try:
        r = httpx.request(case["method"], ctx.url(case["service"]) + path, headers=headers,
                          content=body if body else None, timeout=HTTP_TIMEOUT_S)
    except httpx.LocalProtocolError as error:  # the client itself will not send these bytes
        return {"status": None, "client_refused": str(error), "seconds": 0.0}
    except httpx.TimeoutException:
        return {"status": "timeout", "seconds": time.monotonic() - began}
    try:
        answer = r.json()
    except ValueError:
        answer = None
    code = None
    if isinstance(answer, dict):
        error = answer.get("error")
        code = answer.get("reason_code") or (error.get("code") if isinstance(error, dict)
                                              else error)
    return {"status": r.status_code, "code": code, "seconds": time.monotonic() - began,
            "text": r.text[:300]}


def _produce(bootstrap: str, ctx: Context) -> list[tuple[dict, int, int]]:
    """Every record case onto its topic, in bulk: (case, partition, offset)."""
    # as admin: the ACLs keep other principals off these topics (tests/integration/
    # test_kafka_acls_live.py); this suite asks what a record does once it is there
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20,
                             max_request_size=2 * 1024 * 1024, batch_size=256 * 1024,
                             **kafka_python_options(ADMIN))
    sent = []
    for name in corpus.RECORD_FILES:
        for case in corpus.record_cases(name):
            topic = corpus.fill(case["topic"].encode(), ctx.values).decode()
            # the wallet reads bet-settlement's endings on wallet.endings (keyed by
            # player): the corpus's poison for them goes where the wallet reads it
            topic = WALLET_READS.get(topic, topic)
            future = producer.send(topic, key=corpus.unb64(case["key_b64"]),
                                   value=corpus.record_value(case))
            sent.append((dict(case, topic_name=name, topic=topic), future))
    producer.flush(60)
    producer.close()
    return [(case, f.get(30).partition, f.get(30).offset) for case, f in sent]


def _committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


def _consumed_past(bootstrap: str, instance: str, produced) -> list[str]:
    """(service, topic, partition) whose group has not committed past the corpus's last
    record there."""
    last: dict[tuple[str, str, int], int] = {}
    for case, partition, offset in produced:
        for service in CONSUMERS[case["topic_name"]]:
            key = (service, case["topic"], partition)
            last[key] = max(last.get(key, -1), offset)
    behind = []
    groups: dict[str, dict] = {}
    for (service, topic, partition), offset in sorted(last.items()):
        group = group_reading(instance, service, topic)
        if group not in groups:
            groups[group] = _committed(bootstrap, group)
        if groups[group].get((topic, partition), -1) <= offset:
            behind.append(f"{service} {topic}[{partition}] <= {offset}")
    return behind


def _dead_letters(bootstrap: str) -> set[tuple[str, str, int, int]]:
    return {(d["service"], d["topic"], d["partition"], d["offset"])
            for d in (json.loads(r.value) for r in read_to_end(bootstrap, DEAD_LETTERS_TOPIC))}


def _refusals(bootstrap: str) -> tuple[set[str], set[str], set[str]]:
    """dealer.rejections: input ids and raw texts; bets.decisions: rejected bet ids."""
    input_ids, raws, bets = set(), set(), set()
    for r in read_to_end(bootstrap, DEALER_REJECTIONS_TOPIC):
        data = json.loads(r.value)
        raws.add(data.get("raw", ""))
        if data.get("input_id"):
            input_ids.add(data["input_id"])
    for r in read_to_end(bootstrap, BETS_DECISIONS_TOPIC):
        try:
            data = json.loads(r.value)
        except Exception:  # noqa: BLE001 - the corpus's own garbage (deep nesting too)
            continue
        if isinstance(data, dict) and data.get("type") == "bet_rejected":
            bets.add(data.get("bet_id"))
    return input_ids, raws, bets


def _outcomes(bootstrap: str, produced) -> dict[str, dict[str, str]]:
    """Per case, per consuming service: dead_letter, refused or ignored."""
    letters = _dead_letters(bootstrap)
    input_ids, raws, bet_ids = _refusals(bootstrap)
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for case, partition, offset in produced:
        for service in case["handled"]:
            if (service, case["topic"], partition, offset) in letters:
                out[case["id"]][service] = "dead_letter"
                continue
            ref = case.get("ref") or {}
            refused = False
            if case["topic_name"] == DEALER_INPUTS_TOPIC:
                text = (corpus.record_value(case) or b"").decode("utf-8", "replace")
                refused = ref.get("input_id") in input_ids or any(
                    raw and text.startswith(raw) for raw in raws) or (text == "" and "" in raws)
            elif case["topic_name"] == BETS_PLACED_TOPIC:
                refused = ref.get("bet_id") in bet_ids
            out[case["id"]][service] = "refused" if refused else "ignored"
    return out


@pytest.fixture(scope="module")
def hostile(platform_kafka, tmp_path_factory):
    home = tmp_path_factory.mktemp("hostile-home")
    (home / "logs").mkdir(parents=True, exist_ok=True)
    settings = _settings(platform_kafka, home)
    timings: dict[str, float] = {}
    began = time.monotonic()
    ensure_kafka(settings)
    stack = Stack(settings, workers=1).start()
    operator_api = _operator_api(settings)
    try:
        timings["start"] = time.monotonic() - began
        ctx = Context(settings, stack)
        t = time.monotonic()
        answers = {case["id"]: (case, _send(ctx, case)) for case in corpus.http_cases()}
        timings["http"] = time.monotonic() - t
        t = time.monotonic()
        produced = _produce(platform_kafka, ctx)
        timings["produce"] = time.monotonic() - t
        t = time.monotonic()
        behind: list[str] = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            behind = _consumed_past(platform_kafka, settings.instance, produced)
            if not behind:
                break
            time.sleep(1.0)
        outcomes = _outcomes(platform_kafka, produced)
        timings["consume"] = time.monotonic() - t
        # dealer-event's start-up rebuild reads the poisoned table.events (finding 2)
        t = time.monotonic()
        dealer = stack.processes["dealer-event"]
        dealer.stop()
        dealer.start()
        dealer.wait_ready(90)
        timings["dealer-event restart"] = time.monotonic() - t
        health = {name: httpx.get(f"{p.base_url}/health", timeout=5).status_code
                  for name, p in stack.processes.items()}
        t = time.monotonic()
        config = DemoConfig(rounds=3, players=8, profiles=("sbo-baccarat", "triple-face-id"),
                            betting_pause=2.0, seed=5)
        run = asyncio.run(play(settings, config, stack.url("dealer-event"),
                               stack.url("wallet")))
        books, mine = wait_until_settled(platform_kafka, run, timeout_s=90)
        timings["session"] = time.monotonic() - t
        t = time.monotonic()
        wallet = stack.url("wallet")
        rebuilt = rebuild(platform_kafka,
                          lambda ps: live_balances(wallet, settings.operator_token, ps))
        summary = summarise(run, books, mine, {})
        timings["rebuild"] = time.monotonic() - t
        health_after = {name: httpx.get(f"{p.base_url}/health", timeout=5).status_code
                        for name, p in stack.processes.items()}
        print("hostile corpus timings:", {k: round(v, 1) for k, v in timings.items()})
        (home / "hostile-report.json").write_text(json.dumps(
            {"timings": timings, "behind": behind, "outcomes": outcomes, "health": health,
             "answers": {k: a for k, (_, a) in answers.items()},
             "differences": rebuilt.differences[:200]}, indent=1, default=str))
        print("hostile corpus report:", home / "hostile-report.json")
        print("HTTP answers by status:",
              dict(Counter(str(a["status"]) for _, a in answers.values())))
        print("record outcomes:", dict(Counter(
            (case["topic_name"], service, outcomes[case["id"]][service])
            for case, _, _ in produced for service in case["handled"])))
        yield {"answers": answers, "produced": produced, "behind": behind,
               "outcomes": outcomes, "health": health, "health_after": health_after,
               "run": run, "summary": summary, "rebuilt": rebuilt, "ctx": ctx,
               "settings": settings}
    finally:
        operator_api.terminate()
        operator_api.wait(20)
        stack.stop()


def test_two_players_with_the_same_request_id_are_both_rebuilt(hostile):
    """Finding 10: the corpus's two players were both funded with request id hx-seed-<run>
    (as the operator guide's dep-1); the rebuild keys by (player, id) and keeps both."""
    values = hostile["ctx"].values
    assert {values["PLAYER"], values["OTHER"]} <= set(hostile["rebuilt"].audit.balances)


def test_the_corpus_is_big_enough():
    assert len(corpus.http_cases()) >= 200
    for name in corpus.RECORD_FILES:
        cases = corpus.record_cases(name)
        assert len(cases) >= 100, name
        assert all(c["covers"] and c["handled"] for c in cases)


# Cases that find a bug still open (issue 11): strict xfail, so each shows until fixed.
KNOWN_BUGS: dict[str, str] = {}  # none open: finding 10's '.'/'..' ids are refused now
# Answers of the HTTP framework itself (aiohttp), before any croupier code runs: plain text,
# no named code. Kept visible here rather than counted as named problems.
FRAMEWORK_ANSWERS = {404, 405, 413}


def _marked(ids):
    return [pytest.param(i, id=i, marks=pytest.mark.xfail(reason=KNOWN_BUGS[i], strict=True))
            if i in KNOWN_BUGS else pytest.param(i, id=i) for i in ids]


@pytest.mark.parametrize("case_id", _marked([c["id"] for c in corpus.http_cases()]))
def test_http_request_is_answered_2xx_or_a_named_4xx(hostile, case_id):
    case, answer = hostile["answers"][case_id]
    status = answer["status"]
    if status is None:  # httpx itself refuses to put these header bytes on the wire
        assert answer.get("client_refused")
        return
    assert status != "timeout", f"no answer in {HTTP_TIMEOUT_S}s"
    assert status < 500, answer
    assert f"{status // 100}xx" in case["expect"].split("|"), answer
    if 400 <= status < 500 and status not in FRAMEWORK_ANSWERS:
        assert answer.get("code"), answer
    assert answer["seconds"] <= 10, answer


def test_enough_http_requests_reached_the_services(hostile):
    sent = [a for _, a in hostile["answers"].values() if a["status"] is not None]
    assert len(sent) >= 200, len(sent)
    framework = sorted((k, a["status"]) for k, (_, a) in hostile["answers"].items()
                       if a["status"] in FRAMEWORK_ANSWERS and not a.get("code"))
    print("answered by the HTTP framework, no named code:", framework)


def test_every_record_was_consumed_past(hostile):
    assert hostile["behind"] == []


RECORD_CASES = [c["id"] for name in corpus.RECORD_FILES for c in corpus.record_cases(name)]


@pytest.mark.parametrize("case_id", _marked(RECORD_CASES))
def test_poison_record_is_handled_as_its_case_says(hostile, case_id):
    (case, partition, offset), = [p for p in hostile["produced"] if p[0]["id"] == case_id]
    for service, allowed in case["handled"].items():
        got = hostile["outcomes"][case_id][service]
        assert got in allowed, (f"{service} {case['topic']}[{partition}]@{offset}: {got}, "
                                f"expected one of {allowed} ({case['covers']})")


def test_every_service_is_healthy_after_the_corpus(hostile):
    assert set(hostile["health"].values()) == {200}, hostile["health"]
    assert set(hostile["health_after"].values()) == {200}, hostile["health_after"]
    assert set(hostile["health"]) == set(SERVICE_NAMES)


def test_a_normal_session_settles_to_the_rule_engine(hostile):
    summary, run = hostile["summary"], hostile["run"]
    session = [c for c in summary.invariants if c.name.startswith("this session")]
    failed = [f"{c.name}: {c.problems[:5]}" for c in session if not c.ok]
    assert not failed, failed
    assert summary.bets_settled > 0 and summary.rounds >= 4
    assert all(not t.unexpected for t in run.tables.values())
    tables = {run.config.table_id(p): p for p in run.config.profiles}
    assert check_results_match_rules(hostile["settings"].bootstrap_servers, tables) >= 4


def test_the_rebuild_equals_the_live_wallet(hostile):
    rebuilt = hostile["rebuilt"]
    balances = [d for d in rebuilt.differences if d.startswith("player ")]
    assert balances == []
    assert set(hostile["run"].players) <= set(rebuilt.audit.balances)
    # the corpus's forged records make the rebuild report differences of their own (a table
    # named "..", a bet nobody paid for, the whole log's house result); none may name a
    # genuine table or player of the session
    run = hostile["run"]
    genuine = set(run.players) | {run.config.table_id(p) for p in run.config.profiles}
    about_genuine = [d for d in rebuilt.differences if any(g in d for g in genuine)]
    assert about_genuine == [], "\n".join(about_genuine[:20])
    print("rebuild differences (all from the corpus's forged records):",
          len(rebuilt.differences))
