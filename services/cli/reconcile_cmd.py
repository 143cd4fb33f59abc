"""`croupier reconcile`: croupier's calls to the operator's wallet against the operator's
transaction report, per transaction, round, player and day; every difference named.

Exit code 0: no difference; 1: differences (each printed with the ids to check); 2: the
reconciliation could not run (a bad option, the broker or the operator's wallet
unreachable), with one line naming what was wrong."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import typer

from services.cli.cli_errors import fail
from services.infra.settings import get_settings
from services.operator import reconcile_sources

SETTLE_S = 60.0


def register(app: typer.Typer) -> None:
    app.command("reconcile")(reconcile)


def reconcile(
    since: str = typer.Option(None, "--from", help="Start of the window (ISO 8601, UTC if no "
                                                   "zone). Default: today's start (UTC)."),
    until: str = typer.Option(None, "--to", help="End of the window, excluded. Default: now."),
    day: str = typer.Option(None, help="A UTC day (YYYY-MM-DD) instead of --from/--to."),
    player: str = typer.Option(None, help="Only this player's transactions."),
    margin: float = typer.Option(60.0, min=0, help=(
        "Minutes each side is read beyond the window's edges, so a transaction asked on one "
        "side of an edge and recorded on the other is matched (longer than the operator's "
        "longest outage is safest).")),
    settle: float = typer.Option(SETTLE_S, min=0, help=(
        "Seconds: the window ends no later than this before now (calls decided since may "
        "still be in flight).")),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Reconcile croupier's ledger of operator-wallet calls with the operator's transactions."""
    settings = get_settings()
    try:
        start, end, note = reconcile_sources.window_of(
            since, until, day, datetime.now(UTC), timedelta(seconds=settle))
        report = reconcile_sources.run_reconcile(settings, start, end, player,
                                                 timedelta(minutes=margin))
    except (ValueError, reconcile_sources.ReconcileSourceError) as exc:
        fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - exit 1 means differences: never a crash's code
        fail(f"reconcile could not run: {type(exc).__name__}: {exc}")
    if json_out:
        data = report.model_dump(mode="json")
        data["note"] = note
        typer.echo(json.dumps(data, indent=2))
    else:
        if note:
            typer.echo(f"note: {note}", err=True)
        who = f", player {player}" if player else ""
        typer.echo(f"reconcile {start.isoformat()} .. {end.isoformat()}{who}: "
                   f"{report.transactions} transactions, {report.rounds} rounds, "
                   f"{report.players} players compared ({report.calls_read} croupier records, "
                   f"{report.operator_read} operator transactions read)")
        for row in report.days:
            typer.echo(f"  {row.day} {row.currency}: croupier {row.croupier:+d}, operator "
                       f"{row.operator:+d} ({row.transactions} transactions)")
        typer.echo(f"reconcile: {len(report.differences)} differences")
        for difference in report.differences:
            typer.echo(f"  - {difference.line()}")
    raise typer.Exit(0 if report.clean else 1)
