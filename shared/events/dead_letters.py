"""`dead.letters`: a record a service could not apply, kept so nothing is lost silently.

A consumer that meets a record it cannot apply (unparseable, schema-valid but
impossible, or any error of the domain code) writes one of these and moves on: where the
record came from (topic, partition, offset, key), what it was (its bytes, or only their
digest when too large to keep), who gave up on it and why. An operator reads them with
`croupier dead-letters list` and, once the cause is fixed, puts one back on its topic with
`croupier dead-letters redrive` (or the operator's console), and the re-drive is kept here too
(`DeadLetterRedriven`: who put which dead letter back, where it landed), so the
significant-event log shows it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, Field

from shared.models import FrozenModel

KEEP_VALUE_BYTES = 64 * 1024  # larger values are kept as their digest and size only


def dead_letter_id(service: str, topic: str, partition: int, offset: int) -> str:
    """One id per (consumer, record): a record dead-lettered again after a crash is the
    same dead letter."""
    return f"{service}:{topic}:{partition}:{offset}"


class DeadLetter(FrozenModel):

    schema_version: Literal[1] = 1
    type: Literal["dead_letter"] = "dead_letter"
    dead_letter_id: str
    service: str = Field(description="The consumer that could not apply the record.")
    topic: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    key_b64: str | None = Field(description="The record's key, base64 (null: no key).")
    value_b64: str | None = Field(description=(
        f"The record's value, base64; null when it was larger than {KEEP_VALUE_BYTES} "
        "bytes (then only its digest is kept) or had no value."))
    value_sha256: str = Field(min_length=64, max_length=64)
    value_size: int = Field(ge=0)
    error_type: str = Field(description="The exception's class, e.g. ValidationError.")
    error: str = Field(max_length=2000, description="The error message, cut at 2,000 chars.")
    occurred_at: AwareDatetime


class DeadLetterRedriven(FrozenModel):
    """An operator put a dead letter's original record back on its topic."""


    schema_version: Literal[1] = 1
    type: Literal["dead_letter_redriven"] = "dead_letter_redriven"
    dead_letter_id: str
    topic: str = Field(description="Where the record came from and went back to.")
    partition: int = Field(ge=0, description="The partition it was re-driven to.")
    offset: int = Field(ge=0, description="The offset it was re-driven to.")
    by: str = Field(min_length=1, description="Who re-drove it (the console's operator, or "
                                              "`croupier dead-letters redrive`).")
    reason: str = Field(default="", max_length=2000)
    occurred_at: AwareDatetime


DeadLettersRecord = Annotated[DeadLetter | DeadLetterRedriven, Field(discriminator="type")]
