"""Issue 12 through the real services (wallet and bet-settlement as processes, a real broker,
tables scripted with hash-chained events): seed 002's table maximum per spot and its Tiger
sign, a bet counting by its time (the round waits for the wallet's intake marks), and a
management void after completion reversing the settlements by compensating records."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.events.bet_events import BetPlaced
from shared.events.table import RoundAnnulled
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.integration.money_support import (
    RUN,
    ScriptedTable,
    money_platform_fixture,
    read_topic,
    wait_for,
)

pytestmark = pytest.mark.kafka
MAX = 5_000_000  # sbo-baccarat: player, banker


platform = money_platform_fixture("acceptance-home")


def decisions(platform, table, round_id) -> dict[str, dict]:
    return {d["bet_id"]: d for d in read_topic(platform.bootstrap, BETS_DECISIONS_TOPIC)
            if d.get("table_id") == table.table_id and d.get("round_id") == round_id
            and d["type"] in ("bet_accepted", "bet_rejected")}


def manifests(platform, table, round_id) -> list[dict]:
    return [d for d in read_topic(platform.bootstrap, BETS_DECISIONS_TOPIC)
            if d["type"] == "round_manifest" and d["table_id"] == table.table_id
            and d["round_id"] == round_id]


def inject_bet(platform, table, round_id, bet_id, placed_at, stake=1000, bet="player",
               player="ghost", currency="IDR"):
    """A funded bet as a wallet worker would have written it, stamped `placed_at` (the
    player has no account: this is bet-settlement's binding decision alone)."""
    record = BetPlaced(bet_id=bet_id, player_id=f"{player}-{RUN}", table_id=table.table_id,
                       round_id=round_id, bet=bet, stake=stake, currency=currency,
                       debit_tx_id=f"stake_debit:{bet_id}", placed_at=placed_at)
    platform.producer.send(BETS_PLACED_TOPIC, key=table.table_id.encode(),
                           value=record.model_dump_json().encode())
    platform.producer.flush()


def test_seed002_table_maximum_is_per_spot_per_round_live(platform):
    table = ScriptedTable(platform.producer, f"MAX-{RUN}", "sbo-baccarat", seed=11)
    alice = platform.player("max-alice", 3 * MAX)
    table.open("m1")
    platform.wait_round_open(table, "m1")
    first = platform.bet(alice, table, "m1", "player", MAX)
    second = platform.bet(alice, table, "m1", "player", MAX)
    assert first.status_code == 201, first.text
    assert (second.status_code, second.json()["error"]["code"]) == (422, "spot_maximum")
    assert platform.bet(alice, table, "m1", "player", 1000).json()["error"]["code"] == \
        "spot_maximum"
    assert platform.bet(alice, table, "m1", "banker", MAX).status_code == 201  # another spot
    assert platform.balance(alice) == MAX  # the refused bets debited nothing
    # bet-settlement's binding decision, for bets that reached bets.placed anyway
    now = datetime.now(UTC)
    inject_bet(platform, table, "m1", f"g1-{RUN}", now, stake=MAX)
    inject_bet(platform, table, "m1", f"g2-{RUN}", now, stake=MAX)
    wait_for(lambda: {f"g1-{RUN}", f"g2-{RUN}"} <= set(decisions(platform, table, "m1")),
             "the injected bets decided")
    got = decisions(platform, table, "m1")
    assert got[f"g1-{RUN}"]["type"] == "bet_accepted"
    assert (got[f"g2-{RUN}"]["type"], got[f"g2-{RUN}"]["reason_code"]) == (
        "bet_rejected", "spot_maximum")
    table.close("m1")
    table.complete("m1")


def test_issue20_limits_in_the_players_currency_and_currency_not_offered_live(platform):
    """sbo-baccarat v2 states limits and chips per currency: a JPY player meets the JPY limits
    (0 minor units) at the wallet's door and in bet-settlement; a GBP player, a currency the
    table does not offer, is refused `currency_not_offered` at both."""
    table = ScriptedTable(platform.producer, f"CUR-{RUN}", "sbo-baccarat", seed=15)
    yen = platform.player("cur-yen", 1_000_000, currency="JPY")
    pound = platform.player("cur-gbp", 100_000, currency="GBP")
    table.open("c1", pin=True)  # under v2, as dealer-event opens a round
    platform.wait_round_open(table, "c1")
    shown = platform.http.get(f"/tables/{table.table_id}/current-round",
                              params={"currency": "JPY"}).json()
    assert [entry["currency"] for entry in shown["limits"]] == ["JPY"]
    assert shown["bets"]["player"]["min_stake"] == 100 and shown["limits"][0]["chips"]
    listed = platform.http.get("/tables", params={"currency": "GBP"}).json()["tables"]
    assert [t["limits"] for t in listed if t["table_id"] == table.table_id] == [[]]
    assert platform.bet(yen, table, "c1", "player", 100).status_code == 201  # JPY 100
    low = platform.bet(yen, table, "c1", "banker", 99)
    assert (low.status_code, low.json()["error"]["code"]) == (422, "below_minimum")
    assert "minimum of JPY 100" in low.json()["error"]["message"]
    refused = platform.bet(pound, table, "c1", "player", 1000)
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        422, "currency_not_offered")
    assert "does not offer GBP" in refused.json()["error"]["message"]
    assert platform.balance(pound) == 100_000  # nothing debited
    now = datetime.now(UTC)
    inject_bet(platform, table, "c1", f"gbp-{RUN}", now, currency="GBP")
    inject_bet(platform, table, "c1", f"jpy-{RUN}", now, stake=99, currency="JPY")
    wait_for(lambda: {f"gbp-{RUN}", f"jpy-{RUN}"} <= set(decisions(platform, table, "c1")),
             "the injected bets decided")
    got = decisions(platform, table, "c1")
    assert got[f"gbp-{RUN}"]["reason_code"] == "currency_not_offered"
    assert got[f"jpy-{RUN}"]["reason_code"] == "below_minimum"
    table.close("c1")
    table.complete("c1")
    # a round recorded without a version is played under v1: any currency, v1's limits
    table.open("c2")
    platform.wait_round_open(table, "c2")
    assert platform.bet(pound, table, "c2", "player", 1000).status_code == 201
    assert platform.bet(yen, table, "c2", "player", 100).json()["error"]["code"] == \
        "below_minimum"
    table.close("c2")
    table.complete("c2")


def test_seed002_tiger_sign_current_round_shows_it_and_the_wallet_enforces_it_live(platform):
    """Seed 002, Tiger Baccarat: the casino "will display a sign at the table when this
    applies": the wallet's current round says so at `sbo-tiger`, and not at `sbo-baccarat`."""
    tiger = ScriptedTable(platform.producer, f"SIGN-{RUN}", "sbo-tiger", seed=13)
    plain = ScriptedTable(platform.producer, f"NOSIGN-{RUN}", "sbo-baccarat", seed=14)
    carol = platform.player("sign-carol", 100_000)
    for table in (tiger, plain):
        table.open("s1")
        platform.wait_round_open(table, "s1")
    shown = platform.http.get(f"/tables/{tiger.table_id}/current-round").json()
    [sign] = shown["restrictions"]
    assert sign["code"] == "tiger_needs_main_bet" and "tiger" in sign["bets"]
    assert sign["requires_one_of"] == ["player", "banker", "tie"]
    assert "Banker's Hand or Tie" in sign["sign"]
    assert platform.http.get(f"/tables/{plain.table_id}/current-round").json()[
        "restrictions"] == []
    # what the sign says is what the wallet does: a Tiger wager first is refused
    refused = platform.bet(carol, tiger, "s1", "tiger", 1000)
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "needs_main_bet")
    assert platform.bet(carol, tiger, "s1", "banker", 1000).status_code == 201
    assert platform.bet(carol, tiger, "s1", "tiger", 1000).status_code == 201
    for table in (tiger, plain):
        table.close("s1")
        table.complete("s1")


def test_issue12_a_bet_counts_by_its_time_not_by_arrival_live(platform):
    """bet-settlement is stopped while the bets and the close are written, so on restart it
    reads bets.placed and table.events in whatever order: a bet placed before the close is
    accepted, one placed after it is rejected `round_closed`, either way; the manifest comes
    once the wallet's intake mark covers its partitions, before the round's result. The
    table closes when its timer ends (an early close: docs/decisions/acceptance.md)."""
    table = ScriptedTable(platform.producer, f"TIME-{RUN}", "sbo-baccarat", seed=5)
    bob = platform.player("time-bob", 100_000)
    table.open("t1", window_s=12)
    platform.wait_round_open(table, "t1")
    closes_at = datetime.fromisoformat(platform.http.get(
        f"/tables/{table.table_id}/current-round").json()["betting_closes_at"])
    platform.settlement.stop()
    try:
        in_time = platform.bet(bob, table, "t1", "player", 2000)
        assert in_time.status_code == 201, in_time.text
        inject_bet(platform, table, "t1", f"after-{RUN}", closes_at + timedelta(seconds=5))
        inject_bet(platform, table, "t1", f"before-{RUN}", closes_at - timedelta(seconds=1))
        wait_for(lambda: datetime.now(UTC) >= closes_at, "the betting timer", 30)
        # stamped before the close and written once the timer ran out, as a wallet worker
        # that stamped it in time publishes it: before its intake mark, which it writes only
        # once it reads the close below (written after the close, the bet could land behind
        # the mark, which no wallet does, and be rejected: the CI failure of stop 25)
        inject_bet(platform, table, "t1", f"before-read-after-{RUN}",
                   closes_at - timedelta(milliseconds=100))
        table.close("t1")
        wait_for(lambda: any(r["type"] == "intake_mark" and r["round_id"] == "t1"
                             for r in read_topic(platform.bootstrap, BETS_PLACED_TOPIC)),
                 "the wallet's intake mark")
    finally:
        platform.settlement.start()
        platform.settlement.wait_ready(90)
    wait_for(lambda: manifests(platform, table, "t1"), "the manifest, before any result", 90)
    got = decisions(platform, table, "t1")
    bet_id = in_time.json()["bet"]["bet_id"]
    assert got[bet_id]["type"] == "bet_accepted"
    assert got[f"before-{RUN}"]["type"] == "bet_accepted"
    assert got[f"before-read-after-{RUN}"]["type"] == "bet_accepted"
    assert (got[f"after-{RUN}"]["type"], got[f"after-{RUN}"].get("reason_code")) == (
        "bet_rejected", "round_closed")
    manifest = manifests(platform, table, "t1")[0]
    assert (manifest["bet_count"], manifest["total_stake"]) == (3, 4000)
    # a bet that comes once the manifest is written is too late, whatever its time
    inject_bet(platform, table, "t1", f"too-late-{RUN}", closes_at - timedelta(seconds=2))
    wait_for(lambda: f"too-late-{RUN}" in decisions(platform, table, "t1"), "the late one")
    assert decisions(platform, table, "t1")[f"too-late-{RUN}"]["reason_code"] == "round_closed"
    table.complete("t1")
    wait_for(lambda: any(s["bet_id"] == bet_id for s in read_topic(platform.bootstrap,
                                                                    BETS_SETTLED_TOPIC)),
             "bob's bet settled", 60)


def test_seed000_004_annulled_round_reverses_payouts_and_refunds_stakes_live(platform):
    table = ScriptedTable(platform.producer, f"ANNUL-{RUN}", "sbo-baccarat", seed=3)
    players = {name: platform.player(f"annul-{name}", 50_000)
               for name in ("player", "banker", "tie")}
    table.open("a1")
    platform.wait_round_open(table, "a1")
    stakes = {"player": 10_000, "banker": 20_000, "tie": 5_000}
    bet_ids = {}
    for bet, stake in stakes.items():
        r = platform.bet(players[bet], table, "a1", bet, stake, bet_id=f"{bet}-{uuid.uuid4().hex}")
        assert r.status_code == 201, r.text
        bet_ids[bet] = r.json()["bet"]["bet_id"]
    table.close("a1")
    table.complete("a1")

    def settled() -> list[dict]:
        return [s for s in read_topic(platform.bootstrap, BETS_SETTLED_TOPIC)
                if s["table_id"] == table.table_id and s["round_id"] == "a1"]
    wait_for(lambda: len(settled()) == 3, "the round settled",
             explain=lambda: platform.bets_story(set(bet_ids.values())))
    originals = {s["bet_id"]: s for s in settled()}
    expected = {bet: 50_000 - stakes[bet] + originals[bet_ids[bet]]["returned"]
                for bet in stakes}
    wait_for(lambda: all(platform.balance(players[b]) == expected[b] for b in stakes),
             "the settlement paid")
    assert any(s["returned"] > s["stake"] for s in originals.values())  # someone won

    table.emit(RoundAnnulled, round_id="a1", reason_code="other",
               reason_text="wrong result keyed in, found after the round", supervisor="Sam")
    wait_for(lambda: all(platform.balance(players[b]) == 50_000 for b in stakes),
             "every stake refunded and every payout taken back", 60)

    records = settled()
    reversals = {r["bet_id"]: r for r in records if r["type"] == "settlement_reversed"}
    refunds = {r["bet_id"]: r for r in records
               if r["type"] == "bet_settled" and r["settlement_id"].startswith("annul-refund:")}
    assert set(reversals) == set(refunds) == set(originals)
    for bet_id, original in originals.items():
        assert original["settlement_id"] == f"settle:{bet_id}"  # the original stands
        assert (reversals[bet_id]["settlement_id"], reversals[bet_id]["amount"],
                reversals[bet_id]["reversal_id"], reversals[bet_id]["supervisor"]) == (
            original["settlement_id"], original["returned"],
            f"reverse:{original['settlement_id']}", "Sam")
        assert (refunds[bet_id]["outcome"], refunds[bet_id]["returned"]) == (
            "void_refund", original["stake"])
        order = [i for i, r in enumerate(records) if r["bet_id"] == bet_id]
        assert [records[i]["type"] for i in order] == [
            "bet_settled", "settlement_reversed", "bet_settled"]  # in the log, in that order

    txs: dict[str, dict] = {}
    for tx in read_topic(platform.bootstrap, WALLET_TRANSACTIONS_TOPIC):
        if tx["player_id"] in players.values():
            txs.setdefault(tx["tx_id"], tx)
    for bet, player_id in players.items():
        mine = [tx for tx in txs.values() if tx["player_id"] == player_id]
        moved = sum(tx["amount"] * (1 if tx["kind"] in ("deposit", "bet_refund", "payout")
                                    else -1) for tx in mine)
        assert moved == platform.balance(player_id) == 50_000
        kinds = sorted(tx["kind"] for tx in mine)
        returned = originals[bet_ids[bet]]["returned"]
        assert kinds == sorted(["deposit", "stake_debit", "bet_refund"]
                               + (["payout", "payout_reversal"] if returned else [])), kinds
