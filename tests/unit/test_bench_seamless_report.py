"""benchmarks/e2e/seamless.py and bench_seamless.py: the seamless modes' figures as ratios
to transfer mode's in the same run, the printout, and the command line. The timed
benchmark itself runs only in `make bench` (three platforms: minutes, not a test)."""

from __future__ import annotations

import pytest

from benchmarks import bench_seamless
from benchmarks.e2e import cpu, seamless


def mode(accepted_per_s: float, p50: float, p99: float, ok: int) -> dict:
    return {"sustained": {"clients": 64, "seconds": 15.0, "accepted_per_s": accepted_per_s,
                          "latency_p50_s": p50, "latency_p99_s": p99, "answers": {"201": 10},
                          "client_cpu_share": 0.1, "cpu_cores": {"wallet": 0.9, "x": None},
                          "cpu_ms_per_bet": {"wallet": 3.5}, "machine_cores_busy": 1.5,
                          "load_average": (2.0, 1.0, 0.5)},
            "paced": {"latency_p50_s": p50, "latency_p99_s": p99, "answered": 100,
                      "offered": 100, "answers": {"201": ok, "504 t": 100 - ok},
                      "share_201": ok / 100, "generator_lag_s": 0.0},
            "dead_services": {}}


def test_seamless_figures_are_ratios_to_transfer_mode_in_the_same_run() -> None:
    fig = {"options": seamless.Options().__dict__, "errors": [], "seconds": 300.0,
           "modes": {"transfer": mode(1000.0, 0.01, 0.1, 100),
                     "seamless 5 ms": mode(250.0, 0.04, 0.5, 80)}}
    seamless.add_ratios(fig)
    assert "ratios" not in fig["modes"]["transfer"]
    assert fig["modes"]["seamless 5 ms"]["ratios"] == {
        "accepted_per_s": 0.25, "sustained_latency_p99": pytest.approx(5.0),
        "paced_latency_p50": pytest.approx(4.0), "paced_latency_p99": pytest.approx(5.0),
        "share_201": pytest.approx(0.8), "croupier_cpu_per_bet": pytest.approx(1.0)}
    text = seamless.render(fig)
    assert "seamless 5 ms" in text and "(0.25×)" in text and "80.0% (0.80×)" in text
    assert "cores busy: wallet 0.9, x n/a" in text and "accepted bet (less idle): wallet 3.5" in text
    assert "the whole machine 1.5 (load average 2.0/1.0/0.5)" in text
    assert "CPU per accepted bet (less idle): croupier 3.5 ms (1.00×)" in text


def test_croupiers_cpu_per_bet_leaves_the_operators_wallet_out() -> None:
    sustained = {"cpu_ms_per_bet": {"wallet": 1.5, "broker": 0.5, "dealer-event": None,
                                    "operator-wallet": 0.4}}
    assert seamless.croupier_cpu(sustained) == (2.0, 0.4)
    assert seamless.croupier_cpu({}) == (None, None)


def test_a_mode_that_failed_leaves_the_others_and_no_ratio_without_transfer() -> None:
    fig = {"modes": {"seamless 50 ms": mode(100.0, 0.1, 0.2, 100)}}
    seamless.add_ratios(fig)
    assert "ratios" not in fig["modes"]["seamless 50 ms"]


def test_the_command_line_makes_one_seamless_platform_per_latency() -> None:
    opts, path = bench_seamless.parse(["--quick", "--latencies", "5,50,200", "--rate", "300",
                                       "--repeats", "2"])
    assert opts.duration_s == 3.0 and opts.paced_rate == 300.0 and path is None
    assert opts.repeats == 2
    assert seamless.modes(opts) == [("transfer", None), ("seamless 5 ms", 5),
                                    ("seamless 50 ms", 50), ("seamless 200 ms", 200)]
    with pytest.raises(SystemExit):
        bench_seamless.parse(["--duration", "0"])


def test_the_machines_busy_time_leaves_out_idle_and_iowait() -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice, in ticks
    stat = "cpu  300 20 100 5000 80 5 5 10 40 0"
    assert cpu.machine_busy_seconds(stat, ticks=100) == pytest.approx(4.4)
    assert cpu.machine_busy_seconds() > 0


def test_of_a_modes_repeats_the_one_that_accepted_the_most_is_kept() -> None:
    slowed, quiet = mode(100.0, 0.5, 2.0, 50), mode(300.0, 0.1, 0.4, 100)
    assert seamless.best([slowed, quiet, slowed]) is quiet
    fig = {"options": seamless.Options().__dict__, "errors": [], "seconds": 1.0,
           "modes": {"transfer": quiet}, "repeats": {"transfer": [slowed, quiet]}}
    assert "the best of its repeats, which accepted 100, 300 bets/s" in seamless.render(fig)
