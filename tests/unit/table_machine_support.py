"""A table driven through dealer-event's pure state machine, for the tests of the machine,
the table procedures, game-evaluation and the dealer runtime (one definition, imported by
all of them instead of from one another's test modules)."""

from __future__ import annotations

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig, step
from services.infra.clock import ManualClock
from services.infra.table_keys import table_key
from services.simulators.tables.inputs import InputFactory
from shared.cards import parse_cards
from shared.events.inputs import Burn, CloseBetting, NewShoe, OpenRound, ScanCard

SECRET = "unit-secret"


def key_for(table_id: str, role: str) -> bytes:
    return table_key(SECRET, table_id, role)


class Table:
    """A table driven through the machine, keeping every event it emitted."""

    def __init__(self, table_id: str = "T1") -> None:
        self.clock = ManualClock()
        self.config = MachineConfig(AdmissionPolicy(key_for), betting_window_override=None)
        self.state = TableState(table_id)
        self.events = []
        self.make = InputFactory(table_id, key_for, self.clock.now, run_tag="u")

    def send(self, inp):
        outcome = step(self.state, inp, self.clock.now(), self.config)
        self.state = outcome.state
        self.events.extend(outcome.events)
        return outcome

    def ok(self, command_type, **fields):
        outcome = self.send(self.make.make(command_type, **fields))
        assert outcome.refusal is None, outcome.refusal
        return outcome.events

    def refused(self, command_type, **fields) -> str:
        outcome = self.send(self.make.make(command_type, **fields))
        assert outcome.refusal is not None and not outcome.events
        return outcome.refusal.code

    def close(self, round_id: str):
        """A supervisor closes betting early, with a reason (a device may not, seed 002)."""
        return self.ok(CloseBetting, round_id=round_id, role="supervisor",
                       reason_text="unit test: close before the timer")

    def shoe(self, profile: str, shoe_id: str = "S1") -> None:
        self.ok(NewShoe, shoe_id=shoe_id, profile=profile)

    def round(self, round_id: str, cards: str, burns: int = 0, close: bool = True):
        for _ in range(burns):
            self.ok(Burn)
        self.ok(OpenRound, round_id=round_id, dealer="Ayu")
        if close:
            self.close(round_id)
        out = []
        for card in parse_cards(cards):
            out += self.ok(ScanCard, round_id=round_id, card=card)
        return out


def types(events) -> list[str]:
    return [e.type for e in events]
