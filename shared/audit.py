"""The platform's books, folded from the log alone, and the money invariants checked on them.

Pure: hand it the records of `bets.placed`, `bets.decisions`, `bets.settled`,
`round.results` and `wallet.transactions` in log order and it recomputes every
settlement with the rule engine and every balance from the ledger. The demo's
summary, the end-to-end test and `croupier rebuild` all read the same books.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction

from pydantic import BaseModel

from shared.events.bet_events import BetAccepted, BetPlaced, BetRejected, BetSettled, RoundManifest
from shared.events.results import RoundResultPublished
from shared.events.wallet_events import WalletTransaction
from shared.profile import load_profile
from shared.rtp import exact_rtp
from shared.settlement import Bet, settle

AuditRecord = (BetPlaced | BetAccepted | BetRejected | RoundManifest | BetSettled
               | RoundResultPublished | WalletTransaction)


class InvariantCheck(BaseModel):
    name: str
    ok: bool
    checked: int
    problems: list[str] = []


class BetTypeReturn(BaseModel):
    profile: str
    bet: str
    bets: int
    stake: int
    returned: int
    realised_rtp: float
    exact_rtp: float
    z_score: float | None


class AuditReport(BaseModel):
    rounds: int
    bets: int
    rejected: int
    settled: int
    voided: int
    pending: int
    stake: int
    payout: int
    refunds: int
    house_result: int
    deposits: int
    withdrawals: int
    balances: dict[str, int]
    returns: list[BetTypeReturn]
    invariants: list[InvariantCheck]

    @property
    def invariants_ok(self) -> bool:
        return all(check.ok for check in self.invariants)


@dataclass
class Books:
    """Everything the log says, deduplicated by each record's deterministic id."""

    placed: dict[str, BetPlaced] = field(default_factory=dict)
    accepted: dict[str, BetAccepted] = field(default_factory=dict)
    rejected: dict[str, BetRejected] = field(default_factory=dict)
    settled: dict[str, BetSettled] = field(default_factory=dict)
    manifests: dict[tuple[str, str], RoundManifest] = field(default_factory=dict)
    results: dict[tuple[str, str], RoundResultPublished] = field(default_factory=dict)
    txs: dict[str, WalletTransaction] = field(default_factory=dict)
    ledger: dict[str, list[WalletTransaction]] = field(default_factory=lambda: defaultdict(list))
    conflicts: list[str] = field(default_factory=list)

    def add(self, record: AuditRecord) -> None:
        match record:
            case WalletTransaction():
                if self._keep(self.txs, record.tx_id, record, "wallet transaction"):
                    self.ledger[record.player_id].append(record)
            case BetPlaced():
                self._keep(self.placed, record.bet_id, record, "bet placed")
            case BetAccepted():
                self._keep(self.accepted, record.bet_id, record, "bet accepted")
            case BetRejected():
                self._keep(self.rejected, record.bet_id, record, "bet rejected")
            case BetSettled():
                self._keep(self.settled, record.bet_id, record, "settlement")
            case RoundManifest():
                self._keep(self.manifests, (record.table_id, record.round_id), record, "manifest")
            case RoundResultPublished():
                self._keep(self.results, (record.table_id, record.round_id), record, "result")

    def only(self, tables: set[str], players: set[str]) -> Books:
        """The part of the books about these tables and these players (one demo session)."""
        part = Books()
        for index in ("placed", "accepted", "rejected", "settled"):
            getattr(part, index).update({k: r for k, r in getattr(self, index).items()
                                         if r.table_id in tables})
        for index in ("manifests", "results"):
            getattr(part, index).update({k: r for k, r in getattr(self, index).items()
                                         if k[0] in tables})
        for player in players:
            for tx in self.ledger.get(player, []):
                part.add(tx)
        return part

    def _keep(self, index: dict, key, record, what: str) -> bool:
        """A redelivered record is identical and counts once; a different one is a conflict.
        True when the record is new."""
        known = index.get(key)
        if known is None:
            index[key] = record
            return True
        if _facts(known) != _facts(record):
            self.conflicts.append(f"{what} {key}: two different records with the same id")
        return False


def _facts(record: BaseModel) -> dict:
    """A record's content without the times a redelivery may restamp."""
    return record.model_dump(exclude={"occurred_at", "decided_at", "settled_at", "placed_at",
                                      "closed_at"})


def audit(books: Books, allow_pending: bool = True) -> AuditReport:
    sums = _sums(books)  # one pass over the ledger for every kind's total
    stake_debits, payouts, refunds = sums["stake_debit"], sums["payout"], sums["bet_refund"]
    voided = [s for s in books.settled.values() if s.outcome == "void_refund"]
    settled = [s for s in books.settled.values() if s.outcome != "void_refund"]
    pending = [b for b in books.placed if b not in books.settled and b not in books.rejected]
    house_by_round = sum(s.stake - s.returned for s in settled)
    checks = [
        _balances_never_negative(books),
        _ledger_adds_up(books),
        _each_bet_ends_once(books, allow_pending),
        _settlements_match_rules(books),
        _wallet_follows_decisions(books),
        _house_result_adds_up(books, stake_debits, payouts, refunds, house_by_round, pending),
        InvariantCheck(name="no conflicting records", ok=not books.conflicts,
                       checked=len(books.txs) + len(books.settled), problems=books.conflicts[:20]),
    ]
    return AuditReport(
        rounds=len(books.results), bets=len(books.placed), rejected=len(books.rejected),
        settled=len(settled), voided=len(voided), pending=len(pending),
        stake=stake_debits, payout=payouts, refunds=refunds,
        house_result=stake_debits - payouts - refunds,
        deposits=sums["deposit"], withdrawals=sums["withdrawal"],
        balances={p: txs[-1].balance_after for p, txs in sorted(books.ledger.items())},
        returns=_returns(settled, books), invariants=checks,
    )


def _sums(books: Books) -> dict[str, int]:
    """Each kind's total amount (0 for a kind never seen)."""
    sums: dict[str, int] = defaultdict(int)
    for tx in books.txs.values():
        sums[tx.kind] += tx.amount
    return sums


def _balances_never_negative(books: Books) -> InvariantCheck:
    bad = [f"{tx.tx_id}: balance_after {tx.balance_after}" for tx in books.txs.values()
           if tx.balance_after < 0]
    return InvariantCheck(name="a balance never goes negative", ok=not bad,
                          checked=len(books.txs), problems=bad[:20])


def _ledger_adds_up(books: Books) -> InvariantCheck:
    """balance = deposits − withdrawals − stakes + refunds + payouts, after every movement."""
    bad = []
    for player, txs in books.ledger.items():
        running = 0
        for tx in txs:
            running += tx.signed_amount
            if running != tx.balance_after:
                bad.append(f"{player} at {tx.tx_id}: movements add up to {running}, "
                           f"recorded balance {tx.balance_after}")
                running = tx.balance_after
    return InvariantCheck(name="per player: balance = deposits - withdrawals - stakes + refunds "
                               "+ payouts", ok=not bad, checked=len(books.ledger), problems=bad[:20])


def _each_bet_ends_once(books: Books, allow_pending: bool) -> InvariantCheck:
    bad = []
    for bet_id in books.placed:
        ends = (bet_id in books.rejected) + (bet_id in books.settled)
        if ends > 1:
            bad.append(f"bet {bet_id}: both rejected and settled")
        elif ends == 0 and not allow_pending:
            bad.append(f"bet {bet_id}: never rejected, settled or voided")
    for bet_id in set(books.settled) | set(books.rejected):
        if bet_id not in books.placed:
            bad.append(f"bet {bet_id}: decided but never placed")
    return InvariantCheck(name="every bet ends in exactly one of rejected, settled, voided",
                          ok=not bad, checked=len(books.placed), problems=bad[:20])


def _settlements_match_rules(books: Books) -> InvariantCheck:
    bad = []
    for s in books.settled.values():
        if s.outcome == "void_refund":
            if s.returned != s.stake:
                bad.append(f"{s.settlement_id}: void refund {s.returned} != stake {s.stake}")
            continue
        recorded = books.results.get((s.table_id, s.round_id))
        if recorded is None:
            bad.append(f"{s.settlement_id}: no result for round {s.table_id}/{s.round_id}")
            continue
        want = settle(Bet(bet=s.bet, position=s.position, stake=s.stake), recorded.result,
                      load_profile(recorded.profile))
        if (want.outcome, want.returned) != (s.outcome, s.returned):
            bad.append(f"{s.settlement_id}: recorded {s.outcome} {s.returned}, "
                       f"rule engine says {want.outcome} {want.returned}")
    return InvariantCheck(name="every settlement equals the rule engine's", ok=not bad,
                          checked=len(books.settled), problems=bad[:20])


def _wallet_follows_decisions(books: Books) -> InvariantCheck:
    """Each bet debited once for its stake; each rejection refunded, each settlement credited."""
    bad = []
    by_cause: dict[tuple[str, str], list[WalletTransaction]] = defaultdict(list)
    for tx in books.txs.values():
        by_cause[(tx.kind, tx.cause_id)].append(tx)
    for bet in books.placed.values():
        debits = by_cause.get(("stake_debit", bet.bet_id), [])
        if [d.amount for d in debits] != [bet.stake]:
            bad.append(f"bet {bet.bet_id}: stake debits {[d.amount for d in debits]}, "
                       f"stake {bet.stake}")
    for rej in books.rejected.values():
        refunds = by_cause.get(("bet_refund", rej.bet_id), [])
        if [r.amount for r in refunds] != [rej.stake]:
            bad.append(f"rejected bet {rej.bet_id}: refunds {[r.amount for r in refunds]}")
    for s in books.settled.values():
        credits = (by_cause.get(("payout", s.settlement_id), [])
                   + by_cause.get(("bet_refund", s.bet_id), [])
                   + by_cause.get(("payout", s.bet_id), []))
        want = [s.returned] if s.returned else []
        if [c.amount for c in credits] != want:
            bad.append(f"{s.settlement_id}: credits {[c.amount for c in credits]}, "
                       f"settlement returned {s.returned}")
    return InvariantCheck(name="the wallet moved each bet's money exactly once", ok=not bad,
                          checked=len(books.placed) + len(books.settled), problems=bad[:20])


def _house_result_adds_up(books: Books, stakes: int, payouts: int, refunds: int,
                          house_by_round: int, pending: list[str]) -> InvariantCheck:
    in_play = sum(books.placed[b].stake for b in pending)
    ledger = stakes - payouts - refunds
    ok = ledger == house_by_round + in_play
    problem = [] if ok else [f"stakes - payouts - refunds = {ledger}, settled rounds give "
                             f"{house_by_round} with {in_play} still in play"]
    return InvariantCheck(name="stakes - payouts - refunds = house result = sum over settled "
                               "rounds", ok=ok, checked=len(books.settled), problems=problem)


def _returns(settled: list[BetSettled], books: Books) -> list[BetTypeReturn]:
    groups: dict[tuple[str, str], list[BetSettled]] = defaultdict(list)
    for s in settled:
        result = books.results.get((s.table_id, s.round_id))
        if result is not None:
            groups[(result.profile, s.bet)].append(s)
    exact_cache: dict[str, dict] = {}
    rows = []
    for (profile_name, bet), items in sorted(groups.items()):
        if profile_name not in exact_cache:
            exact_cache[profile_name] = exact_rtp(load_profile(profile_name)).bets
        exact = exact_cache[profile_name][bet]
        stake = sum(s.stake for s in items)
        returned = sum(s.returned for s in items)
        # bets on one outcome in one round win or lose together: their stakes add before
        # squaring, or the standard error comes out too small on busy tables
        per_round: dict[tuple, int] = defaultdict(int)
        for s in items:
            per_round[(s.table_id, s.round_id, s.position)] += s.stake
        se = math.sqrt(float(exact.variance) * sum(v * v for v in per_round.values())) / stake
        realised = Fraction(returned, stake)
        rows.append(BetTypeReturn(
            profile=profile_name, bet=bet, bets=len(items), stake=stake, returned=returned,
            realised_rtp=float(realised), exact_rtp=float(exact.rtp),
            z_score=float(realised - exact.rtp) / se if se > 0 else None,
        ))
    return rows
