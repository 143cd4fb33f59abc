"""The table machine's shared checks (`table_machine`): each returns what it checked or
raises Refused."""

from __future__ import annotations

from services.dealer_event.refusals import Refused
from services.dealer_event.state import ShoeState, TableRound, TableState
from shared.events.inputs import InputBase
from shared.round_phase import RoundPhase, has_result, in_progress

# what a closed table still takes: management's decisions, and its reopening
_WHILE_CLOSED = frozenset({"reopen_table", "void_round", "annul_rounds", "correct_round",
                           "end_shoe"})


def _not_ended(round_id: str, status: RoundPhase) -> None:
    if status == "voided":
        raise Refused("round_already_voided", f"round {round_id} was already voided")
    if status == "annulled":
        raise Refused("round_already_annulled", f"round {round_id} was already annulled")

def _table_open(state: TableState, inp: InputBase) -> None:
    if state.closed is not None and inp.command not in _WHILE_CLOSED:
        raise Refused("table_closed", f"table {state.table_id} is closed ({state.closed}); "
                                      "a supervisor reopens it (reopen_table)")


def _not_abandoned(state: TableState, inp: InputBase) -> None:
    """An input for the round the platform abandoned is refused by that name: the round
    ended without it and its stakes went back (docs/decisions/abandoned-rounds.md)."""
    rnd, round_id = state.round, getattr(inp, "round_id", None)
    if rnd is not None and rnd.abandoned and round_id == rnd.round_id:
        raise Refused("round_abandoned", f"round {round_id} was voided by the platform: no "
                                         "input came for CROUPIER_ROUND_ABANDON_SECONDS and "
                                         "its stakes were returned; open a new round")


def _shoe_in_play(state: TableState) -> ShoeState:
    if state.shoe is None:
        raise Refused("no_shoe", f"table {state.table_id} has no shoe in play; "
                                 "a supervisor starts one with new_shoe")
    return state.shoe


def _shoe_playable(state: TableState) -> ShoeState:
    """The shoe in play, if a round may start from it."""
    shoe = _shoe_in_play(state)
    if shoe.start_burn_pending:
        raise Refused("shoe_needs_first_card_burn", f"shoe {shoe.shoe_id} starts with its "
                                                    "first card turned and burned "
                                                    "(shoe_first_card)")
    if shoe.finished:
        raise Refused("shoe_finished", f"the cut card ended shoe {shoe.shoe_id}; "
                                       "start a new shoe")
    return shoe


def _round_shoe(state: TableState) -> ShoeState:
    """The shoe the table's round (or an open round) is dealt from. A shoe's end clears the
    round with it, so a round without a shoe is a broken state, not a refusal."""
    if state.shoe is None:
        raise ValueError(f"table {state.table_id}: a round in play without a shoe")
    return state.shoe


def _no_round_in_progress(state: TableState) -> None:
    rnd = state.round
    if rnd is not None and rnd.in_progress:
        raise Refused("round_in_progress", f"round {rnd.round_id} is in progress; "
                                           "complete or void it first")


def _round_status(state: TableState, round_id: str) -> RoundPhase:
    """What became of `round_id` on this table: its phase (shared.round_phase)."""
    status = state.round_status.get(round_id)
    if status is None:
        raise _round_not_found(state, round_id)
    return status


def _kept_round_status(state: TableState, round_id: str, too_old: str) -> RoundPhase:
    """`_round_status` for a decision after the fact (annul, correct): once the table has
    forgotten rounds (state.KEEP_ROUNDS), an id it does not know is refused `too_old`. It
    cannot tell a forgotten id from one never dealt here, and says both."""
    status = state.round_status.get(round_id)
    if status is None and _forgot_rounds(state):
        raise Refused(too_old, f"table {state.table_id} keeps its last "
                               f"{len(state.round_status)} rounds (of {state.rounds_opened} "
                               f"it opened): round {round_id} is not one of them, so it is "
                               "older (a decision on it is no longer the table's) or was "
                               "never dealt here")
    return _round_status(state, round_id)


def _forgot_rounds(state: TableState) -> bool:
    return state.rounds_opened > len(state.round_status)


def _dealt_round(state: TableState, round_id: str, allow_betting: bool = False) -> TableRound:
    """`round_id` is the table's current round: being dealt (or betting), or just complete."""
    status = _round_status(state, round_id)
    _not_ended(round_id, status)
    rnd = state.round
    if rnd is None or rnd.round_id != round_id or not (
            has_result(rnd.phase) or rnd.phase == "dealing"
            or (allow_betting and rnd.phase == "betting")):
        raise Refused("round_not_in_progress", f"round {round_id} is not the round on the "
                                               f"table (it is {status})")
    return rnd


def _current_round(state: TableState, round_id: str, allow_complete: bool = False
                   ) -> TableRound:
    if round_id not in state.round_status:
        raise _round_not_found(state, round_id)
    rnd = state.round
    if rnd is None or rnd.round_id != round_id or not (
            in_progress(rnd.phase) or (allow_complete and has_result(rnd.phase))):
        status = state.round_status[round_id]
        raise Refused("round_not_in_progress", f"round {round_id} is not in progress "
                                               f"(it is {status})")
    return rnd


def _round_not_found(state: TableState, round_id: str) -> Refused:
    kept = f" among the last {len(state.round_status)} it keeps" if _forgot_rounds(state) else ""
    return Refused("round_not_found", f"table {state.table_id} has no round {round_id}{kept}")


def _not_in_shoe(card: str, shoe_id: str) -> Refused:
    return Refused("card_not_in_shoe", f"card {card} is not in shoe {shoe_id}: every copy "
                                       "of it has already left the shoe (double scan or "
                                       "foreign card)")
