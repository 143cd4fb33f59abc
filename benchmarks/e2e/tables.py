"""A table driven through dealer-event's HTTP API, as a table device and a supervisor
would: signed new_shoe, open_round, close_betting and scan_card inputs.

The benchmark decides when betting closes (once every bet of the round is decided),
so the betting window is set long and the dealer closes early, which is accepted.
The profile is sbo-baccarat: no burns, an 8-deck shoe lasts far longer than a run.
"""

from __future__ import annotations

import random
import time

from services.infra.clock import SystemClock
from services.infra.table_keys import table_key
from services.simulators.tables.inputs import InputFactory
from services.simulators.tables.transport import HttpTransport
from shared.events.inputs import CloseBetting, NewShoe, OpenRound, ScanCard
from shared.profile import load_profile
from shared.rounds import cards_needed
from shared.shoe import Shoe

PROFILE = "sbo-baccarat"


class TableError(RuntimeError):
    pass


class BenchTable:
    def __init__(self, table_id: str, dealer_url: str, signing_secret: str, seed: int = 1) -> None:
        self.table_id = table_id
        self.profile = load_profile(PROFILE)
        self.transport = HttpTransport(dealer_url, timeout_s=30.0)
        self.factory = InputFactory(
            table_id, lambda t, role: table_key(signing_secret, t, role), SystemClock().now,
            run_tag="b")
        self.rng = random.Random(seed)
        self.shoe: Shoe | None = None
        self.rounds = 0

    async def _send(self, command_type, **fields) -> dict:
        report = await self.transport.send(self.factory.make(command_type, **fields))
        if report.get("status") != "accepted":
            raise TableError(f"{self.table_id}: {command_type.__name__} {fields}: {report}")
        return report

    async def new_shoe(self) -> None:
        self.shoe = Shoe(self.profile.decks, cut_card_from_end=self.profile.cut_card_from_end)
        self.shoe.shuffle(self.rng)
        await self._send(NewShoe, shoe_id=f"{self.table_id}-s{self.rounds}", profile=PROFILE)

    async def open_round(self) -> str:
        if self.shoe is None or self.shoe.cut_card_out:
            await self.new_shoe()
        self.rounds += 1
        round_id = f"{self.table_id}-r{self.rounds}"
        await self._send(OpenRound, round_id=round_id, dealer="Bench")
        return round_id

    async def close_and_deal(self, round_id: str) -> float:
        """Close betting and scan exactly the cards the rules need; the wall time at which
        dealer-event answered the completing card."""
        # the bench decides when the load is placed: a supervisor's early close, with a
        # reason (a device may not close before the timer, seed 002)
        await self._send(CloseBetting, round_id=round_id, role="supervisor",
                         reason_text="benchmark: the round's bets are placed")
        cards = []
        for _ in range(12):  # a baccarat round never needs more than 6
            needed = cards_needed(self.profile, cards)
            if not needed:
                return time.time()
            for _ in range(needed):
                card = self.shoe.draw()
                cards.append(card)
                await self._send(ScanCard, round_id=round_id, card=card)
        raise TableError(f"{round_id}: round never completed after {cards}")

    async def close(self) -> None:
        await self.transport.close()
