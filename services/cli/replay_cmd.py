"""`croupier replay`: rebuild one round from the log and say whether it matches what was recorded."""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from pathlib import Path

import typer

from services.infra.settings import get_settings


class Format(StrEnum):
    text = "text"
    json = "json"
    html = "html"


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)


def replay(
    table: str = typer.Option(None, help="Table id."),
    round_id: str = typer.Option(None, "--round", help="Round id."),
    at: str = typer.Option(None, help="Time of play (ISO 8601); where to seek in the log."),
    player: str = typer.Option(None, help="Show only this player's bets."),
    complaint: str = typer.Option(None, help=(
        "A filed complaint's id (`croupier complaint file`, POST /complaints): replay its "
        "round for its player, the 24 h window as recorded when it was filed. Names the "
        "round itself: not with --table, --round, --at or --player.")),
    annulled_within: float = typer.Option(
        None, help="Minutes past the round to look for a supervisor's annulment of it (by "
                   "default only until the next round opens or 2 minutes after its end)."),
    fmt: Format = typer.Option(Format.text, "--format", help="text, json or html."),
    out: Path = typer.Option(None, help="Write the report to this file instead of stdout."),
) -> None:
    """Replay a round: verify the hash chain, recompute result and settlements, compare."""
    from services.infra.log_reader import LogReadError
    from services.operator.complaint_filing import (
        ComplaintNotFoundError,
        find_complaint,
    )
    from services.operator.complaints import ComplaintError
    from services.operator.replay_service import ReplayRequest, run_replay
    from services.operator.report_render import render
    from services.operator.round_reader import RoundNotFoundError

    settings = get_settings()
    try:
        if complaint is not None:
            given = [flag for flag, value in (("--table", table), ("--round", round_id),
                                              ("--at", at), ("--player", player)) if value]
            if given:
                raise ValueError(f"--complaint names its round and player: drop {', '.join(given)}")
            request = ReplayRequest.from_complaint(
                find_complaint(settings.bootstrap_servers, complaint, settings))
        elif table is None or round_id is None:
            raise ValueError("give --table and --round (with --at), or a filed complaint's id "
                             "(--complaint)")
        else:
            request = ReplayRequest.from_text(table, round_id, at, player)
        if annulled_within is not None:
            request.annulled_within = timedelta(minutes=annulled_within)
        report, notes, _ = run_replay(settings.bootstrap_servers, request)
    except (ComplaintError, ComplaintNotFoundError, RoundNotFoundError, ValueError,
            LogReadError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    rendered = render(report, fmt, notes)
    if out:
        out.write_text(rendered)
        typer.echo(f"{report.verdict}: report written to {out}")
    else:
        typer.echo(rendered, nl=False)
    raise typer.Exit(0 if report.verdict == "MATCH" else 1)
