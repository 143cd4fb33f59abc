"""Every service on the kernel in one schedule, against the model of Kafka.

Stages (`Stage`) are pluggable: each has its input topics, its own log and fold, and its
decide/answer (the service's real ones); its outputs are the next stage's inputs:

    dealer (modelled: world.Table)      -> dealer.inputs (signed inputs; the timer's ticks)
    dealer-event      dealer.inputs     -> dealer.log -> table.events, dealer.rejections
    game-evaluation   table.events      -> evaluation.log -> round.results, dead.letters
    bet-settlement    bets.placed, table.events, round.results
                                        -> settlement.log -> bets.decisions, bets.settled,
                                           wallet.endings (keyed by player)
    wallet            wallet-commands, wallet.endings
                                        -> wallet.ledger -> wallet.transactions, bets.placed,
                                           wallet.operator_calls (seamless)
    operator caller and wallet (modelled, seamless mode) -> wallet-commands

dealer-event is a stage like the others (`Decisions.decide`/`answer` and `DEALER_FOLD`);
the dealer's side of a schedule (its devices, the timer's ticks, the judging of each
dealer.log entry by the model's rules) is `tests/crashsim/dealer_side.py`.

A worker's batch (`Sim.batch`) is the kernel's (`until_applied` over `apply_batch`) on
records its `consume.Consumer` hands on; its I/O (`ModelIO`) is where the cut points are:
killed mid-send (a prefix of the entries landed), after the send before the ack (all
landed, no ack seen), after the ack before the answers (a prefix of the outputs published),
after the answers before the commit. Other faults: transient send failures (the kernel
folds again and retries), a rival writer or a rebalance inside the send, zombies that keep
writing (dealer-event's old owner is told of half its moves: `DealerSide.told_moved`),
restarts on the surviving cache or on a wiped store (the wallet then recovers from its
snapshots), redeliveries, a fetch from a faulty commit anywhere in the log, per
worker clock skew, resends while the first attempt is in flight, unparseable and wrongly
keyed records (on dealer.inputs: garbage, and a genuine input on the other partition).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from services.infra.consume_loop import LostPartition
from services.infra.kernel import until_applied
from services.infra.own_log import Landed, Logged
from services.infra.snapshots import copy_state
from services.wallet import handlers
from services.wallet.commands import (
    CreateAccount,
    Deposit,
    DoorRefusal,
    Envelope,
    OperatorAnswered,
    PlaceBet,
    Withdraw,
)
from services.wallet.ledger_fold import pending_calls
from shared.events.dealer_log import DealerEntry
from shared.events.inputs import InputBase
from shared.events.operator_wallet import OperatorAnswer, OperatorCall
from shared.topics import (
    WALLET_ENDINGS_TOPIC,
    WALLET_LEDGER_SNAPSHOTS_TOPIC,
    WALLET_LEDGER_TOPIC,
)
from tests.crashsim.consume import Consumer
from tests.crashsim.dealer_side import DealerSide
from tests.crashsim.kafka_model import Kafka
from tests.crashsim.stages import (
    AHEAD,
    COMMANDS,
    CUTS,
    DEALER,
    PARTITIONS,
    STAGES,
    WALLET,
    WINDOW,
    Config,
    Crash,
    Stage,
    Transient,
    WorkerClock,
    instant,
    packed_by_partition,
    partition_of,
)
from tests.crashsim.world import Decision, OperatorWallet, Table

# a worker's batch: dealer-event's twice as often as each other stage's (a dealer waits for
# its decisions before it closes betting; the bets wait for its rounds)
WEIGHTED = (*STAGES, DEALER)


class ModelIO:
    """`kernel.LogIO` and `snapshots.SnapshotIO` on the model, with the worker's faults."""

    def __init__(self, sim: Sim, worker: Worker) -> None:
        self.sim = sim
        self.worker = worker
        self.principal = worker.stage.name

    async def send(self, topic: str, partition: int, records) -> list[Landed]:
        sim, w = self.sim, self.worker
        rival, w.race = w.race, None
        inside = rival is not None and w.race_inside and len(records) > 1
        if rival is not None and not inside:  # another writer gets in first
            await sim.batch(rival)
        if w.move_now:  # a rebalance in the middle of this batch
            w.move_now = False
            new = await sim.rebalance(w.stage)
            await sim.batch(new)
        cut = sim.rng.randrange(1, len(records)) if inside else -1
        landed = []
        for i, (k, v) in enumerate(records):
            if i == cut and rival is not None:  # another writer gets in between
                sim.note(f"{w.name}: {rival.name} writes inside its send to "
                         f"{topic}[{partition}], after {i} of {len(records)}")
                await sim.batch(rival)
            landed.append((topic, partition, sim.append(topic, partition, k, v, w.name)))
        if w.transient:
            w.transient -= 1
            sim.kafka.kill(w.name)  # a prefix landed, the rest did not; the worker lives
            sim.note(f"{w.name}: send to {topic}[{partition}] failed (transient)")
            raise Transient("the broker failed the send")
        if w.crash_at == "mid-send":
            sim.kafka.kill(w.name)
            raise Crash("mid-send")
        sim.kafka.ack(w.name)
        if w.crash_at == "after-send":
            raise Crash("after-send")
        # acknowledged: where the records are now is where they stay
        return [sim.landed(t, p, o) for t, p, o in landed]

    async def read(self, topic: str, partition: int, start: int
                   ) -> tuple[list[Logged], int]:
        kafka = self.sim.kafka
        return ([self.sim.logged(topic, partition, o, v)
                 for o, _, v in kafka.read(topic, partition, start)],
                kafka.end(topic, partition))

    async def end(self, topic: str, partition: int) -> int:
        return self.sim.kafka.end(topic, partition)

    async def partition_for(self, topic: str, key: bytes) -> int:
        return partition_of(key)

    async def publish(self, records) -> None:
        sim, w = self.sim, self.worker
        for topic, key, value in records:
            sim.append(topic, partition_of(key), key, value, w.name)
        if w.crash_at == "after-ack":
            sim.kafka.kill(w.name)
            raise Crash("after-ack")
        sim.kafka.ack(w.name)

    async def send_keyed(self, topic: str, partition: int, records) -> list[int]:
        offsets = [self.sim.append(topic, partition, k, v, self.worker.name)
                   for k, v in records]
        self.sim.kafka.ack(self.worker.name)
        return offsets

    async def read_keyed(self, topic: str, partition: int):
        return list(self.sim.kafka.read(topic, partition))


class Worker:
    """One life of one worker of a stage: its own-log cache, its consumer, its faults."""

    def __init__(self, sim: Sim, stage: Stage, skew: timedelta = timedelta(0),
                 states: dict | None = None) -> None:
        sim.lives += 1
        self.sim = sim
        self.stage = stage
        self.name = f"{stage.name}#{sim.lives}"
        self.clock = WorkerClock(sim, skew)
        self.calls: dict[str, OperatorCall] = {}  # seamless: calls this process delivers
        service = stage.build(sim, self)
        self.decisions = service.decisions
        self.own = service.own
        self.own.io = ModelIO(sim, self)
        if states is not None:
            self.own.states = states
        self.decide, self.answer = service.decide, service.answer
        self.revoked = service.revoked  # what the service is told of a rebalance, if anything
        self.consumer = Consumer(sim.kafka, stage.name, stage.inputs)
        self.alive = True
        self.crash_at: str | None = None
        self.race: Worker | None = None
        self.race_inside = False  # the rival's batch lands between this send's records
        self.move_now = False
        self.transient = 0
        self.taken: set[tuple[str, int, int]] = set()  # every input record handed to it

    def owe(self, calls: list[OperatorCall]) -> None:
        """Seamless: calls a backed decision owes (the real caller's `start_all`)."""
        for call in calls:
            self.calls.setdefault(call.request.transaction_id, call)

    def resume_calls(self, state) -> None:
        """Seamless: a recovered partition's pending calls (the caller's `resume`): a debit
        asked by a worker that died is answered no_answer at once."""
        for call in sorted(pending_calls(state.kv), key=lambda c: c.request.requested_at):
            if call.request.kind == "debit":
                self.sim.operator_answer(call, "no_answer", None, None, self)
            else:
                self.calls.setdefault(call.request.transaction_id, call)


@dataclass
class Request:
    """A client's request (an intent) and its attempts: reply ids and command offsets."""

    command: Any
    attempts: list[tuple[str, int, int]] = field(default_factory=list)  # reply, partition, offset
    # reply, answer, worker, and the end of the player's wallet.ledger partition then
    answers: list[tuple[str, handlers.Answer, str, int]] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        return any(a.status != 503 for _, a, _, _ in self.answers)


class Sim(DealerSide):
    def __init__(self, seed: int, config: Config) -> None:
        self.seed = seed
        self.config = config
        self.seamless = config.seamless
        self.rng = random.Random(seed)
        self.kafka = Kafka(self.rng)
        topics = {t for s in STAGES for t in (*s.inputs, s.log_topic, *s.outputs)}
        for topic in sorted(topics):
            self.kafka.create(topic, PARTITIONS)
        self.kafka.create(WALLET_LEDGER_SNAPSHOTS_TOPIC, PARTITIONS, compacted=True)
        self.tick = 0
        self.micro = 0
        self.steps: list[str] = []
        self.lives = 0
        self.owners: dict[str, Worker] = {}
        self.zombies: dict[str, list[Worker]] = {s.name: [] for s in STAGES}
        # each table's probes draw from a source of their own: the schedule's stream is the
        # same with them or without
        self.tables = [Table(f"T{i + 1}", self.rng, random.Random(f"{seed}-T{i + 1}"),
                             stacked=config.stacked and i == 0) for i in range(config.tables)]
        self.players = [f"p{i}" for i in range(config.players)]
        self.requests: list[Request] = []
        self.by_reply: dict[str, Request] = {}
        self.garbage: list[tuple[str, int, int]] = []  # records nobody can apply
        self.by_table = {t.table_id: t for t in self.tables}
        # dealer.inputs (p, o) -> its table and input (None: a timer tick)
        self.dealer_records: dict[tuple[int, int], tuple[str, InputBase | None]] = {}
        self.dealer_garbage: set[tuple[int, int]] = set()  # unreadable dealer.inputs records
        # a table's signed input on the other partition (keyed by something else)
        self.dealer_misplaced: set[tuple[int, int]] = set()
        self.dealer_garbage_decisions: list[Decision] = []
        self.dealer_read = [0] * PARTITIONS  # dealer.log: read up to, and its valid head
        self.dealer_head = [""] * PARTITIONS
        self.dealer_valid: list[tuple[int, int, DealerEntry]] = []
        self.dealer_parsed: dict[tuple[int, int], list[DealerEntry]] = {}  # each record's
        self.dealer_decided: Counter[tuple[int, int]] = Counter()  # by source record
        self.dealer_strays: list[str] = []  # valid entries of no record anyone sent
        # the devices' HTTP waiters: future, input, the worker that holds it, and the end of
        # its dealer.log partition when it was told (None: not yet)
        self.waiters: list[list[Any]] = []
        self.waiting: list[list[Any]] = []  # those not told yet
        # records a worker answered as decided by its own entries: (p, o, worker, log end)
        self.dealer_backed: list[tuple[int, int, str, int]] = []
        self.dealer_left_waiting: list[str] = []  # waiters a worker told it moved left waiting
        self.breaches: list[str] = []
        self.operator = OperatorWallet(self.rng)
        self.bets = 0
        self.faults: set[str] = set()
        self.ahead: list[str] = []  # workers whose clock ran ahead

    # ------------------------------------------------------------- time and records

    def now(self) -> datetime:
        self.micro += 1
        return instant(self.tick, self.micro)

    def append(self, topic: str, partition: int, key: Any, value: Any, writer: str) -> int:
        """A record appended by the broker now (its clock: the simulation's, unskewed)."""
        return self.kafka.append(topic, partition, key, value, writer, self.now())

    def landed(self, topic: str, partition: int, offset: int) -> Landed:
        """An acknowledged record's place and append time, as the kernel's LogIO says it."""
        return Landed(offset, self.kafka.appended_at(topic, partition, offset))

    def logged(self, topic: str, partition: int, offset: int, value: bytes) -> Logged:
        return Logged(offset, value, self.kafka.appended_at(topic, partition, offset))

    def outside(self, topic: str, key: bytes, value: bytes, partition: int | None = None
                ) -> tuple[int, int]:
        """A record from outside the services (acknowledged at once)."""
        p = partition_of(key) if partition is None else partition
        offset = self.append(topic, p, key, value, "outside")
        self.kafka.ack("outside")
        return p, offset

    def note(self, step: str) -> None:
        self.steps.append(f"t{self.tick} {step}")

    def fault(self, kind: str, step: str) -> None:
        self.faults.add(kind)
        self.note(step)

    # ------------------------------------------------------------- the world's steps

    def client(self, command: Any, request: Request | None = None) -> None:
        if request is None:
            request = Request(command)
            self.requests.append(request)
        reply = f"r{len(self.by_reply) + 1}"
        self.by_reply[reply] = request
        env = Envelope(reply_id=reply, command=command)
        p, o = self.outside(COMMANDS, command.player_id.encode(),
                            env.model_dump_json().encode())
        request.attempts.append((reply, p, o))
        again = " (resent)" if len(request.attempts) > 1 else ""
        self.note(f"client {command.type} {getattr(command, 'bet_id', '')}"
                  f"{getattr(command, 'request_id', '')} {command.player_id}{again} "
                  f"-> {COMMANDS}[{p}]@{o}")

    def resend(self, request: Request) -> None:
        """The same request again (the same ids), with the door's verdict of now."""
        command = request.command
        if isinstance(command, PlaceBet):
            command = self.door(command)
        self.client(command, request)

    def door(self, bet: PlaceBet) -> PlaceBet:
        """The bet with the door's verdict, and the seq of its round's RoundOpened when the
        door lets it through (views.Bets.post)."""
        table = next(t for t in self.tables if t.table_id == bet.table_id)
        open_round = table.open_round()
        if open_round is not None and open_round.round_id == bet.round_id:
            return bet.model_copy(update={"door_refusal": None,
                                          "opened_seq": open_round.opened_seq})
        return bet.model_copy(update={"opened_seq": None, "door_refusal": DoorRefusal(
            status=409, code="round_closed", message="closed")})

    def client_step(self) -> None:
        rng = self.rng
        player = rng.choice(self.players)
        roll = rng.random()
        if roll < 0.12:
            self.client(CreateAccount(player_id=player, currency="IDR"))
        elif roll < 0.3:
            self.client(Deposit(player_id=player, request_id=f"d{rng.randrange(4)}-{player}",
                                amount=rng.choice([5000, 20000])))
        elif roll < 0.36:
            self.client(Withdraw(player_id=player, request_id=f"w{rng.randrange(3)}-{player}",
                                 amount=rng.choice([1000, 7000])))
        elif roll < 0.8 or not self.requests:
            table = rng.choice(self.tables)
            rnd = table.open_round() or table.current
            if rnd is None:
                return
            self.bets += 1
            bet = PlaceBet(player_id=player, bet_id=f"b{self.bets}", table_id=table.table_id,
                           round_id=rnd.round_id, bet=rng.choice(["player", "banker", "tie"]),
                           stake=rng.choice([1000, 2000, 3000, 5000]),
                           operator_session="s" if self.seamless else None)
            self.client(self.door(bet))
        else:  # a resend: maybe while the first attempt is still in flight
            request = rng.choice(self.requests[-4:])
            if not request.decided:
                self.faults.add("resend in flight")
            self.resend(request)

    def told(self, reply: str, answer: handlers.Answer, worker: str) -> None:
        request = self.by_reply.get(reply)
        if request is not None:
            end = self.kafka.end(WALLET_LEDGER_TOPIC, partition_of(request.command.player_id.encode()))
            request.answers.append((reply, answer, worker, end))

    def republish_endings(self) -> None:
        """Every ending on wallet.endings appended again, as a bet-settlement worker
        recovering from an old outbox would publish them: new records the wallet must
        recognise as endings it applied."""
        for p in range(PARTITIONS):
            for _, key, value in self.kafka.read(WALLET_ENDINGS_TOPIC, p):
                self.outside(WALLET_ENDINGS_TOPIC, key, value)
        self.note("bet-settlement: every ending again (an outbox republished)")

    def operator_answer(self, call: OperatorCall, outcome: str, code: str | None,
                        balance: int | None, worker: Worker, held: list | None = None) -> None:
        answer = OperatorAnswer(outcome=outcome, error_code=code, balance=balance,
                                http_status=None if outcome == "no_answer" else (
                                    200 if outcome == "ok" else 409),
                                answered_at=worker.clock.now())
        command = OperatorAnswered(player_id=call.request.player_id,
                                   transaction_id=call.request.transaction_id, answer=answer)
        record = (command.player_id.encode(), Envelope(command=command).model_dump_json().encode())
        self.outside(COMMANDS, *record) if held is None else held.append(record)
        self.note(f"{worker.name} caller: {call.request.transaction_id} -> {outcome}")

    def caller_step(self, everything: bool = False) -> None:
        """Seamless: each live worker's caller delivers what it owes to the operator; one
        time in two, its answers of the step go packed by partition (`answer_packs`)."""
        for worker in [w for w in self._workers() if w.alive and w.calls]:
            held: list[tuple[bytes, bytes]] | None = [] if self.rng.random() < 0.5 else None
            try:
                for tx, call in list(worker.calls.items()):
                    request = call.request
                    outcome, code, balance = self.operator.call(
                        request.kind, tx, request.player_id, request.amount,
                        request.reference_transaction_id)
                    if outcome == "no_answer" and request.kind != "debit":
                        continue  # owed: driven again later
                    del worker.calls[tx]
                    self.operator_answer(call, outcome, code, balance, worker, held)
                    if not everything and self.rng.random() < 0.5:
                        return
            finally:
                for record in packed_by_partition(held or []):
                    self.outside(COMMANDS, *record)

    def _workers(self) -> list[Worker]:
        return [*self.owners.values(), *(z for zs in self.zombies.values() for z in zs)]

    # ------------------------------------------------------------- the workers

    def new_worker(self, stage: Stage, states: dict | None = None, clean: bool = False
                   ) -> Worker:
        skew = timedelta(0)
        if not clean:
            roll = self.rng.random()
            if stage is WALLET and roll < self.config.ahead_p:
                skew = AHEAD
            elif roll < 0.3:
                skew = timedelta(seconds=self.rng.randint(-20, 20))
        worker = Worker(self, stage, skew, states)
        if skew >= WINDOW:
            self.ahead.append(worker.name)
            self.fault("clock ahead", f"{worker.name}: clock {skew} ahead")
        return worker

    async def assign(self, worker: Worker, clean: bool = False) -> None:
        stale = not clean and self.rng.random() < self.config.stale_fetch_p
        await worker.consumer.assign(set(range(PARTITIONS)), worker.own, stale)
        if worker.consumer.stale:
            self.faults.add("fetch from the commit")
        snapshots = worker.own.snapshots
        if snapshots is not None and any(m is not None for m, _ in snapshots.restores.values()):
            self.fault("from a snapshot", f"{worker.name} recovered from a snapshot")
        self.note(f"{worker.name} assigned; seeks {worker.consumer.position}"
                  + (f", a fetch from the commit {worker.consumer.stale} first"
                     if worker.consumer.stale else ""))

    async def start(self, stage: Stage) -> Worker:
        worker = self.new_worker(stage)
        self.owners[stage.name] = worker
        await self.assign(worker)
        return worker

    async def rebalance(self, stage: Stage) -> Worker:
        """The partitions move to a new worker; the old owner goes on as a zombie, unless
        it is told (`DealerSide.told_moved`: dealer-event's, half the time)."""
        old = self.owners[stage.name]
        held = self.told_moved(old)
        if old.alive and held is None:
            self.zombies[stage.name].append(old)
        new = await self.start(stage)
        if held is None:
            self.fault("zombie", f"{stage.name}: partitions move to {new.name}; {old.name} "
                                 "is a zombie")
        else:
            self.resend_moved(old, new, held)
        return new

    async def restart(self, stage: Stage, wiped: bool) -> Worker:
        """The owner dies (kill -9) and comes back on its cache, or on a wiped store."""
        old = self.owners[stage.name]
        if old.alive:
            old.alive = False
            self.kafka.kill(old.name)
        new = self.new_worker(stage, None if wiped else old.own.states)
        self.owners[stage.name] = new
        self.fault("restart wiped" if wiped else "restart on cache",
                   f"{old.name} restarts as {new.name} "
                   f"{'on a wiped store' if wiped else 'on its cache'}")
        await self.assign(new)
        return new

    async def comeback(self, stage: Stage) -> None:
        """A zombie gets the partitions back, on its cache."""
        zombies = [z for z in self.zombies[stage.name] if z.alive]
        if not zombies:
            return
        back = zombies[-1]
        self.zombies[stage.name].remove(back)
        old = self.owners[stage.name]
        if old.alive:
            self.zombies[stage.name].append(old)
        self.owners[stage.name] = back
        self.fault("back on cache", f"{back.name} owns {stage.name} again, on its cache")
        await self.assign(back)

    def kill(self, worker: Worker, where: str) -> None:
        worker.alive = False
        self.kafka.kill(worker.name)
        self.fault(f"killed {where}", f"{worker.name} killed ({where})")

    async def batch(self, worker: Worker, count: int | None = None,
                    bad_commit: bool = False) -> int:
        """One batch of the worker's consumer through the kernel; how many records."""
        if not worker.alive or not worker.consumer.position:
            return 0
        events = worker.consumer.take(count or self.rng.randint(1, 5))
        if not events:
            worker.crash_at = None
            return 0
        worker.taken.update((e.message.topic, e.message.partition, e.message.offset)
                            for e in events)
        try:
            await until_applied(worker.own, cast(Any, events), worker.decide,
                                worker.answer, first_pause_s=0.0)
            if worker.crash_at == "after-answer":
                raise Crash("after-answer")
            committed = worker.consumer.commit(self.rng if bad_commit else None)
            took = [(e.message.topic, e.message.partition, e.message.offset) for e in events]
            self.note(f"{worker.name} applied {took}"
                      + (f"; commits {committed}" if bad_commit else ""))
        except Crash as crash:
            self.kill(worker, str(crash))
        except LostPartition:
            worker.consumer.position = {}
            self.fault("lost partition", f"{worker.name} lost the race for its partitions")
        finally:
            worker.crash_at = None
        return len(events)

    async def worker_step(self) -> None:
        rng, config = self.rng, self.config
        stage = rng.choice(WEIGHTED)
        owner = self.owners[stage.name]
        zombies = [z for z in self.zombies[stage.name] if z.alive]
        worker = rng.choice(zombies) if zombies and rng.random() < 0.3 else owner
        roll = rng.random()
        if roll < config.cut_p:
            worker.crash_at = rng.choice(CUTS)
        elif roll < config.cut_p + config.transient_p:
            worker.transient = rng.randint(1, 2)
            self.faults.add("transient")
        elif zombies and roll < config.cut_p + config.transient_p + config.race_p:
            worker.race = owner if worker is not owner else rng.choice(zombies)
            worker.race_inside = rng.random() < 0.5
            self.faults.add("race inside a send" if worker.race_inside else "race")
        elif worker is owner and roll < (config.cut_p + config.transient_p + config.race_p
                                         + config.move_mid_batch_p):
            worker.move_now = True
            self.faults.add("rebalance mid-batch")
        bad_commit = rng.random() < config.bad_commit_p
        if bad_commit:
            self.faults.add("commit anywhere")
        await self.batch(worker, bad_commit=bad_commit)
        if not self.owners[stage.name].alive:
            await self.restart(stage, wiped=rng.random() < 0.5)

    async def snapshot_step(self) -> None:
        """The wallet's owner writes a snapshot of a partition it holds (between batches)."""
        owner = self.owners[WALLET.name]
        p = self.rng.randrange(PARTITIONS)
        state = owner.own.state(p)
        if not owner.alive or state is None or state.head < 0 or owner.own.snapshots is None:
            return
        await owner.own.snapshots.write(owner.own.io_(), copy_state(state))  # type: ignore[arg-type]
        self.fault("snapshot", f"{owner.name} snapshots wallet.ledger[{p}] at {state.end}")

    async def run(self) -> None:
        rng = self.rng
        for stage in STAGES:
            await self.start(stage)
        for table in self.tables:  # the tables open (a shoe, a round) before the faults
            for inp in table.step(self.now()):
                self.send_input(table, inp)
        await self.batch(self.owners[DEALER.name], count=5)
        for table in self.tables:
            for inp in table.step(self.now()):
                self.send_input(table, inp)
        await self.batch(self.owners[DEALER.name], count=5)
        self.dealer_sync()
        for player in self.players:  # the players' accounts, funded in transfer mode
            self.client(CreateAccount(player_id=player, currency="IDR"))
            if not self.seamless:
                self.client(Deposit(player_id=player, request_id=f"start-{player}",
                                    amount=self.config.start_balance))
        for tick in range(1, self.config.length + 1):
            self.tick, self.micro = tick, 0
            roll = rng.random()
            if roll < 0.16:
                self.dealer_step()
            elif roll < 0.33:
                self.client_step()
            elif roll < 0.45 and self.seamless:
                self.caller_step()
            elif roll < 0.80:
                await self.worker_step()
            elif roll < 0.84:
                await self.rebalance(rng.choice(STAGES))
            elif roll < 0.88:
                await self.restart(rng.choice(STAGES), wiped=rng.random() < 0.5)
            elif roll < 0.90:
                await self.comeback(rng.choice(STAGES))
            elif roll < 0.93:
                owner = self.owners[rng.choice(STAGES).name]
                owner.consumer.rewind(rng)
                self.fault("redelivery", f"{owner.name} redelivery from "
                                         f"{owner.consumer.position}")
            elif roll < 0.95:
                await self.snapshot_step()
            elif roll < 0.97:
                self.timer_step()
            elif roll < 0.97 + self.config.garbage_p:
                self.garbage_step()
            else:
                self.dealer_step()
        await self.drain()

    async def drain(self) -> None:
        """No more faults: the zombies stop, clean workers apply everything, the dealers
        finish their rounds (once every input in flight is decided), the caller delivers
        everything, and the clients resend every request not yet decided."""
        self.tick += 1
        self.note("drain")
        self.operator.fail_p = 0.0
        for zombies in self.zombies.values():
            for zombie in zombies:
                zombie.alive = False
        await self.idle()
        for stage in STAGES:
            old = self.owners[stage.name]
            old.alive = False
            self.kafka.kill(old.name)
            final = self.new_worker(stage, old.own.states, clean=True)
            self.owners[stage.name] = final
            await self.assign(final, clean=True)
        replayed = self.rng.random() < 0.5
        for _ in range(30):
            before = {(t, p): self.kafka.end(t, p) for t in self.kafka.logs
                      for p in range(PARTITIONS)}
            self.dealer_sync()
            for table in self.tables:  # every dealer finishes its round
                for inp in table.finish(self.now(), self.config.annul_p):
                    self.send_input(table, inp)
            for stage in STAGES:
                while await self.batch(self.owners[stage.name], count=1000):
                    pass
            self.dealer_sync()
            self.caller_step(everything=True)
            for request in self.requests:
                if not request.decided:
                    self.resend(request)
            if not replayed:  # once: every ending published again, some answers lost
                replayed = True
                self.republish_endings()
                for request in self.requests:
                    if request.decided and self.rng.random() < 0.3:
                        self.resend(request)
            after = {(t, p): self.kafka.end(t, p) for t in self.kafka.logs
                     for p in range(PARTITIONS)}
            if after == before:
                return
        self.note("drain did not settle in 30 rounds")
        self.undrained = True

    undrained = False
    # requests whose record a live, positioned wallet owner read and never answered (not
    # even "retry") with nothing more to read
    idle_undecided: list[str] = []

    async def idle(self) -> None:
        """Liveness, before the drain restarts anyone or resends anything: the owners that
        are alive read what they hold until nothing moves (the callers deliver what they
        owe, nothing new is sent). Every request record the wallet's owner read on a
        partition it is still positioned on must then have been answered (decided, or
        "retry"): a worker that drops one leaves its client waiting for an answer that
        only another record or a restart would bring."""
        for _ in range(30):
            moved = 0
            for stage in STAGES:
                while (n := await self.batch(self.owners[stage.name], count=1000)):
                    moved += n
            before = sum(self.kafka.end(t, p) for t in self.kafka.logs for p in range(PARTITIONS))
            self.caller_step(everything=True)
            after = sum(self.kafka.end(t, p) for t in self.kafka.logs for p in range(PARTITIONS))
            if not moved and before == after:
                break
        owner = self.owners[WALLET.name]
        if not owner.alive or self.seamless:
            return
        for r in self.requests:
            for reply, p, o in r.attempts:
                if (COMMANDS, p, o) in owner.taken and (COMMANDS, p) in owner.consumer.position \
                        and not any(answered == reply for answered, *_ in r.answers):
                    self.idle_undecided.append(
                        f"{type(r.command).__name__} of {r.command.player_id} "
                        f"({COMMANDS}[{p}]@{o})")
