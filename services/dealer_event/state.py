"""A table's state as dealer-event knows it: a fold over that table's `table.events`.

The log is the source of truth. The live worker and the start-up rebuild use the
same `fold_into`, so the state after a restart is exactly the state before it:
chain head, shoe composition, current round, and the last rounds and input ids seen (each
bounded by count: KEEP_ROUNDS, KEEP_INPUT_IDS).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

from shared.events.canonical import GENESIS_HASH
from shared.events.table import (
    BettingClosed,
    CardBurned,
    CardDealt,
    CutCardReached,
    MisdealCorrected,
    RoundAnnulled,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    RoundRedealt,
    RoundStalled,
    RoundVoided,
    ShoeEnded,
    ShoeStartBurned,
    ShoeStarted,
    SurplusCardRecorded,
    TableClosed,
    TableEventBase,
    TableReopened,
    TwoCardsDrawn,
    VoidReason,
)
from shared.profile import AnyProfile, BaccaratProfile, TripleFaceProfile, load_profile
from shared.round_phase import RoundPhase, in_progress, phase_after
from shared.shoe import full_composition as shoe_composition
from shared.shoe import take_one


def full_composition(decks: int) -> dict[str, int]:
    """A fresh shoe's composition (shared.shoe), keyed by card name: a new dict each call
    (the shoe takes cards out of it), copied from the one built once per deck count."""
    fresh = _FRESH.get(decks)
    if fresh is None:
        fresh = _FRESH[decks] = {str(card): n for card, n in shoe_composition(decks).items()}
    return dict(fresh)


_FRESH: dict[int, dict[str, int]] = {}  # decks -> a fresh shoe's composition, never mutated


@dataclass
class ShoeState:
    shoe_id: str
    profile: str
    decks: int
    remaining: dict[str, int]
    position: int = 0  # cards out of the shoe so far (burns, dealt, surplus)
    start_burn_pending: bool = False
    cut_card_out: bool = False
    finished: bool = False  # no new round: the cut card ended the shoe
    round_count: int = 0
    pending_burns: int = 0  # burns since the last round ended
    fresh_deck_due: bool = False  # Triple Face: the next round takes a new deck

    @property
    def rules(self) -> AnyProfile:
        return load_profile(self.profile)

    @property
    def cards_left(self) -> int:
        return sum(self.remaining.values())

    def take(self, card: str) -> None:
        take_one(self.remaining, card)
        self.position += 1

    def renew_deck(self) -> None:
        self.remaining = full_composition(self.decks)
        self.position = 0
        self.fresh_deck_due = False


@dataclass
class TableRound:
    round_id: str
    round_number: int
    dealer: str
    profile: str
    betting_closes_at: datetime
    # shared.round_phase: betting -> dealing -> completed | voided; completed -> annulled
    phase: RoundPhase = "betting"
    cards: list[str] = field(default_factory=list)
    last_of_shoe: bool = False
    # seed 004 §6: two or more cards came out at once; the shoe ends when this round does
    shoe_cancelled: bool = False
    profile_version: int | None = None  # the rules the round opened under (RoundOpened)
    profile_digest: str | None = None
    # when the round's last input was decided (the occurred_at of its last event that names
    # an input; events the timers write name none): how long it has waited, from the log
    last_input_at: datetime | None = None
    stalled: bool = False  # its RoundStalled is in the log (raised once per round)
    abandoned: bool = False  # the platform voided it: no input came (round_abandoned)

    @property
    def in_progress(self) -> bool:
        return in_progress(self.phase)


# rounds a table keeps, newest last: each one's phase and shoe and, completed, the facts a
# correction needs; an older round is forgotten whole (docs/decisions/tables.md, "Rounds a
# table keeps"). Bounded by count, not by time: no writer's clock decides what is forgotten.
# 500: the reach corrections always had (more than eight hours at a round a minute), and
# more than a baccarat shoe deals (8 decks, at least 4 cards a round: 104 rounds with cards)
KEEP_ROUNDS = 500
# input ids a table keeps, applied and refused each, newest last: an id matters only while
# a resend of its input could still pass the time window (CROUPIER_INPUT_MAX_AGE_SECONDS,
# at most 10 minutes, and a table decides far fewer inputs than this in 10 minutes); past
# it a resend is refused `stale_input` anyway. Bounded by count, not by time: no writer's
# clock decides what is forgotten
KEEP_INPUT_IDS = 5_000


@dataclass(frozen=True)
class CompletedRound:
    """What a correction of a completed round needs (seed 004 §5): its pinned rules, its
    dealer, its cards as they stand (after any earlier correction) and when it completed."""

    shoe_id: str
    profile: str
    profile_version: int | None
    profile_digest: str | None
    dealer: str
    cards: tuple[str, ...]
    completed_at: datetime
    corrections: int = 0


@dataclass
class TableState:
    table_id: str
    seq: int = 0
    head_hash: str = GENESIS_HASH
    shoe: ShoeState | None = None
    round: TableRound | None = None
    # the last KEEP_ROUNDS rounds, oldest first: round id -> its phase (shared.round_phase),
    # and -> its shoe id (bounded, whatever the history)
    round_status: dict[str, RoundPhase] = field(default_factory=dict)
    round_shoe: dict[str, str] = field(default_factory=dict)
    rounds_opened: int = 0  # every round the table ever opened, kept or forgotten
    closed: str | None = None  # why the table is out of play until a supervisor reopens it
    profile: str | None = None  # the profile of the table's last shoe (kept after it ends)
    # the last KEEP_INPUT_IDS input ids applied (an ordered set), and refused on the table's
    # rules (-> the reason code), oldest first: bounded, whatever the history
    applied_inputs: dict[str, None] = field(default_factory=dict)
    refused_inputs: dict[str, str] = field(default_factory=dict)
    corrupt: str | None = None  # why the log does not continue this table's chain
    # the completed rounds among the last KEEP_ROUNDS, oldest first
    completed: dict[str, CompletedRound] = field(default_factory=dict)

    def copy(self) -> TableState:
        """A copy sharing nothing mutable (cheaper than deepcopy: keys are strings, values
        immutable; and than `dataclasses.replace`, which runs `__init__` again: the fold
        copies a table per entry)."""
        new = _shallow(self)
        if self.shoe is not None:
            new.shoe = _shallow(self.shoe)
            new.shoe.remaining = dict(self.shoe.remaining)
        if self.round is not None:
            new.round = _shallow(self.round)
            new.round.cards = list(self.round.cards)
        new.round_status = dict(self.round_status)
        new.round_shoe = dict(self.round_shoe)
        new.applied_inputs = dict(self.applied_inputs)
        new.refused_inputs = dict(self.refused_inputs)
        new.completed = dict(self.completed)
        return new

    @property
    def round_in_progress(self) -> bool:
        return self.round is not None and self.round.in_progress

    def summary(self) -> dict[str, Any]:
        """What an operator asks first: shoe, current round, chain head, cards left."""
        shoe, rnd = self.shoe, self.round
        return {
            "table_id": self.table_id,
            "seq": self.seq,
            "head_hash": self.head_hash,
            "corrupt": self.corrupt,
            "closed": self.closed,
            "shoe": None if shoe is None else {
                "shoe_id": shoe.shoe_id, "profile": shoe.profile, "decks": shoe.decks,
                "cards_out": shoe.position, "cards_left": shoe.cards_left,
                "start_burn_pending": shoe.start_burn_pending,
                "cut_card_out": shoe.cut_card_out, "finished": shoe.finished,
                "rounds": shoe.round_count, "pending_burns": shoe.pending_burns,
            },
            "round": None if rnd is None else {
                "round_id": rnd.round_id, "number": rnd.round_number, "phase": rnd.phase,
                "dealer": rnd.dealer, "betting_closes_at": rnd.betting_closes_at.isoformat(),
                "cards": list(rnd.cards), "last_of_shoe": rnd.last_of_shoe,
                "shoe_cancelled": rnd.shoe_cancelled,
            },
            "rounds_seen": self.rounds_opened,
            "rounds_kept": len(self.round_status),
            "inputs_applied_kept": len(self.applied_inputs),
        }


_T = TypeVar("_T")


def _shallow(value: _T) -> _T:
    """A new instance with the same attributes (shared, to be replaced if mutable)."""
    new = object.__new__(type(value))
    new.__dict__.update(value.__dict__)
    return new


def fold(state: TableState, event: TableEventBase) -> TableState:
    """The state after `event`, leaving `state` untouched."""
    new = state.copy()
    fold_into(new, event)
    return new


def fold_into(state: TableState, event: TableEventBase) -> None:
    """Apply one accepted event in place (the rebuild's fast path)."""
    _APPLY[type(event)](state, event)
    if event.input_id and state.round is not None and state.round.in_progress:
        state.round.last_input_at = event.occurred_at
    state.seq = event.seq
    state.head_hash = event.hash
    if event.input_id:
        remember_input(state.applied_inputs, event.input_id, None)


def remember_input(ids: dict[str, Any], input_id: str, value: Any) -> None:
    """`input_id` in `ids` as the newest, the oldest forgotten past KEEP_INPUT_IDS."""
    ids.pop(input_id, None)
    ids[input_id] = value
    while len(ids) > KEEP_INPUT_IDS:
        del ids[next(iter(ids))]


def _shoe_started(state: TableState, e: ShoeStarted) -> None:
    rules = load_profile(e.profile)
    state.shoe = ShoeState(
        shoe_id=e.shoe_id, profile=e.profile, decks=e.decks,
        remaining=full_composition(e.decks),
        start_burn_pending=isinstance(rules, BaccaratProfile) and rules.shoe_start_burn,
    )
    state.round = None
    state.profile = e.profile


def _shoe_start_burned(state: TableState, e: ShoeStartBurned) -> None:
    shoe = _shoe(state)
    shoe.take(str(e.first_card))
    shoe.position += e.burn_count  # burned face down: position known, faces not
    shoe.start_burn_pending = False


def _card_burned(state: TableState, e: CardBurned) -> None:
    shoe = _shoe(state)
    if shoe.fresh_deck_due:
        shoe.renew_deck()
    if e.card is None:
        shoe.position += 1
    else:
        shoe.take(str(e.card))
    shoe.pending_burns += 1


def _cut_card(state: TableState, e: CutCardReached) -> None:
    shoe = _shoe(state)
    shoe.cut_card_out = True
    if e.round_id is not None and state.round is not None and state.round.in_progress:
        state.round.last_of_shoe = True
    else:
        shoe.finished = True


def _shoe_ended(state: TableState, e: ShoeEnded) -> None:
    state.shoe = None
    state.round = None


def _round_opened(state: TableState, e: RoundOpened) -> None:
    shoe = _shoe(state)
    if shoe.fresh_deck_due:
        shoe.renew_deck()
    shoe.round_count += 1
    state.round = TableRound(round_id=e.round_id, round_number=e.round_number, dealer=e.dealer,
                             profile=e.profile, betting_closes_at=e.betting_closes_at,
                             profile_version=e.profile_version,
                             profile_digest=e.profile_digest)
    _follow_phase(state, e.round_id, e)
    state.round_shoe[e.round_id] = e.shoe_id
    state.rounds_opened += 1
    while len(state.round_shoe) > KEEP_ROUNDS:  # the oldest round is forgotten whole
        oldest = next(iter(state.round_shoe))
        del state.round_shoe[oldest]
        state.round_status.pop(oldest, None)
        state.completed.pop(oldest, None)


def _betting_closed(state: TableState, e: BettingClosed) -> None:
    _follow_phase(state, _round(state).round_id, e)


def _card_dealt(state: TableState, e: CardDealt) -> None:
    _shoe(state).take(str(e.card))
    _round(state).cards.append(str(e.card))


def _surplus(state: TableState, e: SurplusCardRecorded) -> None:
    _shoe(state).take(str(e.card))


def _round_completed(state: TableState, e: RoundCompleted) -> None:
    rnd, shoe = _round(state), _shoe(state)
    state.completed[rnd.round_id] = CompletedRound(
        shoe_id=shoe.shoe_id, profile=rnd.profile, profile_version=rnd.profile_version,
        profile_digest=rnd.profile_digest, dealer=rnd.dealer,
        cards=tuple(str(c) for c in e.cards), completed_at=e.occurred_at)
    _end_round(state, e)


def _round_corrected(state: TableState, e: RoundCorrected) -> None:
    kept = state.completed.get(e.round_id)
    if kept is not None:
        state.completed[e.round_id] = replace(kept, cards=tuple(str(c) for c in e.cards),
                                              corrections=e.correction)


def _round_voided(state: TableState, e: RoundVoided) -> None:
    _round(state).abandoned = e.reason_code == VoidReason.ROUND_ABANDONED
    _end_round(state, e)


def _round_stalled(state: TableState, e: RoundStalled) -> None:
    _round(state).stalled = True


def _round_annulled(state: TableState, e: RoundAnnulled) -> None:
    _follow_phase(state, e.round_id, e)
    state.completed.pop(e.round_id, None)


def _round_redealt(state: TableState, e: RoundRedealt) -> None:
    """The cards so far are set aside and the deck reshuffled: the round is dealt again,
    burns first."""
    rnd, shoe = _round(state), _shoe(state)
    rnd.cards = []
    shoe.pending_burns = 0
    if isinstance(shoe.rules, TripleFaceProfile):
        shoe.renew_deck()


def _misdeal_corrected(state: TableState, e: MisdealCorrected) -> None:
    pass  # recorded; the cards' order out of the shoe already placed them


def _two_cards_drawn(state: TableState, e: TwoCardsDrawn) -> None:
    _round(state).shoe_cancelled = True


def _table_closed(state: TableState, e: TableClosed) -> None:
    state.closed = f"{e.reason_code}: {e.reason_text}"


def _table_reopened(state: TableState, e: TableReopened) -> None:
    state.closed = None


def _follow_phase(state: TableState, round_id: str, e: TableEventBase) -> None:
    """The round's phase after `e` (shared.round_phase's fold), in the round table and, when
    it is the round in play, on the round."""
    phase = phase_after(state.round_status.get(round_id), e)
    if phase is None:
        return
    state.round_status[round_id] = phase
    rnd = state.round
    if rnd is not None and rnd.round_id == round_id:
        rnd.phase = phase


def _end_round(state: TableState, e: RoundCompleted | RoundVoided) -> None:
    rnd, shoe = _round(state), _shoe(state)
    _follow_phase(state, rnd.round_id, e)
    shoe.pending_burns = 0
    if isinstance(shoe.rules, TripleFaceProfile):
        shoe.fresh_deck_due = True
    if rnd.last_of_shoe or shoe.cut_card_out:
        shoe.finished = True


def _shoe(state: TableState) -> ShoeState:
    if state.shoe is None:
        raise ValueError(f"table {state.table_id}: event at seq {state.seq + 1} needs a shoe")
    return state.shoe


def _round(state: TableState) -> TableRound:
    if state.round is None:
        raise ValueError(f"table {state.table_id}: event at seq {state.seq + 1} needs a round")
    return state.round


# each folds its own event type (the Any: the event type is the key)
_APPLY: dict[type[TableEventBase], Callable[[TableState, Any], None]] = {
    ShoeStarted: _shoe_started, ShoeStartBurned: _shoe_start_burned, CardBurned: _card_burned,
    CutCardReached: _cut_card, ShoeEnded: _shoe_ended, RoundOpened: _round_opened,
    BettingClosed: _betting_closed, CardDealt: _card_dealt, SurplusCardRecorded: _surplus,
    RoundCompleted: _round_completed, RoundVoided: _round_voided,
    RoundAnnulled: _round_annulled, RoundRedealt: _round_redealt,
    MisdealCorrected: _misdeal_corrected, RoundCorrected: _round_corrected,
    TableClosed: _table_closed,
    TableReopened: _table_reopened, RoundStalled: _round_stalled,
    TwoCardsDrawn: _two_cards_drawn,
}
