"""Where a record stood in a service's input: what an entry of the service's own log names,
and what a worker resumes after (`croupier.services.infra.own_log`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InputRef(BaseModel):
    """Where a record stood in a service's input: what a worker resumes after."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topic: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    last: bool = Field(default=True, description="The record's last entry: only then is the "
                                                 "record applied (one record may write "
                                                 "several).")
