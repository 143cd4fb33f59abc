"""`croupier simulate-players`: players with balances betting over the wallet's HTTP API."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import httpx
import typer
from rich.console import Console
from rich.table import Table

from services.cli.cli_errors import fail
from services.infra.settings import get_settings
from services.simulators.players import PlayerSimulator


def register(app: typer.Typer) -> None:
    app.command("simulate-players",
                help="Simulated players who bet on every open round of the given tables.")(
        simulate_players)


def simulate_players(
    tables: Annotated[str, typer.Option("--tables", help="Comma-separated table ids.")],
    players: Annotated[int, typer.Option("--players", min=1, help="How many players.")] = 5,
    duration: Annotated[float, typer.Option("--duration", help="Seconds to keep betting.")] = 60,
    wallet_url: Annotated[str | None, typer.Option("--wallet-url")] = None,
    deposit: Annotated[int, typer.Option("--deposit", min=1, help="Minor units each.")
                       ] = 1_000_000,
    currency: Annotated[str, typer.Option("--currency")] = "IDR",
    seed: Annotated[int, typer.Option("--seed")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    settings = get_settings()
    table_ids = [t.strip() for t in tables.split(",") if t.strip()]
    if not table_ids:
        fail("--tables needs at least one table id")
    sim = PlayerSimulator(wallet_url or f"http://127.0.0.1:{settings.wallet_port}",
                          settings.operator_token, table_ids, players=players, deposit=deposit,
                          currency=currency, seed=seed)
    try:
        answers, balances = asyncio.run(_run(sim, duration))
    except (httpx.HTTPError, RuntimeError) as exc:
        fail(f"wallet at {sim.wallet_url}: {exc}")
    if as_json:
        typer.echo(json.dumps({"answers": dict(answers), "balances": balances}))
        return
    table = Table("answer", "count", title=f"{players} players on {', '.join(table_ids)}")
    for answer, count in sorted(answers.items()):
        table.add_row(answer, str(count))
    Console().print(table)


async def _run(sim: PlayerSimulator, duration: float):
    try:
        await sim.setup()
        answers = await sim.watch(duration)
        return answers, await sim.balances()
    finally:
        await sim.close()
