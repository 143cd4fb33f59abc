"""`croupier risk opposite`: pairs of players who bet opposite sides of the same rounds
(Player/Banker, Big/Small, Triple Face Win/Lose on one position) with stakes within 10 % of
each other, the most common collusion pattern at baccarat tables (bonus abuse, money moved
between accounts). From the archive and the log's live tail
(`services.archive.risk`, docs/decisions/risk.md)."""

from __future__ import annotations

import json

import typer

from services.cli.cli_errors import fail
from services.cli.records_cmd import _answer, _time

risk_app = typer.Typer(help="Betting patterns worth a look: opposite bettors.",
                       no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(risk_app, name="risk")


@risk_app.command("opposite")
def opposite(
    since: str = typer.Option(None, "--from", help="Bets placed from (ISO 8601, included; "
                                                   "default: the archive's start)."),
    until: str = typer.Option(None, "--to", help="Bets placed before (ISO 8601, excluded; "
                                                 "default: now)."),
    min_rounds: int = typer.Option(3, "--min-rounds", help="Name a pair opposed in at least "
                                                           "this many rounds."),
    as_json: bool = typer.Option(False, "--json", help='Print {"pairs": [...]} as JSON.'),
    live_tail: bool = typer.Option(True, help="Also read the log past the archive's end."),
) -> None:
    """Pairs of players betting opposite sides of the same rounds, stakes within 10 %."""
    if min_rounds < 1:
        fail(f"--min-rounds must be at least 1, got {min_rounds}")
    start, end = _time(since, "--from"), _time(until, "--to")
    found = _answer(lambda q: q.opposite_pairs(start, end, min_rounds), live_tail)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    for p in found["pairs"]:
        typer.echo(f"{p['players'][0]} <> {p['players'][1]}  {p['rounds']} rounds  opposed "
                   f"{p['opposed_stake']} {p['currency']} (minor units)  tables "
                   f"{', '.join(p['tables'])}")
    typer.echo(f"{len(found['pairs'])} pair(s) opposed in at least {min_rounds} round(s), "
               "stakes within 10 %")
