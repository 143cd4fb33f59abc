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
from typing import Any, TypeVar

from pydantic import BaseModel

from shared.bets import Position
from shared.events.bet_events import (
    BetAccepted,
    BetPlaced,
    BetRejected,
    BetSettled,
    RoundManifest,
    SettlementReversed,
    annul_refund_id,
)
from shared.events.operator_wallet import OperatorCallRecord
from shared.events.results import RoundResultPublished
from shared.events.wallet_events import WalletTransaction
from shared.profile import pin_mismatch, round_profile
from shared.rtp import BetReturn, exact_rtp
from shared.settlement import Bet, settle

AuditRecord = (BetPlaced | BetAccepted | BetRejected | RoundManifest | BetSettled
               | SettlementReversed | RoundResultPublished | WalletTransaction
               | OperatorCallRecord)


class InvariantCheck(BaseModel):
    name: str
    ok: bool
    checked: int
    problems: list[str] = []


class BetTypeReturn(BaseModel):
    profile: str
    version: int = 1  # the profile version the rounds were settled under
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
    annulled: int = 0  # settled, then reversed and refunded (a management void after completion)
    reversals: int = 0  # payouts taken back by the wallet (payout_reversal), minor units
    deposits: int
    withdrawals: int
    balances: dict[str, int]
    returns: list[BetTypeReturn]
    invariants: list[InvariantCheck]

    @property
    def invariants_ok(self) -> bool:
        return all(check.ok for check in self.invariants)


Key = tuple[str, str]  # (player id, bet id or tx id): ids are the player's, as in the wallet
_Record = TypeVar("_Record", bound=BaseModel)


def key_text(key: Key) -> str:
    """A (player, id) key as a report names it: `<id> of <player>`."""
    return f"{key[1]} of {key[0]}"


@dataclass
class Books:
    """Everything the log says, deduplicated by each record's deterministic id.

    Bets and wallet transactions are keyed by (player id, id), as the wallet keys them
    (`<player>:<bet id>`, `<player>:<tx id>`): a bet id or a request id is the player's
    own, so two players may both use `dep-1` or the same bet id."""

    placed: dict[Key, BetPlaced] = field(default_factory=dict)
    accepted: dict[Key, BetAccepted] = field(default_factory=dict)
    rejected: dict[Key, BetRejected] = field(default_factory=dict)
    settled: dict[Key, BetSettled] = field(default_factory=dict)  # (player, bet) -> settlement
    # a management void after completion: (player, bet) -> the reversal of its settlement, and
    # the refund that follows it (a BetSettled `void_refund`, settlement id `annul-refund:<bet>`)
    reversals: dict[Key, SettlementReversed] = field(default_factory=dict)
    refunds: dict[Key, BetSettled] = field(default_factory=dict)
    manifests: dict[tuple[str, str], RoundManifest] = field(default_factory=dict)
    results: dict[tuple[str, str], RoundResultPublished] = field(default_factory=dict)
    txs: dict[Key, WalletTransaction] = field(default_factory=dict)
    ledger: dict[str, list[WalletTransaction]] = field(default_factory=lambda: defaultdict(list))
    conflicts: list[str] = field(default_factory=list)
    # seamless mode: the players whose money the operator's wallet holds (they have calls
    # on wallet.operator_calls); croupier's balance of theirs is its net at the tables
    seamless: set[str] = field(default_factory=set)

    def add(self, record: AuditRecord) -> None:
        match record:
            case OperatorCallRecord():
                self.seamless.add(record.request.player_id)
            case WalletTransaction():
                if self._keep(self.txs, (record.player_id, record.tx_id), record,
                              "wallet transaction"):
                    self.ledger[record.player_id].append(record)
            case BetPlaced():
                self._keep(self.placed, bet_key(record), record, "bet placed")
            case BetAccepted():
                self._keep(self.accepted, bet_key(record), record, "bet accepted")
            case BetRejected():
                self._keep(self.rejected, bet_key(record), record, "bet rejected")
            case BetSettled() if record.settlement_id == annul_refund_id(record.bet_id):
                self._keep(self.refunds, bet_key(record), record, "refund after a reversal")
            case BetSettled():
                self._keep(self.settled, bet_key(record), record, "settlement")
            case SettlementReversed():
                self._keep(self.reversals, bet_key(record), record, "settlement reversal")
            case RoundManifest():
                self._keep(self.manifests, (record.table_id, record.round_id), record, "manifest")
            case RoundResultPublished():
                self._keep(self.results, (record.table_id, record.round_id), record, "result")

    def only(self, tables: set[str], players: set[str]) -> Books:
        """The part of the books about these tables and these players (one demo session)."""
        part = Books()
        for index in ("placed", "accepted", "rejected", "settled", "reversals", "refunds"):
            getattr(part, index).update({k: r for k, r in getattr(self, index).items()
                                         if r.table_id in tables})
        for index in ("manifests", "results"):
            getattr(part, index).update({k: r for k, r in getattr(self, index).items()
                                         if k[0] in tables})
        for player in players:
            for tx in self.ledger.get(player, []):
                part.add(tx)
        part.seamless = self.seamless & players
        return part

    def _keep(self, index: dict[Key, _Record], key: Key, record: _Record, what: str) -> bool:
        """A redelivered record is identical and counts once; a different one is a conflict.
        True when the record is new."""
        known = index.get(key)
        if known is None:
            index[key] = record
            return True
        if _facts(known) != _facts(record):
            name = key_text(key) if index is not self.manifests and index is not self.results \
                else "/".join(key)
            self.conflicts.append(f"{what} {name}: two different records with the same id")
        return False


def bet_key(record: BetPlaced | BetAccepted | BetRejected | BetSettled | SettlementReversed
            ) -> Key:
    return record.player_id, record.bet_id


def _facts(record: BaseModel) -> dict[str, Any]:
    """A record's content without the times a redelivery may restamp."""
    return record.model_dump(exclude={"occurred_at", "decided_at", "settled_at", "placed_at",
                                      "closed_at", "reversed_at"})


def audit(books: Books, allow_pending: bool = True) -> AuditReport:
    sums = _sums(books)  # one pass over the ledger for every kind's total
    stake_debits, payouts, refunds = sums["stake_debit"], sums["payout"], sums["bet_refund"]
    reversals = sums["payout_reversal"]
    voided = [s for s in books.settled.values() if s.outcome == "void_refund"]
    # settled and standing; a settled bet later reversed and refunded counts as annulled
    settled = [s for key, s in books.settled.items()
               if s.outcome != "void_refund" and key not in books.reversals]
    annulled = [b for b in books.reversals if b in books.refunds]
    unsettled = [b for b in books.placed if b not in books.settled and b not in books.rejected]
    # in flight: never settled, or reversed and not refunded yet
    pending = unsettled + [b for b in books.reversals
                           if b in books.placed and b not in books.refunds]
    house_by_round = (sum(s.stake - s.returned for s in books.settled.values()
                          if s.outcome != "void_refund")
                      + sum(r.amount for r in books.reversals.values())
                      - sum(r.returned for r in books.refunds.values()))
    checks = [
        _balances_never_negative(books),
        _ledger_adds_up(books),
        _each_bet_ends_once(books, allow_pending),
        _settlements_match_rules(books),
        _wallet_follows_decisions(books),
        _house_result_adds_up(books, stake_debits, payouts, refunds, reversals, house_by_round,
                              unsettled),
        InvariantCheck(name="no conflicting records", ok=not books.conflicts,
                       checked=len(books.txs) + len(books.settled), problems=books.conflicts[:20]),
    ]
    return AuditReport(
        rounds=len(books.results), bets=len(books.placed), rejected=len(books.rejected),
        settled=len(settled), voided=len(voided), pending=len(pending), annulled=len(annulled),
        stake=stake_debits, payout=payouts, refunds=refunds, reversals=reversals,
        house_result=stake_debits - payouts - refunds + reversals,
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
    """Money a player takes out (a stake, a withdrawal) never leaves the balance negative; only
    a payout reversal the balance could not cover may (the player owes it, and what follows
    pays it back). A seamless player's balance is the operator's: croupier's is its net at
    the tables, and reconciliation compares the operator's wallet with the calls."""
    bad = [f"{tx.tx_id} of {tx.player_id}: balance_after {tx.balance_after}"
           for tx in books.txs.values()
           if tx.balance_after < 0 and tx.kind != "payout_reversal"
           and tx.player_id not in books.seamless  # a net, below zero while the player is down
           and (tx.kind in ("stake_debit", "withdrawal") or not _in_debt_by_reversal(books, tx))]
    return InvariantCheck(name="a balance never goes negative", ok=not bad,
                          checked=len(books.txs), problems=bad[:20])


def _in_debt_by_reversal(books: Books, tx: WalletTransaction) -> bool:
    """Whether the player's balance was last made negative by a payout reversal (a credit
    after it may leave the balance negative still)."""
    debt_from = None
    for earlier in books.ledger.get(tx.player_id, []):
        if earlier.tx_id == tx.tx_id:
            return debt_from == "payout_reversal"
        if earlier.balance_after >= 0:
            debt_from = None
        elif debt_from is None:
            debt_from = earlier.kind
    return False


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
    """A bet ends rejected, settled, voided, or annulled: settled, that settlement reversed,
    then refunded (one reversal and one refund at most, only after a settlement)."""
    bad = []
    for key, placed in books.placed.items():
        bet_id = key_text(key)
        ends = (key in books.rejected) + (key in books.settled)
        reversed_, refunded = key in books.reversals, key in books.refunds
        if ends > 1:
            bad.append(f"bet {bet_id}: both rejected and settled")
        elif ends == 0 and not allow_pending:
            where = (placed.table_id, placed.round_id)
            bad.append(f"bet {bet_id}: never rejected, settled or voided (round {where[1]} of "
                       f"table {where[0]}: {'accepted' if key in books.accepted else 'undecided'}"
                       f", {'a result' if where in books.results else 'no result'} on record)")
        if reversed_ and key not in books.settled:
            bad.append(f"bet {bet_id}: reversed, but never settled")
        if refunded and not reversed_:
            bad.append(f"bet {bet_id}: refunded ({annul_refund_id(key[1])}) after its settlement "
                       "without a reversal: paid twice")
        elif reversed_ and not refunded and not allow_pending:
            bad.append(f"bet {bet_id}: its settlement was reversed, the refund never followed")
    for key in set(books.settled) | set(books.rejected) | set(books.reversals) \
            | set(books.refunds):
        if key not in books.placed:
            bad.append(f"bet {key_text(key)}: decided but never placed")
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
        mismatch = pin_mismatch(recorded.profile, recorded.profile_version,
                                recorded.profile_digest)
        if mismatch:
            bad.append(f"{s.settlement_id}: {mismatch}")
            continue
        # the rules the round was played under, not today's (a paytable may have changed)
        want = settle(Bet(bet=s.bet, position=s.position, stake=s.stake), recorded.result,
                      round_profile(recorded.profile, recorded.profile_version))
        if (want.outcome, want.returned) != (s.outcome, s.returned):
            bad.append(f"{s.settlement_id}: recorded {s.outcome} {s.returned}, "
                       f"rule engine says {want.outcome} {want.returned}")
    for key, r in books.reversals.items():  # takes back exactly what the settlement returned
        original = books.settled.get(key)
        if original is not None and (r.settlement_id, r.original_outcome, r.amount) != (
                original.settlement_id, original.outcome, original.returned):
            bad.append(f"{r.reversal_id}: reverses {r.settlement_id} {r.original_outcome} "
                       f"{r.amount}, the settlement was {original.settlement_id} "
                       f"{original.outcome} {original.returned}")
    for f in books.refunds.values():  # then refunds the stake
        if (f.outcome, f.returned) != ("void_refund", f.stake):
            bad.append(f"{f.settlement_id}: refund after a reversal {f.outcome} {f.returned}, "
                       f"expected void_refund {f.stake}")
    return InvariantCheck(name="every settlement equals the rule engine's", ok=not bad,
                          checked=len(books.settled) + len(books.reversals) + len(books.refunds),
                          problems=bad[:20])


def _wallet_follows_decisions(books: Books) -> InvariantCheck:
    """Each bet debited once for its stake; each rejection refunded, each settlement credited,
    each reversal debited, each refund after a reversal credited: every one exactly once."""
    bad = []
    # (player, kind, cause): a cause id is the player's own, as the wallet keys it
    by_cause: dict[tuple[str, str, str], list[WalletTransaction]] = defaultdict(list)
    for tx in books.txs.values():
        by_cause[(tx.player_id, tx.kind, tx.cause_id)].append(tx)

    def moved(player: str, *causes: tuple[str, str]) -> list[int]:
        return [tx.amount for kind, cause in causes
                for tx in by_cause.get((player, kind, cause), [])]

    for bet in books.placed.values():
        debits = moved(bet.player_id, ("stake_debit", bet.bet_id))
        if debits != [bet.stake]:
            bad.append(f"bet {bet.bet_id} of {bet.player_id}: stake debits {debits}, "
                       f"stake {bet.stake}")
    for rej in books.rejected.values():
        refunds = moved(rej.player_id, ("bet_refund", rej.bet_id))
        if refunds != [rej.stake]:
            bad.append(f"rejected bet {rej.bet_id} of {rej.player_id}: refunds {refunds}")
    for key, s in books.settled.items():
        if s.outcome == "void_refund":
            credits = moved(s.player_id, ("bet_refund", s.bet_id), ("payout", s.settlement_id))
        else:  # an annulled bet's refund may also be keyed by its bet id: not counted here
            credits = moved(s.player_id, ("payout", s.settlement_id), ("payout", s.bet_id))
            if key not in books.refunds:
                credits += moved(s.player_id, ("bet_refund", s.bet_id))
        want = [s.returned] if s.returned else []
        if credits != want:
            bad.append(f"{s.settlement_id} of {s.player_id}: credits {credits}, settlement "
                       f"returned {s.returned}")
    for r in books.reversals.values():
        debits = moved(r.player_id, ("payout_reversal", r.reversal_id))
        if debits != ([r.amount] if r.amount else []):
            bad.append(f"{r.reversal_id} of {r.player_id}: wallet took back {debits}, the "
                       f"reversal says {r.amount}")
    for key, f in books.refunds.items():
        original = books.settled.get(key)
        credits = moved(f.player_id, ("bet_refund", f.settlement_id), ("payout", f.settlement_id))
        if original is None or original.outcome != "void_refund":
            credits += moved(f.player_id, ("bet_refund", f.bet_id))
        if credits != ([f.returned] if f.returned else []):
            bad.append(f"{f.settlement_id} of {f.player_id}: credits {credits}, refund returned "
                       f"{f.returned}")
    return InvariantCheck(name="the wallet moved each bet's money exactly once", ok=not bad,
                          checked=len(books.placed) + len(books.settled) + len(books.reversals)
                          + len(books.refunds), problems=bad[:20])


def _house_result_adds_up(books: Books, stakes: int, payouts: int, refunds: int,
                          reversals: int, house_by_round: int, unsettled: list[Key]
                          ) -> InvariantCheck:
    """The ledger's house result equals the rounds': stakes less what settlements returned, plus
    what reversals took back less what refunds after them returned (0 for an annulled bet)."""
    in_play = sum(books.placed[b].stake for b in unsettled)
    ledger = stakes - payouts - refunds + reversals
    ok = ledger == house_by_round + in_play
    problem = [] if ok else [f"stakes - payouts - refunds + payout reversals = {ledger}, settled "
                             f"rounds give {house_by_round} with {in_play} still in play"]
    return InvariantCheck(name="stakes - payouts - refunds = house result = sum over settled "
                               "rounds", ok=ok, checked=len(books.settled), problems=problem)


def _returns(settled: list[BetSettled], books: Books) -> list[BetTypeReturn]:
    groups: dict[tuple[str, int, str], list[BetSettled]] = defaultdict(list)
    for s in settled:
        result = books.results.get((s.table_id, s.round_id))
        if result is not None:
            version = round_profile(result.profile, result.profile_version).version
            groups[(result.profile, version, s.bet)].append(s)
    exact_cache: dict[tuple[str, int], dict[str, BetReturn]] = {}
    rows = []
    for (profile_name, version, bet), items in sorted(groups.items()):
        if (profile_name, version) not in exact_cache:
            exact_cache[(profile_name, version)] = exact_rtp(
                round_profile(profile_name, version)).bets
        exact = exact_cache[(profile_name, version)][bet]
        stake = sum(s.stake for s in items)
        returned = sum(s.returned for s in items)
        # bets on one outcome in one round win or lose together: their stakes add before
        # squaring, or the standard error comes out too small on busy tables
        per_round: dict[tuple[str, str, Position | None], int] = defaultdict(int)
        for s in items:
            per_round[(s.table_id, s.round_id, s.position)] += s.stake
        se = math.sqrt(float(exact.variance) * sum(v * v for v in per_round.values())) / stake
        realised = Fraction(returned, stake)
        rows.append(BetTypeReturn(
            profile=profile_name, version=version, bet=bet, bets=len(items), stake=stake,
            returned=returned,
            realised_rtp=float(realised), exact_rtp=float(exact.rtp),
            z_score=float(realised - exact.rtp) / se if se > 0 else None,
        ))
    return rows
