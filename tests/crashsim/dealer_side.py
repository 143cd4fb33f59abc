"""The dealer's side of a schedule (`Sim` mixes it in, tests/crashsim/pipeline.py): the
model's devices send signed inputs to dealer.inputs and wait on the owner's door (and send
again when a rebalance its owner was told of answers them `moved`), the timer's ticks go
there as `app.betting_timer` puts them, garbage and wrongly keyed records are written, and
every valid entry of dealer.log is judged against the model's rules (`world.TableModel`)
as it lands."""

from __future__ import annotations

from typing import Any

from services.dealer_event.dealer_fold import tables_of
from services.dealer_event.decisions import LOST_RACE, MOVED
from services.infra.kernel import revoker
from services.infra.own_log import entries_of
from shared.events.dealer_log import DealerEntry
from shared.events.inputs import InputBase
from shared.topics import (
    BETS_PLACED_TOPIC,
    DEALER_INPUTS_TOPIC,
    DEALER_LOG_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.crashsim.stages import COMMANDS, DEALER, PARTITIONS, TOLD_P, partition_of
from tests.crashsim.world import Decision, Table, describe


class DealerSide:
    """`Sim`'s dealer steps (the attributes they use are `Sim`'s; it has no state of its
    own)."""

    def dealer_step(self) -> None:
        """A table's dealer sends its next inputs (or, an input still in flight, sends it
        again: the device's resend while the first attempt is in flight)."""
        table = self.rng.choice(self.tables)
        self.dealer_sync()
        if table.pending and self.rng.random() < 0.2:
            again = table.resend()
            if again is not None:
                self.faults.add("dealer resend in flight")
                self.send_input(table, again, " (resent in flight)")
            return
        for inp in table.step(self.now(), annul_p=self.config.annul_p):
            self.send_input(table, inp)

    def send_input(self, table: Table, inp: InputBase, why: str = "") -> None:
        """A signed input on dealer.inputs, its device waiting on the owner's HTTP door
        (`Decisions.expect`, as views' door does before it forwards the input)."""
        p, o = self.outside(DEALER_INPUTS_TOPIC, table.table_id.encode(),
                            inp.model_dump_json().encode())
        self.dealer_records[(p, o)] = (table.table_id, inp)
        table.pending.append((p, o, inp))
        owner = self.owners.get(DEALER.name)
        if owner is not None and owner.alive and owner.decisions is not None:
            waiter = [owner.decisions.expect(inp.input_id, p, inp.signature), inp,
                      owner.name, None]
            self.waiters.append(waiter)
            self.waiting.append(waiter)
        self.note(f"dealer {describe(inp)}{why} -> {DEALER_INPUTS_TOPIC}[{p}]@{o}")

    def dealer_answered(self, worker: str, event: Any, as_its_own: bool) -> None:
        """A dealer-event worker answered a record (`as_its_own`: as decided by its own
        entries, which the log backs): each waiter told now is stamped with the end of the
        record's partition of dealer.log (what the log held then), and so is the claim."""
        m = event.message
        end = self.kafka.end(DEALER_LOG_TOPIC, m.partition)
        if as_its_own:
            self.dealer_backed.append((m.partition, m.offset, worker, end))
        if not any(w[0].done() for w in self.waiting):
            return
        for waiter in self.waiting:
            if waiter[0].done():
                waiter[3] = end
        self.waiting = [w for w in self.waiting if not w[0].done()]

    def told_moved(self, worker: Any) -> list[list[Any]] | None:
        """A rebalance takes every partition from `worker`: dealer-event's owner, alive, is
        told half the time (`TOLD_P`; None: it is not, and goes on as a zombie). Told, it
        does what the consume loop's hook does (`kernel.revoker`: its own log lets the
        partitions go, then `Decisions.moved`, as app.py wires `run_own_log(...,
        revoked=decisions.moved)`) and its consumer reads nothing more; a batch it has in
        flight (a rebalance mid-batch) goes on. The waiters it held, which the model knows
        (not from the code), must all be answered now: each is stamped with its dealer.log
        partition's end (`answers` judges what it was told against the log then), and one
        left waiting is a problem. Returns them."""
        if worker.revoked is None or not worker.alive or self.rng.random() >= TOLD_P:
            return None
        held = [w for w in self.waiting if w[2] == worker.name]
        worker.consumer.position, worker.consumer.stale = {}, {}
        revoker(worker.own, worker.revoked)(set(range(PARTITIONS)))
        for waiter in held:
            if waiter[0].done():
                waiter[3] = self.kafka.end(DEALER_LOG_TOPIC,
                                           partition_of(waiter[1].table_id.encode()))
            else:
                self.dealer_left_waiting.append(f"{describe(waiter[1])} of {worker.name}")
        self.waiting = [w for w in self.waiting if not w[0].done()]
        return held

    def resend_moved(self, old: Any, new: Any, held: list[list[Any]]) -> None:
        """Each device `old` told to resend (`moved`, or `lost_race`) sends its input again,
        to the new owner's door: the new owner decides the record once (a duplicate of the
        first record, which is decided before it)."""
        self.fault("told it moved", f"dealer-event: partitions move to {new.name}; "
                                    f"{old.name} is told, and answers its {len(held)} "
                                    "waiter(s)")
        for future, inp, _, _ in held:
            if future.done() and future.result().get("status") in (MOVED, LOST_RACE):
                self.send_input(self.by_table[inp.table_id], inp, " (resent: moved)")

    def timer_step(self) -> None:
        """dealer-event's betting timer (app.betting_timer) on its owner or a zombie: a
        `TimerTick` on dealer.inputs for each table of its owned partitions with something
        due, as its own fold has them."""
        zombies = [z for z in self.zombies[DEALER.name] if z.alive]
        worker = self.rng.choice(zombies) if zombies and self.rng.random() < 0.3 \
            else self.owners[DEALER.name]
        if not worker.alive or worker.decisions is None:
            return
        for partition in sorted(worker.own.owned):
            state = worker.own.state(partition)
            if state is None:
                continue
            for asked in worker.decisions.due_ticks(tables_of(state.kv).values()):
                p, o = self.outside(DEALER_INPUTS_TOPIC, asked.table_id.encode(),
                                    asked.model_dump_json().encode())
                self.dealer_records[(p, o)] = (asked.table_id, None)
                self.fault("timer tick", f"{worker.name} timer: a tick of {asked.table_id} "
                                         f"-> {DEALER_INPUTS_TOPIC}[{p}]@{o}")

    def dealer_sync(self) -> None:
        """dealer.log's valid entries read so far (the chain by ids, as every fold reads
        it), each judged: the record it decided, by the model's rules at its time."""
        for p in range(PARTITIONS):
            for o, _, value in self.kafka.read(DEALER_LOG_TOPIC, p, self.dealer_read[p]):
                entries = self.dealer_parsed[(p, o)] = entries_of(
                    value, DealerEntry.model_validate_json)
                for entry in entries:  # a pack's, in order
                    if entry.prev != self.dealer_head[p]:
                        continue
                    self.dealer_head[p] = entry.entry_id
                    self.dealer_valid.append((p, o, entry))
                    self._judge(p, o, entry)
            self.dealer_read[p] = self.kafka.end(DEALER_LOG_TOPIC, p)

    def _judge(self, p: int, o: int, entry: DealerEntry) -> None:
        source = entry.source
        where = (source.partition, source.offset)
        if source.topic != DEALER_INPUTS_TOPIC:
            self.dealer_strays.append(f"{DEALER_LOG_TOPIC}[{p}]@{o} names {source}")
            return
        self.dealer_decided[where] += 1
        if self.dealer_decided[where] > 1:
            return  # decided twice: the invariant says so
        decided = (tuple(e.type for e in entry.events),
                   None if entry.rejection is None else entry.rejection.reason_code)
        if where in self.dealer_garbage:
            self.dealer_garbage_decisions.append(Decision(
                f"garbage {DEALER_INPUTS_TOPIC}[{where[0]}]@{where[1]}",
                ((), "malformed_input"), decided))
            return
        record = self.dealer_records.get(where)
        if where in self.dealer_misplaced and record is not None:
            self.dealer_garbage_decisions.append(Decision(
                f"{describe(record[1])} on the wrong partition {where[0]}",
                ((), "wrong_partition"), decided))
            return
        if record is None:
            self.dealer_strays.append(f"{DEALER_LOG_TOPIC}[{p}]@{o} decided "
                                      f"{DEALER_INPUTS_TOPIC}[{where[0]}]@{where[1]}, which "
                                      "nobody sent")
            return
        table_id, inp = record
        if entry.table_id != table_id:
            self.dealer_strays.append(f"{DEALER_LOG_TOPIC}[{p}]@{o} decided {table_id}'s "
                                      f"record as {entry.table_id}'s")
        self.by_table[table_id].judge(where, inp, entry.recorded_at, decided)

    def garbage_step(self) -> None:
        """A record nobody can apply: unparseable, or a table event keyed to the wrong
        partition (its table's chain is on the other one)."""
        rng = self.rng
        kind = rng.choice([TABLE_EVENTS_TOPIC, COMMANDS, BETS_PLACED_TOPIC,
                           DEALER_INPUTS_TOPIC])
        p = rng.randrange(PARTITIONS)
        sent = [(t, i) for t in self.tables for i in t.sent]
        if kind == DEALER_INPUTS_TOPIC and sent and rng.random() < 0.4:
            table, inp = rng.choice(sent)  # a genuine input, keyed to the wrong partition
            p = 1 - partition_of(table.table_id.encode())
            p, o = self.outside(kind, b"??", inp.model_dump_json().encode(), partition=p)
            self.dealer_records[(p, o)] = (table.table_id, inp)
            self.dealer_misplaced.add((p, o))
            self.fault("wrongly keyed", f"{describe(inp)} keyed to the wrong partition -> "
                                        f"{kind}[{p}]@{o}")
            return
        if kind == DEALER_INPUTS_TOPIC:  # refused by name (malformed_input), not dead-lettered
            value = rng.choice([b"{not json", b"", b'{"type": "nothing"}', b"\xff\xfe",
                                b'{"command": "scan_card", "table_id": "T1"}',
                                b'{"type": "timer_tick", "table_id": ""}'])
            p, o = self.outside(kind, b"??", value, partition=p)
            self.dealer_garbage.add((p, o))
            self.fault("garbage", f"garbage {value[:20]!r} -> {kind}[{p}]@{o}")
            return
        if kind == TABLE_EVENTS_TOPIC and rng.random() < 0.5 and self.tables[0].seq:
            table = rng.choice(self.tables)
            value = b'{"type": "card_dealt", "table_id": "' + table.table_id.encode() + b'"}'
        else:
            value = rng.choice([b"{not json", b"", b'{"type": "nothing"}', b"\xff\xfe"])
        p, o = self.outside(kind, b"??", value, partition=p)
        self.garbage.append((kind, p, o))
        self.fault("garbage", f"garbage {value[:20]!r} -> {kind}[{p}]@{o}")
