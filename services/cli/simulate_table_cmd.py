"""`croupier simulate-table`: a live table's inputs, from a real shuffled shoe, to dealer-event."""

from __future__ import annotations

import asyncio
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from services.infra.clock import SystemClock
from services.infra.settings import get_settings
from services.infra.table_keys import table_key
from services.simulators.tables.driver import FAULTS, SimConfig, SimSummary
from services.simulators.tables.inputs import InputFactory
from services.simulators.tables.run import run_tables
from shared.events.inputs import INPUT_TYPES
from shared.profile import UnknownProfileError, load_profile

console = Console()


def register(app: typer.Typer) -> None:
    app.command("simulate-table")(simulate_table)
    app.command("sign-input")(sign_input)


def sign_input(
    command: str = typer.Argument(..., help="new_shoe, shoe_first_card, burn, cut_card, "
                                            "end_shoe, open_round, close_betting, scan_card, "
                                            "void_round, report_misdeal, report_burn_error, "
                                            "annul_rounds, correct_round, expose_card, close_table, "
                                            "reopen_table, report_two_cards"),
    table: str = typer.Option(..., help="Table id."),
    field: list[str] = typer.Option([], "--set", help="A field as name=value (repeatable)."),
    role: str | None = typer.Option(None, help="device or supervisor (default by command)."),
) -> None:
    """Print one dealer input signed with the table's key from settings (pipe it to curl)."""
    by_command = {t.model_fields["command"].default: t for t in INPUT_TYPES}
    if command not in by_command:
        console.print(f"[red]sign-input:[/] unknown command {command!r}; "
                      f"known: {', '.join(by_command)}")
        raise typer.Exit(2)
    pairs: dict[str, Any] = dict(f.split("=", 1) for f in field if "=" in f)
    settings = get_settings()
    make = InputFactory(table, lambda t, r: table_key(settings.table_signing_secret, t, r),
                        SystemClock().now)
    try:
        inp = make.make(by_command[command], role=role, **pairs)
    except ValueError as exc:
        console.print(f"[red]sign-input:[/] {exc}")
        raise typer.Exit(2) from exc
    print(inp.model_dump_json())


def simulate_table(
    profile: str = typer.Option(..., help="Table profile, e.g. sbo-baccarat, triple-face-id."),
    rounds: int = typer.Option(10, min=1, help="Rounds to play (voided ones count)."),
    seed: int | None = typer.Option(None, help="Shuffle seed: the same seed deals the same cards."),
    table: str = typer.Option("T1", help="Table id."),
    dealer: str = typer.Option("Ayu", help="Dealer name written on each round."),
    faults: str = typer.Option("", help=f"Comma-separated: {', '.join(sorted(FAULTS))}."),
    betting_pause: float = typer.Option(
        0.0, help="Seconds betting stays open at least; the table's timer closes it (seed 002)."),
    cut_card_from_end: int | None = typer.Option(
        None, help="Place the cut card this many cards from the end (default: the profile's)."),
    url: str | None = typer.Option(None, help="dealer-event URL (default from settings)."),
    via_kafka: bool = typer.Option(False, "--via-kafka", help="Send to dealer.inputs directly."),
) -> None:
    """Play ROUNDS rounds at a simulated table and print what dealer-event decided."""
    try:
        load_profile(profile)
        config = SimConfig(profile=profile, table_id=table, rounds=rounds, seed=seed,
                           dealer=dealer, faults=frozenset(f for f in faults.split(",") if f),
                           betting_pause=betting_pause, cut_card_from_end=cut_card_from_end)
    except (UnknownProfileError, ValueError) as exc:
        console.print(f"[red]simulate-table:[/] {exc}")
        raise typer.Exit(2) from exc
    try:
        [summary] = asyncio.run(run_tables([config], url=url, via_kafka=via_kafka))
    except Exception as exc:  # connection refused, broker down: say what, not a traceback
        console.print(f"[red]simulate-table failed:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(1) from exc
    _print(summary)
    if summary.unexpected:
        raise typer.Exit(1)


def _print(s: SimSummary) -> None:
    table = Table(title=f"table {s.table_id} ({s.profile})")
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, value in [("shoes", s.shoes), ("rounds completed", s.rounds_completed),
                         ("rounds voided", s.rounds_voided), ("inputs sent", s.inputs_sent),
                         ("accepted", s.accepted), ("refused", sum(s.refused.values()))]:
        table.add_row(label, str(value))
    for code, n in sorted(s.refused.items()):
        table.add_row(f"  refused: {code}", str(n))
    console.print(table)
    if s.faults_injected:
        console.print(f"faults injected: {', '.join(s.faults_injected)}")
    for note in s.notes:
        console.print(f"note: {note}")
    for line in s.unexpected:
        console.print(f"[red]unexpected refusal:[/] {line}")
