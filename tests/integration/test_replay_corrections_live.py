"""Issue 19 item 1 (seed 004 §5) through the four real services on the real broker: a
supervisor's `correct_round` turns a settled banker win into a player win; each player's
balance moves by exactly the difference the rule engine gives, the wallet moves one reversal
and one new payout where due, and the operator's replay shows both settlements and says MATCH."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from services.operator.replay_service import ReplayRequest, run_replay
from services.operator.report_render import render
from shared.cards import parse_card, parse_cards
from shared.events.inputs import (
    CloseBetting,
    CorrectRound,
    NewShoe,
    OpenRound,
    ScanCard,
)
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.settlement import Bet, settle
from shared.topics import (
    BETS_SETTLED_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.integration.money_support import WalletAt, read_topic, wait_for
from tests.integration.tables_live_support import HandDriver, table_and_money_fixture

pytestmark = pytest.mark.kafka

PROFILE = "sbo-baccarat"
DEALT = "KS,8H,QD,KC"  # Player 0 against a natural Banker 8: banker wins
CORRECTED = "9S,8H,QD,KC"  # the first card was a 9S (the video): a natural Player 9 wins


services = table_and_money_fixture("corrections-home")


def test_seed004_s5_a_correction_turns_a_banker_win_into_a_player_win_moves_exactly_the_differences_and_replays_to_match(  # noqa: E501
        services, platform_kafka):
    table_id, round_id = f"COR-{uuid.uuid4().hex[:6]}", "R1"
    table = HandDriver(services["dealer-event"].base_url, table_id)
    wallet = WalletAt(services["wallet"].base_url)
    deposit = 100_000
    alice, bob = wallet.player(f"cor-alice-{table_id}", deposit), \
        wallet.player(f"cor-bob-{table_id}", deposit)
    table.ok(NewShoe, shoe_id="S1", profile=PROFILE)
    played_at = datetime.now(UTC)
    table.ok(OpenRound, round_id=round_id, dealer="Ayu")
    wallet.wait_round_open(SimpleNamespace(table_id=table_id), round_id)
    wagers = [(alice, "player", 10_000), (alice, "banker", 20_000), (bob, "tie", 5_000),
              (bob, "banker", 10_000)]
    bets = {}
    for player, side, stake in wagers:
        r = wallet.bet(player, SimpleNamespace(table_id=table_id), round_id, side, stake)
        assert r.status_code == 201, r.text
        bets[r.json()["bet"]["bet_id"]] = (player, side, stake)
    table.ok(CloseBetting, round_id=round_id, role="supervisor", reason_text="test: early close")
    for card in parse_cards(DEALT):
        table.ok(ScanCard, round_id=round_id, card=card)

    profile = load_profile(PROFILE)
    before = {b: settle(Bet(bet=side, stake=stake), evaluate_round(profile, parse_cards(DEALT)),
                        profile).returned for b, (_, side, stake) in bets.items()}
    after = {b: settle(Bet(bet=side, stake=stake),
                       evaluate_round(profile, parse_cards(CORRECTED)), profile).returned
             for b, (_, side, stake) in bets.items()}

    def expected_balance(returns: dict[str, int], player: str) -> int:
        return deposit + sum(returns[b] - stake for b, (p, _, stake) in bets.items()
                             if p == player)

    def settled() -> list[dict]:
        return [s for s in read_topic(platform_kafka, BETS_SETTLED_TOPIC)
                if s["table_id"] == table_id]

    wait_for(lambda: len(settled()) == len(bets) and all(
        wallet.balance(p) == expected_balance(before, p) for p in (alice, bob)),
        "the banker win settled and paid", 60)

    table.ok(CorrectRound, round_id=round_id, position=0, card=parse_card("9S"),
             reason_code="mis_scan", reason_text="the video shows 9S, not KS")
    changed = {b for b in bets if after[b] != before[b]}
    assert changed == {b for b, (_, side, _) in bets.items() if side != "tie"}
    wait_for(lambda: sum(s["settlement_id"].endswith(":c1") for s in settled()) == len(changed)
             and all(wallet.balance(p) == expected_balance(after, p) for p in (alice, bob)),
             "the correction applied", 60)
    for player in (alice, bob):  # exactly the difference, nothing else
        assert wallet.balance(player) - expected_balance(before, player) == sum(
            after[b] - before[b] for b, (p, _, _) in bets.items() if p == player)

    txs: dict[str, dict] = {}
    for tx in read_topic(platform_kafka, WALLET_TRANSACTIONS_TOPIC):
        if tx["player_id"] in (alice, bob):
            txs.setdefault(tx["tx_id"], tx)
    reversals = [tx for tx in txs.values() if tx["kind"] == "payout_reversal"]
    payouts_again = [tx for tx in txs.values()
                     if tx["kind"] == "payout" and tx["cause_id"].endswith(":c1")]
    assert sorted(tx["cause_id"] for tx in reversals) == sorted(
        f"reverse:settle:{b}" for b in changed if before[b])
    assert all(tx["amount"] == before[tx["cause_id"].removeprefix("reverse:settle:")]
               for tx in reversals)
    assert sorted((tx["cause_id"], tx["amount"]) for tx in payouts_again) == sorted(
        (f"settle:{b}:c1", after[b]) for b in changed if after[b])

    # dealer-event put the correction on its index too, the very event table.events carries
    indexed = [e for e in read_topic(platform_kafka, TABLE_CORRECTIONS_TOPIC) if e["table_id"] == table_id]
    assert [e for e in read_topic(platform_kafka, TABLE_EVENTS_TOPIC) if e["table_id"] == table_id
            and e["type"] == "round_corrected"] == indexed and len(indexed) == 1

    report, notes, _ = run_replay(platform_kafka, ReplayRequest(table_id, round_id, played_at))
    text = render(report, "text", notes)
    assert report.verdict == "MATCH", text
    assert "Correction 1 by supervisor-1" in text and "the video shows 9S, not KS" in text
    data = json.loads(render(report, "json", notes))
    [correction] = data["corrections"]
    assert (correction["reason_code"], correction["supervisor"], correction["winner"]) == (
        "mis_scan", "supervisor-1", "player")
    assert data["winner"] == "banker" and data["status"] == "corrected"
    for line in data["bets"]:
        steps = [(s["record_id"], s["amount"]) for s in line["history"]]
        b = line["bet_id"]
        if b in changed:
            assert steps == [(f"settle:{b}", before[b]), (f"reverse:settle:{b}", before[b]),
                             (f"settle:{b}:c1", after[b])]
        else:
            assert steps == [(f"settle:{b}", before[b])]
        assert line["net"] == after[b] - bets[b][2]
    assert "the video shows 9S, not KS" in render(report, "html", notes)
