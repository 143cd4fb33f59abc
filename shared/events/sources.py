"""Where a record stood in a service's input: what an entry of the service's own log names,
and what a worker resumes after (`services.infra.own_log`)."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from shared.models import FrozenModel


class InputRef(FrozenModel):
    """Where a record stood in a service's input: what a worker resumes after."""


    topic: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    last: bool = Field(default=True, description="The record's last entry: only then is the "
                                                 "record applied (one record may write "
                                                 "several).")
    part: int = Field(default=0, ge=0, description="The entry's place among its record's "
                                                   "entries: 0 starts the record (entries "
                                                   "of one a crash cut short are dropped).")


class ChainedEntry(FrozenModel):
    """What every entry of a service's own log carries, whatever else it holds: its place
    in the partition's chain, its writer, its input record and the outbox's mark."""


    entry_id: str = Field(description="Unique to its writer's life: `<writer>:<n>`.")
    prev: str = Field(description="The id of the partition's previous valid entry; \"\" "
                                  "for the first.")
    source: InputRef
    published_through: int = Field(ge=-1, description="Every output of the entries up to "
                                                      "this offset was acknowledged.")
    recorded_at: AwareDatetime
    also_decided: tuple[InputRef, ...] = Field(
        default=(), exclude_if=lambda refs: not refs,
        description="Input records decided before this entry's that wrote nothing (a "
                    "refusal, a record seen again, a record that moves nothing): the last "
                    "one of each input partition, applied with this entry's record, so a "
                    "worker resumes after them.")


class InputPosition(FrozenModel):
    """Where the `dealer.inputs` record that caused a record of dealer-event stood, and how
    far its partition was decided before: the checkpoint dealer-event resumes after
    (docs/decisions/dealer-checkpoints.md). The topic is implied (dealer-event reads one)."""


    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    decided_through: int = Field(
        ge=-1, description="Every input of the partition up to this offset was decided and "
                           "its records acknowledged before this record was sent; -1 when "
                           "the writer knew of none.")
