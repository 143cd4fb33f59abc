"""Rebuild: replay every topic from the start of retention into fresh state and compare.

Folds `table.events` (verifying each table's hash chain and recomputing every
round's result from its cards), then the money topics (recomputing every
settlement and every balance), and compares the balances with what the live
wallet says. A clean platform gives zero differences; otherwise each one is listed.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pydantic import BaseModel

from services.infra.archive_store import ArchiveStore
from services.infra.own_log import PartitionState, broker_time, fold_entry
from services.infra.settings import Settings
from services.operator.audit import AuditReport, Books, audit
from services.operator.event_reader import Unparsed, read_books, read_topic
from services.wallet.ledger_fold import WalletFold, accounts
from shared.events.chain import follow_chain
from shared.events.event_auth import VOID, auth_problem
from shared.events.ids import id_problem
from shared.events.table import (
    CardDealt,
    RoundAnnulled,
    RoundOpened,
    RoundRedealt,
    RoundVoided,
    TableEventBase,
)
from shared.profile import ProfileError, check_pin
from shared.rounds import RoundError, evaluate_round
from shared.topics import TABLE_EVENTS_TOPIC, WALLET_LEDGER_TOPIC

Progress = Callable[[str, int, int], None]


class RebuildReport(BaseModel):
    tables: int
    table_events: int
    rounds_recomputed: int
    audit: AuditReport
    live_players: int
    differences: list[str]
    # lost races (a zombie's events): authentic, off the chain, ignored by every reader
    void_events: list[str] = []

    @property
    def clean(self) -> bool:
        return not self.differences


def _rounds_from_table_events(events_by_table: dict[str, list[TableEventBase]], books: Books,
                              events_key: bytes | None = None, accept_unsigned: bool = False,
                              void: list[str] | None = None) -> tuple[int, list[str]]:
    """Verify each table's chain and recompute each completed round's result from its cards;
    a settlement reversal needs its round's annulment on the table's log. With
    `events_key`, an authentic event off the chain is a lost race (a zombie's): named in
    `void`, left out like every reader leaves it out, not a difference."""
    differences: list[str] = []
    recomputed = 0
    annulled = {(e.table_id, e.round_id) for events in events_by_table.values() for e in events
                if isinstance(e, RoundAnnulled)}
    differences += [f"{r.reversal_id}: reverses a settlement of {r.table_id}/{r.round_id}, which "
                    "was never annulled" for r in books.reversals.values()
                    if (r.table_id, r.round_id) not in annulled]
    for table_id, events in sorted(events_by_table.items()):
        if events_key is not None:  # a forged event is a difference and takes no part
            authentic = []
            for event in events:
                problem = auth_problem(event, events_key, accept_unsigned)
                if problem is None:
                    authentic.append(event)
                else:
                    differences.append(f"table {table_id}: seq {event.seq} ({event.type}) "
                                       f"is not dealer-event's: {problem}")
            events = authentic
        followed = follow_chain(events, authenticated=events_key is not None)
        differences += [f"table {table_id}: {b}" for b in followed.breaks]
        if void is not None:
            void += [f"table {table_id}: seq {e.seq} ({e.type}) {e.hash[:12]}…: {VOID} (written "
                     "by a worker that had lost the table; ignored)" for e in followed.void]
        events = followed.valid
        opened: dict[str, RoundOpened] = {}
        cards: dict[str, list] = defaultdict(list)
        voided: set[str] = set()
        for event in events:
            if isinstance(event, RoundOpened):
                opened[event.round_id] = event
            elif isinstance(event, CardDealt):
                cards[event.round_id].append(event.card)
            elif isinstance(event, RoundRedealt):  # the cards so far are set aside
                cards[event.round_id] = []
            elif isinstance(event, RoundVoided):
                voided.add(event.round_id)
        for round_id, opening in opened.items():
            recorded = books.results.get((table_id, round_id))
            if round_id in voided:
                if recorded is not None:
                    differences.append(f"{table_id}/{round_id}: voided but has a result")
                continue
            if recorded is None:
                continue  # still in play, or never completed; the audit counts its bets as pending
            recomputed += 1
            try:  # the rules the round opened with, as shipped
                rules = check_pin(opening.profile, opening.profile_version, opening.profile_digest)
            except ProfileError as exc:
                differences.append(f"{table_id}/{round_id}: {exc}")
                continue
            try:  # a round whose cards cannot make a result is that round's difference
                fresh = evaluate_round(rules, cards[round_id])
            except RoundError as exc:
                differences.append(f"{table_id}/{round_id}: its cards give no result: {exc}")
                continue
            if fresh.model_dump(mode="json") != recorded.result.model_dump(mode="json"):
                differences.append(f"{table_id}/{round_id}: recorded result differs from the "
                                   "result recomputed from its cards")
    return recomputed, differences


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The fold keeps every record it reads, so the heap grows with the log, and each of
    Python's full cyclic collections walks that whole heap: measured, a quarter more CPU
    per record at 200,000 records than at 20,000. The records are acyclic values that
    reference counting frees, so the cyclic collector is paused while folding and restored
    after (then the CPU per record is the same at both sizes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ledger_balances(bootstrap: str, progress: Progress | None = None,
                    archive: ArchiveStore | None = None) -> tuple[dict[str, int], list[str]]:
    """Every balance as the fold of `wallet.ledger`: the very fold the live wallet runs
    (`own_log.fold_entry` with the wallet's `WalletFold`, its state window included, so a
    rebuild's memory is bounded as the wallet's is; accounts never expire), partition by
    partition."""
    fold = WalletFold(Settings().wallet_state_window())
    states: dict[int, PartitionState] = {}
    problems: list[str] = []
    step = (lambda d, t: progress(WALLET_LEDGER_TOPIC, d, t)) if progress else None
    for rec in read_topic(bootstrap, WALLET_LEDGER_TOPIC, step, archive):
        state = states.setdefault(rec.partition, PartitionState(rec.partition))
        if isinstance(rec.value, Unparsed):
            problems.append(f"unreadable ledger entry at partition {rec.partition} offset "
                            f"{rec.offset}: {rec.value.error[:120]}")
            continue
        for entry in rec.value:  # a pack's entries, or the record's one
            fold_entry(state, rec.offset, entry, fold, broker_time(rec.timestamp_ms))
    balances = {account.player_id: account.balance for state in states.values()
                for account in accounts(state.kv)}
    return balances, problems


@cyclic_gc_paused()
def rebuild(bootstrap: str, live_balances: Callable[[list[str]], dict[str, int | None]],
            progress: Progress | None = None, events_key: bytes | None = None,
            accept_unsigned: bool = False, archive: ArchiveStore | None = None) -> RebuildReport:
    """`events_key`: the table-events key; every table event's HMAC is then checked.
    `archive`: read what retention deleted from the log there (the same fold)."""
    events_by_table: dict[str, list[TableEventBase]] = defaultdict(list)
    differences: list[str] = []
    table_events = 0
    step = (lambda d, t: progress(TABLE_EVENTS_TOPIC, d, t)) if progress else None
    for rec in read_topic(bootstrap, TABLE_EVENTS_TOPIC, step, archive):
        if isinstance(rec.value, Unparsed):
            differences.append(f"unreadable table event at partition {rec.partition} offset "
                               f"{rec.offset}: {rec.value.error[:120]}")
            continue
        events_by_table[rec.value.table_id].append(rec.value)
        table_events += 1
    books, unparsed = read_books(bootstrap, progress, archive)
    ledger, ledger_problems = ledger_balances(bootstrap, progress, archive)
    differences += ledger_problems
    differences += [f"unreadable record {u.topic}[{u.partition}]@{u.offset}: {u.error[:120]}"
                    for u in unparsed]
    void: list[str] = []
    recomputed, round_diffs = _rounds_from_table_events(events_by_table, books, events_key,
                                                        accept_unsigned, void)
    differences += round_diffs
    report = audit(books)
    for check in report.invariants:
        differences += [f"{check.name}: {p}" for p in check.problems]
    # a player id that is not an id (`..`, `a/b`: accepted by an older wallet) is named, not
    # asked for: as a URL path it would name another resource, and one bad id must not stop
    # the comparison of everyone else
    not_ids = {p: problem for p in report.balances if (problem := id_problem(p, "player"))}
    differences += [f"player {p!r}: not compared with the live wallet: {problem}"
                    for p, problem in sorted(not_ids.items())]
    live = live_balances(sorted(p for p in report.balances if p not in not_ids))
    for player, rebuilt in report.balances.items():
        if player in not_ids:
            continue
        if live.get(player) != rebuilt:
            differences.append(f"player {player}: rebuilt balance {rebuilt}, live wallet "
                               f"{live.get(player)}")
        if ledger.get(player) != rebuilt:
            differences.append(f"player {player}: wallet.transactions add up to {rebuilt}, "
                               f"the fold of wallet.ledger says {ledger.get(player)}")
    differences += [f"player {player}: in the fold of wallet.ledger ({balance}), with no "
                    "movement on wallet.transactions" for player, balance in ledger.items()
                    if player not in report.balances and balance != 0]
    return RebuildReport(tables=len(events_by_table), table_events=table_events,
                         rounds_recomputed=recomputed, audit=report, live_players=len(live),
                         differences=differences, void_events=void)
