"""`croupier rtp`: the exact return of every bet a table offers, and a simulator to check it.

The exact figures are what an operator shows a regulator; `--simulate N` deals N
rounds through the live engine and says how far the realised return drifted,
in standard errors, which is how a broken rule would show up.
"""

from __future__ import annotations

import json
import random
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from services.cli.cli_errors import fail, profile_or_fail
from shared.rtp import RtpReport, exact_rtp
from shared.simulate import SimulatedBet, simulate


def register(app: typer.Typer) -> None:
    app.command("rtp", help="Exact RTP and house edge of every bet of a table profile.")(rtp)


def rtp(
    profile: Annotated[str, typer.Option("--profile", help="Table profile name.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    rounds: Annotated[
        int | None,
        typer.Option("--simulate", help="Also deal this many rounds and compare.", metavar="N"),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated shoe.")] = 1,
    version: Annotated[
        int | None,
        typer.Option("--profile-version", help="A released version (default: the current one)."),
    ] = None,
) -> None:
    table = profile_or_fail(profile, version)
    if rounds is not None and rounds < 1:
        fail(f"--simulate needs a positive number of rounds, got {rounds}")
    report = exact_rtp(table)
    simulated = simulate(table, rounds, random.Random(seed), report) if rounds else None
    out = rtp_json(report)
    if simulated is not None and rounds is not None:  # (simulated only with rounds)
        out["simulation"] = simulation_json(rounds, seed, simulated)
    if as_json:
        typer.echo(json.dumps(out))
    else:
        _print(out)


def rtp_json(report: RtpReport) -> dict:
    """{"profile", "bets": {id: {"rtp", "house_edge", "rtp_exact", "outcomes"}}}."""
    return {
        "profile": report.profile,
        "bets": {
            bet_id: {
                "rtp": float(bet.rtp),
                "house_edge": float(bet.house_edge),
                "rtp_exact": _fraction(bet.rtp),
                "outcomes": {
                    line: {
                        "probability": float(odds.probability),
                        "probability_exact": _fraction(odds.probability),
                        "returns": _fraction(odds.returns),
                    }
                    for line, odds in bet.outcomes.items()
                },
            }
            for bet_id, bet in report.bets.items()
        },
    }


def simulation_json(rounds: int, seed: int, simulated: dict[str, SimulatedBet]) -> dict:
    return {
        "rounds": rounds,
        "seed": seed,
        "bets": {
            bet_id: {"rtp": sim.rtp, "std_error": sim.std_error, "z": sim.z}
            for bet_id, sim in simulated.items()
        },
    }


def _fraction(value) -> str:
    return f"{value.numerator}/{value.denominator}"


def _print(out: dict) -> None:
    console = Console()
    table = Table(title=f"exact RTP: {out['profile']}", title_justify="left")
    for column in ("bet", "RTP", "house edge", "outcomes"):
        table.add_column(column, justify="right" if column in ("RTP", "house edge") else "left")
    for bet_id, bet in out["bets"].items():
        outcomes = "  ".join(
            f"{line} {o['probability']:.6f}" for line, o in bet["outcomes"].items()
        )
        table.add_row(bet_id, f"{bet['rtp']:.4%}", f"{bet['house_edge']:.4%}", outcomes)
    console.print(table)
    sim = out.get("simulation")
    if sim:
        table = Table(
            title=f"simulated: {sim['rounds']} rounds, seed {sim['seed']}", title_justify="left"
        )
        for column in ("bet", "exact RTP", "realised RTP", "std error", "z"):
            table.add_column(column, justify="left" if column == "bet" else "right")
        for bet_id, s in sim["bets"].items():
            table.add_row(bet_id, f"{out['bets'][bet_id]['rtp']:.4%}", f"{s['rtp']:.4%}",
                          f"{s['std_error']:.4%}", f"{s['z']:+.2f}")
        console.print(table)
