"""Table profiles: everything that differs between two tables is data, validated here.

A profile names its game, shoe, burns, dealing procedure, banker mode, betting
window and, per bet it offers, the paytable and the stake limits (per currency, with the
chips, when it states `currencies`). Profiles ship as JSON in `shared/profiles/`; a
profile that names an unknown bet, misses a paytable line or carries one its bet can
never pay is refused at load time, so nothing downstream meets a half-configured table.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, model_validator

from shared.bets import GAME_RULES
from shared.currency import CurrencyError, check_currency
from shared.events.table import VoidReason
from shared.models import FrozenModel
from shared.money import Odds
from shared.triple_face import Procedure


class ProfileError(ValueError):
    """A profile that cannot be loaded or is not valid."""


class UnknownProfileError(ProfileError):
    pass


def _limits_in_order(min_stake: int | None, max_stake: int | None) -> None:
    if min_stake is not None and max_stake is not None and min_stake > max_stake:
        raise ValueError(f"min_stake {min_stake} is above max_stake {max_stake}")


class StakeLimits(FrozenModel):
    """One bet's stake limits in one currency, in its minor units. `max_stake` is also seed
    002's table maximum on one spot in one round."""


    min_stake: int = Field(gt=0, strict=True)
    max_stake: int = Field(gt=0, strict=True)

    @model_validator(mode="after")
    def _in_order(self) -> StakeLimits:
        _limits_in_order(self.min_stake, self.max_stake)
        return self


class CurrencyLimits(FrozenModel):
    """What a table offers a player in one currency, in its minor units: each bet's limits and
    the chip denominations (ascending, each within the table's lowest minimum and highest
    maximum)."""


    chips: tuple[Annotated[int, Field(gt=0, strict=True)], ...] = Field(min_length=1)
    bets: dict[str, StakeLimits] = Field(min_length=1)

    @model_validator(mode="after")
    def _chips_within_limits(self) -> CurrencyLimits:
        if list(self.chips) != sorted(set(self.chips)):
            raise ValueError(f"chips {list(self.chips)} are not distinct and ascending")
        low = min(limits.min_stake for limits in self.bets.values())
        high = max(limits.max_stake for limits in self.bets.values())
        outside = [chip for chip in self.chips if not low <= chip <= high]
        if outside:
            raise ValueError(f"chips {outside} are outside the table's limits {low}..{high}")
        return self


class BetSpec(FrozenModel):
    """One bet a table offers: its paytable and, in a profile without per-currency limits
    (`currencies`), its stake limits in minor units."""


    min_stake: int | None = Field(default=None, gt=0, strict=True)
    max_stake: int | None = Field(default=None, gt=0, strict=True)
    pays: dict[str, Odds]

    @model_validator(mode="after")
    def _limits_in_order(self) -> BetSpec:
        if (self.min_stake is None) != (self.max_stake is None):
            raise ValueError("min_stake and max_stake go together")
        _limits_in_order(self.min_stake, self.max_stake)
        return self

    def stake_limits(self) -> StakeLimits | None:
        """The bet's own limits (None: the profile states them per currency)."""
        if self.min_stake is None or self.max_stake is None:
            return None
        return StakeLimits.model_construct(min_stake=self.min_stake, max_stake=self.max_stake)


class _ProfileBase(FrozenModel):

    name: str
    # a changed profile is a new version; released versions stay shipped, never edited
    # (shared/profiles/released/, docs/decisions/pinned-rules.md)
    version: int = Field(default=1, ge=1, strict=True)
    title: str
    game: str  # narrowed to a literal by each game's profile
    betting_window_seconds: int = Field(gt=0, strict=True)
    # the one currency a profile without `currencies` plays in (None: any, with the same
    # limits in its minor units); `currencies` states limits and chips per currency instead
    # (docs/decisions/currencies.md)
    currency: str | None = None
    currencies: dict[str, CurrencyLimits] | None = Field(default=None, min_length=1)
    burn_per_round: int = Field(ge=0, strict=True)
    # table procedure (docs/decisions/procedures.md); defaults are the rules of profiles
    # released before these fields existed, every shipped profile states them
    misdeal_policy: Literal["void", "correct"] = "correct"
    burn_error_policy: Literal["void", "redeal", "none"]  # default: see _burn_error_default
    shoe_ends_on: tuple[VoidReason, ...] = ()
    table_closes_on: tuple[VoidReason, ...] = ()
    extra_card_ends_shoe: bool = False
    # two or more cards drawn at once: `void` voids the hand (seed 002, report_two_cards as
    # void_round two_cards_dealt); `card_rules` keeps the cards in the order they left the
    # shoe, the hand's result follows the card rules, and the shoe ends after it (seed 004 §6)
    two_cards_policy: Literal["void", "card_rules"] = "void"
    bets: dict[str, BetSpec] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _burn_error_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and "burn_error_policy" not in data:
            data = {**data, "burn_error_policy":
                    "none" if data.get("burn_per_round") == 0 else "void"}
        return data

    @model_validator(mode="after")
    def _procedures_consistent(self) -> _ProfileBase:
        if (self.burn_per_round == 0) != (self.burn_error_policy == "none"):
            raise ValueError(f"burn_error_policy {self.burn_error_policy!r} does not fit "
                             f"burn_per_round {self.burn_per_round}: 'none' exactly when the "
                             "table burns no card")
        if self.burn_error_policy == "redeal" and self.game != "triple_face":
            raise ValueError("burn_error_policy 'redeal' (before Player 1's second card) is a "
                             "Triple Face procedure")
        if self.two_cards_policy == "card_rules" and "two_cards_dealt" in self.shoe_ends_on:
            raise ValueError("two_cards_policy 'card_rules' never voids a hand for two cards "
                             "drawn at once (the shoe ends after the round): drop "
                             "'two_cards_dealt' from shoe_ends_on")
        return self

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

    @model_validator(mode="after")
    def _limits_per_currency(self) -> _ProfileBase:
        for code in [*filter(None, [self.currency]), *(self.currencies or {})]:
            try:
                check_currency(code)
            except CurrencyError as exc:
                raise ValueError(str(exc)) from None
        legacy = [bet_id for bet_id, spec in self.bets.items() if spec.min_stake is not None]
        if self.currencies is None:
            missing = sorted(set(self.bets) - set(legacy))
            if missing:
                raise ValueError(f"bets {missing} have no min_stake/max_stake and the profile "
                                 "states no per-currency limits (`currencies`)")
            return self
        if self.currency is not None:
            raise ValueError("state either `currency` (one currency, the bets' own limits) or "
                             "`currencies` (limits and chips per currency), not both")
        if legacy:
            raise ValueError(f"bets {sorted(legacy)} state min_stake/max_stake beside "
                             "`currencies`: state each currency's limits under `currencies`")
        for code, table in self.currencies.items():
            if set(table.bets) != set(self.bets):
                raise ValueError(
                    f"currency {code}: limits for bets {sorted(table.bets)}, the profile "
                    f"offers {sorted(self.bets)}: every offered bet needs limits in every "
                    "offered currency")
        return self

    def offered_currencies(self) -> tuple[str, ...] | None:
        """The currencies a player may bet in here (None: any, a profile with neither
        `currency` nor `currencies`)."""
        if self.currencies is not None:
            return tuple(self.currencies)
        return None if self.currency is None else (self.currency,)

    def limits_in(self, currency: str) -> CurrencyLimits | None:
        """Each bet's limits and the chips for a player in `currency` (None: not offered).
        A profile without `currencies` has one set of limits (and no chips), taken in the
        player's currency when it names no `currency`, as before currencies were stated."""
        if self.currencies is not None:
            return self.currencies.get(currency)
        if self.currency is not None and self.currency != currency:
            return None
        return CurrencyLimits.model_construct(chips=(), bets={  # validated as BetSpecs
            bet_id: limits for bet_id, spec in self.bets.items()
            if (limits := spec.stake_limits()) is not None})

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
    # seed 002 (optional): Tiger wagers only from a player with a Player, Banker or Tie
    # bet in the round (docs/decisions/acceptance.md)
    tiger_needs_main_bet: bool = False

    @model_validator(mode="after")
    def _cut_card_fits(self) -> BaccaratProfile:
        if self.cut_card_from_end >= 52 * self.decks:
            raise ValueError(f"cut_card_from_end {self.cut_card_from_end} exceeds the shoe")
        if "super_six" in self.bets and self.banker_mode != "no_commission":
            raise ValueError("super_six is offered only at no-commission tables (seed 002)")
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


AnyProfile = BaccaratProfile | TripleFaceProfile  # a profile of either game
Profile = Annotated[AnyProfile, Field(discriminator="game")]
_ADAPTER: TypeAdapter[AnyProfile] = TypeAdapter(Profile)


def parse_profile(data: dict[str, Any]) -> AnyProfile:
    """Validate a profile given as a dict (e.g. read from JSON)."""
    try:
        return _ADAPTER.validate_python(data)
    except ValueError as exc:
        raise ProfileError(f"invalid profile {data.get('name', '?')!r}: {exc}") from exc


def list_profiles() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(p.name[:-5] for p in profiles_dir().iterdir()
                  if p.name.endswith(".json") and p.is_file())


@cache
def load_profile(name: str, version: int | None = None) -> AnyProfile:
    """The shipped profile `name`: the current one, or `version` as it was released (the
    current file while that version is not released yet). An unknown name is refused with
    the known ones listed, an unknown version with the shipped versions listed."""
    data = _current_data(name) if version is None else profile_data(name, version)
    profile = parse_profile(data)
    if profile.name != name:
        raise ProfileError(f"profile file {name}.json names itself {profile.name!r}")
    return profile


# --- versions: rules pinned to the round (docs/decisions/pinned-rules.md) ----------------

LEGACY_VERSION = 1  # a round recorded before profiles had versions was dealt under version 1
LOCK_FILE = "released/lock.json"  # name -> version -> digest, under profiles_dir()
_DEFAULT_DIR = Path(__file__).resolve().parent / "profiles"
_dir_override: list[Path] = []


class ProfileDigestError(ProfileError):
    """A round names a profile version whose shipped content is not what it was played with."""


def profiles_dir() -> Path:
    """The current profiles (`<name>.json`) and the released ones
    (`released/<name>/v<N>.json`, their digests in `released/lock.json`)."""
    return _dir_override[-1] if _dir_override else _DEFAULT_DIR


def use_profiles_dir(folder: Path | None) -> None:
    """Read profiles from `folder` (None: the shipped ones again), e.g. a test's copy."""
    _dir_override.clear()
    if folder is not None:
        _dir_override.append(Path(folder))
    for cached in (load_profile, _current_data, profile_data, shipped_digest, released_lock):
        cached.cache_clear()


def profile_digest(data: dict[str, Any]) -> str:
    """SHA-256 of a profile's canonical JSON (sorted keys, no whitespace, UTF-8), taken over
    the data as shipped (the JSON file, not the parsed model): reformatting a file does not
    change it, and neither does a new optional field in the model."""
    from shared.events.canonical import canonical_bytes, sha256_hex

    return sha256_hex(canonical_bytes(data))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text("utf-8"))
        return data
    except (OSError, ValueError) as exc:
        raise ProfileError(f"cannot read profile file {path}: {exc}") from exc


@cache
def _current_data(name: str) -> dict[str, Any]:
    known = list_profiles()
    if name not in known:
        raise UnknownProfileError(f"unknown profile {name!r}; known profiles: {', '.join(known)}")
    return _read_json(profiles_dir() / f"{name}.json")


def released_path(name: str, version: int) -> Path:
    return profiles_dir() / "released" / name / f"v{version}.json"


@cache
def released_lock() -> dict[str, dict[str, str]]:
    """The digest of every released version: {name: {"<version>": sha256}}."""
    path = profiles_dir() / LOCK_FILE
    return _read_json(path) if path.exists() else {}


def shipped_versions(name: str) -> list[int]:
    """The versions of `name` that can be loaded: the released ones and the current one."""
    versions = {int(v) for v in released_lock().get(name, {})}
    return sorted(versions | {_current_data(name).get("version", LEGACY_VERSION)})


@cache
def profile_data(name: str, version: int) -> dict[str, Any]:
    """The JSON data of `name` at `version`: its released snapshot, or the current file when
    that is the version and it is not released yet."""
    path = released_path(name, version)
    if path.exists():
        return _read_json(path)
    current = _current_data(name)
    if current.get("version", LEGACY_VERSION) == version:
        return current
    raise UnknownProfileError(f"profile {name!r} has no version {version}; shipped versions: "
                              f"{', '.join(map(str, shipped_versions(name)))}")


@cache
def shipped_digest(name: str, version: int | None = None) -> str:
    return profile_digest(_current_data(name) if version is None else profile_data(name, version))


def pinned(name: str) -> tuple[int, str]:
    """What a round opened now records: the current profile's version and digest."""
    return _current_data(name).get("version", LEGACY_VERSION), shipped_digest(name)


def round_profile(name: str, version: int | None) -> AnyProfile:
    """The profile a round was opened with (a round recorded without a version: version 1)."""
    return load_profile(name, LEGACY_VERSION if version is None else version)


def pin_mismatch(name: str, version: int | None, digest: str | None) -> str | None:
    """Why the shipped `name` v`version` is not the profile a round recorded (None: it is, or
    the round recorded no digest). Names both digests."""
    if digest is None:
        return None
    v = LEGACY_VERSION if version is None else version
    try:
        shipped = shipped_digest(name, v)
    except ProfileError as exc:
        return str(exc)
    if shipped == digest:
        return None
    return (f"profile {name} v{v}: the round was opened with digest {digest}, the shipped "
            f"v{v} has digest {shipped}; a released profile was edited in place or the "
            "dealer ran other rules")


def check_pin(name: str, version: int | None, digest: str | None) -> AnyProfile:
    """`round_profile`, refusing (ProfileDigestError) a version whose digest differs."""
    problem = pin_mismatch(name, version, digest)
    if problem is not None:
        raise ProfileDigestError(problem)
    return round_profile(name, version)
