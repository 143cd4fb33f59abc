"""`dealer.rejections`: every refused dealer input, with a code machines read and a
sentence a supervisor understands. Nothing sent to the platform is dropped silently."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from shared.events.sources import InputPosition
from shared.models import FrozenModel

# refusals that are not the dealer's: a device's resend of an input already applied. The
# per-dealer refused-input figures (`croupier stats`, the metrics) leave them out.
NOT_THE_DEALERS = ("duplicate_input",)


class InputRefused(FrozenModel):

    schema_version: Literal[1] = 1
    type: Literal["input_refused"] = "input_refused"
    rejection_id: str
    table_id: str = Field(description="The input's table, or 'unknown' when it had none.")
    input_id: str | None = None
    command: str | None = None
    reason_code: str
    message: str
    received_at: AwareDatetime
    raw: str = Field(default="", max_length=4096, description="The input as received (cut).")
    input_ref: InputPosition | None = Field(
        default=None, exclude_if=lambda value: value is None,
        description="The dealer.inputs record refused; absent in records written before it "
                    "existed.")
