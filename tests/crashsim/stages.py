"""The crash simulator's stages (`pipeline`): the services on the kernel, each with its input
topics, its own log and fold and its real decide/answer, and the schedule's constants."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from services.bet_settlement.records import SettlementRecords
from services.bet_settlement.settlement_fold import SETTLEMENT_FOLD
from services.dealer_event.dealer_fold import DEALER_FOLD
from services.dealer_event.decisions import Decisions
from services.game_evaluation.decisions import Evaluations
from services.game_evaluation.evaluation_fold import EVALUATION_FOLD
from services.infra.kernel import Answer, Decide, OwnLog
from services.infra.packs import Packs
from services.infra.replies import Replies
from services.infra.snapshots import SnapshotStore
from services.wallet import handlers
from services.wallet.batches import CommandBatches
from services.wallet.ledger_fold import WalletFold
from services.wallet.seamless import SeamlessRules
from services.wallet.snapshot_codec import WALLET_CODEC
from shared.events.dealer_log import DealerEntry
from shared.events.evaluation_log import EvaluationEntry
from shared.events.settlement_log import SettlementEntry
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    DEALER_INPUTS_TOPIC,
    DEALER_LOG_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    EVALUATION_LOG_TOPIC,
    ROUND_RESULTS_TOPIC,
    SETTLEMENT_LOG_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.crashsim.world import MACHINE, TABLE_KEY

if TYPE_CHECKING:
    from tests.crashsim.pipeline import Sim, Worker

PARTITIONS = 2
COMMANDS = "wallet-commands"
T0 = datetime(2026, 12, 1, tzinfo=UTC)
# the model's clock, its instants built once: T0 + each second a schedule reaches, and the
# microseconds a step counts within its second (`Sim.now`)
_SECONDS = [T0 + timedelta(seconds=s) for s in range(100)]
_MICROS = [timedelta(microseconds=m) for m in range(2_000)]


def instant(tick: int, micro: int) -> datetime:
    """T0 + `tick` s + `micro` µs, from the instants built once where they reach."""
    if tick < len(_SECONDS) and micro < len(_MICROS):
        return _SECONDS[tick] + _MICROS[micro]
    return T0 + timedelta(seconds=tick, microseconds=micro)
WINDOW = timedelta(hours=24)  # the wallet's state window (the smallest it takes)
AHEAD = timedelta(hours=30)  # a clock reset into the future: more than the window
CUTS = ("mid-send", "after-send", "after-ack", "after-answer")
TOLD_P = 0.5  # a rebalance of dealer-event its old owner is told of (else it is a zombie)


def partition_of(key: bytes) -> int:
    """The producers' partitioner (every topic is keyed and co-partitioned)."""
    return sum(key) % PARTITIONS


def packed_by_partition(records: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """(key, value) records packed by partition, as the wallet's caller packs its answers
    (`services.wallet.answer_packs`, with the same builder, `packs.Packs`): each pack keyed
    by its first record's key, a record alone as it is."""
    by: dict[int, list[tuple[bytes, bytes]]] = {}
    for key, value in records:
        by.setdefault(partition_of(key), []).append((key, value))
    out: list[tuple[bytes, bytes]] = []
    for group in by.values():
        packs = Packs()
        for _, value in group:
            packs.add(value)
        out += [(group[first][0], record)
                for (first, _), record in zip(packs.spans(), packs.packed(), strict=True)]
    return out


class Crash(Exception):
    """The worker died here (kill -9)."""


class Transient(ConnectionError):
    """A send the broker failed for a moment (the kernel's `transient` retries it)."""


@dataclass
class Service:
    """One worker's service: its own log and its pure decide/answer."""

    own: OwnLog
    decide: Decide
    answer: Answer
    decisions: Decisions | None = None  # dealer-event's: its HTTP waiters and its timer
    # told of the partitions a rebalance took (`run_own_log(..., revoked=...)`), if anything
    revoked: Callable[[set[int]], None] | None = None


@dataclass(frozen=True)
class Stage:
    """A service on the kernel: its input topics, its own log, how a worker builds it."""

    name: str
    inputs: tuple[str, ...]
    log_topic: str
    parse: Callable[[bytes], Any]
    build: Callable[[Sim, Worker], Service]
    outputs: tuple[str, ...] = ()


@dataclass
class Config:
    length: int = 24
    players: int = 3
    tables: int = 2
    seamless: bool = False
    cut_p: float = 0.12  # a batch killed at one of the cut points
    transient_p: float = 0.05
    race_p: float = 0.08  # with a zombie alive: it gets in inside the batch's send
    move_mid_batch_p: float = 0.03
    bad_commit_p: float = 0.15
    stale_fetch_p: float = 0.5
    ahead_p: float = 0.0  # a new wallet worker's clock runs AHEAD (the known bug (a))
    garbage_p: float = 0.03
    annul_p: float = 0.2
    start_balance: int = 30_000  # each player's first deposit (transfer mode)
    stacked: bool = False  # the first table deals one card out of its shoe in the drain
    # at most this many entries a pack (`services.infra.packs`): the production bound (100)
    # makes a schedule's small batches one record each; a smaller one sends them as several,
    # as a large batch is sent, so a rival can land between a batch's records
    pack_records: int = 100


class WorkerClock:
    """A worker's wall clock: the simulation's time plus its skew."""

    def __init__(self, sim: Sim, skew: timedelta) -> None:
        self.sim = sim
        self.skew = skew

    def now(self) -> datetime:
        return self.sim.now() + self.skew

    def elapsed(self) -> float:
        """The monotonic clock (seconds): the simulation's time, which no skew moves."""
        return self.sim.tick + self.sim.micro / 1e6


class RecordingReplies(Replies[handlers.Answer, None]):
    """The wallet's waiters: every answer a worker gives is what a client was told."""

    def __init__(self, sim: Sim, worker: Worker) -> None:
        super().__init__()
        self.sim = sim
        self.worker = worker

    def resolve(self, key: str | None, answer: handlers.Answer) -> None:
        if key:
            self.sim.told(key, answer, self.worker.name)
        super().resolve(key, answer)


def _dealer(sim: Sim, worker: Worker) -> Service:
    own: OwnLog = OwnLog("dealer-event", DEALER_LOG_TOPIC, DEALER_FOLD,
                         DealerEntry.model_validate_json, lambda e: e.table_id.encode(),
                         worker.name)
    decisions = Decisions(MACHINE, worker.clock,
                          lambda table_id: partition_of(table_id.encode()))

    def answer(event: Any, decided: Any, backed: bool) -> None:
        decisions.answer(event, decided, backed)
        sim.dealer_answered(worker.name, event, bool(decided.entries) and backed)

    return Service(own, decisions.decide, answer, decisions, revoked=decisions.moved)


def _evaluation(sim: Sim, worker: Worker) -> Service:
    own: OwnLog = OwnLog("game-evaluation", EVALUATION_LOG_TOPIC, EVALUATION_FOLD,
                         EvaluationEntry.model_validate_json,
                         lambda e: e.state.table_id.encode(), worker.name)
    evaluations = Evaluations(TABLE_KEY, now=worker.clock.now)
    return Service(own, evaluations.decide, evaluations.answer)


def _settlement(sim: Sim, worker: Worker) -> Service:
    own: OwnLog = OwnLog("bet-settlement", SETTLEMENT_LOG_TOPIC, SETTLEMENT_FOLD,
                         SettlementEntry.model_validate_json, lambda e: e.table_id.encode(),
                         worker.name)
    records = SettlementRecords(TABLE_KEY, False, worker.clock)
    return Service(own, records.decide, records.answer)


def _wallet(sim: Sim, worker: Worker) -> Service:
    own: OwnLog = OwnLog("wallet", WALLET_LEDGER_TOPIC, WalletFold(WINDOW),
                         LedgerEntry.model_validate_json,
                         lambda e: e.account.player_id.encode(), worker.name)
    own.snapshots = SnapshotStore(WALLET_LEDGER_TOPIC, WALLET_CODEC, worker.name,
                                  every_entries=1 << 30, every_seconds=1e12)
    replies = RecordingReplies(sim, worker)
    if sim.seamless:
        batches = CommandBatches(replies, worker.clock, SeamlessRules(),
                                 on_calls=worker.owe)
        own.on_recovered.append(worker.resume_calls)
    else:
        batches = CommandBatches(replies, worker.clock)
    return Service(own, batches.decide, batches.answer)


DEALER = Stage("dealer-event", (DEALER_INPUTS_TOPIC,), DEALER_LOG_TOPIC,
               DealerEntry.model_validate_json, _dealer,
               (TABLE_EVENTS_TOPIC, TABLE_CORRECTIONS_TOPIC, DEALER_REJECTIONS_TOPIC, DEAD_LETTERS_TOPIC))
EVALUATION = Stage("game-evaluation", (TABLE_EVENTS_TOPIC,), EVALUATION_LOG_TOPIC,
                   EvaluationEntry.model_validate_json, _evaluation,
                   (ROUND_RESULTS_TOPIC, DEAD_LETTERS_TOPIC))
SETTLEMENT = Stage("bet-settlement", (BETS_PLACED_TOPIC, TABLE_EVENTS_TOPIC, ROUND_RESULTS_TOPIC),
                   SETTLEMENT_LOG_TOPIC, SettlementEntry.model_validate_json, _settlement,
                   (BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, WALLET_ENDINGS_TOPIC, DEAD_LETTERS_TOPIC))
WALLET = Stage("wallet", (COMMANDS, WALLET_ENDINGS_TOPIC), WALLET_LEDGER_TOPIC,
               LedgerEntry.model_validate_json, _wallet,
               (WALLET_TRANSACTIONS_TOPIC, BETS_PLACED_TOPIC, WALLET_OPERATOR_CALLS_TOPIC,
                DEAD_LETTERS_TOPIC))
STAGES = (DEALER, EVALUATION, SETTLEMENT, WALLET)
SIMULATED = tuple(stage.name for stage in STAGES)
