"""One round's bets, decided and settled: pure functions of (round header, bet lookups, record,
now) that return a `Transition`: the new header, the per-bet facts to write, the records to
publish.

State that does not grow with the round. A round is stored as
- its header (`RoundHeader`, key `<table>:<round>`): what every record needs: status, profile,
  counts, total stake, the running manifest digest, the manifest, the settlement's cause and
  timing. Its size does not depend on the number of bets;
- one entry per bet (`BetEntry`, key `<table>:<round>/b/<bet id>`): the BetPlaced, its
  decision and its settlement;
- an ordinal index (key `<table>:<round>/n/<k>` -> bet id, k = 1..received), so opening,
  closing, settling and voiding walk the round's bets with one point read each.
`RoundBets` is the read side the functions need; the service backs it with the fold of its
own log (`settlement_fold`), tests with an in-memory `RoundBook`. The models themselves are
the log's (`shared.events.settlement_log`).

The header's `status` is bet-settlement's own (pending, open, closing, closed, settled,
voided, annulled, unknown): the state of its work on the round's bets, persisted in
`settlement.log` since its first entry. It is not the round's phase (`shared.round_phase`,
folded from table events alone): it waits for intake marks and for the result on
round.results, so it lags the table; `shared.round_phase.phases_of` is the one mapping of
each status to the phases it is consistent with (docs/decisions/round-phase.md).

A record seen again returns what was decided the first time among its outputs (published
again: consumers are idempotent on the ids) and never decides twice.
Bets that arrive before their round's RoundOpened (the topics are read independently, so a
bet may be read before events of rounds that opened before its own) are stored undecided
("pending"); they are decided when the round opens, or rejected `unknown_round` once the
table's chain passed the seq of the RoundOpened the wallet saw (`BetPlaced.opened_seq`)
without opening the round (a bet of an older record, naming no seq: when the table opens
another round).

A bet counts by its time (`placed_at`), not by when it is read (docs/decisions/acceptance.md):
while the round is open, a bet placed before the announced close (`betting_closes_at`) is
decided at once; one placed at or after it waits, undecided, for the round's BettingClosed.
From the close (time C, status "closing") a bet placed before C is decided as it is read and
one placed at or after C is rejected `round_closed`. The round is "closed" (its manifest
written, every later bet rejected) once the wallet's intake marks on `bets.placed` cover
every wallet-commands partition (each mark is written after every bet its worker stamped
before the close), or when the round's result or void arrives, whichever is first.

Seed 002's table maximum applies per spot (player, bet id, position) per round: each spot's
running total of accepted stakes is kept under its own key (`SpotTotal`), and a Tiger wager
needs a main bet of the same player when the profile says so (`shared.settlement.accept_bet`).

A management void after completion (RoundAnnulled) reverses every settlement of the round
with a `SettlementReversed`, then refunds the stake with a `void_refund` BetSettled of its
own id: compensating records, the original settlements stay in the log. An ended round's
id opened again (`reused_at`): what follows it is the new round's, ignored (tables.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel

from services.bet_settlement.settlement_terms import (
    Amount,
    annul_refund,
    by_rules,
    changed_by_correction,
    settled_again_id,
    take_back,
    void_refund,
)
from shared.bets import MAIN_BETS
from shared.events.bet_events import (
    BetAccepted,
    BetFacts,
    BetPlaced,
    BetRejected,
    BetSettled,
    IntakeMark,
    RoundManifest,
    SettlementReversed,
    digest_add,
    settlement_id,
)
from shared.events.results import RoundResultPublished
from shared.events.settlement_log import BetEntry as BetEntry
from shared.events.settlement_log import RoundHeader as RoundHeader
from shared.events.settlement_log import SpotTotal as SpotTotal
from shared.events.settlement_log import Status as Status
from shared.events.table import (
    BettingClosed,
    RoundAnnulled,
    RoundOpened,
    RoundVoided,
    TableEventBase,
)
from shared.profile import ProfileError, UnknownProfileError, round_profile
from shared.settlement import (
    Bet,
    BetError,
    accept_bet,
    needs_main_bet,
)
from shared.topics import BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC

log = logging.getLogger(__name__)
Output = tuple[str, str, BaseModel]  # topic, key, record
Amounts = Callable[[BetPlaced], Amount]  # a bet -> (outcome, amount returned)


class RoundBets(Protocol):
    """Point reads of one round's bets."""

    def entry(self, bet_id: str) -> BetEntry | None: ...

    def bet_at(self, ordinal: int) -> str | None: ...

    def spot(self, key: str) -> SpotTotal | None: ...


@dataclass(frozen=True)
class Transition:
    """A round's new header, the bet entries, ordinals and spot totals to write, the records
    to publish."""

    header: RoundHeader
    entries: dict[str, BetEntry] = field(default_factory=dict)
    order: dict[int, str] = field(default_factory=dict)
    out: list[Output] = field(default_factory=list)
    spots: dict[str, SpotTotal] = field(default_factory=dict)


def round_key(table_id: str, round_id: str) -> str:
    return f"{table_id}:{round_id}"


# Table ids have no ':' and bet and round ids no '/', so no key can be read two ways.
def bet_key(table_id: str, round_id: str, bet_id: str) -> str:
    return f"{table_id}:{round_id}/b/{bet_id}"


def order_key(table_id: str, round_id: str, ordinal: int) -> str:
    return f"{table_id}:{round_id}/n/{ordinal}"


def spot_key(table_id: str, round_id: str, player_id: str, bet: str,
             position: int | str | None) -> str:
    """A player's spot in the round; the player id last (it is the only part that may hold
    '/')."""
    return f"{table_id}:{round_id}/s/{bet}/{'-' if position is None else position}/{player_id}"


def _facts(bet: BetFacts) -> dict[str, Any]:
    return {name: getattr(bet, name) for name in _FACT_FIELDS}


_FACT_FIELDS = tuple(name for name in BetFacts.model_fields if name != "schema_version")


def _reject(bet: BetPlaced, code: str, message: str, now: datetime) -> BetRejected:
    return BetRejected(**_facts(bet), reason_code=code, message=message, decided_at=now)


def topic_of(record: BaseModel) -> str:
    """The topic a decision record goes to: settlements and reversals on bets.settled,
    the rest (acceptances, rejections, manifests) on bets.decisions."""
    return BETS_SETTLED_TOPIC if isinstance(record, BetSettled | SettlementReversed) \
        else BETS_DECISIONS_TOPIC


def _out(record: BaseModel, table_id: str) -> Output:
    return topic_of(record), table_id, record


class _Writer:
    """Builds one transition: reads see the writes made so far."""

    def __init__(self, header: RoundHeader, bets: RoundBets) -> None:
        self.header = header
        self.bets = bets
        self.entries: dict[str, BetEntry] = {}
        self.order: dict[int, str] = {}
        self.out: list[Output] = []
        self.spots: dict[str, SpotTotal] = {}

    def spot(self, key: str) -> SpotTotal | None:
        written = self.spots.get(key)
        return written if written is not None else self.bets.spot(key)

    def entry(self, bet_id: str) -> BetEntry | None:
        written = self.entries.get(bet_id)
        return written if written is not None else self.bets.entry(bet_id)

    def walk(self) -> Iterator[BetEntry]:
        """The round's bets in the order they were received."""
        for k in range(1, self.header.received + 1):
            bet_id = self.order.get(k) or self.bets.bet_at(k)
            entry = self.entry(bet_id) if bet_id is not None else None
            if entry is None:
                log.error("round %s of table %s: bet #%d missing from its index",
                          self.header.round_id, self.header.table_id, k)
                continue
            yield entry

    def update(self, **changes: Any) -> None:
        self.header = self.header.model_copy(update=changes)

    def publish(self, record: BaseModel) -> None:
        self.out.append(_out(record, self.header.table_id))

    def done(self) -> Transition:
        return Transition(self.header, self.entries, self.order, self.out, self.spots)

    def decide(self, entry: BetEntry, now: datetime) -> None:
        """Decide by the bet's time: accept if placed before the close and valid for the
        table and the round, reject naming why; a bet placed at or after the announced
        close while the close is not read yet waits (stored undecided)."""
        h, bet = self.header, entry.bet
        decision: BetAccepted | BetRejected
        if h.status == "open" and h.closes_at is not None and bet.placed_at >= h.closes_at:
            self.update(deferred=h.deferred + 1)  # the close decides it
            self.entries[bet.bet_id] = entry
            return
        if h.status == "closing" and h.closed_at is not None and bet.placed_at >= h.closed_at:
            decision = _reject(bet, "round_closed",
                               f"bet placed at {bet.placed_at.isoformat()}, at or after "
                               f"betting on round {bet.round_id!r} closed at "
                               f"{h.closed_at.isoformat()}", now)
        elif h.status not in ("open", "closing"):
            reason = "unknown_round" if h.status in ("pending", "unknown") else "round_closed"
            decision = _reject(bet, reason, f"round {bet.round_id!r} is {h.status}: "
                                            "bets are accepted only while it is open", now)
        else:
            decision = self._judge(entry, now)
        self.entries[bet.bet_id] = self.entries.get(bet.bet_id, entry).model_copy(
            update={"decision": decision})
        self.publish(decision)

    def _judge(self, entry: BetEntry, now: datetime) -> BetAccepted | BetRejected:
        """A bet placed in time: the table's rules, then the round's (spot maximum, Tiger
        with a main bet)."""
        h, bet = self.header, entry.bet
        key = spot_key(h.table_id, h.round_id, bet.player_id, bet.bet, bet.position)
        spot = self.spot(key)
        before = spot.total if spot is not None else 0
        try:
            if h.profile is None:  # RoundOpened names it: an open round always has one
                raise UnknownProfileError(f"round {h.round_id!r} names no profile")
            profile = round_profile(h.profile, h.profile_version)
            b = Bet(bet=bet.bet, position=bet.position, stake=bet.stake)
            # the limits in the player's currency, then the spot maximum and the Tiger rule
            accept_bet(b, profile, bet.currency, before,
                       not needs_main_bet(bet.bet, profile) or self._has_main_bet(bet.player_id))
        except (BetError, ProfileError) as exc:
            return _reject(bet, getattr(exc, "code", "unknown_profile"), str(exc), now)
        self.update(accepted=h.accepted + 1, total_stake=h.total_stake + bet.stake,
                    digest=digest_add(h.digest, bet.bet_id),
                    latest_accepted=max(filter(None, (h.latest_accepted, bet.placed_at))))
        self.spots[key] = SpotTotal(total=before + bet.stake)
        self.entries[bet.bet_id] = entry
        return BetAccepted(**_facts(bet), decided_at=now)

    def _has_main_bet(self, player_id: str) -> bool:
        h = self.header
        return any((s := self.spot(spot_key(h.table_id, h.round_id, player_id, main, None)))
                   is not None and s.total > 0 for main in MAIN_BETS)

    def cut(self, closed_at: datetime, now: datetime) -> None:
        """Betting closed at `closed_at`: the bets that waited for it are decided by it."""
        h = self.header
        if h.latest_accepted is not None and h.latest_accepted >= closed_at:
            # an early close (before the announced time) read after bets stamped after it
            # were accepted: they stand (a bet is final once accepted); reported
            log.warning("round %s of table %s closed early at %s, after bets placed as late "
                        "as %s were accepted; they stand", h.round_id, h.table_id,
                        closed_at.isoformat(), h.latest_accepted.isoformat())
        waiting = h.deferred
        self.update(status="closing", closed_at=closed_at, deferred=0)
        if waiting:
            self.decide_pending(now)

    def intake_complete(self) -> bool:
        h = self.header
        return h.partition_count is not None and set(range(h.partition_count)) <= set(h.covered)

    def decide_pending(self, now: datetime) -> None:
        for entry in self.walk():
            if entry.decision is None:
                self.decide(entry, now)

    def give_up_if_pending(self, now: datetime) -> None:
        """A round that never opened is over for good: its waiting bets are rejected."""
        if self.header.status == "pending":
            self.update(status="unknown")
            self.decide_pending(now)

    def close(self, closed_at: datetime) -> None:
        """The manifest: no bet is accepted from now on."""
        h = self.header
        manifest = RoundManifest(table_id=h.table_id, round_id=h.round_id,
                                 bet_count=h.accepted, total_stake=h.total_stake,
                                 digest=h.digest, closed_at=h.closed_at or closed_at)
        self.update(status="closed", manifest=manifest)
        self.publish(manifest)

    def settle_all(self, amounts: Amounts, status: Status, cause: str, now: datetime,
                   **timing: Any) -> None:
        """One settlement per accepted bet, `amounts(bet)` -> (outcome, returned); the last
        one carries `last_of_round`."""
        seen = 0
        for entry in self.walk():
            if not isinstance(entry.decision, BetAccepted):
                continue
            seen += 1
            outcome, returned = amounts(entry.bet)
            settled = BetSettled(**_facts(entry.bet), settlement_id=settlement_id(entry.bet.bet_id),
                                 outcome=outcome, returned=returned, cause=cause,
                                 settled_at=now, last_of_round=seen == self.header.accepted,
                                 **timing)
            self.entries[entry.bet.bet_id] = entry.model_copy(update={"settlement": settled})
            self.publish(settled)
        self.update(status=status, cause=cause)

    def republish_settlements(self) -> None:
        for entry in self.walk():
            if entry.settlement is not None:
                self.publish(entry.settlement)
            if entry.reversal is not None:
                self.publish(entry.reversal)
            if entry.refund is not None:
                self.publish(entry.refund)


def _new(header: RoundHeader | None, table_id: str, round_id: str | None) -> RoundHeader:
    return header or RoundHeader(table_id=table_id, round_id=round_id)


def place(header: RoundHeader | None, bets: RoundBets, bet: BetPlaced, now: datetime,
          head_seq: int | None = None) -> Transition:
    """A funded bet: decided now if its round opened, else stored undecided until it does.
    `head_seq` is the table's chain as read here: a round whose RoundOpened (the seq the
    bet names) it passed without opening the round never opened, and the bet is rejected."""
    w = _Writer(_new(header, bet.table_id, bet.round_id), bets)
    known = bets.entry(bet.bet_id)
    if known is not None:
        if known.bet.player_id != bet.player_id:
            w.publish(_reject(bet, "duplicate_bet_id",
                              f"bet id {bet.bet_id!r} is already taken in this round", now))
        elif known.decision is not None:
            w.publish(known.decision)  # redelivery: the same answer again
        return w.done()  # (or still waiting for its round to open)
    ordinal = w.header.received + 1
    w.update(received=ordinal)
    w.order[ordinal] = bet.bet_id
    entry = BetEntry(ordinal=ordinal, bet=bet)
    if w.header.status == "pending":
        w.entries[bet.bet_id] = entry
        if bet.opened_seq is not None:
            w.update(opened_seq=max(w.header.opened_seq or 0, bet.opened_seq))
        if never_opened(w.header, head_seq):
            w.give_up_if_pending(now)
    else:
        w.decide(entry, now)
    return w.done()


def over_at(header: RoundHeader, event: TableEventBase) -> bool:
    """A pending round (not `event`'s) that never opened, as `event` shows: the table's
    chain passed the RoundOpened its bets name; for bets naming none (older records),
    another round opened."""
    if header.opened_seq is None:
        return header.status == "pending" and isinstance(event, RoundOpened)
    return never_opened(header, event.seq)


def never_opened(header: RoundHeader, head_seq: int | None) -> bool:
    """A pending round whose RoundOpened (the seq its bets name) the table's chain, read up
    to `head_seq`, passed without opening it."""
    return (header.status == "pending" and header.opened_seq is not None
            and head_seq is not None and head_seq >= header.opened_seq)


def expire(header: RoundHeader, bets: RoundBets, now: datetime) -> Transition:
    """The table opened another round: this one never opened, its waiting bets are rejected."""
    w = _Writer(header, bets)
    w.give_up_if_pending(now)
    return w.done()


def apply_table_event(header: RoundHeader | None, bets: RoundBets, event: TableEventBase,
                      now: datetime) -> Transition:
    w = _Writer(_new(header, event.table_id, getattr(event, "round_id", None)), bets)
    status = w.header.status
    if _of_reuse(w.header, event.seq, f"{event.type} at seq {event.seq}"):
        return w.done()
    if isinstance(event, RoundOpened):
        if status == "pending":
            w.update(status="open", profile=event.profile, profile_version=event.profile_version,
                     closes_at=event.betting_closes_at)
            w.decide_pending(now)
        elif status in ENDED:  # the new round's records never move this one's money
            log.error("round %s of table %s, %s, opened again at seq %d: its id is reused",
                      w.header.round_id, w.header.table_id, status, event.seq)
            w.update(reused_at=event.seq)
    elif isinstance(event, BettingClosed):
        if status == "open":
            w.cut(event.occurred_at, now)
            if w.intake_complete():  # the wallet's marks were read before the close
                w.close(event.occurred_at)
        elif w.header.manifest is not None:
            w.publish(w.header.manifest)
    elif isinstance(event, RoundVoided):
        _void(w, event, now)
    elif isinstance(event, RoundAnnulled):
        _annul(w, event, now)
    return w.done()


ENDED = ("settled", "voided", "annulled")  # a round whose bets all ended


def _of_reuse(header: RoundHeader, seq: int, what: str) -> bool:
    """A record after the reuse of `header`'s id on the chain: the new round's, ignored."""
    if header.reused_at is None or seq <= header.reused_at:
        return False
    log.error("round %s of table %s: %s is of the round that reused its id at seq %d: "
              "ignored", header.round_id, header.table_id, what, header.reused_at)
    return True


def apply_mark(header: RoundHeader | None, bets: RoundBets, mark: IntakeMark, now: datetime
               ) -> Transition:
    """A wallet worker's intake mark: its partitions' bets placed before the close are all
    read. When the marks cover every partition after the close, the round closes."""
    w = _Writer(_new(header, mark.table_id, mark.round_id), bets)
    h = w.header
    if h.status not in ("pending", "open", "closing"):
        if h.manifest is not None and h.status == "closed":
            w.publish(h.manifest)
        return w.done()
    covered = tuple(sorted(set(h.covered) | set(mark.partitions)))
    if covered != h.covered or h.partition_count != mark.partition_count:
        w.update(covered=covered, partition_count=mark.partition_count)
    if h.status == "closing" and w.intake_complete():
        w.close(h.closed_at or mark.through)
    return w.done()


def _void(w: _Writer, event: RoundVoided, now: datetime) -> None:
    h = w.header
    if h.status in ("voided", "settled"):
        if h.status == "settled":
            log.error("void of round %s after it was settled ignored", h.round_id)
        w.republish_settlements()
        return
    w.give_up_if_pending(now)
    if h.status == "open":  # the bets that waited for the close are decided by the void
        w.cut(event.occurred_at, now)
    w.settle_all(void_refund, "voided",
                 f"void:{h.table_id}:{h.round_id}", now, result_at=event.occurred_at)


def annul_cause(table_id: str, round_id: str) -> str:
    return f"annul:{table_id}:{round_id}"


def _annul(w: _Writer, event: RoundAnnulled, now: datetime) -> None:
    """A management void of a completed round: every settlement is taken back by a
    SettlementReversed, then the stake refunded by a `void_refund` BetSettled of its own id,
    in that order, bet by bet. Seen again: the same records again. A round annulled before
    its result was read here is refunded like a void (no settlement to take back); its
    result, when read, is ignored."""
    h = w.header
    cause = annul_cause(h.table_id, h.round_id)
    if h.status in ("annulled", "voided"):
        if h.status == "voided" and h.cause != cause:
            log.error("annulment of round %s, already voided, ignored", h.round_id)
        w.republish_settlements()
        return
    if h.status != "settled":
        if h.status == "open":
            w.cut(event.occurred_at, now)
        w.give_up_if_pending(now)
        w.settle_all(void_refund, "voided", cause, now,
                     result_at=event.occurred_at)
        w.update(annulled_by=event.event_id)
        return
    seen = 0
    for entry in w.walk():
        if entry.settlement is None:
            continue
        seen += 1
        bet, original = entry.bet, entry.settlement
        back, refunded = take_back(original.settlement_id, original.returned), annul_refund(bet)
        reversal = SettlementReversed(
            **_facts(bet), reversal_id=back.reversal_id,
            settlement_id=back.settlement_id, original_outcome=original.outcome,
            amount=back.amount, reason_code=str(event.reason_code),
            reason_text=event.reason_text, supervisor=event.supervisor, cause=cause,
            reversed_at=now)
        refund = BetSettled(**_facts(bet), settlement_id=refunded.settlement_id,
                            outcome=refunded.outcome, returned=refunded.returned, cause=cause,
                            settled_at=now, result_at=event.occurred_at,
                            last_of_round=seen == h.accepted)
        w.entries[bet.bet_id] = entry.model_copy(update={"reversal": reversal,
                                                         "refund": refund})
        w.publish(reversal)
        w.publish(refund)
    w.update(status="annulled", annulled_by=event.event_id)


def _by_rules(profile_name: str, published: RoundResultPublished, version: int | None = None
              ) -> Amounts:
    profile = round_profile(profile_name, version or published.profile_version)

    def amounts(bet: BetPlaced) -> Amount:
        return by_rules(bet, published.result, profile)
    return amounts


def apply_result(header: RoundHeader | None, bets: RoundBets, published: RoundResultPublished,
                 now: datetime, result_at: datetime | None = None) -> Transition:
    """Settle every accepted bet with the rule engine, once. `result_at`: when the result was
    published (the record's broker timestamp), else the result's own time."""
    w = _Writer(_new(header, published.table_id, published.round_id), bets)
    if _of_reuse(w.header, published.completed_seq, f"result {published.result_id}"):
        return w.done()
    if published.correction is not None:
        _correct(w, published, now)
        return w.done()
    if w.header.status in ENDED:
        if w.header.status == "voided" and not _annulled(w.header):
            log.error("result %s for voided round %s ignored", published.result_id,
                      w.header.round_id)
        w.republish_settlements()
        return w.done()
    if w.header.status == "open":  # the result came before the close: close first
        w.cut(w.header.closes_at or published.occurred_at, now)
    if w.header.status == "closing":  # the result ends the wait for late bets
        w.close(published.occurred_at)
    w.give_up_if_pending(now)
    w.settle_all(_by_rules(w.header.profile or published.profile, published,
                           w.header.profile_version), "settled",
                 published.result_id, now, result_at=result_at or published.occurred_at,
                 last_card_at=published.last_card_at)
    return w.done()


def _correct(w: _Writer, published: RoundResultPublished, now: datetime) -> None:
    """A corrected result (seed 004 §5) of a settled round: every bet whose settlement the
    corrected cards change (amount or outcome) is taken back by a SettlementReversed, then
    settled again by a BetSettled of an id of its own, in that order, bet by bet; the others
    stand. The round's cause becomes the corrected result, so a correction of it follows
    the same way. Seen again: nothing new. A correction of a round that is not settled by
    the result it replaces (voided, annulled, or not settled yet) changes nothing."""
    h, correction = w.header, published.correction
    assert correction is not None
    if h.cause == published.result_id:
        return  # applied already
    if h.status != "settled" or h.cause != correction.replaces:
        log.error("corrected result %s replaces %s, but round %s is %s (by %s): nothing to "
                  "correct", published.result_id, correction.replaces, h.round_id, h.status,
                  h.cause)
        return
    amounts = _by_rules(h.profile or published.profile, published, h.profile_version)
    for entry in w.walk():
        original = entry.settlement
        if original is None:
            continue
        bet = entry.bet
        outcome, returned = amounts(bet)
        if not changed_by_correction((original.outcome, original.returned), (outcome, returned)):
            continue
        back = take_back(original.settlement_id, original.returned)
        w.publish(SettlementReversed(
            **_facts(bet), reversal_id=back.reversal_id,
            settlement_id=back.settlement_id, original_outcome=original.outcome,
            amount=back.amount, reason_code=correction.reason_code,
            reason_text=correction.reason_text, supervisor=correction.supervisor,
            cause=published.result_id, reversed_at=now))
        again = BetSettled(**_facts(bet), outcome=outcome, returned=returned,
                           settlement_id=settled_again_id(bet.bet_id, correction.correction),
                           cause=published.result_id, settled_at=now,
                           result_at=published.occurred_at)
        w.entries[bet.bet_id] = entry.model_copy(update={"settlement": again})
        w.publish(again)
    w.update(cause=published.result_id)


def _annulled(header: RoundHeader) -> bool:
    return header.annulled_by is not None


def conflicts(header: RoundHeader | None, bets: RoundBets,
              record: RoundResultPublished | RoundVoided) -> list[str]:
    """Bets of an already settled (or voided) round that `record` would settle for a
    different amount: the round is being asked to settle twice, differently."""
    if header is None or header.status not in ("settled", "voided") or _annulled(header):
        return []
    if isinstance(record, RoundResultPublished) and record.correction is not None:
        return []  # a correction is meant to settle differently (`_correct`)
    amounts = (void_refund if isinstance(record, RoundVoided)
               else _by_rules(header.profile or record.profile, record, header.profile_version))
    return sorted(e.bet.bet_id for e in _Writer(header, bets).walk()
                  if e.settlement is not None and e.settlement.returned != amounts(e.bet)[1])


# --- an in-memory round: tests, tools and the cost measurement ----------------------------

@dataclass(frozen=True)
class RoundBook:
    """A whole round in memory (header + entries + index), implementing `RoundBets`.
    `apply` returns a new state and leaves this one as it was."""

    header: RoundHeader
    entries: Mapping[str, BetEntry] = field(default_factory=dict)
    order: Mapping[int, str] = field(default_factory=dict)
    spots: Mapping[str, SpotTotal] = field(default_factory=dict)

    def entry(self, bet_id: str) -> BetEntry | None:
        return self.entries.get(bet_id)

    def bet_at(self, ordinal: int) -> str | None:
        return self.order.get(ordinal)

    def spot(self, key: str) -> SpotTotal | None:
        return self.spots.get(key)

    def apply(self, t: Transition) -> RoundBook:
        if not t.entries and not t.order and not t.spots:
            return RoundBook(t.header, self.entries, self.order, self.spots)
        return RoundBook(t.header, {**self.entries, **t.entries}, {**self.order, **t.order},
                          {**self.spots, **t.spots})

    @property
    def status(self) -> Status:
        return self.header.status

    @property
    def profile(self) -> str | None:
        return self.header.profile

    @property
    def manifest(self) -> RoundManifest | None:
        return self.header.manifest

    def _in_order(self) -> list[BetEntry]:
        return [self.entries[self.order[k]] for k in sorted(self.order)]

    @property
    def pending(self) -> list[BetPlaced]:
        return [e.bet for e in self._in_order() if e.decision is None]

    @property
    def accepted(self) -> dict[str, BetPlaced]:
        return {e.bet.bet_id: e.bet for e in self._in_order()
                if isinstance(e.decision, BetAccepted)}

    @property
    def settlements(self) -> dict[str, BetSettled]:
        return {e.bet.bet_id: e.settlement for e in self._in_order()
                if e.settlement is not None}


_NO_BETS = RoundBook(RoundHeader(table_id="", round_id=""))


def _run(state: RoundBook | None, step: Callable[[RoundHeader | None, RoundBets], Transition]
         ) -> tuple[RoundBook, list[Output]]:
    t = step(None if state is None else state.header, state or _NO_BETS)
    return (state or _NO_BETS).apply(t), t.out


def on_bet(state: RoundBook | None, bet: BetPlaced, now: datetime
           ) -> tuple[RoundBook, list[Output]]:
    return _run(state, lambda h, b: place(h, b, bet, now))


def on_table_event(state: RoundBook | None, event: TableEventBase, now: datetime
                   ) -> tuple[RoundBook, list[Output]]:
    return _run(state, lambda h, b: apply_table_event(h, b, event, now))


def on_result(state: RoundBook | None, published: RoundResultPublished, now: datetime,
              result_at: datetime | None = None) -> tuple[RoundBook, list[Output]]:
    return _run(state, lambda h, b: apply_result(h, b, published, now, result_at))


def on_mark(state: RoundBook | None, mark: IntakeMark, now: datetime
            ) -> tuple[RoundBook, list[Output]]:
    return _run(state, lambda h, b: apply_mark(h, b, mark, now))


def expire_pending(state: RoundBook, now: datetime) -> tuple[RoundBook, list[Output]]:
    return _run(state, lambda h, b: expire(state.header, b, now))


def conflicting_settlements(state: RoundBook, record: RoundResultPublished | RoundVoided,
                            now: datetime | None = None) -> list[str]:
    return conflicts(state.header, state, record)
