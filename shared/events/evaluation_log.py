"""`evaluation.log`: game-evaluation's source of truth, one entry per table event that
changed a table's progress.

An `EvaluationEntry` carries the table's `EvaluationState` after the event (absolute: the
chain head, the round in play, the flag), the result it publishes on `round.results` if
the event completed a round (or, for a refused event that flagged its table, its dead
letter), and where in `table.events` the event stood (`source`).
game-evaluation's state is the fold of its entries
(`services.game_evaluation.evaluation_fold`); an event that changes nothing (a
redelivery, an event already seen) writes nothing.

The state is bounded whatever the table's history: the chain head and its void tips (at
most `event_auth.VOID_TIPS`), the one round in play (its cards stop at the rules' count:
surplus cards and anything after completion are ignored, a redeal clears them) and the
reason of a flag.

Entries are chained per partition like every own log's (`services.infra.own_log`):
`prev` is the id of the partition's previous valid entry; any other entry is void and
skipped by every fold (docs/decisions/ledger.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.events.canonical import GENESIS_HASH
from shared.events.dead_letters import DeadLetter
from shared.events.results import RoundResultPublished
from shared.events.sources import ChainedEntry
from shared.round_phase import EvaluationStatus


class RoundView(BaseModel):
    """The round in play at a table, as far as the evaluator followed it."""

    model_config = ConfigDict(frozen=True)

    round_id: str
    shoe_id: str
    profile: str
    profile_version: int | None = None  # as the round opened: it is evaluated by that version
    profile_digest: str | None = None
    dealer: str
    cards: tuple[str, ...] = ()
    # the evaluator's own words, on the wire since the first entry: not the round's phase
    # (shared.round_phase.phases_of maps them; docs/decisions/round-phase.md)
    status: EvaluationStatus = "open"


class EvaluationState(BaseModel):
    """What the evaluator keeps per table: bounded, whatever the table's history."""

    model_config = ConfigDict(frozen=True)

    table_id: str
    last_seq: int = 0
    last_hash: str = GENESIS_HASH
    round: RoundView | None = None
    # why the table is flagged (an event refused as forged, altered, unsigned or out of
    # order): no result is published for it until an authentic `table_reopened`
    flagged: str | None = None
    # the hashes of the latest void events (event_auth.ChainHead.void_tips, at most
    # VOID_TIPS): absent in older entries and left out when empty, so they read and dump
    # the same
    void_tips: tuple[str, ...] = Field(default=(), exclude_if=lambda tips: not tips)


class EvaluationEntry(ChainedEntry):
    """One table event that changed its table's progress: the state after it, and the
    result it publishes (absolute values only: folding an entry again is harmless)."""

    schema_version: Literal[1] = 1
    type: Literal["evaluation_entry"] = "evaluation_entry"
    state: EvaluationState = Field(description="The table's progress after the event.")
    result: RoundResultPublished | None = Field(
        default=None, description="The result it publishes on round.results (the event "
                                  "completed a round).")
    dead_letter: DeadLetter | None = Field(
        default=None, description="The dead letter it publishes on dead.letters: the event "
                                  "was refused (forged, altered, out of order) and flagged "
                                  "its table.")
