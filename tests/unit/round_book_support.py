"""bet-settlement round-book fixtures: bets placed, signed table events and a result for table
T1 (profile sbo-baccarat), for the round book, settlement-state, acceptance and metrics tests."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from services.bet_settlement import round_book
from shared.events.bet_events import BetPlaced
from shared.events.canonical import GENESIS_HASH
from shared.events.results import RoundResultPublished
from shared.events.table import RoundOpened, seal
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.simulate import deal_rounds

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PROFILE = "sbo-baccarat"


def placed(bet_id, bet="player", stake=2000, round_id="R1", player="p1", position=None):
    return BetPlaced(bet_id=bet_id, player_id=player, table_id="T1", round_id=round_id, bet=bet,
                     position=position, stake=stake, currency="IDR",
                     debit_tx_id=f"stake_debit:{bet_id}", placed_at=NOW)


def event(kind, seq, round_id="R1", **fields):
    return seal(kind, table_id="T1", seq=seq, prev_hash=GENESIS_HASH, occurred_at=NOW,
                round_id=round_id, **fields)


def opened(round_id="R1", seq=1):
    return event(RoundOpened, seq, round_id, shoe_id="s1", round_number=seq, dealer="D",
                 profile=PROFILE, betting_closes_at=NOW + timedelta(seconds=30))


def result(round_id="R1"):
    profile = load_profile(PROFILE)
    cards = next(deal_rounds(profile, random.Random(3)))
    return RoundResultPublished(
        result_id=f"result:T1:{round_id}", table_id="T1", round_id=round_id, shoe_id="s1",
        profile=PROFILE, dealer="D", cards=tuple(cards), completed_seq=9,
        completed_hash="0" * 64, occurred_at=NOW, result=evaluate_round(profile, cards))


def kinds(outputs):
    return [type(r).__name__ + (f":{r.reason_code}" if hasattr(r, "reason_code") else "")
            for _, _, r in outputs]


def open_round():
    state, _ = round_book.on_table_event(None, opened(), NOW)
    return state
