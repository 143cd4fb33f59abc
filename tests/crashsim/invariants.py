"""The invariants of a drained schedule, each judged from the simulation's own model of
what was sent (clients' requests, the dealer's cards, the operator's books) against the
topics, never from a service's resume offset, status or metrics:

- `balance`: every valid ledger entry chains (seq, balance after) and each account's
  balance is the sum of its movements (the chain walked again here, not by `fold_entry`);
- `once`: each movement applied once; each funded bet debited once, with the stake its
  client sent, and ended exactly once (one refund, or one payout, or an annulment's
  payout, reversal and refund);
- `credits`: what each funded bet got back is what the cards say (the oracle in `world`):
  a rejected, voided or annulled bet its stake, an accepted bet its return by the rules;
  in seamless mode the operator's books too;
- `decided`: every client request decided (a 2xx, or a refusal by name), none lost; every
  garbage record dead-lettered by every service that reads it; every bet-settlement
  decision made once;
- `answers`: every answer a client got is what the log says (a success is the ledger's
  movement, with its balance, already in the log when it was given; a refusal was not
  contradicted by an earlier movement);
- `breach`: every breach a service raised;
- `rebuild`: a fresh fold of each own log equals the drained worker's live state;
- `result`: each completed round's result is what its cards say; no result for a void;
- `funds`: every withdrawal and stake debit was covered by the balance before it (the
  ledger's movements summed here; a payout reversal alone may overdraw; transfer mode);
- `late`: no bet placed after its round's close (by the dealer's events and the bet's
  `placed_at`, in the order bet-settlement's log read them) is accepted, and none placed in
  time is rejected as late;
- `dealer`: every record on dealer.inputs decided once by a valid dealer.log entry (none
  lost), as the model's own rules say at the decision's time (accepted with the events it
  expects, or refused by name); table.events is, per table, one continuous authenticated
  chain, the valid log's events, with the cards the dealer dealt; dealer.rejections is the
  valid log's refusals, table.corrections its `round_corrected` events;
- `answers` (dealer): every answer a device's HTTP waiter got is what dealer.log says.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from services.dealer_event.decisions import LOST_RACE, MOVED
from services.infra.own_log import PartitionState, entries_of, fold_entry
from services.infra.packs import records_of
from services.wallet.commands import CreateAccount, Deposit, PlaceBet, Withdraw
from shared.events.bet_events import BetPlaced
from shared.events.canonical import GENESIS_HASH
from shared.events.dead_letters import DeadLetter
from shared.events.dealer_log import DealerEntry
from shared.events.results import RoundResultPublished
from shared.events.table import event_auth
from shared.events.wallet_events import WalletTransaction
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    DEAD_LETTERS_TOPIC,
    DEALER_INPUTS_TOPIC,
    DEALER_LOG_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    SETTLEMENT_LOG_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.crashsim.pipeline import Sim
from tests.crashsim.stages import COMMANDS, PARTITIONS, STAGES
from tests.crashsim.world import NOT_ITS_FACT, TABLE_KEY, baccarat, describe, returned

Problems = list[str]

# the debits a balance must cover when they are taken (RULES §1 and §5: a stake "covered by
# the player's balance when the bet is placed"; a withdrawal likewise); a payout reversal is
# taken in full whatever the player did with the payout since (acceptance.md), and in
# seamless mode the operator's wallet holds the balance that pays a stake
COVERED = ("withdrawal", "stake_debit")


def values(sim: Sim, topic: str) -> list[tuple[int, int, bytes]]:
    return [(p, o, v) for p in range(PARTITIONS) for o, _, v in sim.kafka.read(topic, p)]


def valid_entries(sim: Sim, topic: str, parse: Any) -> list[tuple[int, int, Any]]:
    """(partition, offset, entry) of each own log's valid entries that took effect: the
    chain by ids; of a record's parts, a run from part 0 to the last (a crash's cut dropped)."""
    out = []
    for p in range(PARTITIONS):
        head, held = "", []
        for o, _, v in sim.kafka.read(topic, p):
            for entry in entries_of(v, parse):  # a pack's entries, in order
                if entry.prev == head:
                    head, s = entry.entry_id, entry.source
                    if s.part == 0 or held and held[0][2].source.topic != s.topic or \
                            held and held[0][2].source.offset != s.offset:
                        held = []
                    if s.part == len(held):
                        held.append((p, o, entry))
                    if s.last and held and held[-1][2] is entry:
                        out.extend(held)
                        held = []
    return out


class Ledger:
    """The wallet's valid ledger, read independently of the wallet's fold."""

    def __init__(self, sim: Sim, problems: Problems) -> None:
        self.entries = valid_entries(sim, WALLET_LEDGER_TOPIC, LedgerEntry.model_validate_json)
        self.txs: dict[str, tuple[WalletTransaction, LedgerEntry]] = {}
        self.offset: dict[str, int] = {}  # tx id -> its valid entry's offset
        self.accounts: dict[str, Any] = {}
        balances: dict[str, int] = defaultdict(int)
        seqs: dict[str, int] = defaultdict(int)
        for _, offset, entry in self.entries:
            player = entry.account.player_id
            self.accounts[player] = entry.account
            if entry.tx is not None:
                tx = entry.tx
                if tx.tx_id in self.txs:
                    problems.append(f"once: {player}: {tx.tx_id} applied twice")
                self.txs[tx.tx_id] = (tx, entry)
                self.offset.setdefault(tx.tx_id, offset)
                if tx.kind in COVERED and not sim.seamless and tx.amount > balances[player]:
                    problems.append(f"funds: {player}: {tx.tx_id} took {tx.amount} from a "
                                    f"balance of {balances[player]}")
                balances[player] += tx.signed_amount
                seqs[player] += 1
                if tx.balance_after != balances[player] or entry.account.tx_count != seqs[player]:
                    problems.append(f"balance: {player}: {tx.tx_id} balance after "
                                    f"{tx.balance_after} seq {entry.account.tx_count}, the "
                                    f"chain says {balances[player]} seq {seqs[player]}")
            if entry.account.balance != balances[player]:
                problems.append(f"balance: {player}: balance {entry.account.balance} is not "
                                f"the sum of its ledger {balances[player]}")

    def of_bet(self, bet_id: str) -> list[WalletTransaction]:
        return [tx for tx, entry in self.txs.values() if entry.bet_id == bet_id
                or (tx.kind == "stake_debit" and tx.cause_id == bet_id)]


def check(sim: Sim) -> Problems:
    problems: Problems = [f"breach: {b}" for b in sim.breaches]
    if sim.undrained:
        problems.append("decided: the drain never settled (something is decided again and "
                        "again, or never)")
    problems += [f"decided: {what}: undecided while its owner idled, positioned on it"
                 for what in sim.idle_undecided]
    ledger = Ledger(sim, problems)
    check_answers(sim, ledger, problems)
    check_bets(sim, ledger, problems)
    check_outputs(sim, ledger, problems)
    check_results(sim, problems)
    check_late(sim, problems)
    check_dead_letters(sim, problems)
    check_rebuild(sim, problems)
    check_dealer(sim, problems)
    return problems


def check_dealer(sim: Sim, problems: Problems) -> None:
    """dealer-event, judged from the dealer model and the topics:

    - each record the dealers (or its timer, or garbage) put on dealer.inputs is decided
      once by a valid dealer.log entry (a tick that found nothing due writes none), none
      lost, none decided twice, and every valid entry decides a record someone sent;
    - each decision is what the model's own rules say at the decision's time (`world.
      TableModel`): the event types it expects, or the refusal by name;
    - every answer a device's HTTP waiter got is what the log says: "accepted" with the
      events of a valid entry of that input, "refused" with the code of one; never
      "accepted" for an input whose events are not in the log, nor "refused" for one the
      log applied (but by a refusal that says nothing of the input's fact: a duplicate, a
      record out of its time window, which the device sends again);
    - every table's chain on table.events (what the readers see) is one event per seq,
      from 1 with no gap, each chained to the one before and authenticated, and it is the
      chain of the model's decisions: the events of the valid entries, in order, with the
      cards the dealer dealt; dealer.rejections holds the valid entries' refusals, and
      nothing else."""
    sim.dealer_sync()
    problems += [f"dealer: {stray}" for stray in sim.dealer_strays]
    for where, (table_id, inp) in sim.dealer_records.items():
        n = sim.dealer_decided[where]
        if n > 1 or (n == 0 and inp is not None):
            problems.append(f"dealer: {table_id} {describe(inp)} ({DEALER_INPUTS_TOPIC}"
                            f"[{where[0]}]@{where[1]}): decided {n} times in the valid log")
    for where in sim.dealer_garbage:
        if sim.dealer_decided[where] != 1:
            problems.append(f"dealer: garbage {DEALER_INPUTS_TOPIC}[{where[0]}]@{where[1]}: "
                            f"decided {sim.dealer_decided[where]} times, not refused once")
    judged = [(t.table_id + " ", d) for t in sim.tables for d in t.decisions]
    for table in sim.tables:
        problems += [f"dealer: {table.table_id} {what}: unmodelled (a state the model "
                     "never drives a table into)" for what in table.unmodelled]
    for table_id, decision in (*judged, *(("", d) for d in sim.dealer_garbage_decisions)):
        if not decision.as_the_rules_say:
            problems.append(f"dealer: {table_id}{decision.what}: the rules say "
                            f"{_verdict(decision.expected)}, the log decided "
                            f"{_verdict(decision.decided)}")
    problems += [f"answers: dealer {what}: told its partitions moved, it left the waiter "
                 "waiting" for what in sim.dealer_left_waiting]
    check_dealer_answers(sim, problems)
    check_table_chains(sim, problems)


def check_dealer_answers(sim: Sim, problems: Problems) -> None:
    """What each device's waiter was told, against the valid entries of its input that the
    log held when it was told."""
    offset_of: dict[int, int] = {}
    deciding = {(e.source.partition, e.source.offset): (o, e.entry_id)
                for _, o, e in sim.dealer_valid}
    for p, o, worker, end in sim.dealer_backed:
        at, entry_id = deciding.get((p, o), (None, ""))
        if at is None or at >= end or not entry_id.startswith(f"{worker}:"):
            problems.append(f"answers: dealer {DEALER_INPUTS_TOPIC}[{p}]@{o}: {worker} answered "
                            "it as decided by its own entry, but the log's decision of it is "
                            + ("none yet" if at is None or at >= end else entry_id))
    by_input: dict[str, list[DealerEntry]] = defaultdict(list)
    for _, o, entry in sim.dealer_valid:
        record = sim.dealer_records.get((entry.source.partition, entry.source.offset))
        if record is not None and record[1] is not None:
            by_input[record[1].input_id].append(entry)
            offset_of[id(entry)] = o
    for future, inp, worker, end in sim.waiters:
        if not future.done():
            continue  # never answered: the door times out, the device resends
        report = future.result()
        status = report.get("status")
        # what the log held when the device was told (a worker answers only what it backs)
        every = by_input.get(inp.input_id, [])
        entries = [e for e in every if end is None or offset_of[id(e)] < end]
        said = f"answers: dealer {inp.table_id} {describe(inp)}: {worker} told {status}"
        if status == "accepted":
            told = [(e["seq"], e["type"], e["event_id"]) for e in report.get("events", [])]
            if not any(e.rejection is None and told == [(x.seq, x.type, x.event_id)
                                                       for x in e.events] for e in entries):
                problems.append(f"{said} {told}, not the events of a valid entry of it "
                                f"the log held then ({[[x.seq for x in e.events] for e in entries]})")
        elif status == "refused":
            code = report.get("reason_code")
            if not any(e.rejection is not None and e.rejection.reason_code == code
                       and e.rejection.rejection_id == report.get("rejection_id")
                       for e in entries):
                problems.append(f"{said} {code}, not the refusal of a valid entry of it "
                                "the log held then")
            if code not in NOT_ITS_FACT and any(e.rejection is None for e in every):
                problems.append(f"{said} {code}, but the log applied it")
        elif status not in (LOST_RACE, MOVED):
            problems.append(f"{said}: no status a device knows ({report})")


def check_table_chains(sim: Sim, problems: Problems) -> None:
    """table.events and dealer.rejections against the valid dealer.log and the model."""
    logged: dict[str, list[Any]] = defaultdict(list)  # table -> the valid entries' events
    for _, _, entry in sim.dealer_valid:
        logged[entry.table_id] += entry.events
    refusals = {e.rejection.rejection_id for _, _, e in sim.dealer_valid if e.rejection is not None}
    published = {json.loads(v)["rejection_id"] for _, _, v in values(sim, DEALER_REJECTIONS_TOPIC)}
    if published != refusals:
        problems.append(f"dealer: dealer.rejections holds {len(published - refusals)} "
                        f"refusal(s) of no valid entry and misses {len(refusals - published)}"
                        " of the valid entries'")
    if {json.loads(v)["hash"] for _, _, v in values(sim, TABLE_CORRECTIONS_TOPIC)} != {
            e.hash for events in logged.values() for e in events if e.type == "round_corrected"}:
        problems.append("dealer: table.corrections is not the valid entries' round_corrected events")
    seen: dict[str, dict[int, set[bytes]]] = defaultdict(lambda: defaultdict(set))
    events: dict[str, dict[int, Any]] = defaultdict(dict)
    for (p, o), event in table_events(sim).items():
        if event is not None:
            seen[event.table_id][event.seq].add(sim.kafka.logs[TABLE_EVENTS_TOPIC][p][o][1])
            events[event.table_id][event.seq] = event
    for table in sim.tables:
        tid = table.table_id
        chain, head = events.get(tid, {}), GENESIS_HASH
        for seq, versions in sorted(seen.get(tid, {}).items()):
            if len(versions) > 1:
                problems.append(f"dealer: {tid} seq {seq}: {len(versions)} different events "
                                "on table.events")
        for seq in range(1, len(chain) + 1):
            event = chain.get(seq)
            if event is None:
                problems.append(f"dealer: {tid}: table.events has no seq {seq} (it holds "
                                f"{sorted(chain)})")
                break
            # (each event's hash is the valid log's, checked below)
            if event.prev_hash != head or event.auth != event_auth(TABLE_KEY, event.hash):
                problems.append(f"dealer: {tid} seq {seq}: not chained to seq {seq - 1}, or "
                                "not authenticated")
                break
            head = event.hash
        mine = [(e.type, getattr(e, "card", None) if e.type == "card_dealt" else None)
                for _, e in sorted(chain.items())]
        if mine != table.truth.chain:
            first = next((i for i, (a, b) in enumerate(zip(mine, table.truth.chain,
                                                           strict=False)) if a != b),
                         min(len(mine), len(table.truth.chain)))
            problems.append(f"dealer: {tid}: table.events says {mine[first:first + 3]} at "
                            f"seq {first + 1}, the dealer's decisions "
                            f"{table.truth.chain[first:first + 3]}")
        if [e.hash for e in logged.get(tid, [])] != [e.hash for _, e in sorted(chain.items())]:
            problems.append(f"dealer: {tid}: table.events is not the valid dealer.log's events")


class TableEventSeen:
    """A table.events record as a reader sees it: its JSON fields as attributes (the times
    as datetimes). Read here with `json`, not with the event's model."""

    FIELDS = ("table_id", "seq", "type", "prev_hash", "hash")

    def __init__(self, record: dict[str, Any]) -> None:
        self.__dict__.update(record)
        for name in ("occurred_at", "betting_closes_at"):
            if isinstance(record.get(name), str):
                setattr(self, name, datetime.fromisoformat(record[name]))

    @classmethod
    def of(cls, value: bytes) -> TableEventSeen | None:
        try:
            record = json.loads(value)
        except ValueError:  # a garbage record
            return None
        if not isinstance(record, dict) or any(f not in record for f in cls.FIELDS):
            return None
        return cls(record)


def table_events(sim: Sim) -> dict[tuple[int, int], TableEventSeen | None]:
    """table.events (partition, offset) -> its event (None: a garbage record), read once."""
    seen: dict[tuple[int, int], TableEventSeen | None] | None = getattr(
        sim, "_table_events", None)
    if seen is None:
        seen = {(p, o): TableEventSeen.of(value)
                for p, o, value in values(sim, TABLE_EVENTS_TOPIC)}
        sim._table_events = seen  # type: ignore[attr-defined]
    return seen


def _verdict(verdict: tuple[tuple[str, ...], str | None]) -> str:
    events, refused = verdict
    said = ", ".join(events) if events else ""
    if refused is None:
        return f"[{said}]"
    return f"[{said}] refused {refused}" if said else f"refused {refused}"


def check_answers(sim: Sim, ledger: Ledger, problems: Problems) -> None:
    """Every request decided, by name; every answer what the log says."""
    for request in sim.requests:
        command = request.command
        what = f"{command.type} {getattr(command, 'bet_id', '')}" \
               f"{getattr(command, 'request_id', '')} of {command.player_id}"
        if not request.decided:
            problems.append(f"decided: {what}: never decided (attempts "
                            f"{[a[2] for a in request.attempts]})")
        offsets = {reply: offset for reply, _, offset in request.attempts}
        for reply, answer, worker, end in request.answers:
            status = answer.status
            if status == 503:
                continue
            said = f"answers: {what}: {worker} answered {status} {_code(answer)}"
            if status >= 500 and not (sim.seamless and status in (502, 504)):
                problems.append(f"{said}: a failure")
            elif status < 300:
                wrong = _success_is_not_log(sim, ledger, command, answer.body)
                if wrong:
                    problems.append(f"{said}, but {wrong}")
                elif ledger.offset.get(_movement_of(command), -1) >= end:
                    problems.append(f"{said} before the log held its movement (a decision "
                                    "the log does not back)")
            elif not sim.seamless or isinstance(command, Deposit | Withdraw):
                earlier = _applied_before(ledger, command, offsets[reply])
                if earlier and not (_code(answer) == "request_id_conflict"
                                    and earlier.amount != getattr(command, "amount", None)):
                    problems.append(f"{said}, but the log applied {earlier.tx_id} before")
            if status >= 400 and not _code(answer):
                problems.append(f"{said}: a refusal without a name")


def _code(answer: Any) -> str:
    error = answer.body.get("error") if isinstance(answer.body, dict) else None
    return error.get("code", "") if isinstance(error, dict) else ""


def _success_is_not_log(sim: Sim, ledger: Ledger, command: Any, body: dict) -> str | None:
    if isinstance(command, CreateAccount):
        return None if command.player_id in ledger.accounts else "no account in the log"
    if isinstance(command, Deposit | Withdraw):
        found = ledger.txs.get(f"{command.type}:{command.request_id}")
        if found is None:
            return "no movement in the log"
        tx = found[0]
        if tx.amount != command.amount or body.get("balance") != tx.balance_after:
            return f"the log has {tx.amount} with balance after {tx.balance_after}"
        return None
    if isinstance(command, PlaceBet):
        found = ledger.txs.get(f"stake_debit:{command.bet_id}")
        if found is None:
            return "never debited in the log"
        tx = found[0]
        if body.get("debit_tx_id") != tx.tx_id or tx.amount != command.stake or (
                not sim.seamless and body.get("balance_after") != tx.balance_after):
            return f"the log's debit is {tx.amount} with balance after {tx.balance_after}"
    return None


def _movement_of(command: Any) -> str | None:
    """The tx id of the movement a request asks for (None: it asks for none)."""
    if isinstance(command, Deposit | Withdraw):
        return f"{command.type}:{command.request_id}"
    if isinstance(command, PlaceBet):
        return f"stake_debit:{command.bet_id}"
    return None


def _applied_before(ledger: Ledger, command: Any, offset: int) -> WalletTransaction | None:
    """The movement the request asks for, if the log applied it from an earlier record."""
    key = _movement_of(command)
    if key is None:
        return None
    found = ledger.txs.get(key)
    if found is None or found[1].source.offset >= offset:
        return None
    return found[0]


def check_bets(sim: Sim, ledger: Ledger, problems: Problems) -> None:
    """Each funded bet debited once with its stake, decided once, ended once, credited
    what the cards say; at the operator too (seamless)."""
    sent = {r.command.bet_id: r.command for r in sim.requests
            if isinstance(r.command, PlaceBet)}
    decisions: dict[str, set[str]] = defaultdict(set)
    for _, _, value in values(sim, BETS_DECISIONS_TOPIC):
        record = json.loads(value)
        if "bet_id" in record:
            decisions[record["bet_id"]].add(value.decode())
    rounds = {r.round_id: r for t in sim.tables for r in t.rounds}
    operator_net: dict[str, int] = defaultdict(int)
    for tx_id, (tx, _) in ledger.txs.items():
        if tx.kind != "stake_debit":
            continue
        bet_id = tx.cause_id
        command = sent.get(bet_id)
        if command is None or command.stake != tx.amount or command.player_id != tx.player_id:
            problems.append(f"once: {tx_id}: debited {tx.amount} from {tx.player_id}; the "
                            f"client sent {command}")
            continue
        txs = ledger.of_bet(bet_id)
        kinds = [t.kind for t in txs]
        if kinds.count("bet_refund") > 1 or kinds.count("payout") > 1 or \
                kinds.count("payout_reversal") > 1 or ("payout_reversal" in kinds) != (
                    "payout" in kinds and "bet_refund" in kinds):
            problems.append(f"once: {bet_id}: ended {kinds}")
        seen = decisions.get(bet_id, set())
        if len(seen) != 1:
            problems.append(f"decided: {bet_id}: {len(seen)} different decisions")
            continue
        decision = json.loads(next(iter(seen)))
        rnd = rounds.get(command.round_id)
        expected = command.stake
        if decision["type"] == "bet_accepted" and rnd is not None and rnd.status == "complete" \
                and not rnd.annulled:
            outcome = baccarat(rnd.cards)
            expected = returned(command.bet, command.stake, outcome.winner)
        elif decision["type"] == "bet_rejected" and not decision.get("reason_code"):
            problems.append(f"decided: {bet_id}: rejected without a reason")
        got = sum(t.signed_amount for t in txs if t.kind != "stake_debit")
        if got != expected:
            problems.append(f"credits: {bet_id} ({command.bet} {command.stake} in "
                            f"{command.round_id}, {decision['type']}): credited {got}, the "
                            f"cards say {expected} ({kinds})")
        operator_net[command.player_id] += expected - command.stake
    if sim.seamless:
        for player in sim.players:
            if player not in ledger.accounts:
                continue
            want = sim.operator.start_balance + operator_net[player]
            have = sim.operator.balance(player)
            if have != want:
                problems.append(f"credits: the operator holds {have} for {player}, the bets "
                                f"say {want}")


def check_outputs(sim: Sim, ledger: Ledger, problems: Problems) -> None:
    """wallet.transactions: each valid movement, nothing else; bets.placed: the debits."""
    published: dict[str, str] = {}
    for _, _, value in values(sim, WALLET_TRANSACTIONS_TOPIC):
        tx = WalletTransaction.model_validate_json(value)
        if published.setdefault(tx.tx_id, value.decode()) != value.decode():
            problems.append(f"once: {tx.tx_id} published with two contents")
    for tx_id in ledger.txs.keys() - published.keys():
        problems.append(f"decided: {tx_id} is in the ledger, never published")
    for tx_id in published.keys() - ledger.txs.keys():
        problems.append(f"once: {tx_id} published, but no valid entry (a zombie's output)")
    placed = {bet.bet_id for bet in (_bet_placed(v) for _, _, v in values(sim, BETS_PLACED_TOPIC))
              if bet is not None}
    debited = {tx.cause_id for tx, _ in ledger.txs.values() if tx.kind == "stake_debit"}
    if placed != debited:
        problems.append(f"once: bets.placed and the debits differ: {sorted(placed ^ debited)}")


def _bet_placed(value: bytes) -> BetPlaced | None:
    try:
        return BetPlaced.model_validate_json(value)
    except ValueError:  # a garbage record
        return None


def check_results(sim: Sim, problems: Problems) -> None:
    """Each completed round's result is what its cards say, once; none for a void."""
    results: dict[str, set[str]] = defaultdict(set)
    for _, _, value in values(sim, ROUND_RESULTS_TOPIC):
        results[RoundResultPublished.model_validate_json(value).round_id].add(value.decode())
    for table in sim.tables:
        for rnd in table.rounds:
            found = results.get(rnd.round_id, set())
            if rnd.status == "voided":
                if found:
                    problems.append(f"result: {rnd.round_id} was voided, yet has a result")
                continue
            if rnd.status != "complete":
                continue
            if len(found) != 1:
                problems.append(f"result: {rnd.round_id}: {len(found)} different results")
                continue
            published = RoundResultPublished.model_validate_json(next(iter(found)))
            outcome = baccarat(rnd.cards)
            result = published.result
            theirs = (getattr(result, "winner", None), getattr(result, "player_points", None),
                      getattr(result, "banker_points", None))
            if theirs != (outcome.winner, outcome.player, outcome.banker):
                problems.append(f"result: {rnd.round_id}: published {theirs}, the cards "
                                f"{rnd.cards} say {outcome}")


def check_dead_letters(sim: Sim, problems: Problems) -> None:
    """Every record nobody can apply is dead-lettered by every service that reads it."""
    letters = {(letter.service, letter.topic, letter.partition, letter.offset)
               for letter in (DeadLetter.model_validate_json(v)
                              for _, _, v in values(sim, DEAD_LETTERS_TOPIC))}
    readers = {topic: [s.name for s in STAGES if topic in s.inputs]
               for topic in (TABLE_EVENTS_TOPIC, COMMANDS, BETS_PLACED_TOPIC)}
    for topic, p, o in sim.garbage:
        for service in readers[topic]:
            if (service, topic, p, o) not in letters:
                problems.append(f"decided: {topic}[{p}]@{o} (garbage) was never "
                                f"dead-lettered by {service}")


def check_rebuild(sim: Sim, problems: Problems) -> None:
    """A fresh fold of each own log equals the drained worker's live state."""
    for stage in STAGES:
        live = sim.owners[stage.name].own
        fold = live.fold
        for p in range(PARTITIONS):
            state: PartitionState = PartitionState(p)
            parsed = sim.dealer_parsed if stage.log_topic == DEALER_LOG_TOPIC else {}
            for o, _, v in sim.kafka.read(stage.log_topic, p):
                for entry in parsed.get((p, o)) or entries_of(v, stage.parse):
                    fold_entry(state, o, entry, fold,
                               sim.kafka.appended_at(stage.log_topic, p, o))
            mine = live.states.get(p)
            if mine is None or mine.kv != state.kv or mine.inputs != state.inputs:
                problems.append(f"rebuild: {stage.name}[{p}]: the live state differs from "
                                f"a fold of {stage.log_topic}")


@dataclass
class _Round:
    """A round as bet-settlement has read it so far, by the rule of acceptance.md."""

    status: str = "pending"  # open, closing, over (its result or void read)
    closes_at: datetime | None = None  # the announced close
    closed_at: datetime | None = None  # the dealer's BettingClosed
    waiting: list[tuple[str, datetime]] = field(default_factory=list)  # read before it opened
    deferred: list[tuple[str, datetime]] = field(default_factory=list)  # at/after closes_at


def applied_order(sim: Sim, topic: str, partition: int) -> list[tuple[str, int]]:
    """The input records an own log applied, in the order it applied them: each record's
    (topic, offset) at the valid entry that completes it, the first time."""
    out, seen, head = [], set(), ""
    for _, _, value in sim.kafka.read(topic, partition):
        for entry in map(json.loads, records_of(value)):  # a pack's, or the one
            if entry["prev"] != head:
                continue
            head = entry["entry_id"]
            source = entry["source"]
            where = (source["topic"], source["offset"])
            if source.get("last", True) and where not in seen:
                seen.add(where)
                out.append(where)
    return out


def late_verdicts(sim: Sim) -> dict[str, bool]:
    """bet id -> whether bet-settlement must reject it as late (True) or may accept it
    (False), by acceptance.md's rule: a bet counts by its `placed_at`, against the
    dealer's BettingClosed time C; read while the round is open it is decided at once if
    placed before the announced close, else at the close (by C, or by the void's time,
    or, the result read first, by the announced close); read while closing, it is in time
    if placed before C; read once the round's result or void was read, it is late. The
    times are the dealer model's events; the order is the one bet-settlement's valid log
    applied its input records in (the bets.placed and table.events of a table share a
    partition); its decisions are not read here."""
    verdicts: dict[str, bool] = {}

    def cut(rnd: _Round, at: datetime) -> None:
        for bet_id, placed_at in rnd.deferred:
            verdicts[bet_id] = placed_at >= at
        rnd.deferred = []

    def read_open(rnd: _Round, bet_id: str, placed_at: datetime) -> None:
        assert rnd.closes_at is not None
        if placed_at < rnd.closes_at:
            verdicts[bet_id] = False
        else:
            rnd.deferred.append((bet_id, placed_at))

    dealt = table_events(sim)
    for p in range(PARTITIONS):
        rounds: dict[str, _Round] = defaultdict(_Round)
        placed: set[str] = set()
        for topic, offset in applied_order(sim, SETTLEMENT_LOG_TOPIC, p):
            if topic == TABLE_EVENTS_TOPIC:
                event = dealt.get((p, offset))
                round_id = getattr(event, "round_id", None)
                if event is None or round_id is None:
                    continue  # garbage, or a table's event of no round
                rnd = rounds[round_id]
                if event.type == "round_opened" and rnd.status == "pending":
                    rnd.status, rnd.closes_at = "open", event.betting_closes_at
                    for bet_id, placed_at in rnd.waiting:
                        read_open(rnd, bet_id, placed_at)
                elif event.type == "betting_closed" and rnd.status == "open":
                    rnd.status, rnd.closed_at = "closing", event.occurred_at
                    cut(rnd, event.occurred_at)
                elif event.type in ("round_voided", "round_annulled") and rnd.status != "over":
                    for bet_id, _ in rnd.waiting if rnd.status == "pending" else ():
                        verdicts[bet_id] = True
                    cut(rnd, event.occurred_at)
                    rnd.status = "over"
                continue
            value = _record(sim, topic, p, offset)
            if value is None:
                continue
            if topic == ROUND_RESULTS_TOPIC:
                rnd = rounds[value["round_id"]]
                if rnd.status != "over":
                    if rnd.status == "open":
                        assert rnd.closes_at is not None
                        cut(rnd, rnd.closes_at)
                    for bet_id, _ in rnd.waiting if rnd.status == "pending" else ():
                        verdicts[bet_id] = True
                    rnd.status = "over"
            elif topic == BETS_PLACED_TOPIC and value.get("type") == "bet_placed":
                bet_id = value["bet_id"]
                if bet_id in placed:
                    continue  # seen again: decided the first time
                placed.add(bet_id)
                placed_at = datetime.fromisoformat(value["placed_at"])
                rnd = rounds[value["round_id"]]
                if rnd.status == "pending":
                    rnd.waiting.append((bet_id, placed_at))
                elif rnd.status == "open":
                    read_open(rnd, bet_id, placed_at)
                elif rnd.status == "closing":
                    assert rnd.closed_at is not None
                    verdicts[bet_id] = placed_at >= rnd.closed_at
                else:
                    verdicts[bet_id] = True
    return verdicts


def _record(sim: Sim, topic: str, partition: int, offset: int) -> dict | None:
    value = sim.kafka.logs[topic][partition][offset][1]
    try:
        record = json.loads(value)
    except ValueError:  # a garbage record
        return None
    return record if isinstance(record, dict) and "round_id" in record else None


def check_late(sim: Sim, problems: Problems) -> None:
    """bet-settlement's decisions against the rule of a late bet, decided here from the
    dealer's close and each bet's placement (`late_verdicts`): no bet placed after its
    round closed is accepted, and none placed in time is rejected as late (`round_closed`,
    or `unknown_round`: its round was open when it was read)."""
    verdicts = late_verdicts(sim)
    for _, _, value in values(sim, BETS_DECISIONS_TOPIC):
        decision = json.loads(value)
        late = verdicts.get(decision.get("bet_id", ""))
        if late is None:
            continue
        if late and decision["type"] == "bet_accepted":
            problems.append(f"late: {decision['bet_id']} in {decision['round_id']}: accepted, "
                            f"but it was placed after betting closed")
        elif not late and decision.get("reason_code") in ("round_closed", "unknown_round"):
            problems.append(f"late: {decision['bet_id']} in {decision['round_id']}: rejected "
                            f"{decision['reason_code']}, but it was placed in time")
