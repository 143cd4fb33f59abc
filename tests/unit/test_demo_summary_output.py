"""The demo's summary, piped or logged (issue 13): rich then assumes 80 columns and cut the
replay command mid-timestamp (`--at 2026-11-`). What a person copies is printed whole."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

from services.demo.render import print_copyable, print_summary
from services.demo.summary import DemoSummary, SampleRound
from services.operator.audit import BetTypeReturn, InvariantCheck

TABLE = "tf-id-70d82c"
ROUND = "tf-id-70d82c-70d82c-r2"
COMMAND = f"croupier replay --table {TABLE} --round {ROUND} --at 2026-11-30T08:48:54Z"
URLS = {
    "dealer-event metrics": "http://127.0.0.1:8101/metrics",
    "bet-settlement metrics": "http://127.0.0.1:8103/metrics",
    "wallet API": "http://127.0.0.1:8104/openapi.json",
    "dealer-event API": "http://127.0.0.1:8101/tables/{table_id}",
}


def _summary(ok: bool = True) -> DemoSummary:
    return DemoSummary(
        run_id="70d82c", seconds=61.2, tables={TABLE: "triple-face-id"}, rounds=60,
        rounds_voided=1, bets=2_500, bets_rejected=40, bets_settled=2_440, bets_voided=20,
        stake=1_234_500, payout=1_180_000, refunds=30_000, house_result=24_500,
        http_answers={"201": 2_500, "422": 480},
        returns=[BetTypeReturn(profile="triple-face-id", bet="a_rather_long_bet_name_here",
                               bets=800, stake=400_000, returned=390_000, realised_rtp=0.975,
                               exact_rtp=0.9712, z_score=0.42)],
        invariants=[InvariantCheck(name="this session: every bet ended exactly once and "
                                        "each player's balance matches the log", ok=ok,
                                   checked=2_500,
                                   problems=[] if ok else ["bet b-1 ended twice"])],
        invariants_ok=ok, rebuild_differences=0, urls=URLS,
        sample_round=SampleRound(table_id=TABLE, round_id=ROUND, at="2026-11-30T08:48:54Z",
                                 replay_command=COMMAND),
    )


def _printed(width: int, summary: DemoSummary) -> list[str]:
    out = StringIO()  # not a terminal: what `make demo | tee demo.log` gets
    console = Console(file=out, width=width)
    assert not console.is_terminal
    print_summary(console, summary)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("width", [80, 40])
def test_the_replay_command_is_printed_whole_on_one_line(width):
    lines = _printed(width, _summary())
    assert len(COMMAND) > width - 2  # the command would not fit: the case of the issue
    assert f"  {COMMAND}" in lines, "\n".join(lines)
    assert "ALL INVARIANTS HOLD" in lines


@pytest.mark.parametrize("width", [80, 30])
def test_every_address_to_look_at_is_printed_whole(width):
    lines = _printed(width, _summary())
    for name, url in URLS.items():
        assert any(line.startswith(name) and line.endswith(f"  {url}") for line in lines), (
            f"{name}: {url} not on one line:\n" + "\n".join(lines))


def test_a_breach_is_said_and_the_command_still_printed():
    lines = _printed(80, _summary(ok=False))
    assert "INVARIANT BREACH" in lines and f"  {COMMAND}" in lines


def test_a_copyable_line_is_neither_cut_nor_folded_nor_read_as_markup():
    out = StringIO()
    console = Console(file=out, width=20)
    print_copyable(console, "croupier replay --table [bold]t[/bold] --at 2026-11-30T08:48:54Z")
    assert out.getvalue() == "croupier replay --table [bold]t[/bold] --at 2026-11-30T08:48:54Z\n"
