"""A floor whose dealer and table figures are known (`croupier stats`): two tables, three
dealers, a corrected round, an annulled one, a voided one and refused inputs, as the
services record them; for the archive's unit tests and the live test alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from croupier.shared.events.canonical import GENESIS_HASH
from croupier.shared.events.rejections import InputRefused
from croupier.shared.events.table import RoundOpened, RoundVoided, TableEventBase, seal
from tests.archive_builder import round_records
from tests.event_keys import events_key
from tests.round_builder import RecordedRound

# valid sbo-baccarat rounds: banker 4 to player 3 (5 cards), a player natural 9, a banker 8
CARDS = ("AS,3H,2D,3C,9S", "9S,2H,KD,3C", "2S,8H,KD,KC")

Record = tuple[str, str, bytes, int]  # topic, key, value, timestamp ms


@dataclass
class StatsFloor:
    start: datetime
    table_a: str
    table_b: str
    ana: str  # table A, rounds 0-3 (round 2 corrected), two inputs refused
    budi: str  # table A, rounds 4-5 (round 5 annulled), then a voided round; one refused
    citra: str  # table B, rounds 0-3 a minute and a half apart; one refused
    rounds: list[RecordedRound]
    records: list[Record]


def stats_floor(run: str, start: datetime) -> StatsFloor:
    a, b = f"SA{run}", f"SB{run}"
    ana, budi, citra = f"Ana-{run}", f"Budi-{run}", f"Citra-{run}"
    rounds = []
    for i in range(6):
        rounds.append(RecordedRound(
            table_id=a, round_id=f"A{run}-{i}", t0=start + timedelta(minutes=i),
            cards=CARDS[i % 3], dealer=ana if i < 4 else budi,
            bets=((f"{run}a{i}-1", "p1", "banker", 1_000 * (i + 1)),
                  (f"{run}a{i}-2", "p2", "player", 700),
                  (f"{run}a{i}-3", "p3", "player_pair", 100))))
    for i in range(4):
        rounds.append(RecordedRound(
            table_id=b, round_id=f"B{run}-{i}", t0=start + timedelta(seconds=90 * i),
            cards=CARDS[(i + 1) % 3], dealer=citra,
            bets=((f"{run}b{i}-1", "p1", "banker", 2_000), (f"{run}b{i}-2", "p4", "tie", 300))))
    rounds[2].correct("9S,2H,KD,3C")  # banker's 4 to 3 was a player natural 9 to 5
    rounds[5].annul()
    records = [r for rec in rounds for r in round_records(rec)]
    records += voided_round(a, f"A{run}-6", budi, start + timedelta(minutes=6))
    records += [refusal(a, f"{run}-x{i}", at, code) for i, (at, code) in enumerate((
        (start + timedelta(minutes=2, seconds=30), "card_not_in_shoe"),
        (start + timedelta(minutes=3, seconds=30), "round_not_open"),
        (start + timedelta(minutes=3, seconds=31), "duplicate_input"),  # a resend: not counted
        (start + timedelta(minutes=5, seconds=30), "card_not_in_shoe")))]
    records.append(refusal(b, f"{run}-y", start + timedelta(minutes=2), "card_not_in_shoe"))
    return StatsFloor(start, a, b, ana, budi, citra, rounds, records)


def voided_round(table_id: str, round_id: str, dealer: str, t0: datetime) -> list[Record]:
    """A round opened and voided a second later (a card dropped), no bets on it."""
    opened = seal(RoundOpened, table_id=table_id, seq=1, prev_hash=GENESIS_HASH,
                  occurred_at=t0, key=events_key(), shoe_id="S1", round_id=round_id,
                  round_number=1, dealer=dealer, profile="sbo-baccarat",
                  betting_closes_at=t0 + timedelta(seconds=30))
    voided = seal(RoundVoided, table_id=table_id, seq=2, prev_hash=opened.hash,
                  occurred_at=t0 + timedelta(seconds=1), key=events_key(), round_id=round_id,
                  reason_code="card_dropped", reason_text="a card fell", supervisor="Sari")
    return [_event(e) for e in (opened, voided)]


def refusal(table_id: str, input_id: str, at: datetime, code: str) -> Record:
    refused = InputRefused(rejection_id=f"rej-{input_id}", table_id=table_id,
                           input_id=input_id, command="scan_card", reason_code=code,
                           message=f"refused: {code}", received_at=at)
    return ("dealer.rejections", table_id, refused.model_dump_json().encode(),
            int(at.timestamp() * 1000))


def _event(e: TableEventBase) -> Record:
    return ("table.events", e.table_id, e.model_dump_json().encode(),
            int(e.occurred_at.timestamp() * 1000))
