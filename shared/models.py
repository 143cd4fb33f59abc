"""The one base of croupier's value models: immutable, and refusing any field it does not
declare (a typo in a request or a record is an error, never silently dropped)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
