"""A deterministic crash simulator of the wallet on its own log (TigerBeetle's VOPR idea).

The real kernel batch (`croupier.services.infra.kernel.apply_batch`), the real wallet
decisions (`CommandBatches.decide`, `handlers`, `ledger_fold`) and the real fold run
against the model of Kafka (`tests/crashsim/kafka_model.py`): a writer killed before its
acknowledgement leaves a random prefix of what it sent (its entries, its outputs) and
loses the rest; readers see only durable records. A seeded schedule interleaves, in any order:
- clients: accounts, deposits, withdrawals, bets (each sent once or resent with the same
  id, sometimes after the round closed: the door's refusal travels with the resend);
- bet-settlement: for every funded bet on `bets.placed`, one ending (rejected, settled,
  voided), sometimes a management void after settlement (reversal, then refund), and
  redeliveries of endings already sent;
- workers: a batch of the commands topic from the worker's consumer position, which may
  jump ahead (a commit past an unprocessed offset) or rewind (a redelivery); kills at
  every cut point of a batch (mid-send, after the entries landed but before their ack,
  mid-publish, before the answers); partition moves to a new worker while the old one
  keeps going as a zombie for a while; the old owner getting the partition back on its
  cache.
After the schedule a clean worker drains the commands, and the invariants are checked from
the topics alone (`check`). A failing seed's `Result.reproducer` lists the schedule.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from faust.types import TP

from croupier.services.infra.contiguous import ContiguousReads
from croupier.services.infra.kernel import OwnLog, apply_batch
from croupier.services.infra.own_log import Landed, Logged, PartitionState, fold_entry
from croupier.services.infra.replies import Replies
from croupier.services.wallet import handlers
from croupier.services.wallet.batches import CommandBatches
from croupier.services.wallet.commands import (
    CreateAccount,
    Deposit,
    DoorRefusal,
    EndBet,
    Envelope,
    PlaceBet,
    ReverseSettlement,
    Withdraw,
)
from croupier.services.wallet.ledger_fold import LEDGER_TOPIC, WALLET_FOLD, Lookups
from croupier.shared.events.bet_events import BetPlaced
from croupier.shared.events.wallet_events import WalletTransaction
from croupier.shared.events.wallet_ledger import LedgerEntry
from tests.crashsim.kafka_model import Kafka

COMMANDS = "wallet-commands"
PARTITIONS = 2
T0 = datetime(2026, 12, 1, tzinfo=UTC)
BROKER_AHEAD = datetime(2100, 1, 1, tzinfo=UTC)  # the broker's clock holds no writer back


class Crash(Exception):
    """The worker died here (kill -9)."""


def partition_of(key: bytes) -> int:
    return sum(key) % PARTITIONS


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def now(self) -> datetime:
        self.t += timedelta(milliseconds=1)
        return self.t


@dataclass
class Message:
    topic: str
    partition: int
    offset: int
    value: bytes
    generation_id: int = 1

    @property
    def tp(self) -> TP:
        return TP(self.topic, self.partition)


class Event:
    def __init__(self, message: Message) -> None:
        self.message = message
        self.value = message.value
        self.key = None


class ModelIO:
    """`kernel.LogIO` on the model, with the crash points a schedule chose."""

    def __init__(self, sim: Sim, worker: Worker) -> None:
        self.sim = sim
        self.worker = worker

    async def send(self, topic, partition, records):
        kafka, writer = self.sim.kafka, self.worker.name
        if self.worker.race is not None:  # another writer gets in first
            other, self.worker.race = self.worker.race, None
            await self.sim.run_batch(other)
        offsets = [kafka.append(topic, partition, k, v, writer) for k, v in records]
        if self.worker.crash_at in ("mid-send", "before-ack"):
            kafka.kill(writer)  # some prefix reached the broker, unacknowledged
            raise Crash(self.worker.crash_at)
        kafka.ack(writer)
        return [Landed(o, BROKER_AHEAD) for o in offsets]

    async def end(self, topic, partition):
        return self.sim.kafka.end(topic, partition)

    async def read(self, topic, partition, start):
        kafka = self.sim.kafka
        return ([Logged(o, v, BROKER_AHEAD) for o, _, v in kafka.read(topic, partition, start)],
                kafka.end(topic, partition))

    async def publish(self, records):
        kafka, writer = self.sim.kafka, self.worker.name
        for topic, key, value in records:
            kafka.append(topic, partition_of(key), key, value, writer)
        if self.worker.crash_at == "mid-publish":
            kafka.kill(writer)
            raise Crash("mid-publish")
        kafka.ack(writer)
        if self.worker.crash_at == "before-answer":
            raise Crash("before-answer")


class Worker:
    """One wallet worker: its own-log cache, its consumer positions, its waiters."""

    def __init__(self, sim: Sim, name: str) -> None:
        self.sim = sim
        self.name = name
        self.replies: Replies[handlers.Answer, None] = Replies()
        self.batches = CommandBatches(self.replies, sim.clock)
        self.own: OwnLog = OwnLog("wallet", LEDGER_TOPIC, WALLET_FOLD,
                                  LedgerEntry.model_validate_json,
                                  lambda e: e.account.player_id.encode(), name)
        self.own.io = ModelIO(sim, self)
        self.position: dict[int, int] = {}  # commands partition -> next offset to hand on
        self.generation = 0
        self.reads: ContiguousReads | None = None
        self.crash_at: str | None = None
        self.race: Worker | None = None
        self.alive = True
        self.batch_max = 0  # records per partition per batch; 0: 1 to 6, by the schedule

    async def baseline(self) -> dict[TP, int]:
        nexts = {}
        for p in self.position:
            state = await self.own.recover(p)
            nexts[TP(COMMANDS, p)] = state.resume_at(COMMANDS, p)
        return nexts

    def assign(self, partitions: set[int], start: dict[int, int]) -> None:
        """A rebalance: these partitions, handed on from `start` (the group's commit,
        which may be anywhere)."""
        self.generation += 1
        self.own.revoke(set(self.own.owned) - partitions)
        self.position = {p: start.get(p, 0) for p in partitions}
        self.reads = ContiguousReads("wallet", self.baseline)


@dataclass
class Sent:
    """A client's request: the command's offset and the answer it got (None: none)."""

    env: Envelope
    partition: int
    offset: int
    answer: handlers.Answer | None = None


@dataclass
class Result:
    seed: int
    steps: list[str]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def reproducer(self) -> str:
        return (f"seed {self.seed}:\n  " + "\n  ".join(self.steps) + "\nproblems:\n  "
                + "\n  ".join(self.problems))


class Sim:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.kafka = Kafka(self.rng)
        for topic in (COMMANDS, LEDGER_TOPIC, "wallet.transactions", "bets.placed"):
            self.kafka.create(topic, PARTITIONS)
        self.clock = Clock()
        self.steps: list[str] = []
        self.sent: dict[str, Sent] = {}  # reply id -> request
        self.players = [f"p{i}" for i in range(3)]
        self.bets: list[tuple[str, str]] = []  # (player, bet id) sent by clients
        self.ended: set[str] = set()  # bet ids bet-settlement sent an ending for
        self.endings: list[bytes] = []  # every ending command sent (for redeliveries)
        self.placed_read: dict[int, int] = defaultdict(int)
        self.n = 0
        self.workers: list[Worker] = []

    # ---------------------------------------------------------------- inputs

    def log(self, topic: str, partition: int) -> list[bytes]:
        """The partition's durable records' values, by offset."""
        return [value for _, _, value in self.kafka.read(topic, partition)]

    def command(self, env: Envelope) -> tuple[int, int]:
        """A record on the commands topic (clients and bet-settlement: acknowledged)."""
        key = env.command.player_id.encode()
        p = partition_of(key)
        offset = self.kafka.append(COMMANDS, p, key, env.model_dump_json().encode(), "outside")
        self.kafka.ack("outside")
        return p, offset

    def client(self, cmd: Any) -> None:
        self.n += 1
        reply = f"r{self.n}"
        env = Envelope(reply_id=reply, command=cmd)
        p, o = self.command(env)
        self.sent[reply] = Sent(env, p, o)
        self.steps.append(f"client {cmd.type} {getattr(cmd, 'bet_id', '') or ''} "
                          f"{cmd.player_id} -> commands[{p}]@{o}")

    def client_step(self) -> None:
        rng = self.rng
        player = rng.choice(self.players)
        roll = rng.random()
        if roll < 0.15:
            self.client(CreateAccount(player_id=player, currency="IDR"))
        elif roll < 0.35:
            self.client(Deposit(player_id=player, request_id=f"d{rng.randrange(6)}-{player}",
                                amount=rng.choice([1000, 5000, 20000])))
        elif roll < 0.42:
            self.client(Withdraw(player_id=player, request_id=f"w{rng.randrange(3)}-{player}",
                                 amount=rng.choice([1000, 7000])))
        elif roll < 0.85 or not self.bets:
            bet_id = f"b{len(self.bets)}"
            self.bets.append((player, bet_id))
            self.client(self._bet(player, bet_id))
        else:  # a resend of an earlier bet, maybe after its round closed
            player, bet_id = rng.choice(self.bets)
            refusal = DoorRefusal(status=409, code="round_closed", message="closed") \
                if rng.random() < 0.5 else None
            self.client(self._bet(player, bet_id, refusal))

    def _bet(self, player: str, bet_id: str, refusal: DoorRefusal | None = None) -> PlaceBet:
        stake = 1000 + 1000 * (int(bet_id[1:]) % 4)
        return PlaceBet(player_id=player, bet_id=bet_id, table_id="T1", round_id="R1",
                        bet="player", stake=stake, door_refusal=refusal, spot_max=30_000)

    def settlement_step(self) -> None:
        """bet-settlement: read new funded bets, end each once; sometimes redeliver."""
        rng = self.rng
        for p in range(PARTITIONS):
            log = self.log("bets.placed", p)
            for value in log[self.placed_read[p]:]:
                bet = BetPlaced.model_validate_json(value)
                if bet.bet_id in self.ended:
                    continue
                self.ended.add(bet.bet_id)
                for cmd in self._endings(bet):
                    raw = Envelope(command=cmd).model_dump_json().encode()
                    self.endings.append(raw)
                    p2, o = self.command(Envelope(command=cmd))
                    self.steps.append(f"settlement {cmd.type} {bet.bet_id} -> commands[{p2}]@{o}")
            self.placed_read[p] = len(log)
        if self.endings and rng.random() < 0.3:
            raw = rng.choice(self.endings)
            env = Envelope.model_validate_json(raw)
            p, o = self.command(env)
            self.steps.append(f"settlement redelivers {env.command.type} "
                              f"{getattr(env.command, 'bet_id', '')} -> commands[{p}]@{o}")

    def _endings(self, bet: BetPlaced) -> list[Any]:
        rng = self.rng
        common = dict(player_id=bet.player_id, bet_id=bet.bet_id, table_id=bet.table_id,
                      round_id=bet.round_id)
        roll = rng.random()
        if roll < 0.2:
            return [EndBet(**common, ending="rejected", returned=bet.stake)]
        if roll < 0.35:
            return [EndBet(**common, ending="voided", returned=bet.stake)]
        returned = rng.choice([0, bet.stake, 2 * bet.stake])
        settled = EndBet(**common, ending="settled", returned=returned,
                         settlement_id=f"s-{bet.bet_id}")
        if rng.random() < 0.25:  # a management void after settlement
            return [settled,
                    ReverseSettlement(**common, reversal_id=f"rv-{bet.bet_id}",
                                      settlement_id=f"s-{bet.bet_id}", amount=returned),
                    EndBet(**common, ending="voided", returned=bet.stake)]
        return [settled]

    # ---------------------------------------------------------------- workers

    def events(self, worker: Worker, p: int, count: int) -> list[Event]:
        log = self.log(COMMANDS, p)
        start = worker.position[p]
        out = [Event(Message(COMMANDS, p, o, log[o], worker.generation))
               for o in range(start, min(len(log), start + count))]
        worker.position[p] = start + len(out)
        return out

    async def deliver(self, worker: Worker, events: list[Event]) -> list[Event]:
        """The stream's events with the reader's repair: a jump past the next offset the
        own log expects is read from the log first (`ContiguousReads`)."""
        assert worker.reads is not None
        out: list[Event] = []
        for event in events:
            skipped = await worker.reads.admit(event)
            if skipped is not None:
                log = self.log(COMMANDS, event.message.partition)
                out += [Event(Message(COMMANDS, event.message.partition, o, log[o],
                                      worker.generation))
                        for o in range(skipped, event.message.offset)]
            out.append(event)
        return out

    async def watch(self, worker: Worker, events: list[Event]) -> list[Event]:
        """`contiguous.watch_waiting_partitions`: a partition the stream hands nothing on
        from although the log holds records past where the own log stands is read from
        the log."""
        assert worker.reads is not None
        out: list[Event] = []
        busy = {e.message.partition for e in events}
        for p in worker.position:
            if p in busy:
                continue
            start = (await worker.reads.next_offsets(worker.generation, [TP(COMMANDS, p)]))[
                TP(COMMANDS, p)]
            log = self.log(COMMANDS, p)
            if start < len(log):
                out += [Event(Message(COMMANDS, p, o, log[o], worker.generation))
                        for o in range(start, len(log))]
                worker.reads.read_up_to(TP(COMMANDS, p), len(log))
                self.steps.append(f"{worker.name} reads commands[{p}] {start}.. from the log")
        return out

    async def run_batch(self, worker: Worker) -> None:
        if not worker.alive or not worker.position:
            return
        rng = self.rng
        events: list[Event] = []
        for p in list(worker.position):
            events += self.events(worker, p, worker.batch_max or rng.randint(1, 6))
        try:
            batch = await self.deliver(worker, events) + await self.watch(worker, events)
            if not batch:
                return
            waiting = {}
            for event in batch:
                env = Envelope.model_validate_json(event.value)
                if env.reply_id and env.reply_id in self.sent:
                    waiting[env.reply_id] = worker.replies.expect(env.reply_id)
            await apply_batch(worker.own, batch, worker.batches.decide, worker.batches.answer)
            for reply, future in waiting.items():
                if future.done() and future.result().status != 503:  # 503: retry
                    self.sent[reply].answer = future.result()
                worker.replies.forget(reply)
            self.steps.append(f"{worker.name} applied {len(batch)} record(s) "
                              f"{[(e.message.partition, e.message.offset) for e in batch]}")
        except Crash as crash:
            worker.alive = False
            self.steps.append(f"{worker.name} killed ({crash})")
        finally:
            worker.crash_at = None

    def new_worker(self, partitions: set[int]) -> Worker:
        worker = Worker(self, f"w{len(self.workers)}")
        self.workers.append(worker)
        start = {p: self.rng.randrange(self.kafka.end(COMMANDS, p) + 1)
                 for p in partitions}  # the group's commit: anywhere, behind or ahead
        worker.assign(partitions, start)
        self.steps.append(f"{worker.name} assigned {sorted(partitions)} from {start}")
        return worker

    async def run(self, length: int) -> None:
        rng = self.rng
        owner = self.new_worker(set(range(PARTITIONS)))
        zombie: Worker | None = None
        for _ in range(length):
            roll = rng.random()
            if roll < 0.35:
                self.client_step()
            elif roll < 0.45:
                self.settlement_step()
            elif roll < 0.85:
                worker = zombie if zombie is not None and zombie.alive and rng.random() < 0.3 \
                    else owner
                r = rng.random()
                worker.crash_at = rng.choice(["mid-send", "before-ack", "mid-publish",
                                              "before-answer"]) if r < 0.15 else None
                if r > 0.9 and zombie is not None and zombie.alive:
                    worker.race = zombie if worker is owner else owner
                await self.run_batch(worker)
                if not owner.alive:
                    owner = self.new_worker(set(range(PARTITIONS)))
            elif roll < 0.92:  # the partitions move; the old owner goes on as a zombie
                zombie = owner
                owner = self.new_worker(set(range(PARTITIONS)))
                self.steps.append(f"{zombie.name} is a zombie")
            elif roll < 0.96 and zombie is not None and zombie.alive:
                # the old owner gets the partitions back, on its cache
                zombie.assign(set(range(PARTITIONS)), {p: rng.randrange(
                    self.kafka.end(COMMANDS, p) + 1) for p in range(PARTITIONS)})
                owner, zombie = zombie, None
                self.steps.append(f"{owner.name} owns the partitions again, on its cache")
            elif roll < 1.0 and rng.random() < 0.5:
                owner.position = {p: rng.randrange(pos + 1) for p, pos in owner.position.items()}
                self.steps.append(f"{owner.name} redelivery from {owner.position}")
        # drain: a clean worker applies everything (endings included), no faults
        final = self.new_worker(set(range(PARTITIONS)))
        final.batch_max = 1000
        for _ in range(200):
            before = {p: self.kafka.end(COMMANDS, p) for p in range(PARTITIONS)}
            await self.run_batch(final)
            self._settle_without_redelivery()
            if all(final.position[p] >= self.kafka.end(COMMANDS, p)
                   for p in range(PARTITIONS)) and before == {
                    p: self.kafka.end(COMMANDS, p) for p in range(PARTITIONS)}:
                break
        self.final = final

    def _settle_without_redelivery(self) -> None:
        for p in range(PARTITIONS):
            log = self.log("bets.placed", p)
            for value in log[self.placed_read[p]:]:
                bet = BetPlaced.model_validate_json(value)
                if bet.bet_id not in self.ended:
                    self.ended.add(bet.bet_id)
                    for cmd in self._endings(bet):
                        self.command(Envelope(command=cmd))
            self.placed_read[p] = len(log)


def fold_ledger(kafka: Kafka) -> dict[int, PartitionState]:
    states = {}
    for p in range(PARTITIONS):
        state: PartitionState = PartitionState(p)
        for offset, _, value in kafka.read(LEDGER_TOPIC, p):
            entry = LedgerEntry.model_validate_json(value)
            fold_entry(state, offset, entry, WALLET_FOLD, entry.recorded_at)
        states[p] = state
    return states


def check(sim: Sim) -> list[str]:
    """The invariants, from the topics alone."""
    problems: list[str] = []
    states = fold_ledger(sim.kafka)
    valid: list[LedgerEntry] = []
    for p, state in states.items():
        # the valid entries, in order: the chain read again, independently of fold_entry
        head = ""
        for value in sim.log(LEDGER_TOPIC, p):
            entry = LedgerEntry.model_validate_json(value)
            if entry.prev == head:
                valid.append(entry)
                head = entry.entry_id
        # every command applied: the drained worker's checkpoint is the log's end
        end = sim.kafka.end(COMMANDS, p)
        if state.resume_at(COMMANDS, p) < end and _changes_after(sim, p, state):
            problems.append(f"commands[{p}]: applied through {state.resume_at(COMMANDS, p) - 1}"
                            f" of {end - 1}")
    # per player: seq contiguous, balance after = previous + amount, balance = sum
    by_player: dict[str, list[LedgerEntry]] = defaultdict(list)
    for entry in valid:
        by_player[entry.account.player_id].append(entry)
    tx_ids: dict[str, WalletTransaction] = {}
    for player, entries in by_player.items():
        balance, seq = 0, 0
        for entry in entries:
            if entry.tx is not None:
                if entry.tx.tx_id in tx_ids:
                    problems.append(f"{player}: {entry.tx.tx_id} applied twice")
                tx_ids[entry.tx.tx_id] = entry.tx
                balance += entry.tx.signed_amount
                seq += 1
                if entry.tx.balance_after != balance or entry.account.tx_count != seq:
                    problems.append(f"{player}: {entry.tx.tx_id} balance_after "
                                    f"{entry.tx.balance_after} seq {entry.account.tx_count}, "
                                    f"expected {balance} seq {seq}")
            if entry.account.balance != balance:
                problems.append(f"{player}: account balance {entry.account.balance} != "
                                f"sum of its movements {balance}")
    # outputs: every valid movement on wallet.transactions, and nothing else
    published: dict[str, WalletTransaction] = {}
    for p in range(PARTITIONS):
        for value in sim.log("wallet.transactions", p):
            tx = WalletTransaction.model_validate_json(value)
            if tx.tx_id in published and published[tx.tx_id] != tx:
                problems.append(f"wallet.transactions: {tx.tx_id} published with two contents")
            published[tx.tx_id] = tx
    for tx_id in tx_ids.keys() - published.keys():
        problems.append(f"{tx_id}: in the ledger, never published")
    for tx_id in published.keys() - tx_ids.keys():
        problems.append(f"{tx_id}: published, but no valid ledger entry (a zombie's output)")
    placed = {BetPlaced.model_validate_json(v).bet_id for p in range(PARTITIONS)
              for v in sim.log("bets.placed", p)}
    debited = {tx.cause_id for tx in tx_ids.values() if tx.kind == "stake_debit"}
    if placed != debited:
        problems.append(f"bets.placed {sorted(placed ^ debited)} differ from the debits")
    # every funded bet ended exactly once (all endings were applied by the drain)
    for bet_id in debited:
        ends = [tx for tx in tx_ids.values() if tx.cause_id in (bet_id, f"s-{bet_id}")
                and tx.kind in ("bet_refund", "payout")]
        refunds = [tx for tx in ends if tx.kind == "bet_refund"]
        if len(refunds) > 1:
            problems.append(f"{bet_id}: refunded {len(refunds)} times")
    final = {p: s.kv for p, s in states.items()}
    live = {p: s.kv for p, s in sim.final.own.states.items()}
    if final != live:
        problems.append("the live worker's state differs from the fold of the ledger")
    # answers given are what the log says
    bet_source = {e.bet_id: e.source.offset for e in valid if e.command == "place_bet"
                  and e.tx is not None}
    for request in sim.sent.values():
        cmd, answer = request.env.command, request.answer
        if answer is None or not isinstance(cmd, PlaceBet):
            continue
        if answer.status in (200, 201) and cmd.bet_id not in bet_source:
            problems.append(f"{cmd.bet_id}: answered {answer.status}, never debited in the log")
        if answer.status >= 400 and cmd.bet_id in bet_source and \
                bet_source[cmd.bet_id] < request.offset and answer.status != 409 or (
                answer.status == 409 and answer.body["error"]["code"] == "round_closed"
                and cmd.bet_id in bet_source and bet_source[cmd.bet_id] < request.offset):
            problems.append(f"{cmd.bet_id}: resent at offset {request.offset}, answered "
                            f"{answer.status} though placed at {bet_source[cmd.bet_id]}")
    return problems


def _changes_after(sim: Sim, p: int, state: PartitionState) -> bool:
    """A command past the ledger's checkpoint that changes something, applied now to the
    folded state (a command that changes nothing writes no entry, and needs none)."""
    log = sim.log(COMMANDS, p)
    for offset in range(state.resume_at(COMMANDS, p), len(log)):
        env = Envelope.model_validate_json(log[offset])
        if handlers.handle(env, T0, Lookups(state.kv)).change is not None:
            return True
    return False


_loop: asyncio.AbstractEventLoop | None = None


def run(seed: int, length: int = 40) -> Result:
    """One schedule of `length` steps from `seed`, drained, then checked."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    sim = Sim(seed)
    _loop.run_until_complete(sim.run(length))
    return Result(seed, sim.steps, check(sim))


__all__ = ["Result", "Sim", "check", "run"]
