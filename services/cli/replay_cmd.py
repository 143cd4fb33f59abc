"""`croupier replay`: rebuild one round from the log and say whether it matches what was recorded."""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from pathlib import Path

import typer

from croupier.services.infra.settings import get_settings


class Format(StrEnum):
    text = "text"
    json = "json"
    html = "html"


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)


def replay(
    table: str = typer.Option(..., help="Table id."),
    round_id: str = typer.Option(..., "--round", help="Round id."),
    at: str = typer.Option(None, help="Time of play (ISO 8601); where to seek in the log."),
    player: str = typer.Option(None, help="Complaining player: show only their bets."),
    dealer: str = typer.Option(None, help="Dealer named in the complaint."),
    complaint_at: str = typer.Option(
        None, help="When the complaint was filed (ISO 8601). Makes this a complaint: player, "
                   "time of play, dealer, table and round are then required, and the 24 h "
                   "window applies."),
    override: str = typer.Option(None, help=(
        "Handle a complaint filed after the 24 h window anyway, with this reason: only where "
        "CROUPIER_LATE_COMPLAINT_OVERRIDE is set (seed 002 refuses late complaints); each "
        "use is recorded on operator.actions, a significant event.")),
    annulled_within: float = typer.Option(
        None, help="Minutes past the round to look for a supervisor's annulment of it (by "
                   "default only until the next round opens or 2 minutes after its end)."),
    fmt: Format = typer.Option(Format.text, "--format", help="text, json or html."),
    out: Path = typer.Option(None, help="Write the report to this file instead of stdout."),
) -> None:
    """Replay a round: verify the hash chain, recompute result and settlements, compare."""
    from croupier.services.operator.actions import ActionNotRecorded
    from croupier.services.operator.complaints import ComplaintError
    from croupier.services.operator.replay_service import ReplayRequest, run_replay
    from croupier.services.operator.report_render import render
    from croupier.services.operator.round_reader import RoundNotFoundError

    try:
        request = ReplayRequest.from_text(table, round_id, at, player, dealer, complaint_at,
                                          override)
        if annulled_within is not None:
            request.annulled_within = timedelta(minutes=annulled_within)
        report, notes, _ = run_replay(get_settings().bootstrap_servers, request)
    except (ComplaintError, RoundNotFoundError, ValueError, ActionNotRecorded) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    rendered = render(report, fmt, notes)
    if out:
        out.write_text(rendered)
        typer.echo(f"{report.verdict}: report written to {out}")
    else:
        typer.echo(rendered, nl=False)
    raise typer.Exit(0 if report.verdict == "MATCH" else 1)
