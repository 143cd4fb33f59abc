"""CPU seconds of the service processes, read from /proc/<pid>/stat (no new dependency).

utime+stime of a process covers all its threads; a phase's cost is the difference of
two snapshots, less what the services burn when idle (timers, lag probes) over the
same time, so a short 100-bet round is not charged for the platform's heartbeat.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def parse_stat(text: str, ticks: int = CLOCK_TICKS) -> float:
    """utime+stime in seconds from the text of /proc/<pid>/stat. The command name (field 2)
    is in parentheses and may hold spaces or ')' itself, so split after the last ')'."""
    rest = text[text.rindex(")") + 2:].split()
    utime, stime = int(rest[11]), int(rest[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / ticks


def cpu_seconds(pid: int) -> float | None:
    """None once the process is gone (a crashed service must show as such, not as 0)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return parse_stat(f.read())
    except (FileNotFoundError, ProcessLookupError):
        return None


def machine_busy_seconds(stat: str | None = None, ticks: int = CLOCK_TICKS) -> float:
    """CPU seconds the whole machine has been busy since boot, summed over its cores (the
    first line of /proc/stat less idle and iowait): over a phase, the difference divided
    by its length is how many cores were busy, whoever used them (another run included)."""
    if stat is None:
        with open("/proc/stat") as f:
            stat = f.readline()
    ticks_by_state = [int(x) for x in stat.split()[1:9]]  # user .. steal (guest is in user)
    return (sum(ticks_by_state) - ticks_by_state[3] - ticks_by_state[4]) / ticks


def snapshot(pids: Mapping[str, int]) -> dict[str, float | None]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def delta(before: Mapping[str, float | None], after: Mapping[str, float | None]
          ) -> dict[str, float | None]:
    return {name: (None if before.get(name) is None or after.get(name) is None
                   else after[name] - before[name]) for name in before}


def per_item(before: Mapping[str, float | None], after: Mapping[str, float | None],
             items: int, seconds: float, idle_rate: Mapping[str, float] | None = None
             ) -> dict[str, float | None]:
    """CPU milliseconds per item of each process over a phase of `seconds`, less its idle
    rate (CPU seconds per second) times the phase's length, never below zero."""
    out: dict[str, float | None] = {}
    for name, used in delta(before, after).items():
        if used is None or items <= 0:
            out[name] = None
            continue
        used -= (idle_rate or {}).get(name, 0.0) * seconds
        out[name] = max(used, 0.0) * 1000 / items
    return out


def by_service(per_worker: Mapping[str, float | None]) -> dict[str, float | None]:
    """Workers `wallet`, `wallet/1`, ... summed into `wallet` (None if any is unknown)."""
    out: dict[str, float | None] = {}
    for label, value in per_worker.items():
        name = label.split("/")[0]
        if name in out and out[name] is None:
            continue
        out[name] = None if value is None else (out.get(name) or 0.0) + value
    return out
