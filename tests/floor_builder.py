"""A busy floor's log, written offline as the services would write it: tables with a valid
hash chain, results, placed bets, decisions with a manifest per round, settlements and
wallet movements with consistent balances. For replay and rebuild tests and benchmarks:
the records go straight onto the topics with a plain producer.

    floor = Floor(tables=["T1"], players=[f"p{i}" for i in range(150)])
    floor.play_round("T1", bets=300, t0=...)
    floor.produce(bootstrap)
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kafka.partitioner.default import murmur2
from pydantic import BaseModel

from services.bet_settlement.settlement_fold import ending_of
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.packs import pack_values
from shared.events.bet_events import (
    BetAccepted,
    BetPlaced,
    BetRejected,
    BetSettled,
    RoundManifest,
    manifest_digest,
    settlement_id,
)
from shared.events.canonical import GENESIS_HASH
from shared.events.results import RoundResultPublished, result_id
from shared.events.sources import InputRef
from shared.events.table import (
    BettingClosed,
    CardDealt,
    RoundCompleted,
    RoundOpened,
    ShoeStarted,
    seal,
)
from shared.events.wallet_events import CREDITS, WalletTransaction, tx_id
from shared.events.wallet_ledger import Account, LedgerEntry
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.settlement import Bet, settle
from shared.simulate import deal_rounds
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEFAULT_PARTITIONS,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.event_keys import events_key

BETS = ("banker", "player", "tie", "player_pair", "banker_pair")
DEPOSIT = 1_000_000_000
Record = tuple[str, bytes, bytes, int]  # topic, key, value, timestamp (epoch ms)


@dataclass
class _Table:
    table_id: str
    deals: Iterable
    seq: int = 0
    prev_hash: str = GENESIS_HASH
    rounds: int = 0


@dataclass
class PlayedRound:
    table_id: str
    round_id: str
    t0: datetime
    players: list[str]
    bets: int


# the wallet command a movement comes from
_COMMAND_OF = {"deposit": "deposit", "withdrawal": "withdrawal", "stake_debit": "place_bet",
               "bet_refund": "end_bet", "payout": "end_bet",
               "payout_reversal": "reverse_settlement"}


@dataclass
class Floor:
    profile_name: str = "sbo-baccarat"
    seed: int = 11
    dealer: str = "Ana"
    records: list[Record] = field(default_factory=list)
    balances: dict[str, int] = field(default_factory=dict)
    rejected_every: int = 50  # one bet in this many is rejected (and refunded)

    def __post_init__(self) -> None:
        self.profile = load_profile(self.profile_name)
        self.currency = self.profile.currency or "IDR"
        self.rng = random.Random(self.seed)
        self.tables: dict[str, _Table] = {}
        self.counts = {"bets": 0, "rounds": 0}
        self.tx_counts: dict[str, int] = {}
        self.ledger_heads: dict[int, str] = {}
        self.ledger_offsets: dict[int, int] = {}

    # -- writing ---------------------------------------------------------------------------
    def _put(self, topic: str, key: str, record: BaseModel, at: datetime) -> None:
        value, ts = record.model_dump_json().encode(), int(at.timestamp() * 1000)
        self.records.append((topic, key.encode(), value, ts))
        player = ending_of(record) if topic in (BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC) else None
        if player is not None:  # as bet-settlement's outbox: the ending, in a pack (of one)
            self.records.append((WALLET_ENDINGS_TOPIC, player.encode(), pack_values([value]),
                                 ts))

    def _event(self, table: _Table, kind, at: datetime, **fields):
        table.seq += 1
        event = seal(kind, table_id=table.table_id, seq=table.seq, prev_hash=table.prev_hash,
                     occurred_at=at, key=events_key(), **fields)
        table.prev_hash = event.hash
        self._put(TABLE_EVENTS_TOPIC, table.table_id, event, at)
        return event

    def _tx(self, player: str, kind: str, amount: int, cause: str, at: datetime,
            table_id: str | None = None, round_id: str | None = None) -> None:
        sign = 1 if kind in CREDITS else -1
        self.balances[player] = self.balances.get(player, 0) + sign * amount
        tx = WalletTransaction(
            tx_id=tx_id(kind, cause), player_id=player, kind=kind, amount=amount,
            balance_after=self.balances[player], currency=self.currency, cause_id=cause,
            table_id=table_id, round_id=round_id, occurred_at=at)
        self._put(WALLET_TRANSACTIONS_TOPIC, player, tx, at)
        self._ledger_entry(tx, at)

    def _ledger_entry(self, tx: WalletTransaction, at: datetime) -> None:
        """The wallet's ledger entry of the movement, chained on its partition (the one
        Kafka's partitioner gives the player, as the wallet's commands topic does)."""
        player = tx.player_id
        partition = (murmur2(player.encode()) & 0x7FFFFFFF) % DEFAULT_PARTITIONS
        self.tx_counts[player] = self.tx_counts.get(player, 0) + 1
        offset = self.ledger_offsets.get(partition, 0)
        self.ledger_offsets[partition] = offset + 1
        entry = LedgerEntry(
            entry_id=f"floor-{self.seed}:{partition}:{offset}",
            prev=self.ledger_heads.get(partition, ""),
            source=InputRef(topic="floor-commands", partition=partition, offset=offset),
            command=_COMMAND_OF[tx.kind],
            account=Account(player_id=player, currency=tx.currency, balance=tx.balance_after,
                            tx_count=self.tx_counts[player]),
            tx=tx, published_through=-1, recorded_at=at)
        self.ledger_heads[partition] = entry.entry_id
        self._put(WALLET_LEDGER_TOPIC, player, entry, at)

    def _table(self, table_id: str, at: datetime) -> _Table:
        if table_id not in self.tables:
            table = _Table(table_id, deal_rounds(self.profile, random.Random(self.seed)))
            self.tables[table_id] = table
            self._event(table, ShoeStarted, at, shoe_id=f"{table_id}-s1",
                        profile=self.profile_name, decks=self.profile.decks)
        return self.tables[table_id]

    # -- playing ---------------------------------------------------------------------------
    def play_round(self, table_id: str, bets: int, players: list[str], t0: datetime,
                   round_id: str | None = None) -> PlayedRound:
        """One round at `t0`: opening, `bets` bets spread over `players` during a 15 s betting
        window (stake debited, placed, decided), close and manifest, cards, completion,
        result, a settlement per accepted bet and the payouts, in time order."""
        table = self._table(table_id, t0 - timedelta(seconds=1))
        table.rounds += 1
        round_id = round_id or f"{table_id}-r{table.rounds}"
        currency = self.currency
        for player in players:
            if player not in self.balances:
                self._tx(player, "deposit", DEPOSIT, f"dep-{player}", t0 - timedelta(seconds=30))
        closes = t0 + timedelta(seconds=15)
        self._event(table, RoundOpened, t0, shoe_id=f"{table_id}-s1", round_id=round_id,
                    round_number=table.rounds, dealer=self.dealer, profile=self.profile_name,
                    betting_closes_at=closes)
        accepted: list[BetAccepted] = []
        step = timedelta(seconds=14) / max(bets, 1)
        for i in range(bets):
            at = t0 + timedelta(milliseconds=500) + step * i
            player = players[i % len(players)]
            bet_id = f"{round_id}-b{i}"
            stake = self.rng.randrange(10, 101) * 100
            facts = dict(bet_id=bet_id, player_id=player, table_id=table_id, round_id=round_id,
                         bet=self.rng.choice(BETS), stake=stake, currency=currency)
            self._tx(player, "stake_debit", stake, bet_id, at, table_id, round_id)
            self._put(BETS_PLACED_TOPIC, table_id, BetPlaced(
                **facts, debit_tx_id=tx_id("stake_debit", bet_id), placed_at=at), at)
            if self.rejected_every and i % self.rejected_every == self.rejected_every - 1:
                self._put(BETS_DECISIONS_TOPIC, table_id, BetRejected(
                    **facts, reason_code="over_limit", message="over the table limit",
                    decided_at=at), at)
                self._tx(player, "bet_refund", stake, bet_id, at, table_id, round_id)
            else:
                decision = BetAccepted(**facts, decided_at=at)
                accepted.append(decision)
                self._put(BETS_DECISIONS_TOPIC, table_id, decision, at)
        self._event(table, BettingClosed, closes, round_id=round_id, reason="timer")
        self._put(BETS_DECISIONS_TOPIC, table_id, RoundManifest(
            table_id=table_id, round_id=round_id, bet_count=len(accepted),
            total_stake=sum(d.stake for d in accepted),
            digest=manifest_digest(d.bet_id for d in accepted), closed_at=closes), closes)
        cards = next(table.deals)
        at = closes
        for i, card in enumerate(cards):
            at += timedelta(seconds=1)
            self._event(table, CardDealt, at, round_id=round_id, card=card, shoe_position=i,
                        round_position=i)
        at += timedelta(seconds=1)
        completed = self._event(table, RoundCompleted, at, round_id=round_id, cards=tuple(cards),
                                corrections_indexed=True)  # as dealer-event writes it
        outcome = evaluate_round(self.profile, cards)
        result = RoundResultPublished(
            result_id=result_id(table_id, round_id), table_id=table_id, round_id=round_id,
            shoe_id=f"{table_id}-s1", profile=self.profile_name, dealer=self.dealer,
            cards=tuple(cards), completed_seq=completed.seq, completed_hash=completed.hash,
            occurred_at=at, result=outcome)
        self._put(ROUND_RESULTS_TOPIC, table_id, result, at)
        settled_at = at + timedelta(milliseconds=200)
        paid_at = at + timedelta(milliseconds=400)
        payouts = []
        for n, d in enumerate(accepted):
            s = settle(Bet(bet=d.bet, position=d.position, stake=d.stake), outcome, self.profile)
            self._put(BETS_SETTLED_TOPIC, table_id, BetSettled(
                **d.model_dump(exclude={"type", "decided_at"}), settlement_id=settlement_id(d.bet_id),
                outcome=s.outcome, returned=s.returned, cause=result.result_id,
                settled_at=settled_at, last_of_round=n == len(accepted) - 1), settled_at)
            if s.returned:
                payouts.append((d, s.returned))
        for d, returned in payouts:
            self._tx(d.player_id, "payout", returned, settlement_id(d.bet_id), paid_at,
                     table_id, round_id)
        self.counts["bets"] += bets
        self.counts["rounds"] += 1
        return PlayedRound(table_id, round_id, t0, list(players), bets)

    def fill(self, records: int, tables: list[str], players: list[str], start: datetime,
             bets_per_round: int = 40, every: timedelta = timedelta(seconds=40)) -> datetime:
        """Rounds at `tables` in turn, each with `bets_per_round` bets of players drawn from
        `players`, until at least `records` more records are written. Returns the time after
        the last round."""
        target = len(self.records) + records
        at = start
        while len(self.records) < target:
            for table_id in tables:
                self.play_round(table_id, bets_per_round,
                                self.rng.sample(players, min(len(players), bets_per_round)), at)
                at += every / len(tables)
        return at

    # -- producing -------------------------------------------------------------------------
    def produce(self, bootstrap: str) -> int:
        """Every record written so far, in order, then forgotten. Returns how many."""
        from kafka import KafkaProducer

        # idempotent: a batch retried (a topic just created has no leader yet) cannot land
        # behind a later one, so each partition keeps the order the records were written in
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks="all",
                                 batch_size=1024 * 1024, max_request_size=8 * 1024 * 1024,
                                 enable_idempotence=True, **kafka_python_options(ADMIN))
        for topic, key, value, ts in self.records:
            producer.send(topic, key=key, value=value, timestamp_ms=ts)
        producer.flush()
        producer.close()
        count = len(self.records)
        self.records = []
        return count
