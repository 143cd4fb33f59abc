"""`processes.terminate_all`: a stack's processes are told to stop at once and share one
deadline, so each gets its clean shutdown (Faust commits, closes its producers) inside
the stack's timeout; one that does not stop by then is killed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from services.infra.processes import terminate_all

# a worker whose clean shutdown takes `delay` seconds after SIGTERM, then exits 0; with
# `delay` None it ignores SIGTERM; with a `barrier` directory, its shutdown also waits until
# `peers` workers in all were told to stop (each leaves a file there when it is)
WORKER = """
import os, signal, sys, time
delay, barrier, peers = {delay!r}, {barrier!r}, {peers!r}
def stop(*_):
    time.sleep(delay)
    if barrier:
        open(os.path.join(barrier, str(os.getpid())), "w").close()
        while len(os.listdir(barrier)) < peers:
            time.sleep(0.01)
    sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN if delay is None else stop)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def worker(delay: float | None, barrier: str | None = None, peers: int = 0
           ) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER.format(delay=delay, barrier=barrier, peers=peers)],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_every_process_is_told_before_any_is_awaited(tmp_path):
    """Each worker's shutdown ends only once all three were told to stop: told one after
    another (each awaited first), the first would wait out the deadline and be killed."""
    procs = [worker(0.0, str(tmp_path), peers=3) for _ in range(3)]
    terminate_all(procs, timeout_s=5.0)
    assert [p.returncode for p in procs] == [0, 0, 0]


def test_the_deadline_is_shared():
    """Three shutdowns of 2 s, a 5 s deadline: all told at once, all end cleanly inside it
    (told one after another, they would need 6 s). The 3 s to spare is for a loaded
    machine's late scheduling of a worker, which 1 s did not always cover."""
    procs = [worker(2.0) for _ in range(3)]
    terminate_all(procs, timeout_s=5.0)
    assert [p.returncode for p in procs] == [0, 0, 0]


def test_a_process_that_ignores_sigterm_is_killed_at_the_deadline():
    clean, stuck = worker(0.1), worker(None)
    began = time.monotonic()
    terminate_all([None, clean, stuck], timeout_s=1.0)
    assert clean.returncode == 0
    assert stuck.returncode == -signal.SIGKILL
    assert time.monotonic() - began < 10, "killed at the deadline, not waited for forever"


def test_processes_already_gone_are_left_alone():
    done = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    done.wait()
    terminate_all([done, None], timeout_s=1.0)
    assert done.returncode == 0
