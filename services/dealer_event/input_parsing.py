"""Raw records in, parsed inputs or a `malformed_input` refusal out; refusals to records.

Whatever arrives on `dealer.inputs` (or the HTTP door) is untrusted bytes. Parsing
never raises: a record that is not a valid input becomes a refusal naming what
was wrong, so nothing sent to the platform is dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from services.dealer_event.refusals import InputRefusal
from shared.events.canonical import sha256_hex
from shared.events.inputs import DEALER_INPUT, InputBase, TimerTick
from shared.events.rejections import InputRefused
from shared.events.sources import InputPosition

UNKNOWN_TABLE = "unknown"
TIMER_TICK = TimerTick.model_fields["type"].default
RAW_KEEP = 4096


@dataclass(frozen=True)
class Parsed:
    """A parsed input, or the refusal plus whatever could be read of the record."""

    input: InputBase | None
    refusal: InputRefusal | None
    table_id: str
    input_id: str | None
    command: str | None
    tick: TimerTick | None = None  # dealer-event's own timer tick (no input, no refusal)

    @property
    def problem(self) -> InputRefusal:
        """Why the record is refused: for a record that is not a valid input (`input` None)."""
        if self.refusal is None:
            raise ValueError(f"input {self.input_id} parsed: it has no refusal")
        return self.refusal


def parse_raw(raw: bytes | str) -> Parsed:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    try:
        data = json.loads(text)
    except ValueError as exc:
        return _malformed(f"not JSON: {exc}", {})
    except RecursionError:  # "[[[[...]]]]": a hostile record, not a reason to stop
        return _malformed("JSON nested too deep", {})
    if not isinstance(data, dict):
        return _malformed(f"expected a JSON object, got {type(data).__name__}", {})
    if data.get("type") == TIMER_TICK:
        try:
            tick = TimerTick.model_validate(data)
        except ValidationError as exc:
            return _malformed(describe_errors(exc), data)
        return Parsed(None, None, tick.table_id, None, None, tick)
    try:
        inp = DEALER_INPUT.validate_python(data)
    except ValidationError as exc:
        return _malformed(describe_errors(exc), data)
    return Parsed(inp, None, inp.table_id, inp.input_id, inp.command)


def describe_errors(exc: ValidationError) -> str:
    """'field: problem; field: problem' - short enough for a supervisor's console."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _malformed(problem: str, data: dict[str, Any]) -> Parsed:
    table = data.get("table_id")
    input_id = data.get("input_id")
    command = data.get("command")
    return Parsed(
        None, InputRefusal("malformed_input", f"the input cannot be read: {problem}"),
        table if isinstance(table, str) and table else UNKNOWN_TABLE,
        input_id if isinstance(input_id, str) else None,
        command if isinstance(command, str) else None,
    )


def rejection_id(table_id: str, input_id: str | None, code: str, raw: str) -> str:
    """Deterministic: re-reading the same record after a crash gives the same id."""
    basis = "\x1f".join([table_id, input_id or "", code, "" if input_id else raw])
    return "rej:" + sha256_hex(basis.encode())[:32]


def make_rejection(parsed: Parsed, refusal: InputRefusal, raw: bytes | str,
                   received_at: datetime, input_ref: InputPosition | None = None
                   ) -> InputRefused:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    return InputRefused(
        rejection_id=rejection_id(parsed.table_id, parsed.input_id, refusal.code, text),
        table_id=parsed.table_id, input_id=parsed.input_id, command=parsed.command,
        reason_code=refusal.code, message=refusal.message, received_at=received_at,
        raw=text[:RAW_KEEP], input_ref=input_ref,
    )
