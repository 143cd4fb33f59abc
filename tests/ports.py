"""Loopback ports for the servers the tests start (brokers, workers, S3, Prometheus).

A port the kernel hands out for `bind(0)` comes from the ephemeral range, the same range
every outgoing connection takes its local port from. A broker warmed in the background is
given its port about 5 s before it binds it; meanwhile the running module's clients open
hundreds of connections, and one of them can take that port (CI saw `BindException:
Address already in use`). So ports are picked below the ephemeral range, where no
outgoing connection lands, never the same one twice in a run, and checked free by a bind.
`make test` runs the suite in several pytest-xdist workers: each takes its ports from a
slice of the range of its own, so two workers never pick the same port (one may hold a
port for seconds before its server binds it).
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000  # above the well-known and most registered service ports
_lock = threading.Lock()
_given: set[int] = set()
# a different start per process, so two test runs on one machine rarely try the same ports
_rng = random.Random(os.getpid())


def _ceiling() -> int:
    """The first ephemeral port (32768 on Linux unless configured otherwise)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def worker_slice(lowest: int, ceiling: int, env: dict[str, str]) -> tuple[int, int]:
    """This process's part of [lowest, ceiling): all of it outside pytest-xdist, else the
    slice of worker `gwN` among PYTEST_XDIST_WORKER_COUNT equal slices."""
    worker, count = env.get("PYTEST_XDIST_WORKER", ""), env.get("PYTEST_XDIST_WORKER_COUNT")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count and count.isdigit()):
        return lowest, ceiling
    index, count_n = int(worker[2:]), max(int(count), 1)
    size = (ceiling - lowest) // count_n
    low = lowest + (index % count_n) * size
    return low, low + size


def free_port() -> int:
    """A loopback port outside the ephemeral range, free now and not given before in this run."""
    ceiling = _ceiling()
    if ceiling - LOWEST < 1_000:  # an unusual machine: fall back to the kernel's pick
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    low, high = worker_slice(LOWEST, ceiling, dict(os.environ))
    with _lock:
        for _ in range(high - low):
            port = _rng.randrange(low, high)
            if port not in _given and _bindable(port):
                _given.add(port)
                return port
    raise RuntimeError(f"no free loopback port in {low}-{high - 1}")


def free_stepped_ports(count: int, step: int) -> int:
    """A first port p with p, p + step, ..., p + step * (count - 1) all free now and none
    given before in this run: a local cluster's node n listens on its first node's port +
    step * n (`services.infra.settings.NODE_PORT_STEP`)."""
    ceiling = _ceiling()
    low, high = worker_slice(LOWEST, ceiling, dict(os.environ))
    span = step * (count - 1)
    with _lock:
        for _ in range(high - low):
            first = _rng.randrange(low, high - span)
            ports = [first + step * n for n in range(count)]
            if not _given.intersection(ports) and all(_bindable(p) for p in ports):
                _given.update(ports)
                return first
    raise RuntimeError(f"no {count} free loopback ports {step} apart in {low}-{high - 1}")
