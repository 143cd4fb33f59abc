"""`croupier demo`: the whole platform as its users see it, in one command.

Starts Kafka (unless it runs, or an external cluster is set) and the four
services as separate processes, deals at three tables while fifty players bet
through the wallet, shows live progress, waits until every bet has ended, and
prints the summary: rounds, bets, money, realised against exact RTP, every
invariant, a rebuild against the live wallet, and a real round to replay.
Every service it started is stopped before it exits; Kafka keeps running so the
printed replay and rebuild commands work (`make kafka-down` stops it).
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer

from services.infra.settings import get_settings


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    rounds: int = typer.Option(20, help="Rounds per table."),
    forever: bool = typer.Option(False, help="Deal until interrupted (Ctrl-C), then summarise."),
    players: int = typer.Option(50, help="Simulated players."),
    profiles: str = typer.Option("sbo-baccarat,sbo-tiger,triple-face-id",
                                 help="One table per profile, comma-separated."),
    betting_pause: float = typer.Option(2.0, help="Seconds the betting window stays open (the "
                                        "tables' timer, unless CROUPIER_BETTING_WINDOW_SECONDS "
                                        "is set)."),
    bets_per_player: int = typer.Option(1, help="Bets each player places on each round."),
    seed: int = typer.Option(7, help="Seed of the shuffles and the players' choices."),
    workers: int = typer.Option(1, min=1, max=9, help="Workers (processes) per service; "
                                "worker i listens on the service's port + 100·i."),
    summary_json: Path = typer.Option(None, help="Also write the summary as JSON to this file."),
    wallet: str = typer.Option("transfer", help="transfer: croupier's wallet holds the money; "
                               "seamless: the reference operator wallet does (started for the "
                               "demo; docs/decisions/seamless.md)."),
) -> None:
    """Run the platform with simulated tables and players; end with a verified summary."""
    from rich.console import Console

    from services.demo.render import print_copyable
    from services.demo.session import DemoConfig
    from services.demo.stack import Stack, ensure_kafka

    console = Console()
    names = tuple(p.strip() for p in profiles.split(",") if p.strip())
    settings = get_settings()
    if "CROUPIER_ENV" not in os.environ:  # a demo on this machine: its development secrets
        settings = settings.model_copy(update={"env": "development"})
    if wallet not in ("transfer", "seamless"):
        raise typer.BadParameter(f"--wallet must be transfer or seamless, not {wallet!r}")
    if wallet == "seamless":
        from services.demo.stack import seamless_settings
        settings = seamless_settings(settings)
    if settings.betting_window_seconds is None:  # the timer closes betting (seed 002)
        settings = settings.model_copy(update={"betting_window_seconds":
                                               max(1, round(betting_pause))})
    config = DemoConfig(rounds=rounds, forever=forever, players=players, profiles=names,
                        betting_pause=betting_pause, bets_per_player=bets_per_player, seed=seed)
    console.print(f"[bold]croupier demo[/] run {config.run_id}: tables "
                  f"{', '.join(f'{t} ({p})' for t, p in zip(config.tables, names, strict=True))}")
    bootstrap = ensure_kafka(settings)
    console.print(f"kafka ready at {bootstrap}; topics applied")
    stack = Stack(settings, workers=workers, archive=True, console=True)
    console.print("starting dealer-event, game-evaluation, bet-settlement, wallet, archiver, "
                  "operator API ...")
    with stack:
        for name, proc in stack.processes.items():
            console.print(f"  {name:<16} pid {proc.pid:<7} {proc.base_url}")
        if stack.archiver is not None and stack.archiver.proc is not None:
            console.print(f"  {'archiver':<16} pid {stack.archiver.proc.pid:<7} "
                          f"{settings.archive_location}")
        if stack.operator_wallet is not None:
            console.print(f"  {'operator wallet':<16} pid {stack.operator_wallet.pid:<7} "
                          f"{stack.operator_wallet.base_url} (the reference operator wallet: "
                          "seamless mode)")
        if stack.operator_api is not None:
            console.print(f"  {'operator API':<16} pid {stack.operator_api.pid:<7} "
                          f"{stack.operator_api.base_url}")
            console.print(f"[bold]operator console[/]: {stack.console_url} (log in with the "
                          "operator token, CROUPIER_OPERATOR_TOKEN; the tables are live there "
                          "while the demo deals)")
        summary = _play_and_summarise(console, settings, config, stack, bootstrap)
    _verify_archive(console, settings)
    console.print("services stopped; Kafka keeps running for replay and rebuild; to stop it:")
    print_copyable(console, "  make kafka-down")
    if summary_json:
        from services.demo.summary import summary_json as as_json
        summary_json.write_text(json.dumps(as_json(summary), indent=2))
        print_copyable(console, f"summary written to {summary_json}")
    raise typer.Exit(0 if summary.invariants_ok else 1)


def _verify_archive(console, settings) -> None:
    """The archiver has closed its segments (stopped last): verify the whole archive."""
    from services.archive.verify import verify
    from services.demo.render import print_copyable
    from services.infra.archive_store import archive_from_settings
    from shared.topics import TOPIC_NAMES

    report = verify(archive_from_settings(settings), TOPIC_NAMES)
    state = "[green]verified OK[/]" if report.ok else f"[red]{len(report.problems)} problems[/]"
    console.print(f"archive: {report.segments} segments, {report.records} records, {state} "
                  f"in {report.seconds:.2f} s ({report.url})")
    for problem in report.problems[:10]:
        console.print(f"  archive problem: {problem}")
    print_copyable(console, "  croupier archive verify; croupier events; "
                            "croupier recall --player <id>")


def _play_and_summarise(console, settings, config, stack, bootstrap):
    from rich.live import Live

    from services.demo.render import print_summary, progress_table
    from services.demo.session import play
    from services.demo.summary import (
        reconciliation_check,
        summarise,
        wait_until_settled,
    )
    from services.operator.rebuild import rebuild
    from services.operator.wallet_client import live_balances

    with Live(console=console, refresh_per_second=4) as live:
        def progress(tables, answers, seconds):
            live.update(progress_table(config, tables, answers, seconds))

        began = datetime.now(UTC)
        run = asyncio.run(play(settings, config, stack.url("dealer-event"),
                               stack.url("wallet"), progress))
    console.print()
    console.print("dealing done; waiting for every bet to be settled ...")
    platform, mine = wait_until_settled(bootstrap, run)
    wallet = stack.url("wallet")
    rebuilt = rebuild(bootstrap, lambda ps: live_balances(wallet, settings.operator_token, ps),
                      events_key=settings.table_events_key_bytes,
                      accept_unsigned=settings.table_events_accept_unsigned)
    urls = {f"{name} metrics": f"{stack.url(name)}/metrics" for name in stack.processes}
    if stack.console_url:
        urls["operator console"] = stack.console_url
    urls.update({"wallet API": f"{wallet}/openapi.json",
                 "dealer-event API": f"{stack.url('dealer-event')}/tables/{{table_id}}"})
    more: tuple = ()
    if settings.wallet_mode == "seamless":
        console.print("seamless: reconciling croupier's calls with the operator's wallet ...")
        more = (reconciliation_check(settings, began - timedelta(minutes=1)),)
        urls["operator wallet API"] = f"{wallet}/openapi/operator-wallet.json"
    summary = summarise(run, platform, mine, urls, rebuild_differences=len(rebuilt.differences),
                        more=more)
    print_summary(console, summary)
    for line in rebuilt.differences[:20]:
        console.print(f"  rebuild difference: {line}")
    return summary
