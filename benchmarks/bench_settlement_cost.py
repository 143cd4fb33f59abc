"""CPU per bet of bet-settlement's pure path at two round sizes (a measurement, not a test).

`python benchmarks/bench_settlement_cost.py [small] [large]` plays whole rounds through
`round_book` over a store of JSON bytes shaped like the service's tables (every record parsed
from JSON, every header and entry read and written as JSON, every output dumped), and prints
the CPU per bet of each round size and their ratio. State that does not grow with the round
keeps the ratio near 1.
"""

from __future__ import annotations

import random
import sys
import time
from datetime import UTC, datetime, timedelta

from faust.utils import json

from services.bet_settlement import round_book
from shared.events.bet_events import BetPlaced
from shared.events.canonical import GENESIS_HASH
from shared.events.results import RoundResultPublished, result_id
from shared.events.table import BettingClosed, RoundOpened, seal
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.simulate import deal_rounds

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PROFILE = "sbo-baccarat"
BETS = ("player", "banker", "tie", "player_pair", "banker_pair")


class JsonStore:
    """The service's tables in a dict: header and entries as JSON objects, encoded with
    Faust's json codec (as its rocksdb store does)."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}  # key -> JSON
        self.largest = 0

    def bets(self, table_id: str, round_id: str) -> round_book.RoundBets:
        store = self

        class Bets:
            def entry(self, bet_id):
                raw = store.data.get(round_book.bet_key(table_id, round_id, bet_id))
                return None if raw is None else round_book.BetEntry.model_validate(json.loads(raw))

            def bet_at(self, k):
                raw = store.data.get(round_book.order_key(table_id, round_id, k))
                return None if raw is None else json.loads(raw)

            def spot(self, key):
                raw = store.data.get(key)
                return None if raw is None else round_book.SpotTotal.model_validate(json.loads(raw))
        return Bets()

    def header(self, table_id: str, round_id: str) -> round_book.RoundHeader | None:
        raw = self.data.get(round_book.round_key(table_id, round_id))
        return None if raw is None else round_book.RoundHeader.model_validate(json.loads(raw))

    def save(self, t: round_book.Transition) -> list[bytes]:
        h = t.header
        writes = {round_book.order_key(h.table_id, h.round_id, k): json.dumps(b)
                  for k, b in t.order.items()}
        writes.update({round_book.bet_key(h.table_id, h.round_id, b): json.dumps(e.model_dump(
            mode="json")) for b, e in t.entries.items()})
        writes.update({key: json.dumps(spot.model_dump(mode="json"))
                       for key, spot in t.spots.items()})
        writes[round_book.round_key(h.table_id, h.round_id)] = json.dumps(h.model_dump(mode="json"))
        self.data.update(writes)
        out = [record.model_dump_json().encode() for _, _, record in t.out]
        self.largest = max([self.largest, *map(len, writes.values()), *map(len, out)])
        return out


def play_round(store: JsonStore, table_id: str, round_id: str, n: int, rng: random.Random,
               cards) -> None:
    profile = load_profile(PROFILE)
    opened = seal(RoundOpened, table_id=table_id, seq=1, prev_hash=GENESIS_HASH, occurred_at=NOW,
                  round_id=round_id, shoe_id="s", round_number=1, dealer="D", profile=PROFILE,
                  betting_closes_at=NOW + timedelta(seconds=30))
    closed = seal(BettingClosed, table_id=table_id, seq=2, prev_hash=opened.hash,
                  occurred_at=NOW, round_id=round_id, reason="timer")
    raw_bets = [BetPlaced(bet_id=f"{round_id}-b{i}", player_id=f"p{i % 100}", table_id=table_id,
                          round_id=round_id, bet=rng.choice(BETS), stake=1000 * rng.randint(1, 9),
                          currency="IDR", debit_tx_id=f"d{i}", placed_at=NOW
                          ).model_dump_json().encode() for i in range(n)]
    published = RoundResultPublished(
        result_id=result_id(table_id, round_id), table_id=table_id, round_id=round_id,
        shoe_id="s", profile=PROFILE, dealer="D", cards=tuple(cards), completed_seq=3,
        completed_hash="0" * 64, occurred_at=NOW, result=evaluate_round(profile, cards)
    ).model_dump_json().encode()
    bets = store.bets(table_id, round_id)
    store.save(round_book.apply_table_event(store.header(table_id, round_id), bets, opened, NOW))
    for raw in raw_bets:
        bet = BetPlaced.model_validate_json(raw)
        store.save(round_book.place(store.header(table_id, round_id), bets, bet, NOW))
    store.save(round_book.apply_table_event(store.header(table_id, round_id), bets, closed, NOW))
    result = RoundResultPublished.model_validate_json(published)
    out = store.save(round_book.apply_result(store.header(table_id, round_id), bets, result, NOW))
    assert sum(b'"bet_settled"' in r for r in out) == n


def cpu_per_bet(n: int, rounds: int) -> tuple[float, int]:
    store, rng = JsonStore(), random.Random(n)
    deals = deal_rounds(load_profile(PROFILE), rng)
    play_round(store, "W", "warmup", 50, rng, next(deals))
    start = time.process_time()
    for r in range(rounds):
        play_round(store, "T", f"R{n}-{r}", n, rng, next(deals))
    return (time.process_time() - start) / (n * rounds), store.largest


def main(small: int = 100, large: int = 10_000) -> None:
    a, size_a = cpu_per_bet(small, max(1, 20_000 // small))
    b, size_b = cpu_per_bet(large, max(1, 20_000 // large))
    print(f"{small:>6} bets/round: {a * 1e6:8.1f} µs CPU per bet, largest value {size_a} B")
    print(f"{large:>6} bets/round: {b * 1e6:8.1f} µs CPU per bet, largest value {size_b} B")
    print(f"ratio {large} / {small}: {b / a:.2f}x")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
