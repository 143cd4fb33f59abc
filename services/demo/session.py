"""One demo session: simulated tables deal while simulated players bet through the wallet.

Each table runs its own simulator (HTTP to dealer-event); when a table opens a
round, the players bet on it during the betting pause, once the wallet has seen
the round open. Table and player ids carry the run id, so every session's
figures can be told apart in a log that keeps all of them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from services.infra.settings import Settings
from services.player_simulator import PlayerSimulator
from services.table_simulator.driver import BettingWindow, SimConfig, SimSummary, TableSimulator
from services.table_simulator.run import make_simulator
from services.table_simulator.transport import HttpTransport

DEFAULT_PROFILES = ("sbo-baccarat", "sbo-tiger", "triple-face-id")
DEALERS = ("Ayu", "Hiro", "Maria", "Dewi", "Kenji", "Sofia")
SHORT = {"sbo-baccarat": "bac", "sbo-super-six": "six", "sbo-tiger": "tiger",
         "baccarat-big-small": "bigsmall", "triple-face-id": "tf-id", "triple-face-jp": "tf-jp"}
FOREVER = 10**9


@dataclass(frozen=True)
class DemoConfig:
    rounds: int = 20
    forever: bool = False
    players: int = 50
    profiles: tuple[str, ...] = DEFAULT_PROFILES
    betting_pause: float = 2.0
    bets_per_player: int = 1
    seed: int = 7
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])

    def table_id(self, profile: str) -> str:
        return f"{SHORT.get(profile, profile)}-{self.run_id}"

    @property
    def tables(self) -> list[str]:
        return [self.table_id(p) for p in self.profiles]


@dataclass
class DemoRun:
    config: DemoConfig
    tables: dict[str, SimSummary]
    answers: Counter
    players: list[str]
    rounds_missed_by_players: int
    seconds: float


Progress = Callable[[dict[str, SimSummary], Counter, float], None]


async def play(settings: Settings, config: DemoConfig, dealer_url: str, wallet_url: str,
               progress: Progress | None = None) -> DemoRun:
    players = PlayerSimulator(wallet_url, settings.operator_token, config.tables,
                              players=config.players, seed=config.seed, run_id=config.run_id)
    roster = await players.setup()
    missed = 0

    async def on_betting_open(info: BettingWindow) -> None:
        nonlocal missed
        deadline = time.monotonic() + max(1.0, info.betting_pause * 0.6)
        while time.monotonic() < deadline:
            current = await players.current_round(info.table_id)
            if current and current["round_id"] == info.round_id and current["status"] == "open":
                previous = players.seen_rounds.get(info.table_id)
                if previous and previous != info.round_id:
                    players.closed_rounds[info.table_id] = previous
                players.seen_rounds[info.table_id] = info.round_id
                await players.bet_on_round(current, config.bets_per_player)
                return
            await asyncio.sleep(0.05)
        missed += 1  # the wallet had not seen the round open in time: nobody bet on it

    transport = HttpTransport(dealer_url)
    rounds = FOREVER if config.forever else config.rounds
    sims: list[TableSimulator] = [
        make_simulator(SimConfig(profile=profile, table_id=config.table_id(profile),
                                 rounds=rounds, seed=config.seed + i,
                                 dealer=DEALERS[i % len(DEALERS)],
                                 betting_pause=config.betting_pause),
                       transport, settings, on_betting_open, run_tag=config.run_id)
        for i, profile in enumerate(config.profiles)]
    began = time.monotonic()

    async def report() -> None:
        while True:
            if progress:
                progress({s.config.table_id: s.summary for s in sims}, players.answers,
                         time.monotonic() - began)
            await asyncio.sleep(0.5)

    reporter = asyncio.create_task(report())
    dealing = asyncio.gather(*(sim.run() for sim in sims))
    try:
        await asyncio.shield(dealing)
    except asyncio.CancelledError:
        if not config.forever:
            dealing.cancel()
            raise
        # --forever ends with Ctrl-C: every table finishes its round, then the session ends
        for sim in sims:
            sim.stop_after_round()
        await dealing
    finally:
        reporter.cancel()
        await transport.close()
        await players.close()
    if progress:
        progress({s.config.table_id: s.summary for s in sims}, players.answers,
                 time.monotonic() - began)
    return DemoRun(config=config, tables={s.config.table_id: s.summary for s in sims},
                   answers=players.answers, players=[p.player_id for p in roster],
                   rounds_missed_by_players=missed, seconds=time.monotonic() - began)
