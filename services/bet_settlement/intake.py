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
`RoundBets` is the read side the functions need; the service backs it with its Faust tables,
tests with an in-memory `RoundState`.

A record seen again re-publishes what was decided the first time (the first publication may
have been lost in a crash; consumers are idempotent on the ids), and never decides twice.
Bets that arrive before their round's RoundOpened (the topics are read independently) are
stored undecided ("pending"); they are decided when the round opens, or rejected
`unknown_round` when the table opens another round.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from shared.events.bet_events import (
    EMPTY_DIGEST,
    BetAccepted,
    BetFacts,
    BetPlaced,
    BetRejected,
    BetSettled,
    RoundManifest,
    digest_add,
    settlement_id,
)
from shared.events.results import RoundResultPublished
from shared.events.table import BettingClosed, RoundOpened, RoundVoided, TableEventBase
from shared.profile import ProfileError, load_profile
from shared.settlement import Bet, BetError, settle, validate_bet

log = logging.getLogger(__name__)
Status = Literal["pending", "open", "closed", "settled", "voided", "unknown"]
Output = tuple[str, str, BaseModel]  # topic, key, record
Decision = Annotated[BetAccepted | BetRejected, Field(discriminator="type")]


class RoundHeader(BaseModel):
    """What every record of the round needs; bounded whatever the number of bets."""

    model_config = ConfigDict(frozen=True)

    table_id: str
    round_id: str
    status: Status = "pending"
    profile: str | None = None
    received: int = 0  # distinct bet ids stored (the ordinal index runs 1..received)
    accepted: int = 0
    total_stake: int = 0  # of the accepted bets, minor units
    digest: str = EMPTY_DIGEST  # manifest digest of the accepted bet ids, kept incrementally
    manifest: RoundManifest | None = None
    cause: str | None = None  # the result id or "void:<table>:<round>" that settled it


class BetEntry(BaseModel):
    """One bet of the round: what was placed, what was decided, how it was settled."""

    model_config = ConfigDict(frozen=True)

    ordinal: int
    bet: BetPlaced
    decision: Decision | None = None
    settlement: BetSettled | None = None


class RoundBets(Protocol):
    """Point reads of one round's bets."""

    def entry(self, bet_id: str) -> BetEntry | None: ...

    def bet_at(self, ordinal: int) -> str | None: ...


@dataclass(frozen=True)
class Transition:
    """A round's new header, the bet entries and ordinals to write, the records to publish."""

    header: RoundHeader
    entries: dict[str, BetEntry] = field(default_factory=dict)
    order: dict[int, str] = field(default_factory=dict)
    out: list[Output] = field(default_factory=list)


def round_key(table_id: str, round_id: str) -> str:
    return f"{table_id}:{round_id}"


# Table ids have no ':' and bet and round ids no '/', so no key can be read two ways.
def bet_key(table_id: str, round_id: str, bet_id: str) -> str:
    return f"{table_id}:{round_id}/b/{bet_id}"


def order_key(table_id: str, round_id: str, ordinal: int) -> str:
    return f"{table_id}:{round_id}/n/{ordinal}"


def _facts(bet: BetFacts) -> dict:
    return {name: getattr(bet, name) for name in _FACT_FIELDS}


_FACT_FIELDS = tuple(name for name in BetFacts.model_fields if name != "schema_version")


def _reject(bet: BetPlaced, code: str, message: str, now: datetime) -> BetRejected:
    return BetRejected(**_facts(bet), reason_code=code, message=message, decided_at=now)


def _out(record: BaseModel, table_id: str) -> Output:
    topic = "bets.settled" if isinstance(record, BetSettled) else "bets.decisions"
    return topic, table_id, record


class _Writer:
    """Builds one transition: reads see the writes made so far."""

    def __init__(self, header: RoundHeader, bets: RoundBets) -> None:
        self.header = header
        self.bets = bets
        self.entries: dict[str, BetEntry] = {}
        self.order: dict[int, str] = {}
        self.out: list[Output] = []

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

    def update(self, **changes) -> None:
        self.header = self.header.model_copy(update=changes)

    def publish(self, record: BaseModel) -> None:
        self.out.append(_out(record, self.header.table_id))

    def done(self) -> Transition:
        return Transition(self.header, self.entries, self.order, self.out)

    def decide(self, entry: BetEntry, now: datetime) -> None:
        """Accept while open and valid for the table, else reject naming why."""
        h, bet = self.header, entry.bet
        decision: BetAccepted | BetRejected
        if h.status != "open":
            reason = "unknown_round" if h.status in ("pending", "unknown") else "round_closed"
            decision = _reject(bet, reason, f"round {bet.round_id!r} is {h.status}: "
                                            "bets are accepted only while it is open", now)
        else:
            try:
                validate_bet(Bet(bet=bet.bet, position=bet.position, stake=bet.stake),
                             load_profile(h.profile))
                decision = BetAccepted(**_facts(bet), decided_at=now)
            except (BetError, ProfileError) as exc:
                decision = _reject(bet, getattr(exc, "code", "unknown_profile"), str(exc), now)
        if isinstance(decision, BetAccepted):
            self.update(accepted=h.accepted + 1, total_stake=h.total_stake + bet.stake,
                        digest=digest_add(h.digest, bet.bet_id))
        self.entries[bet.bet_id] = entry.model_copy(update={"decision": decision})
        self.publish(decision)

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
        h = self.header
        manifest = RoundManifest(table_id=h.table_id, round_id=h.round_id,
                                 bet_count=h.accepted, total_stake=h.total_stake,
                                 digest=h.digest, closed_at=closed_at)
        self.update(status="closed", manifest=manifest)
        self.publish(manifest)

    def settle_all(self, amounts, status: Status, cause: str, now: datetime, **timing) -> None:
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


def _new(header: RoundHeader | None, table_id: str, round_id: str) -> RoundHeader:
    return header or RoundHeader(table_id=table_id, round_id=round_id)


def place(header: RoundHeader | None, bets: RoundBets, bet: BetPlaced, now: datetime
          ) -> Transition:
    """A funded bet: decided now if its round opened, else stored undecided until it does."""
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
    else:
        w.decide(entry, now)
    return w.done()


def expire(header: RoundHeader, bets: RoundBets, now: datetime) -> Transition:
    """The table opened another round: this one never opened, its waiting bets are rejected."""
    w = _Writer(header, bets)
    w.give_up_if_pending(now)
    return w.done()


def apply_table_event(header: RoundHeader | None, bets: RoundBets, event: TableEventBase,
                      now: datetime) -> Transition:
    w = _Writer(_new(header, event.table_id, getattr(event, "round_id", None)), bets)
    status = w.header.status
    if isinstance(event, RoundOpened):
        if status == "pending":
            w.update(status="open", profile=event.profile)
            w.decide_pending(now)
    elif isinstance(event, BettingClosed):
        if status == "open":
            w.close(event.occurred_at)
        elif w.header.manifest is not None:
            w.publish(w.header.manifest)
    elif isinstance(event, RoundVoided):
        _void(w, event, now)
    return w.done()


def _void(w: _Writer, event: RoundVoided, now: datetime) -> None:
    h = w.header
    if h.status in ("voided", "settled"):
        if h.status == "settled":
            log.error("void of round %s after it was settled ignored", h.round_id)
        w.republish_settlements()
        return
    w.give_up_if_pending(now)
    w.settle_all(lambda bet: ("void_refund", bet.stake), "voided",
                 f"void:{h.table_id}:{h.round_id}", now, result_at=event.occurred_at)


def _by_rules(profile_name: str, published: RoundResultPublished):
    profile = load_profile(profile_name)

    def amounts(bet: BetPlaced) -> tuple[str, int]:
        s = settle(Bet(bet=bet.bet, position=bet.position, stake=bet.stake),
                   published.result, profile)
        return s.outcome, s.returned
    return amounts


def apply_result(header: RoundHeader | None, bets: RoundBets, published: RoundResultPublished,
                 now: datetime, result_at: datetime | None = None) -> Transition:
    """Settle every accepted bet with the rule engine, once. `result_at`: when the result was
    published (the record's broker timestamp), else the result's own time."""
    w = _Writer(_new(header, published.table_id, published.round_id), bets)
    if w.header.status in ("settled", "voided"):
        if w.header.status == "voided":
            log.error("result %s for voided round %s ignored", published.result_id,
                      w.header.round_id)
        w.republish_settlements()
        return w.done()
    if w.header.status == "open":  # the result came before the close: close first
        w.close(published.occurred_at)
    w.give_up_if_pending(now)
    w.settle_all(_by_rules(w.header.profile or published.profile, published), "settled",
                 published.result_id, now, result_at=result_at or published.occurred_at,
                 last_card_at=published.last_card_at)
    return w.done()


def conflicts(header: RoundHeader | None, bets: RoundBets,
              record: RoundResultPublished | RoundVoided) -> list[str]:
    """Bets of an already settled (or voided) round that `record` would settle for a
    different amount: the round is being asked to settle twice, differently."""
    if header is None or header.status not in ("settled", "voided"):
        return []
    amounts = ((lambda bet: ("void_refund", bet.stake)) if isinstance(record, RoundVoided)
               else _by_rules(header.profile or record.profile, record))
    return sorted(e.bet.bet_id for e in _Writer(header, bets).walk()
                  if e.settlement is not None and e.settlement.returned != amounts(e.bet)[1])


# --- an in-memory round: tests, tools and the cost measurement ----------------------------

@dataclass(frozen=True)
class RoundState:
    """A whole round in memory (header + entries + index), implementing `RoundBets`.
    `apply` returns a new state and leaves this one as it was."""

    header: RoundHeader
    entries: Mapping[str, BetEntry] = field(default_factory=dict)
    order: Mapping[int, str] = field(default_factory=dict)

    def entry(self, bet_id: str) -> BetEntry | None:
        return self.entries.get(bet_id)

    def bet_at(self, ordinal: int) -> str | None:
        return self.order.get(ordinal)

    def apply(self, t: Transition) -> RoundState:
        if not t.entries and not t.order:
            return RoundState(t.header, self.entries, self.order)
        return RoundState(t.header, {**self.entries, **t.entries}, {**self.order, **t.order})

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


_NO_BETS = RoundState(RoundHeader(table_id="", round_id=""))


def _run(state: RoundState | None, t: Transition) -> tuple[RoundState, list[Output]]:
    return (state or _NO_BETS).apply(t), t.out


def on_bet(state: RoundState | None, bet: BetPlaced, now: datetime
           ) -> tuple[RoundState, list[Output]]:
    bets = state or _NO_BETS
    return _run(state, place(state and state.header, bets, bet, now))


def on_table_event(state: RoundState | None, event: TableEventBase, now: datetime
                   ) -> tuple[RoundState, list[Output]]:
    bets = state or _NO_BETS
    return _run(state, apply_table_event(state and state.header, bets, event, now))


def on_result(state: RoundState | None, published: RoundResultPublished, now: datetime,
              result_at: datetime | None = None) -> tuple[RoundState, list[Output]]:
    bets = state or _NO_BETS
    return _run(state, apply_result(state and state.header, bets, published, now, result_at))


def expire_pending(state: RoundState, now: datetime) -> tuple[RoundState, list[Output]]:
    return _run(state, expire(state.header, state, now))


def conflicting_settlements(state: RoundState, record: RoundResultPublished | RoundVoided,
                            now: datetime | None = None) -> list[str]:
    return conflicts(state.header, state, record)
