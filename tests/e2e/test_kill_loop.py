"""Issue 11, deliverable 8: a bounded kill -9 loop under load. Two workers of every service;
while tables deal and players bet through the wallet, each service's second worker is
killed -9 and restarted, twice per service (a fixed number of kills, a deadline); then every
invariant holds and the rebuild from the log equals the live wallet."""

from __future__ import annotations

import asyncio
import time

import pytest

from croupier.services.demo.session import DemoConfig, play
from croupier.services.demo.stack import Stack, ensure_kafka
from croupier.services.infra.processes import worker_name
from croupier.services.infra.service_table import SERVICE_NAMES
from tests.e2e.platform_support import platform_settings, settle_and_rebuild, worker_port

pytestmark = pytest.mark.kafka
KILLS_PER_SERVICE = 2
WARM_UP_S = 12.0  # tables dealing and players betting before the first kill
SETTLE_S = 2.0  # after a restarted worker is ready, before the next kill
DEADLINE_S = 200.0  # the whole loop, restarts included
ROUNDS = 16  # per table: about 10 s each, so the tables outlast the loop (about 2 minutes)


NOT_JSON: list[str] = []  # answers the simulators could not read, with where they came from


def _noting_json(original):
    def json(self, **kwargs):
        try:
            return original(self, **kwargs)
        except ValueError:
            NOT_JSON.append(f"{self.request.method} {self.request.url} -> {self.status_code} "
                            f"{self.text[:200]!r}")
            raise
    return json


@pytest.fixture(scope="module")
def loop(platform_kafka, tmp_path_factory):
    import httpx

    mp = pytest.MonkeyPatch()
    mp.setattr(httpx.Response, "json", _noting_json(httpx.Response.json))
    settings = platform_settings(platform_kafka, tmp_path_factory.mktemp("kill-loop-home"))
    ensure_kafka(settings)
    stack = Stack(settings, workers=2, port_of=worker_port).start()
    kills: list[tuple[str, int, float]] = []
    try:
        config = DemoConfig(rounds=ROUNDS, players=30,
                            profiles=("sbo-baccarat", "triple-face-id", "sbo-tiger"),
                            betting_pause=3.0, bets_per_player=2, seed=13)

        async def play_while_killing():
            session = asyncio.create_task(play(settings, config, stack.url("dealer-event"),
                                               stack.url("wallet")))
            await asyncio.sleep(WARM_UP_S)
            began = time.monotonic()
            for _ in range(KILLS_PER_SERVICE):
                for service in SERVICE_NAMES:
                    assert not session.done(), "the session ended before the kills"
                    assert time.monotonic() - began < DEADLINE_S, f"deadline: {kills}"
                    proc = stack.processes[worker_name(service, 1)]
                    await asyncio.to_thread(proc.kill)
                    code = proc.proc.returncode
                    t = time.monotonic()
                    await asyncio.sleep(0.5)
                    proc.start()
                    await asyncio.to_thread(proc.wait_ready, 90)
                    kills.append((service, code, time.monotonic() - t))
                    await asyncio.sleep(SETTLE_S)
            return await session

        run = asyncio.run(play_while_killing())
        summary, rebuilt = settle_and_rebuild(platform_kafka, settings, stack, run,
                                              timeout_s=120)
        print("kills (service, returncode, seconds to ready):", kills)
        print("answers:", dict(run.answers), "rounds missed by players:",
              run.rounds_missed_by_players, "bets:", summary.bets)
        yield run, summary, rebuilt, kills, stack
    finally:
        print("answers the simulators could not read:", NOT_JSON)
        mp.undo()
        stack.stop()


def test_every_service_was_killed_twice_and_came_back(loop):
    _, _, _, kills, stack = loop
    assert len(kills) == KILLS_PER_SERVICE * len(SERVICE_NAMES)
    for service in SERVICE_NAMES:
        mine = [k for k in kills if k[0] == service]
        assert len(mine) == KILLS_PER_SERVICE
        assert all(code == -9 for _, code, _ in mine), mine
    assert all(p.proc.poll() is None for p in stack.processes.values())


def test_every_invariant_holds_after_the_kills(loop):
    run, summary, _, _, _ = loop
    failed = [f"{c.name}: {c.problems[:5]}" for c in summary.invariants if not c.ok]
    assert summary.invariants_ok, failed
    assert summary.bets > 0 and summary.bets_settled > 0, (dict(run.answers),
                                                           run.rounds_missed_by_players)
    assert summary.bets == summary.bets_settled + summary.bets_voided + summary.bets_rejected
    assert all(not t.unexpected for t in run.tables.values()), \
        {t: s.unexpected[:3] for t, s in run.tables.items() if s.unexpected}


def test_the_rebuild_equals_the_live_wallet(loop):
    _, _, rebuilt, _, _ = loop
    assert rebuilt.clean, rebuilt.differences[:10]
