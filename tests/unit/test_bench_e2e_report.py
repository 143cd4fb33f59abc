"""benchmarks/e2e/report.py: the printout of an end-to-end run. Each part of the
figures is printed only when the run has it, with its ratio to the pipe baseline."""

from __future__ import annotations

from benchmarks.e2e import report


def figure(**parts: object) -> dict:
    fig = {"baseline": {"messages_per_s": 5000.0, "latency_p50_s": 0.01, "latency_p99_s": 0.05,
                        "cpu_ms_per_message": 0.2, "paced": {"offered_rate": 500.0}},
           "load_average_at_start": (1.0, 2.0, 3.0), "seconds": 99.0, **parts}
    report.add_ratios(fig)
    return fig


ROUND = {"size": 10_000, "completion_to_last_credit_s": 2.0, "completion_to_end_p50_s": 1.5,
         "completion_to_end_p99_s": 2.9, "place_seconds": 20.0, "ok": False, "errors": ["x", "y"],
         "cpu_ms_per_bet": {"wallet": 1.2}, "cpu_ms_per_bet_total": 1.2}


def test_a_bare_run_prints_the_pipe_the_load_and_the_targets_only() -> None:
    lines = report.render(figure()).splitlines()
    assert lines[2] == "  cluster: 1 Kafka node(s), replication 1"
    assert lines[3] == "  pipe: 5e+03 msg/s, latency at 500/s p50 0.01 s p99 0.05 s, CPU 0.2 ms/msg"
    assert lines[4] == ("  machine load average (1, 5, 15 min) at start 1.0/2.0/3.0, at end n/a; "
                        "run took 99 s")
    assert lines[5] == "  targets:" and len(lines) == 6 + len(report.targets(figure()))


def test_the_report_names_the_cluster_it_ran_on() -> None:
    lines = report.render(figure(cluster={"brokers": 3, "replication": 3})).splitlines()
    assert lines[2] == "  cluster: 3 Kafka node(s), replication 3"


def test_each_part_prints_its_figures_and_ratios_to_the_pipe() -> None:
    fig = figure(
        intake={"paced": {"offered_per_s": 500.0, "latency_p50_s": 0.03, "latency_p99_s": 0.2,
                          "answered": 10, "offered": 10, "answers": {"201": 10},
                          "generator_lag_s": 2.5, "client_cpu_share": 0.9},
                "cpu_ms_per_bet": {"gateway": 0.3}, "cpu_ms_per_bet_total": 0.5},
        settlement={"credits_per_s": 800.0, "credits": 100, "settled": 120,
                    "bets_ended_per_s": 900.0, "note": "n"},
        rounds=[ROUND], cpu_scaling={"small": 100, "large": 10_000, "ratio": 1.2},
        records={"largest": {"bytes": 4000, "topic": "t"}, "records": 5000, "topics": 7,
                 "complete": False, "ok": True},
        replay={"10000": {"seconds": None, "verdict": None}},
        lifetime={"ratio": None, "error": "boom"}, dead_services={"wallet": ["died"]},
        errors=["e" * 700])
    text = report.render(fig)
    for line in [
        "  HTTP at 500 bets/s offered: p50 0.03 s  (3× pipe), p99 0.2 s  (4× pipe); "
        "answered 10/10, answers {'201': 10}",
        "    WARNING: the load generator fell 2.5 s behind its schedule (client CPU 90% of a core): "
        "the offered rate was not reached",
        "  intake CPU ms/bet: gateway 0.3, total 0.5  (2.5× pipe)",
        "  settlements credited: 800/s  (0.16× pipe) (100 credits of 120 settled bets, "
        "900/s bets ended; n)",
        "  round of 10,000 bets: completion → last credit 2 s  (0.995× pipe); per bet p50 1.5 s "
        "p99 2.9 s  (58× pipe); placed in 20.0 s; ERRORS: x; y",
        "    CPU ms/bet: wallet 1.2, total 1.2  (6× pipe)",
        "  per-bet CPU at 10,000 vs 100 bets per round: 1.2×",
        "  largest record: 4,000 B on t (5,000 records on 7 topics, scan INCOMPLETE)  (13.3× pipe)",
        "  replay of the 10,000-bet round: n/a, verdict None (timed out)",
        "  lifetime player cost: not measured (boom)",
        "  DEAD SERVICES: {'wallet': ['died']}",
        "  RUN ERROR: " + "e" * 600,
    ]:
        assert line in text.splitlines(), line
    assert not any(line.startswith("  sustained intake") for line in text.splitlines())


def test_a_measured_lifetime_prints_both_costs() -> None:
    fig = figure(lifetime={"ratio": 1.1, "new_ms_per_bet": 0.1, "old_ms_per_bet": 0.11,
                           "lifetime_bets": 100_000, "entry_bytes_new": 100,
                           "entry_bytes_old": 120})
    assert ("  lifetime player cost (wallet pure handlers): new 0.1 ms/bet, after 100,000 bets "
            "0.11 ms/bet  (0.55× pipe) → 1.1×; ledger entry 100 → 120 B") in report.render(fig)
