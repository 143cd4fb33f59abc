"""`croupier rebuild`: replay every topic into fresh state and compare with the live wallet."""

from __future__ import annotations

import typer

from services.infra.settings import get_settings


def register(app: typer.Typer) -> None:
    app.command("rebuild")(rebuild)


def rebuild(
    wallet_url: str = typer.Option(None, help="The live wallet (default: the settings' port). "
                                              "If it is not running, one is started for the "
                                              "comparison and stopped after."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Rebuild results, settlements and balances from the log; list every difference."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

    from services.infra.archive_store import archive_from_settings
    from services.operator.rebuild import rebuild as run_rebuild
    from services.operator.wallet_client import live_balances
    from services.operator.wallet_process import running_wallet

    settings = get_settings()
    console = Console(stderr=json_out)
    with running_wallet(settings, wallet_url) as url, Progress(
            TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(),
            console=console, transient=json_out) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(topic: str, done: int, total: int) -> None:
            if topic not in tasks:
                tasks[topic] = bar.add_task(topic, total=total)
            bar.update(tasks[topic], completed=done, total=total)

        report = run_rebuild(settings.bootstrap_servers,
                             lambda players: live_balances(url, settings.operator_token, players),
                             progress, settings.table_events_key_bytes,
                             settings.table_events_accept_unsigned,
                             archive=archive_from_settings(settings))
    if json_out:
        data = report.model_dump(mode="json")
        data["clean"] = report.clean
        typer.echo(__import__("json").dumps(data, indent=2))
    else:
        a = report.audit
        console.print(f"tables {report.tables}, table events {report.table_events}, rounds "
                      f"recomputed {report.rounds_recomputed}, bets {a.bets} (settled {a.settled}, "
                      f"voided {a.voided}, rejected {a.rejected}, in play {a.pending}), players "
                      f"{len(a.balances)} compared with the live wallet")
        if report.clean:
            console.print("[green]rebuild: 0 differences[/]")
        else:
            console.print(f"[red]rebuild: {len(report.differences)} differences[/]")
            for line in report.differences:
                console.print(f"  - {line}")
    raise typer.Exit(0 if report.clean else 1)
