"""The simulated table: shuffles with the rule engine and sends what a live table sends.

Shoe start (and the seed-004 first-card burn), per-round burns, open round, the
betting window (during which `on_betting_open` lets another component act, e.g. a
player simulator placing bets), exactly the cards the rules need (`cards_needed`),
the cut card and the shoe change. Betting ends with the table's timer (seed 002: a
device may not close it early), so the simulator waits until the window has ended
and deals: the first card after the deadline finds betting closed. Faults are
injected on request: a duplicate scan, a voided round, a surplus card, a card not in
the shoe; a fault the table's sheet ends the shoe on makes the simulator start a new one.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime

from services.simulators.tables.inputs import InputFactory
from services.simulators.tables.transport import Transport
from shared.cards import Card
from shared.events.inputs import (
    Burn,
    CutCard,
    InputBase,
    NewShoe,
    OpenRound,
    ScanCard,
    ShoeFirstCard,
    VoidRound,
)
from shared.profile import BaccaratProfile, load_profile
from shared.shoe import Shoe
from shared.simulate import burns_before_round, deal_round, open_shoe

FAULTS = frozenset({"duplicate_scan", "void", "surplus", "foreign_card"})
TIMER_MARGIN_S = 0.1  # dealt this long after the window ends, so betting is surely closed
VOID_REASON = "card_exposed"  # the `void` fault's reason
STALE_RESIGNS = 2  # an input refused `stale_input` is signed again at most this often


@dataclass(frozen=True)
class SimConfig:
    profile: str
    table_id: str
    rounds: int
    seed: int | None = None
    dealer: str = "Ayu"
    faults: frozenset[str] = frozenset()
    betting_pause: float = 0.0  # at least this long; the table's timer decides the rest
    cut_card_from_end: int | None = None  # override the profile's (shorter shoes in tests)
    # the table's window when the answer to open_round does not say when it ends (a Kafka
    # transport, a retried request); None: the profile's
    betting_window: float | None = None

    def __post_init__(self) -> None:
        unknown = set(self.faults) - FAULTS
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}; known: {sorted(FAULTS)}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be positive, got {self.rounds}")


@dataclass(frozen=True)
class BettingWindow:
    table_id: str
    round_id: str
    profile: str
    betting_pause: float


@dataclass
class SimSummary:
    table_id: str
    profile: str
    shoes: int = 0
    rounds_completed: int = 0
    rounds_voided: int = 0
    inputs_sent: int = 0
    accepted: int = 0
    refused: Counter = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)  # refusals nobody asked for
    resigned: int = 0  # inputs signed again after going stale on their way
    faults_injected: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    round_cards: dict[str, list[str]] = field(default_factory=dict)  # completed rounds


BettingHook = Callable[[BettingWindow], Awaitable[None]]


class TableSimulator:
    def __init__(self, config: SimConfig, transport: Transport, factory: InputFactory,
                 on_betting_open: BettingHook | None = None) -> None:
        self.config = config
        self.profile = load_profile(config.profile)
        self.transport = transport
        self.factory = factory
        self.on_betting_open = on_betting_open
        self.rng = random.Random(config.seed)
        self.summary = SimSummary(config.table_id, config.profile)
        self._pending_faults = set(config.faults)
        self._shoe: Shoe | None = None
        self._cut_sent = False
        self._shoe_over = True
        self._pending_cut = False
        self._stopping = False

    def stop_after_round(self) -> None:
        """Finish the round under way, then stop (an operator's Ctrl-C in `demo --forever`)."""
        self._stopping = True

    async def send(self, command_type: type[InputBase], expect: frozenset[str] = frozenset(),
                   inp: InputBase | None = None, **fields) -> dict:
        resign = STALE_RESIGNS if inp is None else 0  # a fault's resend keeps its input
        inp = inp or self.factory.make(command_type, **fields)
        while True:
            report = await self.transport.send(inp)
            self.summary.inputs_sent += 1
            if report.get("status") == "accepted":
                self.summary.accepted += 1
            elif report.get("status") == "refused":
                code = report.get("reason_code", "?")
                self.summary.refused[code] += 1
                if code == "stale_input" and resign and "stale_input" not in expect:
                    # it went stale on its way (a fail-over longer than the admission
                    # window): a device signs it again, under a new id (the old one is
                    # refused for good), with the time it is sent now
                    resign -= 1
                    self.summary.resigned += 1
                    inp = self.factory.make(command_type, **fields)
                    continue
                if code not in expect:
                    self.summary.unexpected.append(f"{inp.command} {inp.input_id}: {code}: "
                                                   f"{report.get('message')}")
            return report

    async def run(self) -> SimSummary:
        baccarat = isinstance(self.profile, BaccaratProfile)
        number = 0
        while (self.summary.rounds_completed + self.summary.rounds_voided < self.config.rounds
               and not self._stopping):
            if self._shoe_over:  # Triple Face: one "shoe" (table session), a deck per round
                await self._new_shoe()
            if not baccarat:
                self._shoe, _first = self._open_shoe()
            if not await self._burns():
                continue
            number += 1
            await self._round(f"{self.config.table_id}-{self.factory.run_tag}-r{number}")
            self._shoe_over = self._shoe_over or self._cut_sent
        return self.summary

    # --- shoe ---------------------------------------------------------------------------

    def _open_shoe(self) -> tuple[Shoe, Card | None]:
        # the same shoe opening as the offline simulation (a cut card override of 0 or
        # none: the profile's)
        return open_shoe(self.profile, self.rng, self.config.cut_card_from_end or None)

    async def _new_shoe(self) -> None:
        self.summary.shoes += 1
        shoe_id = f"{self.config.table_id}-{self.factory.run_tag}-s{self.summary.shoes}"
        await self.send(NewShoe, shoe_id=shoe_id, profile=self.profile.name)
        shoe, first = self._open_shoe()  # the start burn's other cards go face down: no input
        self._shoe, self._cut_sent, self._shoe_over = shoe, False, False
        if first is not None:
            await self.send(ShoeFirstCard, card=first)

    def _shoe_in_play(self) -> Shoe:
        if self._shoe is None:
            raise RuntimeError(f"table {self.config.table_id}: no shoe to draw from")
        return self._shoe

    def _drawn(self, shoe: Shoe, card: Card) -> Card:
        """`card` left the shoe: note the cut card if it came out with it."""
        if shoe.cut_card_out and not self._cut_sent:
            self._cut_sent = True
            self._pending_cut = True
        return card

    async def _draw(self) -> Card:
        shoe = self._shoe_in_play()
        return self._drawn(shoe, shoe.draw())

    async def _announce_cut(self) -> None:
        if self._pending_cut:
            self._pending_cut = False
            await self.send(CutCard)

    async def _burns(self) -> bool:
        """Burn before the round; False when the cut card came out while burning."""
        shoe = self._shoe_in_play()
        for card in burns_before_round(self.profile, shoe):
            await self.send(Burn, card=self._drawn(shoe, card))
            if self._cut_sent:
                await self._announce_cut()
                self._shoe_over = True
                return False
        return True

    # --- round --------------------------------------------------------------------------

    async def _round(self, round_id: str) -> None:
        opened = await self.send(OpenRound, round_id=round_id, dealer=self.config.dealer)
        window = self._betting_left(opened)
        info = BettingWindow(self.config.table_id, round_id, self.profile.name, window)
        pause: list[Awaitable[None]] = [asyncio.sleep(window)]
        if self.on_betting_open is not None:
            pause.append(self.on_betting_open(info))
        await asyncio.gather(*pause)
        shoe = self._shoe_in_play()
        cards: list[Card] = []
        for card in deal_round(self.profile, shoe):  # stopping early draws no more cards
            cards.append(self._drawn(shoe, card))
            await self._scan(round_id, card)
            await self._announce_cut()
            if len(cards) == 2 and await self._maybe_void(round_id):
                return
            if len(cards) == 2:
                await self._maybe_foreign(round_id, cards)
        self.summary.rounds_completed += 1
        self.summary.round_cards[round_id] = [str(c) for c in cards]
        if self._take_fault("surplus"):
            await self._scan(round_id, await self._draw())
            if self.profile.extra_card_ends_shoe:  # seed 002: the shoe is replaced
                self._pending_cut, self._shoe_over = False, True
            await self._announce_cut()

    def _betting_left(self, opened: dict) -> float:
        """Seconds until the round's betting window has ended (seed 002's timer)."""
        closes_at = next((e["betting_closes_at"] for e in opened.get("events", [])
                          if e.get("type") == "round_opened" and "betting_closes_at" in e), None)
        if closes_at is not None:
            left = (datetime.fromisoformat(closes_at) - self.factory.now()).total_seconds()
        else:
            left = self.config.betting_window or self.profile.betting_window_seconds
        return max(self.config.betting_pause, left + TIMER_MARGIN_S)

    async def _scan(self, round_id: str, card: Card) -> None:
        for _ in range(40):  # a first card a hair before the deadline waits for the timer
            inp = self.factory.make(ScanCard, round_id=round_id, card=card)
            report = await self.send(ScanCard, inp=inp, expect=frozenset({"betting_still_open"}))
            if report.get("reason_code") != "betting_still_open":
                break
            await asyncio.sleep(0.25)
        if self._take_fault("duplicate_scan"):
            await self.send(ScanCard, inp=inp, expect=frozenset({"duplicate_input"}))

    async def _maybe_void(self, round_id: str) -> bool:
        if not self._take_fault("void"):
            return False
        await self.send(VoidRound, round_id=round_id, reason_code=VOID_REASON,
                        reason_text="simulated fault: a card was exposed during the deal")
        self.summary.rounds_voided += 1
        if VOID_REASON in self.profile.shoe_ends_on:  # seed 004 §4: the shoe goes too
            self._pending_cut, self._shoe_over = False, True
        return True

    async def _maybe_foreign(self, round_id: str, cards: list[Card]) -> None:
        """A card the shoe no longer holds: in a one-deck game, one already dealt."""
        if "foreign_card" not in self._pending_faults:
            return
        if self.profile.decks != 1:
            self._pending_faults.discard("foreign_card")
            self.summary.notes.append("foreign_card skipped: an 8-deck shoe still holds "
                                      "copies of every card this early")
            return
        self._take_fault("foreign_card")
        await self.send(ScanCard, round_id=round_id, card=cards[0],
                        expect=frozenset({"duplicate_card_in_round", "card_not_in_shoe"}))

    def _take_fault(self, fault: str) -> bool:
        if fault in self._pending_faults:
            self._pending_faults.discard(fault)
            self.summary.faults_injected.append(fault)
            return True
        return False
