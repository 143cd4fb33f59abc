"""Table profiles: everything that differs between two tables is data, validated here.

A profile names its game, shoe, burns, dealing procedure, banker mode, betting
window and, per bet it offers, the stake limits and the paytable. Profiles ship
as JSON in `shared/profiles/`; a profile that names an unknown bet, misses a
paytable line or carries one its bet can never pay is refused at load time, so
nothing downstream meets a half-configured table.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from shared.bets import GAME_RULES
from shared.money import Odds
from shared.triple_face import Procedure


class ProfileError(ValueError):
    """A profile that cannot be loaded or is not valid."""


class UnknownProfileError(ProfileError):
    pass


class BetSpec(BaseModel):
    """One bet a table offers: stake limits in minor units and its paytable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_stake: int = Field(gt=0, strict=True)
    max_stake: int = Field(gt=0, strict=True)
    pays: dict[str, Odds]

    @model_validator(mode="after")
    def _limits_in_order(self) -> BetSpec:
        if self.min_stake > self.max_stake:
            raise ValueError(f"min_stake {self.min_stake} is above max_stake {self.max_stake}")
        return self


class _ProfileBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    game: str  # narrowed to a literal by each game's profile
    betting_window_seconds: int = Field(gt=0, strict=True)
    currency: str | None = None
    burn_per_round: int = Field(ge=0, strict=True)
    bets: dict[str, BetSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _bets_known_and_paid(self) -> _ProfileBase:
        rules = GAME_RULES[self.game]
        for bet_id, spec in self.bets.items():
            rule = rules.get(bet_id)
            if rule is None:
                raise ValueError(
                    f"bet {bet_id!r} is not a {self.game} bet; "
                    f"known: {', '.join(rules)}"
                )
            expected = rule.lines | self._extra_lines(bet_id)
            if set(spec.pays) != expected:
                raise ValueError(
                    f"bet {bet_id!r} pays lines {sorted(spec.pays)}, expected {sorted(expected)}"
                )
        return self

    def _extra_lines(self, bet_id: str) -> frozenset[str]:
        return frozenset()


class BaccaratProfile(_ProfileBase):
    game: Literal["baccarat"]
    decks: int = Field(ge=1, le=8, strict=True)
    banker_mode: Literal["commission", "no_commission"]
    shoe_start_burn: bool
    # the cut card sits this many cards before the end of the shoe; at least 6 so a
    # round started before it (at most 6 cards) can always be finished
    cut_card_from_end: int = Field(ge=6, strict=True)

    @model_validator(mode="after")
    def _cut_card_fits(self) -> BaccaratProfile:
        if self.cut_card_from_end >= 52 * self.decks:
            raise ValueError(f"cut_card_from_end {self.cut_card_from_end} exceeds the shoe")
        return self

    def _extra_lines(self, bet_id: str) -> frozenset[str]:
        # a no-commission Banker pays its own line on a win with 6 points
        if bet_id == "banker" and self.banker_mode == "no_commission":
            return frozenset({"win_on_6"})
        return frozenset()


class TripleFaceProfile(_ProfileBase):
    game: Literal["triple_face"]
    decks: Literal[1] = 1
    procedure: Procedure
    # RULES §4.1 decision: a fresh deck is shuffled before every round
    reshuffle_every_round: Literal[True] = True


Profile = Annotated[BaccaratProfile | TripleFaceProfile, Field(discriminator="game")]
_ADAPTER: TypeAdapter[BaccaratProfile | TripleFaceProfile] = TypeAdapter(Profile)


def parse_profile(data: dict) -> BaccaratProfile | TripleFaceProfile:
    """Validate a profile given as a dict (e.g. read from JSON)."""
    try:
        return _ADAPTER.validate_python(data)
    except ValueError as exc:
        raise ProfileError(f"invalid profile {data.get('name', '?')!r}: {exc}") from exc


def list_profiles() -> list[str]:
    """Names of the shipped profiles."""
    folder = resources.files("shared.profiles")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


@cache
def load_profile(name: str) -> BaccaratProfile | TripleFaceProfile:
    """The shipped profile `name`; an unknown name is refused with the known ones listed."""
    known = list_profiles()
    if name not in known:
        raise UnknownProfileError(f"unknown profile {name!r}; known profiles: {', '.join(known)}")
    text = resources.files("shared.profiles").joinpath(f"{name}.json").read_text("utf-8")
    profile = parse_profile(json.loads(text))
    if profile.name != name:
        raise ProfileError(f"profile file {name}.json names itself {profile.name!r}")
    return profile
