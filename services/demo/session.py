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
from services.simulators.operator_wallet.client import OperatorWalletClient
from services.simulators.players import PlayerSimulator
from services.simulators.tables.driver import (
    BettingHook,
    BettingWindow,
    SimConfig,
    SimSummary,
    TableSimulator,
)
from services.simulators.tables.run import make_simulator
from services.simulators.tables.transport import HttpTransport

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
    """Open and fund the players, then deal every table's rounds while they bet, calling
    `progress` twice a second and once at the end; the wallet and dealer clients are closed
    however the session ends."""
    players = session_players(settings, config, wallet_url)
    roster = await players.setup()
    bettor = _Bettor(players, config.bets_per_player)
    transport = HttpTransport(dealer_url)
    sims = _simulators(settings, config, transport, bettor.on_betting_open)
    began = time.monotonic()

    def show_progress() -> None:
        if progress:
            progress(_summaries(sims), players.answers, time.monotonic() - began)

    reporter = asyncio.create_task(_every(0.5, show_progress))
    try:
        await _deal(sims, config.forever)
    finally:
        reporter.cancel()
        await transport.close()
        await players.close()
        if players.operator_wallet is not None:
            players.operator_wallet.close()
    show_progress()
    return DemoRun(config=config, tables=_summaries(sims), answers=players.answers,
                   players=[p.player_id for p in roster],
                   rounds_missed_by_players=bettor.missed, seconds=time.monotonic() - began)


def session_players(settings: Settings, config: DemoConfig, wallet_url: str) -> PlayerSimulator:
    """The session's players, not yet set up (`setup` is idempotent: the same ids, tokens
    issued again), with a client of the operator's wallet in seamless mode; the caller
    closes both."""
    operator_wallet = OperatorWalletClient(settings.operator_wallet_url) \
        if settings.wallet_mode == "seamless" and settings.operator_wallet_url else None
    return PlayerSimulator(wallet_url, settings.operator_token, config.tables,
                           players=config.players, seed=config.seed, run_id=config.run_id,
                           operator_wallet=operator_wallet)


@dataclass
class _Bettor:
    """The players bet on each round a table opens, during its betting pause, and count the
    rounds they missed."""

    players: PlayerSimulator
    bets_per_player: int
    missed: int = 0

    async def on_betting_open(self, info: BettingWindow) -> None:
        within = max(1.0, info.betting_pause * 0.6)  # leave the rest of the pause to the bets
        if not await self.players.bet_when_open(info.table_id, info.round_id, within,
                                                self.bets_per_player):
            self.missed += 1  # the wallet had not seen the round open in time: nobody bet on it


def _simulators(settings: Settings, config: DemoConfig, transport: HttpTransport,
                on_betting_open: BettingHook) -> list[TableSimulator]:
    """One simulated table a profile, each with its own seed and dealer."""
    rounds = FOREVER if config.forever else config.rounds
    return [make_simulator(SimConfig(profile=profile, table_id=config.table_id(profile),
                                     rounds=rounds, seed=config.seed + i,
                                     dealer=DEALERS[i % len(DEALERS)],
                                     betting_pause=config.betting_pause),
                           transport, settings, on_betting_open, run_tag=config.run_id)
            for i, profile in enumerate(config.profiles)]


async def _deal(sims: list[TableSimulator], forever: bool) -> None:
    """Every table deals its rounds. Cancelled (Ctrl-C), a session of so many rounds stops
    at once; a --forever session lets every table finish its round first, so none is left
    half dealt."""
    dealing = asyncio.gather(*(sim.run() for sim in sims))
    try:
        await asyncio.shield(dealing)
    except asyncio.CancelledError:
        if not forever:
            dealing.cancel()
            raise
        for sim in sims:
            sim.stop_after_round()
        await dealing


async def _every(seconds: float, call: Callable[[], None]) -> None:
    while True:
        call()
        await asyncio.sleep(seconds)


def _summaries(sims: list[TableSimulator]) -> dict[str, SimSummary]:
    return {s.config.table_id: s.summary for s in sims}
