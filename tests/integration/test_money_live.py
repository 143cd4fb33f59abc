"""Money end to end over the real broker: wallet and bet-settlement as processes,
tables scripted with real hash-chained events, bets over HTTP, and every money
invariant checked against what the topics recorded."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict

import httpx
import pytest

from services.infra.settings import Settings
from shared.events.results import RoundResultPublished
from shared.profile import load_profile
from shared.settlement import Bet, settle
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.integration.money_support import (
    OPERATOR,
    RUN,
    Platform,
    ScriptedTable,
    money_platform_fixture,
    read_topic,
    wait_for,
)

pytestmark = pytest.mark.kafka


platform = money_platform_fixture("money-home")


@pytest.fixture(scope="module")
def bac(platform):
    return ScriptedTable(platform.producer, f"BAC-{RUN}", "sbo-baccarat", seed=11)


@pytest.fixture(scope="module")
def tf(platform):
    return ScriptedTable(platform.producer, f"TF-{RUN}", "triple-face-id", seed=5)


# --- what the topics recorded -------------------------------------------------------------

def ledger(bootstrap: str) -> dict[str, dict]:
    """Distinct wallet transactions of this run by tx key; a redelivered duplicate must be
    identical in effect (same kind, amount, balance after)."""
    txs: dict[tuple[str, str], dict] = {}
    for tx in read_topic(bootstrap, WALLET_TRANSACTIONS_TOPIC):
        if RUN not in tx["player_id"]:
            continue
        key = (tx["player_id"], tx["tx_id"])
        if key in txs:
            first = txs[key]
            assert (first["amount"], first["balance_after"]) == (tx["amount"],
                                                                 tx["balance_after"]), key
        txs.setdefault(key, tx)
    return txs


def bet_endings(bootstrap: str) -> dict[tuple[str, str], set[str]]:
    endings: dict[tuple[str, str], set[str]] = defaultdict(set)
    for d in read_topic(bootstrap, BETS_DECISIONS_TOPIC):
        if d["type"] == "bet_rejected" and RUN in d["player_id"]:
            endings[(d["player_id"], d["bet_id"])].add("rejected")
    for s in read_topic(bootstrap, BETS_SETTLED_TOPIC):
        if RUN in s["player_id"]:
            ending = "voided" if s["outcome"] == "void_refund" else "settled"
            endings[(s["player_id"], s["bet_id"])].add(ending)
    return endings


def check_invariants(platform: Platform) -> None:
    txs = ledger(platform.bootstrap)
    per_player: dict[str, Counter] = defaultdict(Counter)
    for tx in txs.values():
        per_player[tx["player_id"]][tx["kind"]] += tx["amount"]
    for player_id, sums in per_player.items():
        expected = (sums["deposit"] - sums["withdrawal"] - sums["stake_debit"]
                    + sums["bet_refund"] + sums["payout"])
        assert platform.balance(player_id) == expected >= 0, player_id
    assert all(tx["balance_after"] >= 0 for tx in txs.values())
    endings = bet_endings(platform.bootstrap)
    debited = {(tx["player_id"], tx["cause_id"]) for tx in txs.values()
               if tx["kind"] == "stake_debit"}
    for bet in debited:
        assert len(endings.get(bet, ())) == 1, f"bet {bet} ended {endings.get(bet)}"
    # platform-wide: stakes - payouts - refunds = house result over the settled bets
    total = Counter()
    for tx in txs.values():
        total[tx["kind"]] += tx["amount"]
    settled = {(s["player_id"], s["settlement_id"]): s
               for s in read_topic(platform.bootstrap, BETS_SETTLED_TOPIC)
               if RUN in s["player_id"] and s["outcome"] != "void_refund"}
    house = sum(s["stake"] - s["returned"] for s in settled.values())
    assert total["stake_debit"] - total["payout"] - total["bet_refund"] == house


def all_ended(platform: Platform) -> bool:
    txs = ledger(platform.bootstrap)
    endings = bet_endings(platform.bootstrap)
    return all(endings.get((tx["player_id"], tx["cause_id"]))
               for tx in txs.values() if tx["kind"] == "stake_debit")


def settled_records(bootstrap: str, round_ids: set[str]) -> list[dict]:
    return [s for s in read_topic(bootstrap, BETS_SETTLED_TOPIC) if s["round_id"] in round_ids
            and RUN in s["player_id"]]


# --- tests -------------------------------------------------------------------------------

def test_openapi_lists_every_route(platform):
    from services.wallet.api_models import ROUTES

    doc = platform.http.get("/openapi.json").json()
    for route in ROUTES:
        assert route.method in doc["paths"][route.path], route.path
    assert "PlaceBetRequest" in doc["components"]["schemas"]


def test_authz(platform):
    alice, bob = platform.player("alice", 50_000), platform.player("bob", 50_000)
    as_alice = platform.auth(alice)
    assert platform.http.get(f"/players/{bob}/balance", headers=as_alice).status_code == 403
    assert platform.http.get(f"/players/{bob}/transactions",
                             headers=as_alice).status_code == 403
    r = platform.http.post(f"/players/{bob}/bets", headers=as_alice, json={
        "bet_id": "x1", "table_id": "T", "round_id": "R", "bet": "player", "stake": 1000})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    for method, path, body in [
        ("post", "/accounts", {"player_id": "mallory", "currency": "IDR"}),
        ("post", f"/accounts/{alice}/deposits", {"request_id": "steal", "amount": 10**9}),
        ("post", f"/accounts/{bob}/withdrawals", {"request_id": "steal", "amount": 1}),
        ("get", f"/accounts/{bob}", None),
        ("post", f"/players/{bob}/token", None),
    ]:
        r = platform.http.request(method, path, json=body, headers=as_alice)
        assert r.status_code == 403, (path, r.text)
        assert platform.http.request(method, path, json=body).status_code == 401
        r = platform.http.request(method, path, json=body,
                                  headers={"Authorization": "Bearer forged.token"})
        assert r.status_code == 401
    assert platform.http.get(f"/players/{alice}/balance", headers=as_alice).json()[
        "balance"] == 50_000
    assert platform.balance(bob) == 50_000


def test_refusals_name_the_problem(platform, bac, tf):
    carol = platform.player("carol", 20_000)
    bac.open("r0")
    platform.wait_round_open(bac, "r0")
    cases = [
        (dict(table=bac, round_id="r0", bet="big", stake=1000), 422, "bet_not_offered"),
        (dict(table=bac, round_id="r0", bet="player", stake=999), 422, "below_minimum"),
        (dict(table=bac, round_id="r0", bet="tie", stake=500_001), 422, "above_maximum"),
        (dict(table=bac, round_id="r0", bet="player", stake=1000, position=1), 422,
         "bad_position"),
        (dict(table=bac, round_id="r0", bet="player", stake=30_000), 402, "insufficient_funds"),
        (dict(table=bac, round_id="nope", bet="player", stake=1000), 404, "unknown_round"),
    ]
    for kwargs, status, code in cases:
        r = platform.bet(carol, **kwargs)
        assert (r.status_code, r.json()["error"]["code"]) == (status, code), kwargs
    r = platform.http.post(f"/players/{carol}/bets", headers=platform.auth(carol), json={
        "bet_id": "u1", "table_id": "no-such-table", "round_id": "r0", "bet": "player",
        "stake": 1000})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "unknown_table")
    r = platform.http.post(f"/players/{carol}/bets", headers=platform.auth(carol),
                           content=b'{"bet_id": ')
    assert (r.status_code, r.json()["error"]["code"]) == (400, "malformed_body")
    r = platform.http.post(f"/players/{carol}/bets", headers=platform.auth(carol),
                           json={"bet_id": "m1", "stake": "ten"})
    assert r.status_code == 422 and "stake" in r.json()["error"]["message"]
    bac.close("r0")
    wait_for(lambda: platform.bet(carol, bac, "r0", "player", 1000).status_code == 409,
             "round_closed")
    assert platform.bet(carol, bac, "r0", "player", 1000).json()["error"]["code"] == \
        "round_closed"
    bac.complete("r0")
    # a bet the wallet accepted while the close was on its way is rejected by bet-settlement
    # and refunded: wait until both services applied everything, then nothing is kept
    platform.wait_applied()
    assert platform.balance(carol) == 20_000


def test_idempotent_retry(platform, bac):
    dave = platform.player("dave", 10_000)
    bac.open("r1")
    platform.wait_round_open(bac, "r1")
    first = platform.bet(dave, bac, "r1", "banker", 4000, bet_id=f"retry-{RUN}")
    again = platform.bet(dave, bac, "r1", "banker", 4000, bet_id=f"retry-{RUN}")
    assert first.status_code == 201 and again.status_code == 200
    assert first.json() == again.json()
    assert platform.balance(dave) == 6000
    clash = platform.bet(dave, bac, "r1", "banker", 5000, bet_id=f"retry-{RUN}")
    assert (clash.status_code, clash.json()["error"]["code"]) == (409, "bet_id_conflict")


def _place_round(platform, table, round_id, players, bets) -> list[dict]:
    """Place the bets and wait until bet-settlement accepted them all (a bet still in
    flight when betting closes is rejected and refunded, which is right but not this test)."""
    placed = []
    for i, (bet, stake, position) in enumerate(bets):
        player_id = players[i % len(players)]
        r = platform.bet(player_id, table, round_id, bet, stake, position)
        assert r.status_code == 201, r.text
        placed.append({**r.json()["bet"], "player_id": player_id})
    platform.wait_accepted({b["bet_id"] for b in placed})
    return placed


BAC_BETS = [("player", 2000, None), ("banker", 3000, None), ("tie", 1000, None),
            ("player_pair", 1000, None), ("banker_pair", 1000, None),
            ("dragon_bonus_player", 1000, None), ("dragon_bonus_banker", 1000, None),
            ("fortune_six", 1000, None)]
TF_BETS = [("win", 2000, 1), ("lose", 2000, 2), ("tie", 1000, 3), ("three_knights", 1000, 1),
           ("pair_plus", 1000, "banker"), ("pair_plus", 1000, 2), ("win", 5000, 3)]


def _assert_settled_by_rules(platform, published: list[RoundResultPublished], placed):
    by_bet = {b["bet_id"]: b for b in placed}
    rounds = {p.round_id: p for p in published}
    records = settled_records(platform.bootstrap, set(rounds))
    assert {s["bet_id"] for s in records} == set(by_bet)
    for s in records:
        p = rounds[s["round_id"]]
        bet = by_bet[s["bet_id"]]
        expected = settle(Bet(bet=bet["bet"], position=bet["position"], stake=bet["stake"]),
                          p.result, load_profile(p.profile))
        assert (s["outcome"], s["returned"]) == (expected.outcome, expected.returned), s


def test_rounds_settle_by_the_rule_engine_and_voids_refund(platform, bac, tf):
    players = [platform.player(n, 200_000) for n in ("erin", "frank", "grace")]
    bac.complete("r1")  # r1 (retry test) had dave's banker bet: it settles too
    tf.open("t1")
    bac.open("r2")
    platform.wait_round_open(tf, "t1")
    platform.wait_round_open(bac, "r2")
    placed = _place_round(platform, tf, "t1", players, TF_BETS)
    placed += _place_round(platform, bac, "r2", players, BAC_BETS)
    tf.close("t1")
    bac.close("r2")
    published = [tf.complete("t1"), bac.complete("r2")]
    tf.open("t2")
    platform.wait_round_open(tf, "t2")
    voided = _place_round(platform, tf, "t2", players, TF_BETS[:3])
    tf.void("t2")
    wait_for(lambda: all_ended(platform), "every bet ended")
    _assert_settled_by_rules(platform, published, placed)
    void_records = settled_records(platform.bootstrap, {"t2"})
    assert sorted((s["outcome"], s["returned"]) for s in void_records) == sorted(
        ("void_refund", b["stake"]) for b in voided)
    manifests = [d for d in read_topic(platform.bootstrap, BETS_DECISIONS_TOPIC)
                 if d["type"] == "round_manifest" and d["table_id"] == tf.table_id
                 and d["round_id"] == "t1"]
    assert len({m["digest"] for m in manifests}) == 1
    assert manifests[0]["bet_count"] == len(TF_BETS)
    assert manifests[0]["total_stake"] == sum(s for _, s, _ in TF_BETS)
    # each funded bet names the RoundOpened its door saw, so bet-settlement waits for that
    # event however late it reads it (and rejects a bet whose round never opened there)
    opening = {(e["table_id"], e["round_id"]): e["seq"]
               for e in read_topic(platform.bootstrap, TABLE_EVENTS_TOPIC)
               if e["type"] == "round_opened" and e["table_id"] == tf.table_id}
    named = {b["bet_id"]: b.get("opened_seq") for b in read_topic(platform.bootstrap,
                                                                     BETS_PLACED_TOPIC)
             if b["type"] == "bet_placed" and b["table_id"] == tf.table_id}
    for bet in placed + voided:
        if bet["table_id"] == tf.table_id:
            assert named[bet["bet_id"]] == opening[(tf.table_id, bet["round_id"])], bet
    check_invariants(platform)


def test_duplicate_bet_id_is_rejected_and_refunded(platform, bac):
    hank, ivy = platform.player("hank", 10_000), platform.player("ivy", 10_000)
    bac.open("r3")
    platform.wait_round_open(bac, "r3")
    shared_id = f"same-{RUN}"
    assert platform.bet(hank, bac, "r3", "player", 1000, bet_id=shared_id).status_code == 201
    assert platform.bet(ivy, bac, "r3", "player", 1000, bet_id=shared_id).status_code == 201
    wait_for(lambda: platform.balance(ivy) == 10_000, "ivy refunded")
    bac.close("r3")
    bac.complete("r3")
    wait_for(lambda: all_ended(platform), "every bet ended")
    check_invariants(platform)


def test_redelivery_moves_no_money(platform, bac):
    wait_for(lambda: all_ended(platform), "every bet ended")
    before = {p: platform.balance(p) for p in platform.tokens}
    tx_count = len(ledger(platform.bootstrap))
    redelivered = Counter()
    for name in (BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, BETS_PLACED_TOPIC, ROUND_RESULTS_TOPIC):
        for record in read_topic(platform.bootstrap, name):
            if record.get("table_id", "").endswith(RUN):
                platform.producer.send(name, key=record["table_id"].encode(),
                                       value=json.dumps(record).encode())
                redelivered[name] += 1
    platform.producer.flush()
    assert all(redelivered[name] for name in (BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, BETS_PLACED_TOPIC,
                                              ROUND_RESULTS_TOPIC)), redelivered
    # not a fixed sleep: both services have provably applied every redelivered record (and
    # whatever they re-published) before "nothing changed" is asserted
    platform.wait_applied()
    assert {p: platform.balance(p) for p in platform.tokens} == before
    assert len(ledger(platform.bootstrap)) == tx_count
    check_invariants(platform)


def test_player_simulator_bets_and_is_refused_by_name(platform, bac, tf):
    import asyncio

    from services.simulators.players import PlayerSimulator

    async def run() -> Counter:
        sim = PlayerSimulator(platform.wallet.base_url, Settings().operator_token,
                              [bac.table_id, tf.table_id], players=4, seed=3, bad_share=0.4,
                              run_id=f"sim{RUN}"[:12])
        try:
            await sim.setup()
            for table in (bac, tf):
                sim.closed_rounds[table.table_id] = "r0" if table is bac else "t1"
                await sim.bet_on_round(await sim.current_round(table.table_id),
                                       bets_per_player=5)
            return sim.answers
        finally:
            await sim.close()

    bac.open("r5")
    tf.open("t3")
    platform.wait_round_open(bac, "r5")
    platform.wait_round_open(tf, "t3")
    answers = asyncio.run(run())
    assert answers["201"] > 0 and sum(answers.values()) == 40
    assert {a.split()[1] for a in answers if " " in a} <= {
        "below_minimum", "bet_not_offered", "bad_position", "insufficient_funds",
        "round_closed"}
    assert len(answers) >= 3, answers
    time.sleep(1)
    for table, round_id in ((bac, "r5"), (tf, "t3")):
        table.close(round_id)
        table.complete(round_id)
    wait_for(lambda: all_ended(platform), "every simulated bet ended")
    check_invariants(platform)


def test_kill_minus_9_and_restart_moves_nothing_twice(platform, bac):
    jack = platform.player("jack", 100_000)
    bac.open("r4")
    platform.wait_round_open(bac, "r4")
    placed = _place_round(platform, bac, "r4", [jack], BAC_BETS[:4])
    balance = platform.balance(jack)
    platform.wallet.kill()
    platform.settlement.kill()
    bac.close("r4")
    published = bac.complete("r4")
    platform.start()
    wait_for(lambda: all_ended(platform), "every bet ended after restart", 60)
    _assert_settled_by_rules(platform, [published], placed)
    expected = balance + sum(s["returned"] for s in settled_records(platform.bootstrap, {"r4"}))
    wait_for(lambda: platform.balance(jack) == expected, "jack paid once")
    check_invariants(platform)


def test_right_after_a_restart_the_wallet_never_says_an_account_is_unknown(platform):
    """Issue 11 finding 5: a wallet restarting (its tables still recovering) answered 404
    unknown_account for accounts that exist. From the moment its port answers it must say
    503 (retry) until it can answer for the account, and then the right balance."""
    kim = platform.player("kim", 70_000)
    platform.wallet.kill()
    platform.wallet.start()
    statuses: list[int] = []
    deadline = time.monotonic() + 90
    with httpx.Client(base_url=platform.wallet.base_url, timeout=10) as http:
        while time.monotonic() < deadline:
            try:
                r = http.get(f"/accounts/{kim}", headers=OPERATOR)
            except httpx.TransportError:  # not listening yet
                time.sleep(0.05)
                continue
            statuses.append(r.status_code)
            if r.status_code == 200:
                assert r.json()["balance"] == 70_000, r.text
                break
            assert r.status_code == 503, (r.status_code, r.text)
            time.sleep(0.05)
    assert statuses and statuses[-1] == 200, Counter(statuses)
    platform.wallet.wait_ready(90)
