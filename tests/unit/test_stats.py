"""Dealer and table statistics (`croupier stats`): the maths, and the figures of a known floor
read from an archive on a local directory (no broker: the live tail is off)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from services.archive.queries import ArchiveQueries
from services.archive.stats import (
    BetLine,
    DealtRound,
    dealing_seconds,
    hold,
    hold_sd,
    per_100,
    per_hour,
    table_figures,
    theoretical_hold,
    z_score,
)
from services.infra.archive_store import DirectoryStore
from shared.profile import load_profile
from shared.rtp import exact_rtp
from tests.archive_builder import archive_records
from tests.stats_floor import expected_dealers, expected_tables, stats_floor

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MIN = 60_000


def dealt(table: str, dealer: str, opened_min: float, lasted_s: float | None = 20,
          completed: bool = True) -> DealtRound:
    opened = int(opened_min * MIN)
    return DealtRound(table, f"{table}{opened}", dealer, opened,
                      None if lasted_s is None else opened + int(lasted_s * 1000),
                      completed, not completed)


def test_hands_per_hour_counts_the_time_to_the_next_round_and_not_a_break():
    rounds = [dealt("A", "Ana", m) for m in (0, 1, 2)]  # a minute a round
    rounds += [dealt("A", "Ana", 40)]  # after a 38-minute break: each only its own 20 s
    rounds += [dealt("B", "Budi", m, completed=m != 1) for m in (0, 0.5, 1)]
    seconds = dealing_seconds(rounds)
    assert seconds == {"Ana": 60 + 60 + 20 + 20, "Budi": 30 + 30 + 20}
    assert per_hour(4, seconds["Ana"]) == 90.0  # 4 hands in 160 s
    assert per_hour(2, seconds["Budi"]) == 90.0  # the voided round is time, not a hand
    assert per_hour(3, 0) is None


def test_a_hanging_round_counts_only_up_to_the_next_round():
    rounds = [dealt("A", "Ana", 0, lasted_s=None), dealt("A", "Ana", 2)]
    assert dealing_seconds(rounds) == {"Ana": 120 + 20}
    assert dealing_seconds([dealt("A", "Ana", 0, lasted_s=None)]) == {"Ana": 0}


def test_counts_per_hundred_rounds():
    assert per_100(3, 40) == 7.5
    assert per_100(1, 3) == 33.33
    assert per_100(0, 0) is None


def test_hold_and_theoretical_hold_are_stake_weighted():
    assert hold(10_000, 9_000) == 0.1
    assert hold(500, 1_500) == -2.0  # the house lost twice the stake
    assert hold(0, 0) is None
    lines = [BetLine(9_000, 0, 0, rtp=0.99, variance=1.0),
             BetLine(1_000, 0, 0, rtp=0.80, variance=1.0)]
    assert theoretical_hold(lines) == pytest.approx((9_000 * 0.01 + 1_000 * 0.20) / 10_000)
    assert theoretical_hold([]) is None


def test_the_spread_of_the_hold_takes_a_rounds_bets_on_one_side_as_one_bet():
    # two rounds: 1,000 on banker each time by one player, or by ten players of 100 each
    one = BetLine(2_000, 0, round_stake_squares=2 * 1_000**2, rtp=0.9894, variance=0.9)
    sd = hold_sd([one])
    assert sd == pytest.approx(math.sqrt(0.9 * 2 * 1_000**2) / 2_000)
    lines = [one, BetLine(2_000, 0, round_stake_squares=2 * 1_000**2, rtp=0.9876, variance=1.0)]
    assert hold_sd(lines) == pytest.approx(math.sqrt(1.9 * 2 * 1_000**2) / 4_000)
    assert hold_sd([]) is None
    assert z_score(0.30, 0.10, 0.10) == pytest.approx(2.0)
    assert z_score(-0.05, 0.10, 0.05) == pytest.approx(-3.0)
    assert z_score(0.1, None, 0.1) is None and z_score(0.1, 0.1, None) is None


def test_table_figures_from_the_exact_rtps_and_a_table_without_bets():
    report = exact_rtp(load_profile("sbo-baccarat"))
    banker, player = report.bets["banker"], report.bets["player"]

    def exact(profile, version, bet):
        return {"banker": (float(banker.rtp), float(banker.variance)),
                "player": (float(player.rtp), float(player.variance))}.get(bet)

    rows = [{"table_id": "T1", "currency": "IDR", "profile": "sbo-baccarat", "version": 1,
             "bet": "banker", "bets": 30, "stake": 30_000, "returned": 27_000,
             "round_stake_squares": 30 * 1_000**2},
            {"table_id": "T1", "currency": "IDR", "profile": "sbo-baccarat", "version": 1,
             "bet": "player", "bets": 10, "stake": 10_000, "returned": 12_000,
             "round_stake_squares": 10 * 1_000**2}]
    got = table_figures({"T1": 30, "T2": 5}, rows, exact)
    one, idle = got
    assert one["hold"] == round((40_000 - 39_000) / 40_000, 6)
    edge = (30_000 * float(banker.house_edge) + 10_000 * float(player.house_edge)) / 40_000
    assert one["theoretical_hold"] == round(edge, 6)
    sd = math.sqrt(float(banker.variance) * 30e6 + float(player.variance) * 10e6) / 40_000
    assert one["z"] == round((0.025 - edge) / sd, 2)
    assert (one["rounds"], one["bets"], one["stake"], one["returned"]) == (30, 40, 40_000, 39_000)
    assert idle == {"table_id": "T2", "currency": None, "rounds": 5, "bets": 0, "stake": 0,
                    "returned": 0, "hold": None, "theoretical_hold": None, "z": None}
    unknown = table_figures({}, [{**rows[0], "bet": "made_up"}], exact)[0]
    assert unknown["hold"] is not None and unknown["theoretical_hold"] is None
    assert unknown["z"] is None


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    store = DirectoryStore(tmp_path_factory.mktemp("archive"))
    built = stats_floor("u", T0)
    archive_records(store, built.records)
    queries = ArchiveQueries(store)
    yield queries, built
    queries.close()


def test_the_figures_of_each_dealer_of_a_known_floor(floor):
    queries, f = floor
    dealers = {d["dealer"]: d for d in queries.stats()["dealers"]}
    assert set(dealers) == {f.ana, f.budi, f.citra}
    for name, expected in expected_dealers(f).items():
        assert {k: dealers[name][k] for k in expected} == expected, name
    assert dealers[f.citra]["tables"] == [f.table_b]


def test_the_figures_of_each_table_of_a_known_floor(floor):
    queries, f = floor
    tables = {t["table_id"]: t for t in queries.stats()["tables"]}
    for table, expected in expected_tables(f).items():
        assert {k: tables[table][k] for k in expected} == expected, table
        assert tables[table]["z"] is not None


def test_the_range_takes_the_rounds_opened_in_it(floor):
    queries, f = floor
    late = queries.stats(T0 + timedelta(minutes=4), T0 + timedelta(minutes=7))
    assert {d["dealer"]: d["rounds"] for d in late["dealers"]} == {f.budi: 3, f.citra: 1}
    assert {t["table_id"]: t["rounds"] for t in late["tables"]} == {f.table_a: 3,
                                                                    f.table_b: 1}
    assert queries.stats(T0 + timedelta(hours=1), None) == {
        "from": "2026-03-01T13:00:00.000Z", "to": None, "dealers": [], "tables": []}
    with pytest.raises(ValueError, match="not after its start"):
        queries.stats(T0, T0)
