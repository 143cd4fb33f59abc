"""Issue 11 finding 10 through the real wallet and bet-settlement: two players deposit with the
same request id (the operator guide's `dep-1`) and bet with the same bet id, in one round (the second
is rejected `duplicate_bet_id` and refunded) and on two tables (both settled, each paid into
their own account); `croupier rebuild` then reports no difference and compares both players.
An id that is not one (`..`) is refused at the wallet's door by name, and an account of that
name left in the log by an older wallet cannot crash rebuild."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.operator.rebuild import rebuild
from services.operator.wallet_client import live_balances
from shared.events.wallet_events import WalletTransaction
from shared.topics import BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, WALLET_TRANSACTIONS_TOPIC
from tests.integration.money_support import (
    OPERATOR,
    RUN,
    ScriptedTable,
    money_platform_fixture,
    read_topic,
    wait_for,
)

pytestmark = pytest.mark.kafka
DEPOSIT = 50_000


platform = money_platform_fixture("ids-home")


def _account(platform, player_id: str, request_id: str = "dep-1") -> str:
    r = platform.http.post("/accounts", json={"player_id": player_id, "currency": "IDR"},
                           headers=OPERATOR)
    assert r.status_code == 201, r.text
    r = platform.http.post(f"/accounts/{player_id}/deposits", headers=OPERATOR,
                           json={"request_id": request_id, "amount": DEPOSIT})
    assert r.status_code == 201, r.text
    platform.tokens[player_id] = platform.http.post(f"/players/{player_id}/token",
                                                    headers=OPERATOR).json()["token"]
    return player_id


@pytest.mark.parametrize("player_id", ["..", ".", "a/b", "a b", "a\x00b", "", "x:y"])
def test_an_id_that_is_not_one_is_refused_at_the_door_by_name(platform, player_id):
    r = platform.http.post("/accounts", json={"player_id": player_id, "currency": "IDR"},
                           headers=OPERATOR)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "bad_id"
    assert platform.http.get("/accounts/%2E%2E", headers=OPERATOR).status_code == 404


def test_two_players_share_a_request_id_and_a_bet_id_and_rebuild_agrees(platform):
    alice, bob = _account(platform, f"alice-{RUN}"), _account(platform, f"bob-{RUN}")
    again = platform.http.post(f"/accounts/{bob}/deposits", headers=OPERATOR,
                               json={"request_id": "dep-1", "amount": DEPOSIT})
    assert again.status_code == 200  # bob's own retry: the original answer, nothing moved
    assert platform.balance(alice) == platform.balance(bob) == DEPOSIT

    one = ScriptedTable(platform.producer, f"IDA-{RUN}", "sbo-baccarat", seed=11)
    two = ScriptedTable(platform.producer, f"IDB-{RUN}", "sbo-baccarat", seed=11)
    for table in (one, two):
        table.open("r1")
        platform.wait_round_open(table, "r1")
    same, cross = f"same-{RUN}", f"cross-{RUN}"
    # one round, one bet id, two players: alice's first, bob's rejected duplicate_bet_id
    assert platform.bet(alice, one, "r1", "banker", 4_000, bet_id=same).status_code == 201
    assert platform.bet(bob, one, "r1", "player", 3_000, bet_id=same).status_code == 201
    wait_for(lambda: platform.balance(bob) == DEPOSIT, "bob's duplicate refunded")
    # one bet id, two players, two tables (the same round id): both accepted, both settled
    assert platform.bet(alice, one, "r1", "player", 2_000, bet_id=cross).status_code == 201
    assert platform.bet(bob, two, "r1", "player", 2_000, bet_id=cross).status_code == 201
    # placed is not decided: a close that reached bet-settlement first would refuse them
    wanted = {(alice, one.table_id, same), (alice, one.table_id, cross),
              (bob, two.table_id, cross)}
    wait_for(lambda: wanted <= {(d["player_id"], d["table_id"], d["bet_id"]) for d in
                                  read_topic(platform.bootstrap, BETS_DECISIONS_TOPIC)
                                  if d["type"] == "bet_accepted"}, "the three bets accepted")
    results = {}
    for table in (one, two):
        table.close("r1")
        # every card on table.events too: rebuild recomputes the result from them
        results[table.table_id] = table.complete("r1", deal_cards=True)

    def settled() -> set[tuple[str, str, str]]:
        return {(s["player_id"], s["table_id"], s["bet_id"])
                for s in read_topic(platform.bootstrap, BETS_SETTLED_TOPIC)}
    wait_for(lambda: wanted <= settled(), "every accepted bet settled", 90)
    # a record published again (bet-settlement's outbox after a retried batch) is the same
    # record: consumers dedupe on it, and so does this count
    rejected = {(d["player_id"], d["bet_id"], d["reason_code"])
                for d in read_topic(platform.bootstrap, BETS_DECISIONS_TOPIC)
                if d["type"] == "bet_rejected"}
    assert rejected == {(bob, same, "duplicate_bet_id")}

    # each player is paid what the rule engine says for their own bets, into their own account
    settlements = {(s["player_id"], s["table_id"], s["settlement_id"]): s
                   for s in read_topic(platform.bootstrap, BETS_SETTLED_TOPIC)}
    paid = {s["player_id"]: 0 for s in settlements.values()}
    for s in settlements.values():
        paid[s["player_id"]] += s["returned"]

    def balances_settled() -> bool:
        return (platform.balance(alice) == DEPOSIT - 6_000 + paid[alice]
                and platform.balance(bob) == DEPOSIT - 2_000 + paid[bob])
    wait_for(balances_settled, "payouts credited to their own players")
    txs = [(t["player_id"], t["tx_id"]) for t in read_topic(platform.bootstrap,
                                                             WALLET_TRANSACTIONS_TOPIC)]
    assert (alice, "deposit:dep-1") in txs and (bob, "deposit:dep-1") in txs

    wallet = platform.wallet.base_url
    token = OPERATOR["Authorization"].removeprefix("Bearer ")
    report = rebuild(platform.bootstrap, lambda ps: live_balances(wallet, token, ps))
    assert report.differences == [], report.differences
    assert report.audit.balances == {alice: platform.balance(alice), bob: platform.balance(bob)}
    assert report.live_players == 2 and report.audit.invariants_ok
    assert (report.audit.bets, report.audit.settled, report.audit.rejected) == (4, 3, 1)
    assert report.audit.deposits == 2 * DEPOSIT


def test_an_account_named_dot_dot_in_the_log_cannot_crash_rebuild(platform):
    """As an older wallet wrote it: a deposit into an account named `..`."""
    forged = WalletTransaction(tx_id="deposit:dep-1", player_id="..", kind="deposit",
                               amount=7, balance_after=7, currency="IDR", cause_id="dep-1",
                               occurred_at=datetime.now(UTC))
    platform.producer.send(WALLET_TRANSACTIONS_TOPIC, key=b"..",
                           value=forged.model_dump_json().encode())
    platform.producer.flush()
    wallet = platform.wallet.base_url
    token = OPERATOR["Authorization"].removeprefix("Bearer ")
    report = rebuild(platform.bootstrap, lambda ps: live_balances(wallet, token, ps))
    assert len(report.differences) == 1, report.differences
    assert report.differences[0].startswith("player '..': not compared with the live wallet")
    assert report.live_players == 2 and report.audit.balances[".."] == 7
