"""The hostile corpus generator's shared pieces (`generate`): its clock, its one random
sequence (every part draws from it, in `generate.main`'s order), and its encodings."""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime
from pathlib import Path

from services.infra.settings import Settings

HERE = Path(__file__).resolve().parent
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
DEV = Settings(env="development")
HUGE = 900 * 1024  # under the broker's 1 MB record limit
DEAD = ["dead_letter"]
COMMANDS = "{{COMMANDS}}"
rng = random.Random(20261130)


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def js(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def big(head: bytes, fill: bytes, times: int, tail: bytes) -> dict:
    """A large value kept small in the corpus: head + fill * times + tail."""
    return {"head_b64": b64(head), "fill_b64": b64(fill), "times": times, "tail_b64": b64(tail)}
