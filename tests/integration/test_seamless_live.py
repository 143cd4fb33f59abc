"""Issue 20, seamless mode end to end: the wallet and bet-settlement as processes in
seamless mode against the reference operator wallet (its own process over its own SQLite
database), tables scripted with real hash-chained events, bets over HTTP. Under each fault
the operator wallet injects (answers after the debit timeout, 500s, connections dropped
after the write, duplicated deliveries, a restart of the operator wallet, a kill -9 of
croupier's wallet), and after a settled round is annulled or its result corrected, every
bet answered 201 is debited once at the operator, every ended bet is credited or rolled
back once there, no player's money moves twice or not at all, and reconciliation finds
no difference."""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from services.game_evaluation.evaluator import corrected_result
from services.infra.processes import operator_wallet_process
from services.infra.settings import Settings
from services.operator.reconcile_sources import run_reconcile
from services.simulators.operator_wallet.client import OperatorWalletClient
from shared.cards import parse_cards
from shared.events.table import RoundAnnulled, RoundCorrected
from shared.topics import BETS_SETTLED_TOPIC
from tests.conftest import free_port, instance_for
from tests.integration.money_support import (
    OPERATOR,
    RUN,
    ScriptedTable,
    money_platform,
    read_topic,
    wait_for,
)
from tests.integration.replay_support import croupier

pytestmark = pytest.mark.kafka
DEBIT_TIMEOUT_S = 1.0
STARTED = datetime.now(UTC)


@pytest.fixture(scope="module")
def operator(tmp_path_factory):
    home = tmp_path_factory.mktemp("operator-wallet")
    port = free_port()
    proc = operator_wallet_process(port, home / "wallet.sqlite", home / "wallet.log").start()
    proc.wait_ready(30)
    client = OperatorWalletClient(f"http://127.0.0.1:{port}")
    yield proc, client
    client.close()
    proc.stop()


@pytest.fixture(scope="module")
def platform(platform_kafka, tmp_path_factory, operator):
    proc, _ = operator
    home = tmp_path_factory.mktemp("seamless-home")
    env = {"CROUPIER_WALLET_MODE": "seamless",
           "CROUPIER_OPERATOR_WALLET_URL": proc.base_url,
           "CROUPIER_OPERATOR_WALLET_DEBIT_TIMEOUT_SECONDS": str(DEBIT_TIMEOUT_S),
           "CROUPIER_OPERATOR_WALLET_RETRY_MAX_SECONDS": "1"}
    with money_platform(platform_kafka, home, env) as p:
        p.settings = Settings(kafka_bootstrap_servers=platform_kafka, home=home,
                              instance=instance_for(home), wallet_mode="seamless",
                              operator_wallet_url=proc.base_url)
        yield p


@pytest.fixture(scope="module")
def bac(platform):
    return ScriptedTable(platform.producer, f"SBAC-{RUN}", "sbo-baccarat", seed=13)


class Players:
    """Players at both doors: an account at croupier, a balance and a session at the
    operator."""

    def __init__(self, platform, client: OperatorWalletClient) -> None:
        self.platform, self.client = platform, client
        self.sessions: dict[str, str] = {}

    def new(self, name: str, balance: int, blocked: bool = False,
            operator_currency: str = "IDR") -> str:
        """A player in IDR at croupier; at the operator in `operator_currency`."""
        player_id = f"{name}-{RUN}"
        http = self.platform.http
        assert http.post("/accounts", json={"player_id": player_id, "currency": "IDR"},
                         headers=OPERATOR).status_code == 201
        self.client.put_player(player_id, currency=operator_currency, balance=balance,
                               blocked=blocked)
        self.sessions[player_id] = self.client.issue_session(player_id)
        self.platform.tokens[player_id] = http.post(f"/players/{player_id}/token",
                                                    headers=OPERATOR).json()["token"]
        return player_id

    def bet(self, player_id: str, table: ScriptedTable, round_id: str, bet: str, stake: int,
            session: str | None = "own"):
        body = {"bet_id": f"{player_id}-{uuid.uuid4().hex[:10]}", "table_id": table.table_id,
                "round_id": round_id, "bet": bet, "stake": stake}
        if session is not None:
            body["operator_session"] = self.sessions[player_id] if session == "own" else session
        return self.platform.http.post(f"/players/{player_id}/bets", json=body,
                                       headers=self.platform.auth(player_id))


@pytest.fixture(scope="module")
def players(platform, operator):
    return Players(platform, operator[1])


def settled_returns(bootstrap: str, bet_ids: set[str]) -> dict[str, int]:
    return {s["bet_id"]: s["returned"] for s in read_topic(bootstrap, BETS_SETTLED_TOPIC)
            if s.get("type") == "bet_settled" and s["bet_id"] in bet_ids}


def operator_money(client: OperatorWalletClient, player_id: str) -> dict[str, list[dict]]:
    """The operator's transactions of a player, by transaction id."""
    out: dict[str, list[dict]] = defaultdict(list)
    for tx in client.transactions(player_id=player_id):
        out[tx.transaction_id].append(tx.model_dump())
    return out


def faults_hit(base_url: str, kind: str) -> set[str]:
    """The faults the operator wallet has injected into calls of `kind` since it started."""
    text = httpx.get(f"{base_url}/metrics", timeout=5).text
    return {line.split('outcome="')[1].split('"')[0] for line in text.splitlines()
            if line.startswith("operator_wallet_calls_total{") and f'kind="{kind}"' in line
            and 'outcome="fault_' in line and not line.rstrip().endswith(" 0.0")}


def reconciled(platform, timeout_s: float = 60.0):
    """Reconciliation of this run, once croupier and the operator agree (or the time is
    up: then the differences are the failure's message)."""
    last = None

    def clean() -> bool:
        nonlocal last
        last = run_reconcile(platform.settings, STARTED - timedelta(minutes=1),
                             datetime.now(UTC))
        return last.clean
    try:
        wait_for(clean, "reconciliation to find no difference", timeout_s)
    except AssertionError:
        raise AssertionError("\n".join(d.line() for d in last.differences)) from None
    return last


def test_bets_are_debited_and_settled_at_the_operator_and_refusals_are_named(
        platform, bac, players, operator):
    _, client = operator
    alice = players.new("alice", 100_000)
    broke = players.new("broke", 500)
    blocked = players.new("blocked", 100_000, blocked=True)
    yen = players.new("yen", 100_000, operator_currency="JPY")  # the operator's books differ
    bac.open("s1")
    platform.wait_round_open(bac, "s1")
    placed = [players.bet(alice, bac, "s1", "player", 1000),
              players.bet(alice, bac, "s1", "banker", 2000)]
    assert [r.status_code for r in placed] == [201, 201], [r.text for r in placed]
    assert placed[1].json()["balance_after"] == 97_000, "the operator's balance after"
    refusals = {
        "insufficient_funds": players.bet(broke, bac, "s1", "player", 1000),
        "player_blocked": players.bet(blocked, bac, "s1", "player", 1000),
        "wrong_currency": players.bet(yen, bac, "s1", "player", 1000),
        "invalid_session": players.bet(alice, bac, "s1", "player", 1000, session="forged"),
        "operator_session_required": players.bet(alice, bac, "s1", "player", 1000,
                                                 session=None)}
    for code, r in refusals.items():
        assert r.json()["error"]["code"] == code, r.text
    assert {c: r.status_code for c, r in refusals.items()} == {
        "insufficient_funds": 402, "player_blocked": 403, "wrong_currency": 409,
        "invalid_session": 401, "operator_session_required": 401}
    session = players.sessions[alice]
    client.expire_session(session)
    expired = players.bet(alice, bac, "s1", "tie", 1000)
    assert (expired.status_code, expired.json()["error"]["code"]) == (401, "session_expired")
    players.sessions[alice] = client.issue_session(alice)
    bet_ids = {r.json()["bet"]["bet_id"] for r in placed}
    platform.wait_accepted(bet_ids)
    bac.close("s1")
    bac.complete("s1", deal_cards=True)  # a replay recomputes the result from the cards

    wait_for(lambda: len(settled_returns(platform.bootstrap, bet_ids)) == 2, "settlements",
             explain=lambda: platform.bets_story(bet_ids))
    returns = settled_returns(platform.bootstrap, bet_ids)
    wait_for(lambda: client.balance(alice) == 100_000 - 3000 + sum(returns.values()),
             "alice's credits at the operator")
    money = operator_money(client, alice)
    for bet_id in bet_ids:
        assert len(money[f"debit:{bet_id}"]) == 1, "one debit per bet at the operator"
        credits = [t for t in money if t.startswith("credit:") and bet_id in t]
        assert len(credits) == 1, "one credit per bet (a lost bet's is 0)"
    assert client.balance(broke) == 500 and client.balance(blocked) == 100_000
    assert client.balance(yen) == 100_000
    balance = platform.http.get(f"/players/{alice}/balance", headers=platform.auth(alice))
    assert balance.json()["balance"] == client.balance(alice), "the operator's, last reported"
    reconciled(platform)
    # the replay shows, for every bet, what croupier asked the operator and what it said
    replay = croupier(platform.bootstrap, "replay", "--table", bac.table_id, "--round", "s1",
                      "--at", STARTED.isoformat(), "--format", "json")
    assert replay.returncode == 0, replay.stderr + replay.stdout
    report = json.loads(replay.stdout)
    assert report["wallet_mode"] == "seamless" and report["verdict"] == "MATCH", report
    calls = {c["transaction_id"]: c["outcome"]
             for b in report["bets"] for c in b["operator_calls"]}
    assert {f"debit:{b}" for b in bet_ids} <= set(calls) and set(calls.values()) == {"ok"}


def test_a_debit_answered_after_the_timeout_is_refused_and_rolled_back(
        platform, bac, players, operator):
    _, client = operator
    bob = players.new("bob", 50_000)
    bac.open("s2")
    platform.wait_round_open(bac, "s2")
    client.set_faults(late_rate=1.0, late_ms=int(DEBIT_TIMEOUT_S * 1000) + 1500,
                      kinds=["debit"], seed=1)
    try:
        late = players.bet(bob, bac, "s2", "player", 4000)
    finally:
        client.set_faults()
    assert (late.status_code, late.json()["error"]["code"]) == (504, "operator_wallet_timeout")
    wait_for(lambda: client.balance(bob) == 50_000, "the late debit rolled back")
    on_time = players.bet(bob, bac, "s2", "banker", 1000)
    assert on_time.status_code == 201
    bac.close("s2")
    bac.complete("s2")
    reconciled(platform)


def test_credits_survive_500s_dropped_answers_duplicates_and_an_operator_restart(
        platform, bac, players, operator):
    proc, client = operator
    carol = players.new("carol", 200_000)
    bac.open("s3")
    platform.wait_round_open(bac, "s3")
    placed = [players.bet(carol, bac, "s3", bet, 2000)
              for bet in ("player", "banker", "tie", "player_pair", "banker_pair")]
    assert [r.status_code for r in placed] == [201] * 5
    bet_ids = {r.json()["bet"]["bet_id"] for r in placed}
    client.set_faults(error_rate=0.4, drop_rate=0.3, duplicate_rate=0.3,
                      kinds=["credit", "rollback"], seed=7)
    platform.wait_accepted(bet_ids)
    bac.close("s3")
    bac.complete("s3")
    wait_for(lambda: len(settled_returns(platform.bootstrap, bet_ids)) == 5, "settlements",
             explain=lambda: platform.bets_story(bet_ids))
    wait_for(lambda: {"fault_500", "fault_drop"} <= faults_hit(proc.base_url, "credit"),
             "the operator wallet to fail credits with 500s and dropped answers")
    proc.kill()  # mid-run: what it wrote is in its database; croupier asks again meanwhile
    proc.start().wait_ready(30)
    client.set_faults()
    returns = settled_returns(platform.bootstrap, bet_ids)
    wait_for(lambda: client.balance(carol) == 200_000 - 10_000 + sum(returns.values()),
             "every credit once at the operator", 60)
    money = operator_money(client, carol)
    assert all(len(txs) == 1 for txs in money.values()), "no transaction twice"
    reconciled(platform)


def test_owed_credits_are_delivered_after_croupiers_wallet_is_killed(
        platform, bac, players, operator):
    _, client = operator
    dana = players.new("dana", 80_000)
    bac.open("s4")
    platform.wait_round_open(bac, "s4")
    placed = [players.bet(dana, bac, "s4", "player", 3000),
              players.bet(dana, bac, "s4", "banker", 3000)]
    assert [r.status_code for r in placed] == [201, 201]
    bet_ids = {r.json()["bet"]["bet_id"] for r in placed}
    client.set_faults(error_rate=1.0, kinds=["credit"], seed=3)  # the operator is down
    platform.wait_accepted(bet_ids)
    bac.close("s4")
    bac.complete("s4")
    wait_for(lambda: len(settled_returns(platform.bootstrap, bet_ids)) == 2, "settlements",
             explain=lambda: platform.bets_story(bet_ids))
    retrying = f"'{dana}': no answer".encode()
    wait_for(lambda: retrying in platform.wallet.log_path.read_bytes(),
             "croupier to be retrying the credits")
    platform.wallet.kill()  # what it owes is in its ledger, not in its memory
    client.set_faults()
    platform.wallet.start().wait_ready(90)
    returns = settled_returns(platform.bootstrap, bet_ids)
    wait_for(lambda: client.balance(dana) == 80_000 - 6000 + sum(returns.values()),
             "the owed credits delivered by the restarted wallet", 60)
    reconciled(platform)


def test_an_annulment_reaches_the_operator_as_calls_of_its_own(platform, bac, players,
                                                               operator):
    """A management void after the round settled: each settlement's credit is rolled back
    and each stake's debit too, each a call with an id of its own; every balance at the
    operator is back where it was."""
    _, client = operator
    erin = players.new("erin", 60_000)
    bac.open("s5")
    platform.wait_round_open(bac, "s5")
    placed = [players.bet(erin, bac, "s5", bet, 5000) for bet in ("player", "banker", "tie")]
    assert [r.status_code for r in placed] == [201] * 3
    bet_ids = {r.json()["bet"]["bet_id"] for r in placed}
    platform.wait_accepted(bet_ids)
    bac.close("s5")
    bac.complete("s5")
    wait_for(lambda: len(settled_returns(platform.bootstrap, bet_ids)) == 3, "settlements",
             explain=lambda: platform.bets_story(bet_ids))
    returns = settled_returns(platform.bootstrap, bet_ids)
    wait_for(lambda: client.balance(erin) == 60_000 - 15_000 + sum(returns.values()),
             "the settlement credited at the operator")
    bac.emit(RoundAnnulled, round_id="s5", reason_code="other",
             reason_text="wrong result keyed in, found after the round", supervisor="Sam")
    wait_for(lambda: client.balance(erin) == 60_000, "every credit and debit rolled back", 60)
    money = operator_money(client, erin)
    for bet_id in bet_ids:
        assert len(money[f"rollback:debit:{bet_id}"]) == 1
        assert len(money[f"rollback:credit:settle:{bet_id}"]) == 1
        assert [t["status"] for t in money[f"debit:{bet_id}"]] == ["rolled_back"]
    reconciled(platform)


PLAYER_WINS, BANKER_WINS = "9S,KH,KD,QC", "KH,9S,QC,KD"  # naturals, dealt P, B, P, B


def test_a_corrected_result_reaches_the_operator_as_calls_of_its_own(platform, bac, players,
                                                                     operator):
    """A supervisor corrects a settled round's cards to the other side's win: each bet's
    credit is rolled back and its settlement again credited under an id of its own; the
    player's balance at the operator is what the corrected result pays, and nothing else."""
    _, client = operator
    fay = players.new("fay", 40_000)
    bac.open("s6")
    platform.wait_round_open(bac, "s6")
    placed = [players.bet(fay, bac, "s6", bet, 5000) for bet in ("player", "banker")]
    assert [r.status_code for r in placed] == [201] * 2
    bet_of = {r.json()["bet"]["bet"]: r.json()["bet"]["bet_id"] for r in placed}
    platform.wait_accepted(set(bet_of.values()))
    bac.close("s6")
    dealt = bac.complete("s6")
    wait_for(lambda: len(settled_returns(platform.bootstrap, set(bet_of.values()))) == 2,
             "settlements")
    first = settled_returns(platform.bootstrap, set(bet_of.values()))
    wait_for(lambda: client.balance(fay) == 40_000 - 10_000 + sum(first.values()),
             "the settlement credited at the operator")

    winner = "banker" if dealt.result.winner == "player" else "player"
    cards = parse_cards(BANKER_WINS if winner == "banker" else PLAYER_WINS)
    pins = {"profile_version": dealt.profile_version, "profile_digest": dealt.profile_digest}
    correction = bac.emit(RoundCorrected, round_id="s6", shoe_id=bac.shoe_id,
                          profile=bac.profile_name, dealer="Dana", cards=tuple(cards),
                          replaced_cards=dealt.cards, correction=1, reason_code="mis_scan",
                          reason_text="the video shows another card", supervisor="Sam",
                          **{k: v for k, v in pins.items() if v is not None})
    bac.publish_result(corrected_result(correction))

    winning, losing = bet_of[winner], bet_of["player" if winner == "banker" else "banker"]
    resettled = {f"credit:settle:{b}:c1" for b in bet_of.values()}
    wait_for(lambda: resettled <= set(operator_money(client, fay)),
             "the corrected settlements credited at the operator", 60)
    again = {s["bet_id"]: s["returned"] for s in read_topic(platform.bootstrap, BETS_SETTLED_TOPIC)
             if s.get("settlement_id") in {f"settle:{b}:c1" for b in bet_of.values()}}
    assert again[losing] == 0 and again[winning] > 5000  # the other side's win, as corrected
    wait_for(lambda: client.balance(fay) == 40_000 - 10_000 + again[winning],
             "the balance the corrected result pays")
    money = operator_money(client, fay)
    for bet_id in bet_of.values():
        assert [t["status"] for t in money[f"debit:{bet_id}"]] == ["applied"]
        assert [t["amount"] for t in money[f"credit:settle:{bet_id}:c1"]] == [again[bet_id]]
        assert len(money[f"rollback:credit:settle:{bet_id}"]) == 1, bet_id
        assert [t["status"] for t in money[f"credit:settle:{bet_id}"]] == ["rolled_back"]
    reconciled(platform)
