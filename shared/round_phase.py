"""A round's phase: the one vocabulary and the one fold of it from `table.events`
(issue 32, "one home per rule"; docs/decisions/round-phase.md).

RULES §5: a round is opened (the betting window), betting closes, it is dealt, it reaches
a result; it can be voided before it is settled, and management may annul a completed
round (seeds 000 §1, 004 §1). The phases:

- `betting`: opened, the betting window is open (`round_opened`);
- `dealing`: betting closed, the cards are coming (`betting_closed`);
- `completed`: the round reached its result (`round_completed`); a correction
  (`round_corrected`) supersedes the result and leaves the phase as it is;
- `voided`: voided before it completed (`round_voided`), every bet refunded;
- `annulled`: a completed round voided by management (`round_annulled`).

Every service that follows a round's phase from table events folds it with `phase_after`
and speaks of it in these words. What a service keeps beside it that is not the round's
phase (bet-settlement's "pending"/"closing"/"settled", the replay report's "corrected")
is its own, and its relation to the phase is written down here, next to the fold.
"""

from __future__ import annotations

from typing import Literal, get_args

from shared.events.table import TableEventBase

RoundPhase = Literal["betting", "dealing", "completed", "voided", "annulled"]
ROUND_PHASES: tuple[RoundPhase, ...] = get_args(RoundPhase)

# the phase each event type moves a round to, and the phases it may move it from
_MOVES: dict[str, tuple[RoundPhase, frozenset[RoundPhase]]] = {
    "round_opened": ("betting", frozenset()),
    "betting_closed": ("dealing", frozenset({"betting"})),
    # the dealer may complete a round whose close it did not wait for (the timer closes it)
    "round_completed": ("completed", frozenset({"betting", "dealing"})),
    "round_voided": ("voided", frozenset({"betting", "dealing"})),
    "round_annulled": ("annulled", frozenset({"completed"})),
}
# the event types that move a round's phase (every other type leaves it as it is)
PHASE_EVENT_TYPES: frozenset[str] = frozenset(_MOVES)


def phase_after_type(phase: RoundPhase | None, event_type: str) -> RoundPhase | None:
    """The round's phase after an event of `event_type` (a table event's `type`) of that
    round. `phase` None: the fold has not seen the round; a fold that begins in the middle
    of its story (a view that starts an hour back, a replay's window) takes the event's
    word. An event that does not apply to the phase (a void of a completed round, a second
    close, a card, a correction) leaves it as it is: the services refuse such inputs before
    they become events, and a fold never fails on one."""
    move = _MOVES.get(event_type)
    if move is None:
        return phase
    after, sources = move
    if phase is None or phase in sources:
        return after
    return phase


def phase_after(phase: RoundPhase | None, event: TableEventBase) -> RoundPhase | None:
    """The round's phase after `event`, one of its own events (`phase_after_type`)."""
    return phase_after_type(phase, event.type)


def in_progress(phase: RoundPhase | None) -> bool:
    """Opened and not yet ended: betting or dealing."""
    return phase in ("betting", "dealing")


def accepts_bets(phase: RoundPhase | None) -> bool:
    """The betting window is open (the deadline is each service's own check)."""
    return phase == "betting"


def has_result(phase: RoundPhase | None) -> bool:
    """The round reached a result: completed, or completed and then annulled (its cards
    and result stand in the log; its bets were refunded)."""
    return phase in ("completed", "annulled")


def is_final(phase: RoundPhase | None) -> bool:
    """Nothing can change the phase any more: voided or annulled (a completed round may
    still be annulled)."""
    return phase in ("voided", "annulled")


# --- the words a service keeps of its own, and how they map to the phase --------------

# The wallet's public answer (`GET /tables`, `GET /tables/{id}/round`) speaks to players'
# clients in the words it always has: "open" (betting) and "closed" (dealing).
BettingStatus = Literal["open", "closed", "completed", "voided", "annulled"]
_BETTING_STATUS: dict[RoundPhase, BettingStatus] = {
    "betting": "open", "dealing": "closed", "completed": "completed", "voided": "voided",
    "annulled": "annulled"}


def betting_status(phase: RoundPhase) -> BettingStatus:
    """The phase in the wallet's public words."""
    return _BETTING_STATUS[phase]


def phase_of_betting_status(status: str | None) -> RoundPhase | None:
    """The phase the wallet's public word names (None: no round, or a word it never says):
    how a reader of the wallet's answers (the operator console) speaks of it."""
    return next((phase for phase, word in _BETTING_STATUS.items() if word == status), None)


# game-evaluation's persisted `RoundView.status` (evaluation.log, on the wire since its
# first entry): the state of its own evaluation, not a fold of the phase. It does not
# follow the close ("open": betting or dealing); it is "complete" once its rules say the
# cards are (at the last card, before the table's `round_completed`) and stays so after an
# annulment, which it does not follow.
EvaluationStatus = Literal["open", "complete", "voided"]
_EVALUATION_PHASES: dict[str, frozenset[RoundPhase]] = {
    "open": frozenset({"betting", "dealing"}),
    "complete": frozenset({"dealing", "completed", "annulled"}),
    "voided": frozenset({"voided"})}

# bet-settlement's persisted `RoundHeader.status` (settlement.log): the state of its own
# work on the round's bets, which follows the table from its own inputs and lags it (a
# result arrives on round.results after the table's `round_completed`). "pending" and
# "unknown": the round has not opened there (or never will); "closing": the close is
# folded, late bets wait for the intake marks; "closed": the manifest is written, the
# result not yet read; "settled": every bet of the completed round is settled.
SettlementStatus = Literal["pending", "open", "closing", "closed", "settled", "voided",
                           "annulled", "unknown"]
_SETTLEMENT_PHASES: dict[str, frozenset[RoundPhase]] = {
    "pending": frozenset(), "unknown": frozenset(), "open": frozenset({"betting"}),
    "closing": frozenset({"dealing", "completed"}),
    "closed": frozenset({"dealing", "completed"}), "settled": frozenset({"completed"}),
    "voided": frozenset({"voided"}), "annulled": frozenset({"annulled"})}


def phases_of(status: EvaluationStatus | SettlementStatus,
              kind: Literal["evaluation", "settlement"]) -> frozenset[RoundPhase]:
    """The round phases a service's own persisted status is consistent with (empty: the
    round has not opened as far as that service knows)."""
    table = _EVALUATION_PHASES if kind == "evaluation" else _SETTLEMENT_PHASES
    return table[status]
