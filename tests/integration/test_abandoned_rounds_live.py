"""Rounds left hanging, through the running services (issue 31): two dealer-event workers,
the wallet and bet-settlement on a real broker, a table driven over dealer-event's HTTP door.
A round whose device goes silent is stalled (`round_stalled`), then voided by the platform
(`round_abandoned`, signed dealer-event): every stake comes back to the players, a scan for
the round afterwards is refused by that name, and the decision is taken once, also when the
worker owning the table is killed while the round waits and comes back."""

from __future__ import annotations

import time
from datetime import datetime
from types import SimpleNamespace

import httpx
import pytest
from kafka.partitioner.default import murmur2

from shared.cards import parse_card
from shared.events.inputs import NewShoe, OpenRound, ScanCard
from tests.integration.money_support import RUN, money_platform, wait_for
from tests.integration.tables_live_support import HandDriver, running_workers, table_events

pytestmark = pytest.mark.kafka

STALL_S, ABANDON_S = 2, 6
PARTITIONS = 4  # the catalogue's default for dealer.inputs / table.events
SETTINGS = {"CROUPIER_ROUND_STALL_SECONDS": str(STALL_S),
            "CROUPIER_ROUND_ABANDON_SECONDS": str(ABANDON_S)}


@pytest.fixture(scope="module")
def floor(platform_kafka, tmp_path_factory):
    """The wallet and bet-settlement, and two dealer-event workers, of one platform."""
    home = tmp_path_factory.mktemp("abandon-home")
    with money_platform(platform_kafka, home, SETTINGS) as platform, \
            running_workers(platform_kafka, home, {"dealer-event": 2}, **SETTINGS) as dealers:
        yield platform, [dealers["dealer-event"], dealers["dealer-event/1"]]


def _events(bootstrap: str, table_id: str) -> list:
    return table_events(bootstrap, {table_id}).get(table_id, [])


def _round_kinds(bootstrap: str, table_id: str, round_id: str) -> list[str]:
    return [e.type for e in _events(bootstrap, table_id)
            if getattr(e, "round_id", None) == round_id]


def _dealt_and_silent(platform, door: str, table_id: str, stakes: dict[str, tuple[str, int]]
                      ) -> HandDriver:
    """A round R1 opened at `table_id`, bet on by each player (bet, stake), closed, two
    cards dealt; then nothing more."""
    device = HandDriver(door, table_id)
    device.ok(NewShoe, shoe_id="S1", profile="sbo-baccarat")
    device.ok(OpenRound, round_id="R1", dealer="Ayu")
    platform.wait_round_open(SimpleNamespace(table_id=table_id), "R1")
    for player, (bet, stake) in stakes.items():
        placed = platform.bet(player, SimpleNamespace(table_id=table_id), "R1", bet, stake)
        assert placed.status_code == 201, placed.text
    device.close("R1")
    device.ok(ScanCard, round_id="R1", card=parse_card("9S"))
    device.ok(ScanCard, round_id="R1", card=parse_card("2H"))
    return device


def test_a_silent_round_is_voided_by_the_platform_and_every_stake_returned(floor):
    platform, dealers = floor
    table_id = f"ABN-{RUN}"
    alice = platform.player("abandon-alice", 100_000)
    bob = platform.player("abandon-bob", 100_000)
    device = _dealt_and_silent(platform, dealers[0].base_url, table_id,
                               {alice: ("player", 10_000), bob: ("banker", 25_000)})
    assert platform.balance(alice) == 90_000 and platform.balance(bob) == 75_000
    wait_for(lambda: "round_voided" in _round_kinds(platform.bootstrap, table_id, "R1"),
             "the platform voids the silent round", timeout_s=60)
    events = [e for e in _events(platform.bootstrap, table_id)
              if getattr(e, "round_id", None) == "R1"]
    kinds = [e.type for e in events]
    assert kinds[-2:] == ["round_stalled", "round_voided"], kinds
    assert kinds.count("round_stalled") == kinds.count("round_voided") == 1
    stalled, voided = events[-2], events[-1]
    last_input = events[-3].occurred_at
    assert (voided.reason_code, voided.supervisor, voided.input_id) == (
        "round_abandoned", "dealer-event", None)
    assert (voided.occurred_at - last_input).total_seconds() >= ABANDON_S
    assert (stalled.occurred_at - last_input).total_seconds() >= STALL_S
    # every stake back, through the void's usual path (bet-settlement, the wallet)
    wait_for(lambda: (platform.balance(alice), platform.balance(bob)) == (100_000, 100_000),
             "both stakes refunded")
    # the device comes back: its scan for the abandoned round is refused by name
    assert device.code(ScanCard, round_id="R1", card=parse_card("KD")) == "round_abandoned"
    device.ok(OpenRound, round_id="R2", dealer="Ayu")
    time.sleep(1)
    assert _round_kinds(platform.bootstrap, table_id, "R1").count("round_voided") == 1


def _owner(dealers, table_id: str):
    partition = (murmur2(table_id.encode()) & 0x7FFFFFFF) % PARTITIONS
    for proc in dealers:
        if partition in httpx.get(f"{proc.base_url}/health", timeout=5).json()["partitions"]:
            return proc
    raise AssertionError(f"no dealer-event worker owns partition {partition}")


def test_the_abandonment_is_decided_once_when_the_owner_dies_while_the_round_waits(floor):
    platform, dealers = floor
    table_id = f"ABK-{RUN}"
    carol = platform.player("abandon-carol", 50_000)
    wait_for(lambda: all(httpx.get(f"{p.base_url}/health", timeout=5).status_code == 200
                         for p in dealers), "both dealer-event workers ready")
    owner = _owner(dealers, table_id)
    survivor = dealers[1] if owner is dealers[0] else dealers[0]
    started = datetime.now().astimezone()
    _dealt_and_silent(platform, survivor.base_url, table_id, {carol: ("player", 5_000)})
    owner.kill()  # kill -9 while the round waits: the survivor takes the table over
    try:
        wait_for(lambda: "round_voided" in _round_kinds(platform.bootstrap, table_id, "R1"),
                 "the round voided after the owner died", timeout_s=90)
    finally:
        owner.start()  # it comes back and rebuilds its share of the tables from the log
        owner.wait_ready(90)
    wait_for(lambda: _owner(dealers, table_id) is not None, "the group settled again")
    time.sleep(ABANDON_S + 2)  # time enough for a second decision, if one were to come
    kinds = _round_kinds(platform.bootstrap, table_id, "R1")
    assert kinds.count("round_voided") == 1 and kinds.count("round_stalled") <= 1, kinds
    voided = [e for e in _events(platform.bootstrap, table_id) if e.type == "round_voided"]
    assert voided[0].reason_code == "round_abandoned" and voided[0].occurred_at > started
    wait_for(lambda: platform.balance(carol) == 50_000, "the stake refunded")
