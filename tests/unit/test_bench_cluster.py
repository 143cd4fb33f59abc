"""benchmarks/bench_cluster.py's pure parts: percentiles, the summaries, the exactly-once
comparison and the printout (no broker)."""

from __future__ import annotations

import pytest

from benchmarks import bench_cluster as bench


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert bench.percentile(values, 0) == 1.0
    assert bench.percentile(values, 100) == 4.0
    assert bench.percentile(values, 50) == pytest.approx(2.5)
    assert bench.percentile(list(range(101)), 99) == pytest.approx(99.0)
    assert bench.percentile([7.0], 99) == 7.0
    assert bench.percentile([], 50) is None
    with pytest.raises(ValueError):
        bench.percentile([1.0], 101)


def test_latency_summary_is_in_milliseconds() -> None:
    summary = bench.latency_summary([0.001 * n for n in range(1, 101)])
    assert summary["count"] == 100
    assert summary["p50_ms"] == pytest.approx(50.5)
    assert summary["p99_ms"] == pytest.approx(99.01)
    assert summary["max_ms"] == pytest.approx(100.0)
    assert bench.latency_summary([]) == {"count": 0, "p50_ms": None, "p99_ms": None,
                                         "max_ms": None}


def test_three_nodes_are_ratios_to_one() -> None:
    one = {"records_per_s": 10_000.0, "latency": {"p50_ms": 2.0, "p99_ms": 10.0}}
    three = {"records_per_s": 4_000.0, "latency": {"p50_ms": 5.0, "p99_ms": 30.0}}
    assert bench.steady_ratios(one, three) == {"records_per_s": 0.4, "p50": 2.5, "p99": 3.0}
    assert bench.ratio(1.0, None) is None and bench.ratio(None, 2.0) is None


def test_unavailability_counts_from_the_kill_to_the_first_ack_of_a_later_send() -> None:
    sends = [(9.0, 9.5),     # sent before the kill, acknowledged after it: not counted
             (10.0, None),   # sent at the kill, never acknowledged
             (10.2, 18.3), (10.4, 18.1), (19.0, 19.01)]
    assert bench.first_ack_after(sends, 10.0) == pytest.approx(8.1)
    assert bench.first_ack_after(sends, 20.0) is None


def test_exactly_once_flags_lost_and_doubled_records() -> None:
    ok = bench.exactly_once([1, 2, 3], [1, 2, 3, 4])
    assert ok["ok"] and ok["read_unacknowledged"] == 1 and ok["read"] == 4
    bad = bench.exactly_once([1, 2, 3], [1, 3, 3])
    assert not bad["ok"]
    assert bad["missing"] == [2] and bad["duplicated"] == [3]
    assert bad["missing_count"] == 1 and bad["duplicated_count"] == 1
    assert not bench.exactly_once([], [5, 5])["ok"]  # nothing twice, acknowledged or not


def test_paced_values_carry_their_sequence_number() -> None:
    assert bench.seq_of(bench.paced_value(1234)) == 1234
    assert bench.seq_of(b'{"seq":1}') is None and bench.seq_of(None) is None
    assert all(len(v) == bench.VALUE_BYTES for v in bench.steady_values(3))


KILLS = [{"node": 1, "led": {"wallet.ledger[0]": True, "table.events[2]": True},
          "new_leader": 2, "new_leader_s": 9.1,
          "unavailable_s": {"wallet.ledger[0]": 9.5, "table.events[2]": 9.6}},
         {"node": 2, "led": {"wallet.ledger[0]": True, "table.events[2]": False},
          "new_leader": 3, "new_leader_s": 8.9,
          "unavailable_s": {"wallet.ledger[0]": 10.5, "table.events[2]": None}}]


def test_kill_summary_gives_p50_and_max_against_the_baseline() -> None:
    summary = bench.kill_summary(KILLS, baseline_p99_ms=20.0)
    ledger = summary["unavailable"]["wallet.ledger[0]"]
    assert ledger == {"p50_s": 10.0, "max_s": 10.5, "p50_ratio": 500.0, "max_ratio": 525.0,
                      "measured": 2, "of": 2}
    events = summary["unavailable"]["table.events[2]"]
    assert events["p50_s"] == 9.6 and events["measured"] == 1 and events["of"] == 2
    assert summary["new_leader"]["max_s"] == 9.1
    assert bench.kill_summary([], None)["unavailable"] == {}


def figures() -> dict:
    one = {"records_per_s": 10_000.0, "latency": {"p50_ms": 2.0, "p99_ms": 10.0}}
    three = {"records_per_s": 4_000.0, "latency": {"p50_ms": 5.0, "p99_ms": 20.0}}
    loss = {"watched": ["wallet.ledger[0]", "table.events[2]"], "kills": KILLS,
            "calm_latency": {"p99_ms": 4.25},
            "exactly_once": {"wallet.ledger[0]": bench.exactly_once([1, 2], [1, 2]),
                             "table.events[2]": bench.exactly_once([3, 4], [3])},
            "send_errors": {}}
    loss["summary"] = bench.kill_summary(KILLS, 20.0)
    return {"steady": {"records": 3_000, "one": one, "three": three,
                       "ratios": bench.steady_ratios(one, three)},
            "leader_loss": loss, "seconds": 101.0}


def test_the_printout_shows_figures_with_their_ratios() -> None:
    lines = bench.render(figures()).splitlines()
    assert "3 nodes (replication 3, min.insync.replicas 2) beside 1 node" in lines[0]
    assert "3,000 records" in lines[0] and "run took 101 s" in lines[0]
    assert lines[2].split() == ["produce,", "records/s", "10,000", "4,000", "0.4x"]
    assert lines[3].split()[-3:] == ["2.00", "5.00", "2.5x"]
    assert lines[4].split()[-3:] == ["10.00", "20.00", "2x"]
    assert lines[5].split()[:4] == ["leader", "loss,", "2", "kills"]
    assert lines[6].split() == ["wallet.ledger[0]", "unavailable", "10.00", "10.50", "500x",
                                "525x"]
    assert lines[7].split() == ["table.events[2]", "unavailable", "9.60", "9.60", "480x", "480x"]
    assert lines[8].split()[:4] == ["wallet.ledger[0]", "new", "leader", "named"]
    assert lines[9] == ("  baseline: 3-node steady send p99 20.00 ms (paced sends outside the "
                        "kills: p99 4.25 ms)")
    assert "table.events[2] n/a s (follower)" in lines[11]
    assert lines[12].endswith(": OK")
    assert "FAILED: 1 missing [4]" in lines[13]


def test_failures_name_lost_records_and_unrecovered_partitions() -> None:
    problems = bench.failures(figures())
    assert problems == ["table.events[2]: acknowledged records lost or written twice",
                        "kill 2: table.events[2] never acknowledged a record sent after the kill"]
    assert bench.failures({"steady": {}}) == []


def test_quick_shrinks_the_defaults_but_not_explicit_options() -> None:
    args = bench.parse_args([])
    assert (args.records, args.kills, args.json) == (bench.RECORDS, bench.KILLS, None)
    quick = bench.parse_args(["--quick"])
    assert (quick.records, quick.kills) == (bench.QUICK_RECORDS, bench.QUICK_KILLS)
    assert bench.parse_args(["--quick", "--kills", "5"]).kills == 5
    with pytest.raises(SystemExit):
        bench.parse_args(["--records", "0"])
