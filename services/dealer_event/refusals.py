"""Why an input was refused: one machine-readable code per kind, and a sentence for people.

Codes are stable identifiers (dashboards, alerts and supervisors' consoles key on
them); messages may be reworded freely.
"""

from __future__ import annotations

from dataclasses import dataclass

# Refusals that say nothing about the input's fact (it was not authentic, not
# readable, out of its time window, or already decided). They are not recorded as
# a decision on the input id, so the genuine input with that id can still come.
NOT_A_DECISION = frozenset({
    "malformed_input", "unsigned", "bad_signature", "stale_input", "input_from_future",
    "duplicate_input", "chain_corrupt", "wrong_partition",
})

CODES = frozenset({
    *NOT_A_DECISION,
    "role_not_allowed", "unknown_profile", "no_shoe", "shoe_already_open",
    "shoe_needs_first_card_burn", "start_burn_not_expected", "start_burn_already_done",
    "shoe_finished", "round_in_progress", "round_id_reused", "round_not_found",
    "round_not_in_progress", "betting_still_open", "betting_already_closed", "burns_required",
    "burn_during_deal", "card_not_in_shoe", "duplicate_card_in_round", "void_after_completion",
    "round_already_voided", "round_abandoned", "cut_card_already_reached",
    "no_cut_card_in_game",
    # table procedure (docs/decisions/procedures.md)
    "betting_window_open", "close_reason_required", "too_many_burns", "no_burn_at_table",
    "table_closed", "table_not_closed", "round_not_completed", "round_already_annulled",
    "exposed_during_deal", "exposed_outside_play", "exposed_card_management",
    "round_too_old_to_correct", "correction_not_a_round", "correction_changes_nothing",
    "late_correction_reason",
    # a round older than the table keeps (docs/decisions/tables.md, "Rounds a table keeps")
    "round_too_old_to_annul",
    "two_cards_by_card_rules", "two_cards_already_reported",
})


@dataclass(frozen=True)
class InputRefusal:
    code: str
    message: str

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown refusal code {self.code!r}")


class Refused(Exception):
    """A check refusing the input, raised: a check returns what it checked or raises this,
    and the state machine turns it into the outcome's refusal."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.refusal = InputRefusal(code, message)
