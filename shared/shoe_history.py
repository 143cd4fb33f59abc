"""A table's recent shoes and their results, folded from `table.events`: what the roads
(`shared.roads`) are drawn from, bounded whatever the table's history.

Pure, one fold for every reader: the wallet's live view of each table folds it as the
events arrive, the replay folds the events it read of the round's shoe, so the roads a
player sees and the roads in a complaint's report are the same function of the log.

- `shoe_started` begins a shoe; a `round_opened` of a shoe the fold never saw start begins
  one too, marked `from_start=False` (the reader started mid-shoe).
- A `round_completed` of the round in play adds its result: the round's cards evaluated
  with the rules the round opened with (`shared.rounds.evaluate_round`, as game-evaluation
  does); cards that are not exactly one complete round add nothing and are counted as
  `missing`, as is a completion of a round the fold never saw open.
- A `round_voided` round has no result. A `round_annulled` round leaves the roads (its bets
  were refunded: it does not count in the shoe), and is listed in `annulled`.
- Bounded: at most `KEEP_SHOES` shoes per table, at most `MAX_HANDS` results per shoe
  (more than an 8-deck baccarat shoe can deal; a Triple Face session, one fresh deck a
  round, can run longer: its oldest results are then dropped and counted in `dropped`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from shared.cards import Card
from shared.events.table import (
    RoundAnnulled,
    RoundCompleted,
    RoundOpened,
    RoundVoided,
    ShoeEnded,
    ShoeStarted,
    TableEventBase,
)
from shared.models import FrozenModel
from shared.profile import ProfileError, load_profile, round_profile
from shared.roads import (
    AnyOutcome,
    AnyRoads,
    BaccaratOutcome,
    RoadError,
    TripleFaceOutcome,
    outcome_of,
    roads_of,
)
from shared.rounds import RoundError, cards_needed, evaluate_round

KEEP_SHOES = 3
MAX_HANDS = 150  # an 8-deck shoe deals at most 416 / 4 = 104 hands
Game = Literal["baccarat", "triple_face"]


class RoundInPlay(FrozenModel):
    round_id: str
    round_number: int
    profile: str
    profile_version: int | None = None


class ShoeHistory(FrozenModel):
    shoe_id: str
    game: Game | None = None
    from_start: bool = Field(description="The shoe's start was folded: its results are "
                                         "there from its first round.")
    ended: bool = False
    outcomes: tuple[AnyOutcome, ...] = ()
    dropped: int = Field(default=0, description=f"Oldest results dropped past {MAX_HANDS}.")
    missing: int = Field(default=0, description="Completed rounds whose result could not "
                                                "be read from the events folded.")
    annulled: tuple[str, ...] = ()
    in_play: RoundInPlay | None = None

    @property
    def complete(self) -> bool:
        """Every result of the shoe so far is in `outcomes`."""
        return self.from_start and not self.dropped and not self.missing


class ShoeRoads(FrozenModel):
    """One shoe's roads and what they hold: `GET /tables/{id}/roads`, and the replay
    report's roads up to its round."""

    table_id: str
    shoe_id: str
    game: Game
    status: Literal["in_play", "ended"]
    complete: bool = Field(description="The roads hold every result of the shoe so far (false: "
                                       "the view began mid-shoe, or results were dropped or "
                                       "unreadable; see from_start, dropped, missing).")
    from_start: bool
    dropped: int
    missing: int
    annulled_rounds: tuple[str, ...] = Field(description="Rounds annulled after completion: "
                                                         "left out of the roads.")
    roads: AnyRoads


def shoe_roads(table_id: str, shoe: ShoeHistory) -> ShoeRoads:
    return ShoeRoads(table_id=table_id, shoe_id=shoe.shoe_id, game=shoe.game or "baccarat",
                     status="ended" if shoe.ended else "in_play", complete=shoe.complete,
                     from_start=shoe.from_start, dropped=shoe.dropped, missing=shoe.missing,
                     annulled_rounds=shoe.annulled, roads=roads_of(shoe.outcomes, shoe.game))


def find_shoe(shoes: tuple[ShoeHistory, ...], wanted: str | None) -> ShoeHistory | None:
    """The shoe named `wanted`: a shoe id, or a number of shoes back from the current one
    (`0` the current shoe, `1` the one before; None: the current shoe)."""
    if not shoes:
        return None
    if wanted is None:
        return shoes[-1]
    for shoe in shoes:
        if shoe.shoe_id == wanted:
            return shoe
    if wanted.isdigit() and int(wanted) < len(shoes):
        return shoes[-1 - int(wanted)]
    return None


def fold_shoes(shoes: tuple[ShoeHistory, ...], event: TableEventBase,
               keep: int = KEEP_SHOES) -> tuple[ShoeHistory, ...]:
    """The table's shoes after one of its events (events that say nothing about a shoe's
    results change nothing). The caller folds each event once, in order."""
    if isinstance(event, ShoeStarted):
        return _kept((*shoes, ShoeHistory(shoe_id=event.shoe_id, game=_game(event.profile),
                                          from_start=True)), keep)
    if isinstance(event, RoundOpened):
        if not any(s.shoe_id == event.shoe_id for s in shoes):
            shoes = _kept((*shoes, ShoeHistory(shoe_id=event.shoe_id, from_start=False,
                                               game=_game(event.profile))), keep)
        playing = RoundInPlay(round_id=event.round_id, round_number=event.round_number,
                              profile=event.profile, profile_version=event.profile_version)
        return _update(shoes, lambda s: s.shoe_id == event.shoe_id,
                       lambda s: s.model_copy(update={"in_play": playing}))
    if isinstance(event, ShoeEnded):
        return _update(shoes, lambda s: s.shoe_id == event.shoe_id,
                       lambda s: s.model_copy(update={"ended": True}))
    if isinstance(event, RoundVoided):
        return _update(shoes, lambda s: _playing(s, event.round_id),
                       lambda s: s.model_copy(update={"in_play": None}))
    if isinstance(event, RoundCompleted):
        if not any(_playing(s, event.round_id) for s in shoes):  # never saw it open
            return _update(shoes, lambda s: s is shoes[-1],
                           lambda s: s.model_copy(update={"missing": s.missing + 1}))
        return _update(shoes, lambda s: _playing(s, event.round_id),
                       lambda s: _completed(s, event.cards))
    if isinstance(event, RoundAnnulled):
        return _update(shoes, lambda s: any(o.round_id == event.round_id for o in s.outcomes),
                       lambda s: _annulled(s, event.round_id))
    return shoes


def _kept(shoes: tuple[ShoeHistory, ...], keep: int) -> tuple[ShoeHistory, ...]:
    return shoes[-keep:] if keep > 0 else ()


def _update(shoes: tuple[ShoeHistory, ...], which: Callable[[ShoeHistory], bool],
            change: Callable[[ShoeHistory], ShoeHistory]) -> tuple[ShoeHistory, ...]:
    return tuple(change(s) if which(s) else s for s in shoes)


def _playing(shoe: ShoeHistory, round_id: str) -> bool:
    return shoe.in_play is not None and shoe.in_play.round_id == round_id


def _game(profile: str) -> Game | None:
    try:
        game = load_profile(profile).game
    except ProfileError:
        return None
    return "triple_face" if game == "triple_face" else "baccarat"


def _completed(shoe: ShoeHistory, cards: tuple[Card, ...]) -> ShoeHistory:
    """The shoe with the round in play's result added (or counted missing)."""
    assert shoe.in_play is not None
    playing = shoe.in_play
    outcome: BaccaratOutcome | TripleFaceOutcome | None = None
    try:
        profile = round_profile(playing.profile, playing.profile_version)
        # exactly one round: complete with these cards and not before the last one
        if cards and cards_needed(profile, cards) == 0 and cards_needed(profile, cards[:-1]):
            outcome = outcome_of(evaluate_round(profile, cards), playing.round_id)
    except (ProfileError, RoundError, RoadError):
        outcome = None
    if outcome is None or (shoe.outcomes and shoe.outcomes[0].game != outcome.game):
        return shoe.model_copy(update={"in_play": None, "missing": shoe.missing + 1})
    outcomes = (*shoe.outcomes, outcome)
    over = max(0, len(outcomes) - MAX_HANDS)
    return shoe.model_copy(update={"in_play": None, "outcomes": outcomes[over:],
                                   "dropped": shoe.dropped + over,
                                   "game": shoe.game or outcome.game})


def _annulled(shoe: ShoeHistory, round_id: str) -> ShoeHistory:
    return shoe.model_copy(update={
        "outcomes": tuple(o for o in shoe.outcomes if o.round_id != round_id),
        "annulled": (*shoe.annulled, round_id)[-MAX_HANDS:]})
