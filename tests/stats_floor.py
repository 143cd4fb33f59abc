"""A floor whose dealer and table figures are known (`croupier stats`): two tables, three
dealers, a corrected round, an annulled one, a voided one and refused inputs, as the
services record them; for the archive's unit tests and the live test alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.events.canonical import GENESIS_HASH
from shared.events.rejections import InputRefused
from shared.events.table import RoundOpened, RoundVoided, TableEventBase, seal
from shared.topics import DEALER_REJECTIONS_TOPIC, TABLE_EVENTS_TOPIC
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
    return (DEALER_REJECTIONS_TOPIC, table_id, refused.model_dump_json().encode(),
            int(at.timestamp() * 1000))


def _event(e: TableEventBase) -> Record:
    return (TABLE_EVENTS_TOPIC, e.table_id, e.model_dump_json().encode(),
            int(e.occurred_at.timestamp() * 1000))


def expected_dealers(f: StatsFloor) -> dict[str, dict[str, object]]:
    """What `croupier stats` must say of the floor's dealers (the whole floor in range)."""
    return {
        # four rounds a minute apart, one corrected; two refusals in her time (and a resend)
        f.ana: {"rounds": 4, "hands": 4, "hands_per_hour": 60.0, "voids": 0,
                "refused_inputs": 2, "corrections": 1, "voids_per_100_rounds": 0.0,
                "refused_inputs_per_100_rounds": 50.0, "corrections_per_100_rounds": 25.0},
        # two rounds (the second annulled after it completed: still a hand), one voided:
        # 60 s + 59 s to the next opening, then the voided round's own second
        f.budi: {"rounds": 3, "hands": 2, "hands_per_hour": 60.0, "voids": 1,
                 "refused_inputs": 1, "corrections": 0, "voids_per_100_rounds": 33.33,
                 "refused_inputs_per_100_rounds": 33.33, "corrections_per_100_rounds": 0.0},
        # four rounds 90 s apart, the last 6 s from opening to completion: 276 s
        f.citra: {"rounds": 4, "hands": 4, "hands_per_hour": round(4 * 3600 / 276, 1),
                  "voids": 0, "refused_inputs": 1, "corrections": 0,
                  "voids_per_100_rounds": 0.0, "refused_inputs_per_100_rounds": 25.0,
                  "corrections_per_100_rounds": 0.0},
    }


def expected_tables(f: StatsFloor) -> dict[str, dict[str, object]]:
    """What `croupier stats` must say of the floor's tables, from the settlements standing
    (the annulled round's left out, a corrected round's settled again) and each bet's exact
    RTP."""
    from shared.profile import load_profile
    from shared.rtp import exact_rtp

    edges = {bet: float(b.house_edge)
             for bet, b in exact_rtp(load_profile("sbo-baccarat")).bets.items()}
    standing = {}
    for rec in f.rounds:
        if rec.round_id.endswith("-5"):  # annulled
            continue
        for s in rec.settlements:
            if s.type == "bet_settled":
                standing[s.bet_id] = s  # a settlement again replaces the one reversed
    out = {}
    for table, rounds in ((f.table_a, 7), (f.table_b, 4)):  # table A's voided round counts
        mine = [s for s in standing.values() if s.table_id == table]
        stake, returned = sum(s.stake for s in mine), sum(s.returned for s in mine)
        out[table] = {"rounds": rounds, "currency": "IDR", "bets": len(mine), "stake": stake,
                      "returned": returned, "hold": round((stake - returned) / stake, 6),
                      "theoretical_hold": round(sum(s.stake * edges[s.bet] for s in mine)
                                                / stake, 6)}
    return out
