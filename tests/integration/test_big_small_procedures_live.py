"""Seed 004 §4, §6 and §7 at the Big/Small table (`baccarat-big-small`) through the four
real services on the real broker: dealer-event decides the supervisor's report, the
operator sees it on `table.events`, and the players' bets are refunded (§4, §7) or settled
on the cards (§6) by bet-settlement and the wallet. Decisions: docs/decisions/procedures.md
§13."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from shared.cards import parse_card, parse_cards
from shared.events.inputs import (
    Burn,
    NewShoe,
    OpenRound,
    ReportTwoCards,
    ScanCard,
    ShoeFirstCard,
    VoidRound,
)
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.settlement import Bet, settle
from shared.topics import BETS_SETTLED_TOPIC
from tests.integration.money_support import WalletAt, read_topic, wait_for
from tests.integration.tables_live_support import (
    HandDriver,
    table_and_money_fixture,
    table_events,
)

pytestmark = pytest.mark.kafka

PROFILE = "baccarat-big-small"
DEPOSIT = 100_000
# (player, bet, stake): both sides of the main bets and of Big/Small, a tie and a pair
WAGERS = [("a", "player", 10_000), ("a", "small", 5_000), ("b", "banker", 20_000),
          ("b", "big", 10_000), ("b", "tie", 2_000), ("a", "player_pair", 1_000)]


services = table_and_money_fixture("big-small-home")


class _Round:
    """One Big/Small table with a shoe started, and a round with every WAGERS bet placed by
    two funded players, betting closed, and `first` cards dealt (after the hand's burn)."""

    def __init__(self, services, prefix: str, first: str) -> None:
        self.table_id, self.round_id = f"{prefix}-{uuid.uuid4().hex[:6]}", "R1"
        self.table = HandDriver(services["dealer-event"].base_url, self.table_id)
        self.wallet = WalletAt(services["wallet"].base_url)
        self.players = {p: self.wallet.player(f"bs-{p}-{self.table_id}", DEPOSIT)
                        for p in ("a", "b")}
        self.table.ok(NewShoe, shoe_id="S1", profile=PROFILE)
        self.table.ok(ShoeFirstCard, card=parse_card("5H"))
        self.table.ok(Burn)
        self.table.ok(OpenRound, round_id=self.round_id, dealer="Ayu")
        self.wallet.wait_round_open(SimpleNamespace(table_id=self.table_id), self.round_id)
        self.bets: dict[str, tuple[str, str, int]] = {}
        for p, side, stake in WAGERS:
            r = self.wallet.bet(self.players[p], SimpleNamespace(table_id=self.table_id),
                                self.round_id, side, stake)
            assert r.status_code == 201, r.text
            self.bets[r.json()["bet"]["bet_id"]] = (self.players[p], side, stake)
        self.table.close(self.round_id)
        self.deal(first)

    def deal(self, cards: str) -> None:
        for card in parse_cards(cards):
            self.table.ok(ScanCard, round_id=self.round_id, card=card)

    def settled_as(self, returns: dict[str, tuple[str, int]], bootstrap: str) -> None:
        """Every bet settled once, with `returns[bet_id]` = (outcome, returned), and each
        player's balance is the deposit plus what came back less the stakes."""
        def settled() -> dict[str, tuple[str, int]]:
            return {s["bet_id"]: (s["outcome"], s["returned"])
                    for s in read_topic(bootstrap, BETS_SETTLED_TOPIC)
                    if s["table_id"] == self.table_id and s.get("type") == "bet_settled"}

        def balanced() -> bool:
            return all(self.wallet.balance(player) == DEPOSIT + sum(
                returns[b][1] - stake for b, (p, _, stake) in self.bets.items() if p == player)
                for player in self.players.values())

        wait_for(lambda: settled() == returns and balanced(),
                 f"the bets of {self.table_id} settled as {returns}", 60,
                 explain=lambda: f"settled: {settled()}")


def _tail(bootstrap: str, table_id: str, n: int) -> list:
    return table_events(bootstrap, {table_id})[table_id][-n:]


def test_seed004_s4_a_card_exposed_during_the_deal_voids_the_hand_and_the_shoe_refunds_every_bet(
        services, platform_kafka):
    """"adanya kartu yang terbuka ... selama permainan akan menyebabkan pembatalan pada hand
    dan shoe"."""
    rnd = _Round(services, "BS4", "9S,2H")
    rnd.table.ok(VoidRound, round_id="R1", reason_code="card_exposed",
                 reason_text="the next card flashed face up")
    voided, ended = _tail(platform_kafka, rnd.table_id, 2)
    assert (voided.type, voided.reason_code, voided.supervisor) == (
        "round_voided", "card_exposed", "supervisor-1")
    assert ended.type == "shoe_ended" and ended.shoe_id == "S1"
    rnd.settled_as({b: ("void_refund", stake) for b, (_, _, stake) in rnd.bets.items()},
                   platform_kafka)
    assert rnd.table.code(OpenRound, round_id="R2", dealer="Ayu") == "no_shoe"


def test_seed004_s6_two_cards_drawn_at_once_the_hand_settles_by_the_card_rules_then_the_shoe_ends(
        services, platform_kafka):
    """"Jika 2 kartu atau lebih yang ditaraik, hasil dari kesalahan pada hand akan tergantung
    pada peraturan kartu permainan and shoe ... akan di batalkan": no void, no refund; every
    bet settles on the cards as they left the shoe, then the shoe ends."""
    rnd = _Round(services, "BS6", "9S,2H")  # 9S and 2H came out together
    assert rnd.table.code(VoidRound, round_id="R1", reason_code="two_cards_dealt",
                          reason_text="two cards out") == "two_cards_by_card_rules"
    rnd.table.ok(ReportTwoCards, round_id="R1", reason_text="9S and 2H drawn together")
    rnd.deal("KD,5C")  # P 9S KD = 9 against B 2H 5C = 7: Player, on 4 cards (Small)
    tail = _tail(platform_kafka, rnd.table_id, 5)
    assert [e.type for e in tail] == ["two_cards_drawn", "card_dealt", "card_dealt",
                                      "round_completed", "shoe_ended"]
    assert tail[0].reason_text == "9S and 2H drawn together" and "seed 004 §6" in tail[-1].reason
    profile, cards = load_profile(PROFILE), parse_cards("9S,2H,KD,5C")
    result = evaluate_round(profile, cards)
    returns = {}
    for b, (_, side, stake) in rnd.bets.items():
        outcome = settle(Bet(bet=side, stake=stake), result, profile)
        returns[b] = (outcome.outcome, outcome.returned)
    assert {side: returns[b] for b, (_, side, _) in rnd.bets.items()} == {
        "player": ("win", 20_000), "small": ("win", 12_500), "banker": ("lose", 0),
        "big": ("lose", 0), "tie": ("lose", 0), "player_pair": ("lose", 0)}
    rnd.settled_as(returns, platform_kafka)
    assert rnd.table.code(OpenRound, round_id="R2", dealer="Ayu") == "no_shoe"


def test_seed004_s7_a_card_dropped_out_of_sight_during_the_deal_voids_the_hand_and_the_shoe(
        services, platform_kafka):
    """"Kartu yang terjatuh di luar jangkauan kamera selama pembagaian akan di gunakan kembali
    hanya jika terbuka sebelum terlihat. Sebaliknya hamd tertentu akan di batalkan dan
    beberapa shou akan di ulang kembali"."""
    rnd = _Round(services, "BS7", "9S,2H,KD")
    rnd.table.ok(VoidRound, round_id="R1", reason_code="card_dropped",
                 reason_text="the fourth card fell off the table face down")
    voided, ended = _tail(platform_kafka, rnd.table_id, 2)
    assert (voided.type, voided.reason_code) == ("round_voided", "card_dropped")
    assert ended.type == "shoe_ended" and ended.shoe_id == "S1"
    rnd.settled_as({b: ("void_refund", stake) for b, (_, _, stake) in rnd.bets.items()},
                   platform_kafka)
    assert rnd.table.code(OpenRound, round_id="R2", dealer="Ayu") == "no_shoe"
    rnd.table.ok(NewShoe, shoe_id="S2", profile=PROFILE)  # the shoe is done again
