"""Today's wallet (issue 17's "before") on the Kafka model: workers that run the real
`CommandBatches.apply_command` (so `handlers.handle`, `guarded` and `Store`) over five
tables that are a worker's local store and a changelog each, the way Faust keeps them.

A worker, as `services/wallet/batches.py` and `services/infra/batching.py` run it:
- takes a batch of its partition's commands (`process`); each command is applied inside
  `processing(event)`, so every table write goes to the partition's local store (RocksDB,
  on the worker's disk) and is sent as a changelog record, unacknowledged;
- flushes before a player's commands since the last flush reach `RECENT_TXS`, and at the
  batch's end: sends the outputs (`wallet.transactions`, `bets.placed`), waits for their
  acks (`publish_all`), then for every record's (`flush_all`, the changelogs too), then
  answers the waiting HTTP requests;
- acks the batch's events, and Faust commits the acked offsets (`Kafka.commit_acked`, its
  0.15.3 rule).
Every step between two of those is a *cut point* (`Worker.cut`): a kill -9 armed for the
n-th cut raises `Killed` there, and the Kafka model loses a random part of what was not
acknowledged yet. RocksDB stays on the disk.

Recovery as Faust does it (`Worker.recover`): each table partition's store keeps the
changelog offset it last heard acknowledged (`_on_changelog_sent`); on assignment it
applies the changelog records after that offset on top of what it holds. A worker that
restarts on its own store so keeps writes whose changelog records were lost (ahead of the
log); one that takes a partition over, or whose disk was wiped, loads the changelog's
latest values.

The `World` is everything outside the wallet: players' HTTP requests (each a command with
a reply id; a retry resends the same command) and bet-settlement, which decides the bets it
reads on `bets.placed` (reject, settle, void; an annulment is a reversal then a refund)
and re-publishes its endings on redelivery. Its commands are appended and acknowledged at
once (the door and the forwarder wait for their acks).
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime
from typing import Any

from croupier.services.wallet.batches import CommandBatches
from croupier.services.wallet.commands import (
    CreateAccount,
    Deposit,
    EndBet,
    Envelope,
    PlaceBet,
    ReverseSettlement,
)
from croupier.services.wallet.handlers import Answer, CommandResult
from croupier.services.wallet.ledger import RECENT_TXS
from croupier.services.wallet.store import Store
from tests.crashsim.kafka_model import Kafka

NOW = datetime(2026, 1, 1, tzinfo=UTC)
COMMANDS = "wallet-commands"
TRANSACTIONS = "wallet.transactions"
PLACED = "bets.placed"
OUTPUTS = (TRANSACTIONS, PLACED)
TABLES = ("accounts", "transactions", "tx-ids", "bets", "spots")
GROUP = "wallet"
TABLE_ID = "T1"
apply_command = CommandBatches.apply_command  # the real one: it only uses `self.store`


def changelog(table: str) -> str:
    return f"wallet-{table}-changelog"


def partition_of(player: str, partitions: int) -> int:
    """A player's partition of the commands topic, and of every topic keyed by player
    (the same partitioner over the same partition count)."""
    return int(player[1:]) % partitions


class Killed(BaseException):
    """kill -9 at a cut point (a BaseException: the agent's `except Exception` must not
    catch it, as it cannot catch a SIGKILL)."""


class Table(MutableMapping[str, Any]):
    """One Faust table of a worker: a store per partition on the worker's disk, written to
    the partition of the event being processed and sent to its changelog."""

    def __init__(self, worker: Worker, name: str) -> None:
        self.worker = worker
        self.name = name
        self.topic = changelog(name)

    def _data(self) -> dict[str, Any]:
        return self.worker.slot(self.name, self.worker.current)["data"]

    def __getitem__(self, key: str) -> Any:
        return self._data()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data().get(key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        worker = self.worker
        partition = worker.current
        self._data()[key] = value
        offset = worker.kafka.append(self.topic, partition, key, value, worker.name)
        worker.sent.append((self.name, partition, offset))
        worker.cut(f"{self.name}[{key}] written")

    def __delitem__(self, key: str) -> None:
        raise NotImplementedError("the wallet never deletes a key")

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())


class Worker:
    def __init__(self, sim: Sim, name: str) -> None:
        self.sim = sim
        self.kafka = sim.kafka
        self.name = name
        self.alive = True
        self.incarnation = 0  # one more at every kill: the reply futures die with it
        self.current = 0  # the partition of the event being processed
        self.position: dict[int, int] = {}  # per owned partition: next offset to read
        self.acked: dict[int, list[int]] = {}  # per owned partition: acked, not committed
        self.sent: list[tuple[str, int, int]] = []  # changelog records not acked yet
        self.cuts_left: int | None = None  # a kill armed for the n-th cut point from now
        self.store = Store(**{name.replace("-", "_"): Table(self, name) for name in TABLES})
        self.owner = types.SimpleNamespace(store=self.store)

    def slot(self, table: str, partition: int) -> dict[str, Any]:
        """The worker's RocksDB for one table partition: data and the changelog offset
        it reflects."""
        disk = self.kafka.disk(self.name)
        found = disk.get((table, partition))
        if found is None:
            found = disk[(table, partition)] = {"data": {}, "offset": -1}
        return found

    def cut(self, where: str) -> None:
        if self.cuts_left is not None:
            self.cuts_left -= 1
            if self.cuts_left <= 0:
                raise Killed(where)

    # assignment

    def recover(self, partition: int) -> None:
        """Faust's table recovery, then resume at the group's committed offset."""
        for table in TABLES:
            slot = self.slot(table, partition)
            topic = changelog(table)
            data = slot["data"]
            for key, value in self.kafka.latest(topic, partition, slot["offset"] + 1).items():
                if value is None:
                    data.pop(key, None)
                else:
                    data[key] = value
            slot["offset"] = self.kafka.end(topic, partition) - 1
        self.position[partition] = self.kafka.committed_offset(GROUP, COMMANDS, partition) or 0
        self.acked[partition] = []

    def revoke(self, partition: int, drop: bool) -> int | None:
        """The partition moves away. `drop`: the stream had fetched the next record in the
        old generation; Faust skips it and acks it all the same (`Stream._py_aiter`), and
        the commit on revocation moves past it. Returns the dropped offset."""
        dropped = None
        if drop and self.alive:
            offset = self.position[partition]
            if offset < self.kafka.end(COMMANDS, partition):
                dropped = offset
                self._ack_events(partition, [offset])
        if self.alive:
            self.kafka.commit_acked(GROUP, COMMANDS, partition, self.acked[partition])
        self.position.pop(partition, None)
        self.acked.pop(partition, None)
        return dropped

    def _ack_events(self, partition: int, offsets: list[int]) -> None:
        committed = self.kafka.committed_offset(GROUP, COMMANDS, partition)
        acked = self.acked[partition]
        acked.extend(o for o in offsets if committed is None or o >= committed)
        self.position[partition] = max(self.position[partition], offsets[-1] + 1)

    # a batch

    def process(self, partition: int, most: int) -> int:
        """One batch of at most `most` commands of `partition`: applied, flushed, acked,
        committed. Returns how many were read. Raises Killed at an armed cut point."""
        start = self.position[partition]
        events = self.kafka.read(COMMANDS, partition, start, start + most)
        if not events:
            return 0
        records: list[tuple[str, str, Any]] = []
        done: list[tuple[Envelope, CommandResult]] = []
        per_player: Counter[str] = Counter()
        for _offset, _key, env in events:
            player = env.command.player_id
            if per_player[player] >= RECENT_TXS:  # Pending.full_for
                self.flush(records, done)
                records, done, per_player = [], [], Counter()
            self.current = partition  # processing(event)
            try:
                outcome = apply_command(self.owner, env, NOW)
            except Exception as error:  # the agent's: dead-lettered, answered 500
                self.sim.trace.append(f"    {self.name}: {env.command.type} of {player} "
                                      f"failed: {error!r}")
                outcome = CommandResult(Answer.error(500, "command_failed", repr(error)))
            if outcome.breach:
                self.sim.breaches.append((outcome.breach, env))
            records.extend(outcome.publish)
            done.append((env, outcome))
            per_player[player] += 1
            self.cut(f"{env.command.type} of {player} applied")
        self.flush(records, done)
        self._ack_events(partition, [offset for offset, _, _ in events])
        self.cut("batch acked, not committed")
        self.kafka.commit_acked(GROUP, COMMANDS, partition, self.acked[partition])
        self.cut("batch committed")
        return len(events)

    def flush(self, records: list[tuple[str, str, Any]],
              done: list[tuple[Envelope, CommandResult]]) -> None:
        """CommandBatches.flush: publish_all, flush_all, then answer."""
        partitions = self.sim.partitions
        for topic, key, model in records:
            partition = partition_of(key, partitions) if topic == TRANSACTIONS else 0
            self.kafka.append(topic, partition, key, model, self.name)
        self.cut("outputs sent")
        self.kafka.ack(self.name, OUTPUTS)
        self.cut("outputs acked, changelogs not")
        self.kafka.ack(self.name)
        for table, partition, offset in self.sent:  # _on_changelog_sent
            slot = self.slot(table, partition)
            slot["offset"] = max(slot["offset"], offset)
        self.sent = []
        self.cut("changelogs acked, answers not sent")
        for env, outcome in done:
            if env.reply_id is not None:
                self.sim.world.answered(self, env.reply_id, outcome.answer)


class World:
    """The players and bet-settlement, as the wallet sees them: commands on its topic."""

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.requests: dict[str, Envelope] = {}  # request key -> its command (no reply id)
        # reply id -> request key, and the worker (and its incarnation) holding the request
        self.reply_of: dict[str, tuple[str, str, int]] = {}
        self.answers: dict[str, list[Answer]] = {}  # request key -> answers, in order
        self.replies = 0
        self.placed: dict[str, tuple[str, int]] = {}  # funded bets: bet id -> player, stake
        self.read_placed = 0  # bets.placed read so far
        self.endings: dict[str, list[Envelope]] = {}  # bet id -> ending commands sent
        self.decided: dict[str, tuple[str, int]] = {}  # bet id -> (ending, returned)

    def send(self, env: Envelope) -> None:
        kafka = self.sim.kafka
        player = env.command.player_id
        kafka.append(COMMANDS, partition_of(player, self.sim.partitions), player, env,
                     "world")
        kafka.ack("world")

    def request(self, key: str, command: Any) -> bool:
        """A player's HTTP request (or its retry: same key, same command, new reply id),
        forwarded to the worker owning the player's partition, which sends the command and
        waits for its agent to answer. No live owner: 503, nothing sent (False)."""
        env = self.requests.get(key)
        if env is None:
            env = self.requests[key] = Envelope(command=command)
        worker = self.sim.workers[self.sim.owner[partition_of(command.player_id,
                                                              self.sim.partitions)]]
        if not worker.alive:
            return False
        self.replies += 1
        reply_id = f"r{self.replies}"
        self.reply_of[reply_id] = (key, worker.name, worker.incarnation)
        self.send(env.model_copy(update={"reply_id": reply_id}))
        return True

    def answered(self, worker: Worker, reply_id: str, answer: Answer) -> None:
        """The agent resolves a reply future: only the process holding it can."""
        key, holder, incarnation = self.reply_of[reply_id]
        if (holder, incarnation) == (worker.name, worker.incarnation):
            self.answers.setdefault(key, []).append(answer)

    def create(self, player: str) -> bool:
        return self.request(f"create:{player}", CreateAccount(player_id=player, currency="IDR"))

    def deposit(self, player: str, request_id: str, amount: int) -> bool:
        return self.request(f"deposit:{player}:{request_id}",
                            Deposit(player_id=player, request_id=request_id, amount=amount))

    def bet(self, player: str, bet_id: str, stake: int) -> bool:
        return self.request(f"bet:{player}:{bet_id}",
                            PlaceBet(player_id=player, bet_id=bet_id, table_id=TABLE_ID,
                                     round_id=round_of(bet_id), bet="player", stake=stake))

    def read_bets(self) -> None:
        """bet-settlement reads the funded bets on `bets.placed`."""
        kafka = self.sim.kafka
        for _offset, _key, placed in kafka.read(PLACED, 0, self.read_placed):
            self.placed.setdefault(placed.bet_id, (placed.player_id, placed.stake))
        self.read_placed = kafka.end(PLACED, 0)

    def open_bets(self) -> list[str]:
        self.read_bets()
        return [b for b in self.placed if b not in self.decided]

    def end(self, bet_id: str, ending: str, returned: int) -> None:
        """bet-settlement's decision on a funded bet (once), as the forwarder's command."""
        player, _stake = self.placed[bet_id]
        self.decided[bet_id] = (ending, returned)
        self._ending(bet_id, EndBet(player_id=player, bet_id=bet_id, ending=ending,
                                    returned=returned, settlement_id=f"settle:{bet_id}",
                                    table_id=TABLE_ID, round_id=round_of(bet_id)))

    def annul(self, bet_id: str) -> None:
        """A management void after settlement: the payout reversed, then the stake
        refunded."""
        player, stake = self.placed[bet_id]
        _ending, returned = self.decided[bet_id]
        self.decided[bet_id] = ("annulled", returned)
        self._ending(bet_id, ReverseSettlement(
            player_id=player, bet_id=bet_id, reversal_id=f"reverse:settle:{bet_id}",
            settlement_id=f"settle:{bet_id}", amount=returned, table_id=TABLE_ID,
            round_id=round_of(bet_id)))
        self._ending(bet_id, EndBet(player_id=player, bet_id=bet_id, ending="voided",
                                    returned=stake, table_id=TABLE_ID,
                                    round_id=round_of(bet_id)))

    def _ending(self, bet_id: str, command: EndBet | ReverseSettlement) -> None:
        env = Envelope(command=command)
        self.endings.setdefault(bet_id, []).append(env)
        self.send(env)

    def redeliver(self, bet_id: str) -> None:
        """bet-settlement re-publishes a bet's endings (its cause was read again)."""
        for env in self.endings.get(bet_id, []):
            self.send(env)

    def unanswered(self) -> list[str]:
        return [key for key in self.requests if key not in self.answers]


def round_of(bet_id: str) -> str:
    """Four bets a round (`b0`..`b3` in R0): a round re-published is four bets' endings."""
    return f"R{int(bet_id[1:]) // 4}"


class Sim:
    """The cluster: the Kafka model, the wallet's workers and partitions, the world."""

    def __init__(self, kafka: Kafka, workers: int = 2, partitions: int = 2) -> None:
        self.kafka = kafka
        self.partitions = partitions
        self.trace: list[str] = []
        self.breaches: list[tuple[str, Envelope]] = []
        kafka.create(COMMANDS, partitions)
        kafka.create(TRANSACTIONS, partitions)
        kafka.create(PLACED, 1)
        for table in TABLES:
            kafka.create(changelog(table), partitions, compacted=True)
        self.workers = {f"w{i}": Worker(self, f"w{i}") for i in range(workers)}
        self.owner: dict[int, str] = {}  # partition -> worker (maybe dead)
        names = sorted(self.workers)
        for partition in range(partitions):
            self.assign(partition, names[partition % len(names)])
        self.world = World(self)

    def assign(self, partition: int, worker: str, drop: bool = False) -> int | None:
        """The partition moves to `worker` (a rebalance): the old owner, if alive,
        commits and lets go; the new one recovers it."""
        dropped = None
        old = self.owner.get(partition)  # None: the first assignment
        if old is not None:
            dropped = self.workers[old].revoke(partition, drop)
        self.owner[partition] = worker
        if self.workers[worker].alive:
            self.workers[worker].recover(partition)
        return dropped

    def owned(self, worker: str) -> list[int]:
        return [p for p, w in sorted(self.owner.items()) if w == worker]

    def process(self, worker: str, partition: int, most: int, kill_at: int | None,
                keep: dict[str, int] | None = None) -> str:
        """The worker applies one batch; a kill armed at its `kill_at`-th cut point loses
        a random part of what it had not heard acknowledged (or what `keep` says)."""
        w = self.workers[worker]
        w.cuts_left = kill_at
        try:
            n = w.process(partition, most)
        except Killed as where:
            lost = [f"{t}/{p} lost {n} of {k + n}"
                    for t, p, k, n in self.kafka.kill(worker, keep) if n]
            w.alive = False
            w.incarnation += 1  # the HTTP requests it was holding are gone with it
            w.cuts_left = None
            w.sent = []
            w.position.clear()
            w.acked.clear()
            return f"killed at cut {kill_at} ({where}); " + ("; ".join(lost) or "nothing lost")
        finally:
            w.cuts_left = None
        return f"{n} command(s)"

    def restart(self, worker: str, wipe: bool) -> None:
        w = self.workers[worker]
        if wipe:
            self.kafka.wipe(worker)
        w.alive = True
        for partition in self.owned(worker):
            w.recover(partition)

    def drain(self, wipe: bool = False) -> None:
        """No more faults: every worker back (on its own store, or `wipe`d), every record
        applied, every bet decided and every unanswered request retried, until nothing is
        left to do."""
        for name, w in self.workers.items():
            if not w.alive:
                disk = "an empty disk" if wipe else "its own store"
                self.trace.append(f"drain: {name} restarts on {disk}")
                self.restart(name, wipe)
        for _ in range(50):
            for partition, owner in sorted(self.owner.items()):
                while self.workers[owner].process(partition, 1000):  # no kill armed
                    pass
            world = self.world
            todo = world.unanswered()
            for key in todo:
                self.trace.append(f"drain: retry of {key}")
                world.request(key, world.requests[key].command)
            bets = world.open_bets()
            for bet_id in bets:
                self.trace.append(f"drain: settlement: {bet_id} settled, returns 0")
                world.end(bet_id, "settled", 0)
            if not todo and not bets:
                return
        raise RuntimeError("the drain does not settle")
