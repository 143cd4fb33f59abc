"""A replay's difference: where the records disagree with what they call for (its own module
so that the replay's parts, `replay` and `replay_calls`, name theirs alike)."""

from __future__ import annotations

from pydantic import BaseModel


class Difference(BaseModel):
    where: str
    expected: str
    recorded: str
