"""`croupier stats`: each dealer's rounds, hands per hour, voids, refused inputs and
corrections, and each table's hold against the hold its bets should give, over the rounds
opened in a time range (`services.archive.stats`: the archive and the log's live
tail)."""

from __future__ import annotations

import json
from typing import Any

import typer

from services.cli.records_cmd import _answer, _time


def register(app: typer.Typer) -> None:
    app.command("stats")(stats)


def stats(
    since: str = typer.Option(None, "--from", help="Rounds opened from (ISO 8601, included)."),
    until: str = typer.Option(None, "--to", help="Rounds opened before (ISO 8601, excluded)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    live_tail: bool = typer.Option(True, help="Also read the log past the archive's end."),
) -> None:
    """Per dealer: rounds, hands per hour, voids, refused inputs, corrections (and per 100
    rounds). Per table: rounds, hold, theoretical hold of the bets placed, z."""
    start, end = _time(since, "--from"), _time(until, "--to")
    found = _answer(lambda q: q.stats(start, end), live_tail)
    typer.echo(json.dumps(found, indent=2) if as_json else stats_text(found))


def stats_text(found: dict[str, Any]) -> str:
    def num(x: Any, fmt: str = "") -> str:
        return "-" if x is None else format(x, fmt)

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.2f}%"

    lines = [f"rounds opened from {found['from'] or 'the start'} to {found['to'] or 'now'}",
             "", f"{'dealer':<16} {'rounds':>6} {'hands/h':>8} {'voids':>6} {'refused':>8} "
             f"{'corrected':>9} {'voids/100':>10} {'refused/100':>12} {'corrected/100':>14}"]
    for d in found["dealers"]:
        lines.append(f"{d['dealer']:<16} {d['rounds']:>6} {num(d['hands_per_hour']):>8} "
                     f"{d['voids']:>6} {d['refused_inputs']:>8} {d['corrections']:>9} "
                     f"{num(d['voids_per_100_rounds']):>10} "
                     f"{num(d['refused_inputs_per_100_rounds']):>12} "
                     f"{num(d['corrections_per_100_rounds']):>14}")
    lines += ["", f"{'table':<16} {'cur':<4} {'rounds':>6} {'bets':>6} {'stake':>14} "
                  f"{'hold':>9} {'theory':>9} {'z':>7}"]
    for t in found["tables"]:
        lines.append(f"{t['table_id']:<16} {t['currency'] or '-':<4} {t['rounds']:>6} "
                     f"{t['bets']:>6} {t['stake']:>14} {pct(t['hold']):>9} "
                     f"{pct(t['theoretical_hold']):>9} {num(t['z'], '+.2f'):>7}")
    return "\n".join(lines)
