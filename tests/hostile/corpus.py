"""Reading the hostile corpus (`tests/hostile/*.jsonl`, written by `generate.py`)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEALER_INPUTS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
)

HERE = Path(__file__).resolve().parent
RECORD_FILES = (DEALER_INPUTS_TOPIC, TABLE_EVENTS_TOPIC, ROUND_RESULTS_TOPIC, BETS_PLACED_TOPIC,
                BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, "wallet.commands")


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def http_cases() -> list[dict]:
    return _load(HERE / "http.jsonl")


def record_cases(name: str) -> list[dict]:
    return _load(HERE / "records" / f"{name}.jsonl")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def expand(gen: dict) -> bytes:
    return unb64(gen["head_b64"]) + unb64(gen["fill_b64"]) * gen["times"] + \
        unb64(gen["tail_b64"])


def record_value(case: dict) -> bytes | None:
    return expand(case["value_gen"]) if case.get("value_gen") else unb64(case["value_b64"])


def http_body(case: dict) -> bytes:
    return expand(case["body_gen"]) if case.get("body_gen") else unb64(case["body_b64"]) or b""


def fill(raw: bytes, values: dict[str, str]) -> bytes:
    for name, value in values.items():
        raw = raw.replace(b"{{" + name.encode() + b"}}", value.encode())
    return raw
