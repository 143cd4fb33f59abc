"""What each bet id wins on: one rule per id of RULES §3.3 and §4.3.

A rule turns a round result into a `Resolution`: the outcome and the paytable
line that applies (`win`, `win_on_6`, `margin_9`, `flush`, ...). The odds of a
line live in the table profile, never here, so a table can change a paytable
without a code change; settlement (money) and the exact RTP (probabilities)
both read the same resolutions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal, NamedTuple, Protocol

from pydantic import BeforeValidator

from shared.baccarat import BaccaratResult
from shared.triple_face import HandName, TripleFaceResult

Outcome = Literal["win", "lose", "push"]


def _no_lookalike(value: object) -> object:
    """`true` and `1.0` equal 1 in Python and would pass as position 1: refused."""
    if isinstance(value, bool | float):
        raise ValueError('a position is 1, 2, 3 or "banker", not a boolean or a decimal')
    return value


# a Triple Face bet's position; a model validating one refuses its lookalikes
Position = Annotated[Literal[1, 2, 3, "banker"], BeforeValidator(_no_lookalike)]
PLAYER_POSITIONS: tuple[Position, ...] = (1, 2, 3)
ALL_POSITIONS: tuple[Position, ...] = (1, 2, 3, "banker")

# What a rule reads, so the RTP enumerates the right thing:
#   points  - points, naturals, card counts (baccarat, value-class enumeration)
#   pairs   - ranks of the first two cards of each hand (baccarat, rank-level)
#   versus  - the chosen player hand's rank against the Banker's (Triple Face)
#   single  - the chosen hand's own three cards (Triple Face)
Basis = Literal["points", "pairs", "versus", "single"]

# Seed 002, Tiger Baccarat: "the casino may limit the placement of any or all of the Tiger
# wagers to those players who also have a Baccarat wager on the Player's Hand, Banker's
# Hand or Tie" (profile setting `tiger_needs_main_bet`).
TIGER_WAGERS: frozenset[str] = frozenset(
    {"tiger", "big_tiger", "small_tiger", "tiger_tie", "tiger_pair"})
MAIN_BETS: tuple[str, ...] = ("player", "banker", "tie")
# "... and will display a sign at the table when this applies": the sheet gives the rule,
# not the sign's wording, so the sign says the rule in the sheet's own words
TIGER_SIGN = ("Tiger wagers are limited to players who also have a Baccarat wager on the "
              "Player's Hand, Banker's Hand or Tie")


class Resolution(NamedTuple):
    outcome: Outcome
    line: str  # paytable key on a win; "push" or "lose" otherwise


LOSE = Resolution("lose", "lose")
PUSH = Resolution("push", "push")


def _win(line: str = "win") -> Resolution:
    return Resolution("win", line)


@dataclass(frozen=True)
class BetRule:
    id: str
    game: Literal["baccarat", "triple_face"]
    basis: Basis
    lines: frozenset[str]
    resolve: Callable[..., Resolution]
    positions: tuple[Position, ...] = ()


_HAND_AT: dict[Position, HandName] = {1: "player1", 2: "player2", 3: "player3", "banker": "banker"}


def hand_name(position: Position) -> HandName:
    return _HAND_AT[position]


# --- baccarat -----------------------------------------------------------------

class HasBankerMode(Protocol):
    """What a rule reads of its table's profile (`shared.profile`): only the
    banker's rule reads anything, the baccarat profile's banker mode (the rules know no
    profile, so the profiles can read the rules)."""

    @property
    def banker_mode(self) -> Literal["commission", "no_commission"]: ...


def _player(r: BaccaratResult, profile: object) -> Resolution:
    return _side_bet(r, "player") if r.winner != "tie" else PUSH


def _banker(r: BaccaratResult, profile: HasBankerMode) -> Resolution:
    if r.winner == "tie":
        return PUSH
    if _banker_six(r) and profile.banker_mode == "no_commission":
        return _win("win_on_6")
    return _side_bet(r, "banker")


def _side_bet(r: BaccaratResult, side: str) -> Resolution:
    return _win() if r.winner == side else LOSE


def _tie(r: BaccaratResult, profile: object) -> Resolution:
    return _win() if r.winner == "tie" else LOSE


def _banker_six(r: BaccaratResult) -> bool:
    return r.winner == "banker" and r.banker_points == 6


def _dragon(side: Literal["player", "banker"]) -> Callable[..., Resolution]:
    def resolve(r: BaccaratResult, profile: object) -> Resolution:
        if r.winner == "tie":
            return PUSH if r.player_natural and r.banker_natural else LOSE
        if r.winner != side:
            return LOSE
        if r.natural(side):
            return _win("natural_win")
        return _win(f"margin_{r.margin}") if r.margin >= 4 else LOSE

    return resolve


def _fortune_six(r: BaccaratResult, profile: object) -> Resolution:
    if not _banker_six(r):
        return LOSE
    return _win("two_cards" if len(r.banker) == 2 else "three_cards")


def _tiger_sized(cards: int) -> Callable[..., Resolution]:
    def resolve(r: BaccaratResult, profile: object) -> Resolution:
        return _win() if _banker_six(r) and len(r.banker) == cards else LOSE

    return resolve


def _super_six(r: BaccaratResult, profile: object) -> Resolution:
    return _win() if _banker_six(r) else LOSE


def _tiger_tie(r: BaccaratResult, profile: object) -> Resolution:
    return _win() if r.winner == "tie" and r.player_points == 6 else LOSE


def _pair(side: Literal["player", "banker"]) -> Callable[..., Resolution]:
    def resolve(r: BaccaratResult, profile: object) -> Resolution:
        return _win() if (r.player_pair if side == "player" else r.banker_pair) else LOSE

    return resolve


def _tiger_pair(r: BaccaratResult, profile: object) -> Resolution:
    if r.player_pair and r.banker_pair:
        return _win("twin" if r.player[0].rank == r.banker[0].rank else "double")
    return _win("single") if r.player_pair or r.banker_pair else LOSE


def _big(r: BaccaratResult, profile: object) -> Resolution:
    return _win() if r.cards_dealt >= 5 else LOSE


def _small(r: BaccaratResult, profile: object) -> Resolution:
    return _win() if r.cards_dealt == 4 else LOSE


# --- Triple Face (position-taking rules get the chosen hand's name) ------------

def _tf_win(r: TripleFaceResult, hand: HandName, profile: object) -> Resolution:
    winner = r.winners[hand]
    if winner == "tie":
        return PUSH
    if winner != hand:
        return LOSE
    return _win("win_on_6" if r.hands[hand].points == 6 else "win")


def _tf_lose(r: TripleFaceResult, hand: HandName, profile: object) -> Resolution:
    winner = r.winners[hand]
    if winner == "tie":
        return PUSH
    if winner != "banker":
        return LOSE
    return _win("win_on_6" if r.hands["banker"].points == 6 else "win")


def _tf_tie(r: TripleFaceResult, hand: HandName, profile: object) -> Resolution:
    return _win() if r.winners[hand] == "tie" else LOSE


def _three_knights(r: TripleFaceResult, hand: HandName, profile: object) -> Resolution:
    return _win() if r.hands[hand].pictures == 3 else LOSE


def _pair_plus(r: TripleFaceResult, hand: HandName, profile: object) -> Resolution:
    category = r.hands[hand].pair_plus
    return LOSE if category == "nothing" else _win(category)


_WIN = frozenset({"win"})
_WIN_ON_6 = frozenset({"win", "win_on_6"})
_DRAGON = frozenset({"natural_win", *(f"margin_{m}" for m in range(4, 10))})
_FORTUNE = frozenset({"two_cards", "three_cards"})
_PAIR_PLUS = frozenset({"straight_flush", "three_of_a_kind", "straight", "flush", "pair"})


def _b(bet_id: str, basis: Basis, resolve: Callable[..., Resolution],
       lines: frozenset[str] = _WIN) -> BetRule:
    return BetRule(bet_id, "baccarat", basis, lines, resolve)


def _t(bet_id: str, basis: Basis, resolve: Callable[..., Resolution],
       lines: frozenset[str] = _WIN,
       positions: tuple[Position, ...] = PLAYER_POSITIONS) -> BetRule:
    return BetRule(bet_id, "triple_face", basis, lines, resolve, positions)


BACCARAT_RULES: dict[str, BetRule] = {
    rule.id: rule
    for rule in (
        _b("player", "points", _player),
        # no-commission tables add the `win_on_6` line (checked by the profile)
        _b("banker", "points", _banker),
        _b("tie", "points", _tie),
        _b("player_pair", "pairs", _pair("player")),
        _b("banker_pair", "pairs", _pair("banker")),
        _b("big", "points", _big),
        _b("small", "points", _small),
        _b("super_six", "points", _super_six),
        _b("dragon_bonus_player", "points", _dragon("player"), _DRAGON),
        _b("dragon_bonus_banker", "points", _dragon("banker"), _DRAGON),
        _b("fortune_six", "points", _fortune_six, _FORTUNE),
        _b("tiger", "points", _fortune_six, _FORTUNE),
        _b("big_tiger", "points", _tiger_sized(3)),
        _b("small_tiger", "points", _tiger_sized(2)),
        _b("tiger_tie", "points", _tiger_tie),
        _b("tiger_pair", "pairs", _tiger_pair, frozenset({"single", "double", "twin"})),
    )
}
TRIPLE_FACE_RULES: dict[str, BetRule] = {
    rule.id: rule
    for rule in (
        _t("win", "versus", _tf_win, _WIN_ON_6),
        _t("lose", "versus", _tf_lose, _WIN_ON_6),
        _t("tie", "versus", _tf_tie),
        _t("three_knights", "single", _three_knights),
        _t("pair_plus", "single", _pair_plus, _PAIR_PLUS, ALL_POSITIONS),
    )
}
GAME_RULES: dict[str, dict[str, BetRule]] = {
    "baccarat": BACCARAT_RULES,
    "triple_face": TRIPLE_FACE_RULES,
}


def rule_for(game: str, bet_id: str) -> BetRule | None:
    return GAME_RULES[game].get(bet_id)


def resolve(
    rule: BetRule,
    result: BaccaratResult | TripleFaceResult,
    position: Position | None,
    profile: object,
) -> Resolution:
    """Apply `rule` to `result`; `position` is None for bets that take none; `profile` is
    the table's (`shared.profile.Profile`)."""
    if rule.positions:
        if position is None:
            raise ValueError(f"bet {rule.id!r} is placed on a position; none was given")
        return rule.resolve(result, hand_name(position), profile)
    return rule.resolve(result, profile)
