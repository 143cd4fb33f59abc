"""A simulated table: deal rounds from a real shoe and settle every bet, to cross-check RTP.

The dealer follows the profile exactly (shoe-start burn, per-round burns, the
cut card ending the shoe, a fresh deck per Triple Face round) and hands each
round to the same `evaluate_round` and `bets.resolve` the services use. The
random source is passed in: a seeded `random.Random` makes a run repeatable.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from shared.bets import GAME_RULES, resolve
from shared.cards import Card
from shared.profile import AnyProfile, BaccaratProfile, TripleFaceProfile
from shared.rounds import cards_needed, evaluate_round
from shared.rtp import RtpReport
from shared.shoe import Shoe, Shuffler


def deal_rounds(profile: AnyProfile, rng: Shuffler) -> Iterator[list[Card]]:
    """Endless rounds of cards in shoe order (burns excluded), new shoes as needed."""
    while True:
        shoe, _first = open_shoe(profile, rng)
        while True:
            for _burned in burns_before_round(profile, shoe):
                pass
            if shoe.cut_card_out:  # came out while burning: the round is not started
                break
            yield list(deal_round(profile, shoe))
            if shoe.cut_card_out or isinstance(profile, TripleFaceProfile):
                break  # last round of this shoe (Triple Face: a fresh deck every round)


def burns_before_round(profile: AnyProfile, shoe: Shoe) -> Iterator[Card]:
    """The cards burned before a round, drawn one at a time; stops early when the cut card
    comes out (the round is then not started and the shoe is over)."""
    for _ in range(profile.burn_per_round):
        yield shoe.draw()
        if shoe.cut_card_out:
            return


def deal_round(profile: AnyProfile, shoe: Shoe) -> Iterator[Card]:
    """A round's cards in dealing order, exactly as many as the rules need, each drawn only
    when the one before it has been taken (a round stopped early leaves the rest in the
    shoe)."""
    cards: list[Card] = []
    while needed := cards_needed(profile, cards):
        for _ in range(needed):
            card = shoe.draw()
            cards.append(card)
            yield card


def open_shoe(profile: AnyProfile, rng: Shuffler, cut_card_from_end: int | None = None
              ) -> tuple[Shoe, Card | None]:
    """A new shoe as the profile opens one: shuffled by `rng`, with its cut card (Baccarat:
    the profile's, or `cut_card_from_end`) and the seed-004 start burn done. Returns the shoe
    and the turned first card (None: the table burns no cards at shoe start)."""
    cut = None
    if isinstance(profile, BaccaratProfile):
        cut = profile.cut_card_from_end if cut_card_from_end is None else cut_card_from_end
    shoe = Shoe(profile.decks, cut_card_from_end=cut)
    shoe.shuffle(rng)
    first = None
    if isinstance(profile, BaccaratProfile) and profile.shoe_start_burn:
        first, *_burned = shoe.start_burn()
    return shoe, first


class SimulatedBet(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    bet: str
    rounds: int
    returned: Fraction  # total returned per unit staked, exact
    rtp: float
    exact_rtp: float
    std_error: float
    z: float  # (realised - exact) in standard errors


def simulate(
    profile: AnyProfile, rounds: int, rng: Shuffler, exact: RtpReport
) -> dict[str, SimulatedBet]:
    """Deal `rounds` rounds, stake one unit on every offered bet (Triple Face: position 1)."""
    if rounds < 1:
        raise ValueError(f"rounds must be positive, got {rounds}")
    rules = GAME_RULES[profile.game]
    counts: dict[str, dict[str, int]] = {bet_id: {} for bet_id in profile.bets}
    dealer = deal_rounds(profile, rng)
    for _ in range(rounds):
        result = evaluate_round(profile, next(dealer))
        for bet_id, lines in counts.items():
            rule = rules[bet_id]
            position = rule.positions[0] if rule.positions else None
            line = resolve(rule, result, position, profile).line
            lines[line] = lines.get(line, 0) + 1
    report = {}
    for bet_id, lines in counts.items():
        expected = exact.bets[bet_id]
        returned = sum(
            (n * expected.outcomes[line].returns for line, n in lines.items()), Fraction(0)
        )
        realised = returned / rounds
        std_error = math.sqrt(expected.variance / rounds)
        report[bet_id] = SimulatedBet(
            bet=bet_id,
            rounds=rounds,
            returned=returned,
            rtp=float(realised),
            exact_rtp=float(expected.rtp),
            std_error=std_error,
            z=float(realised - expected.rtp) / std_error if std_error else 0.0,
        )
    return report
