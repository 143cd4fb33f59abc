"""`croupier evaluate`: the operator's calculator for one round and a few bets.

It runs exactly the code the services run (`evaluate_round`, `settle`), so an
operator can check a disputed round by hand from its cards.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from services.cli.cli_errors import fail, profile_or_fail
from shared.baccarat import BaccaratResult
from shared.bets import Position
from shared.cards import CardError, parse_cards
from shared.rounds import AnyResult, RoundError, evaluate_round
from shared.settlement import Bet, BetError, Settlement, check_bet, settle

BET_HELP = "A bet as ID[:POS]=STAKE (stake in minor units), e.g. banker=1000, win:2=500, " \
    "pair_plus:banker=100. Repeat for more bets."


def register(app: typer.Typer) -> None:
    app.command("evaluate", help="Evaluate one round from its cards and settle bets on it.")(
        evaluate
    )


def evaluate(
    profile: Annotated[str, typer.Option("--profile", help="Table profile name.")],
    cards: Annotated[
        str,
        typer.Option(
            "--cards",
            help="The round's cards in shoe order, burns excluded, comma-separated "
            "(first_card tables: the revealed card first), e.g. 4S,TH,2D,QC.",
        ),
    ],
    bet: Annotated[list[str] | None, typer.Option("--bet", help=BET_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    table = profile_or_fail(profile)
    try:
        result = evaluate_round(table, parse_cards(cards))
        bets = [parse_bet(spec) for spec in bet or []]
        for one in bets:
            check_bet(one, table)
    except (CardError, RoundError, BetError) as exc:
        fail(str(exc))
    settlements = [(one, settle(one, result, table)) for one in bets]
    report = evaluation_json(table.name, result, settlements)
    if as_json:
        typer.echo(json.dumps(report))
    else:
        _print(report, result)


_POSITIONS: dict[str, Position] = {"1": 1, "2": 2, "3": 3, "banker": "banker"}


def parse_bet(spec: str) -> Bet:
    """`ID[:POS]=STAKE` -> Bet; a bad position or stake is a BetError naming it."""
    head, sep, stake_text = spec.rpartition("=")
    if not sep or not head:
        raise BetError("malformed_bet", f"bad bet {spec!r}: expected ID[:POS]=STAKE")
    bet_id, _, position_text = head.partition(":")
    position: Position | None = None
    if position_text:
        if position_text not in _POSITIONS:
            raise BetError(
                "bad_position",
                f"bad position {position_text!r} in bet {spec!r}: expected 1, 2, 3 or banker",
            )
        position = _POSITIONS[position_text]
    if not stake_text.isdigit() or int(stake_text) <= 0:
        raise BetError(
            "bad_stake",
            f"bad stake {stake_text!r} in bet {spec!r}: expected a positive whole number "
            "of minor units",
        )
    return Bet(bet=bet_id, position=position, stake=int(stake_text))


def evaluation_json(
    name: str,
    result: AnyResult,
    settlements: list[tuple[Bet, Settlement]],
) -> dict:
    """The `--json` shape: profile, hands, points or ranks, winner, surplus, bets."""
    out: dict = {"profile": name}
    if isinstance(result, BaccaratResult):
        out["hands"] = {side: [str(c) for c in cards] for side, cards in result.hands.items()}
        out["points"] = {"player": result.player_points, "banker": result.banker_points}
        out["winner"] = result.winner
    else:
        out["hands"] = {n: [str(c) for c in h.cards] for n, h in result.hands.items()}
        out["ranks"] = {n: h.rank for n, h in result.hands.items()}
        out["winner"] = dict(result.winners)
    out["surplus"] = [str(c) for c in result.surplus]
    out["bets"] = [
        {
            "bet": one.bet,
            "position": one.position,
            "stake": one.stake,
            "outcome": done.outcome,
            "returned": done.returned,
        }
        for one, done in settlements
    ]
    return out


def _print(report: dict, result: AnyResult) -> None:
    console = Console()
    hands = Table(title=f"{report['profile']}", title_justify="left")
    hands.add_column("hand")
    hands.add_column("cards")
    winner: str
    if isinstance(result, BaccaratResult):
        hands.add_column("points", justify="right")
        hands.add_column("facts")
        for side in ("player", "banker"):
            facts = [f for f, on in (("natural", result.natural(side)),
                                     ("pair", getattr(result, f"{side}_pair"))) if on]
            hands.add_row(side, " ".join(report["hands"][side]),
                          str(report["points"][side]), ", ".join(facts))
        winner = result.winner
    else:
        hands.add_column("rank", justify="right")
        hands.add_column("pair plus")
        hands.add_column("against banker")
        for name, hand in result.hands.items():
            against = report["winner"].get(name, "")
            hands.add_row(name, " ".join(report["hands"][name]), hand.rank,
                          hand.pair_plus, against)
        winner = ", ".join(f"{k}: {v}" for k, v in result.winners.items())
        if result.first_card is not None:
            console.print(f"first card: {result.first_card}")
    console.print(hands)
    console.print(f"winner: {winner}")
    console.print(f"surplus: {' '.join(report['surplus']) or '-'}")
    if report["bets"]:
        bets = Table(title="bets", title_justify="left")
        for column in ("bet", "position", "stake", "outcome", "returned"):
            bets.add_column(column, justify="right" if column in ("stake", "returned") else "left")
        for row in report["bets"]:
            bets.add_row(row["bet"], "-" if row["position"] is None else str(row["position"]),
                         str(row["stake"]), row["outcome"], str(row["returned"]))
        console.print(bets)
