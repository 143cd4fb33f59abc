"""Replay of a played round, timed as an operator runs it: `croupier replay ... --format
json` as a subprocess (its own interpreter start included), bounded by a timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from services.infra.processes import service_env
from services.infra.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def timed_replay(settings: Settings, table_id: str, round_id: str, at_ms: int,
                 timeout_s: float) -> dict:
    at = datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        out = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "services.cli", "replay", "--table", table_id,
               "--round", round_id, "--at", at, "--format", "json", "--out", str(out)]
        env = {**os.environ, **service_env(settings), "COLUMNS": "200"}
        began = time.perf_counter()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"seconds": None, "timed_out_after_s": timeout_s, "verdict": None,
                    "ok": False}
        seconds = time.perf_counter() - began
        verdict = None
        if out.exists():
            try:
                verdict = json.loads(out.read_text()).get("verdict")
            except ValueError:
                verdict = "unreadable"
        return {"seconds": seconds, "exit_code": done.returncode, "verdict": verdict,
                "ok": done.returncode == 0 and verdict == "MATCH",
                "stderr_tail": done.stderr[-400:] if done.returncode else ""}
