"""A simulated table device whose input went stale on its way (a fail-over longer than the
admission window) signs it again under a new id, as a real device does: the round goes on
and nothing is counted as an unexpected refusal (the kill loop saw a scan refused
`stale_input` after 30 s of retries, and the round it belonged to dealt no further)."""

from __future__ import annotations

import asyncio

from services.simulators.tables.driver import SimConfig, TableSimulator
from services.simulators.tables.inputs import InputFactory
from shared.events.inputs import InputBase, NewShoe
from tests.unit.table_machine_support import Table, key_for


class SlowOnce:
    """The machine behind a door whose first answer comes after a 31 s fail-over."""

    def __init__(self, table: Table, slow: set[int]) -> None:
        self.table, self.slow, self.sent = table, slow, []

    async def send(self, inp: InputBase) -> dict:
        self.sent.append(inp)
        if len(self.sent) in self.slow:
            self.table.clock.advance(31)
        outcome = self.table.send(inp)
        if outcome.refusal is None:
            return {"status": "accepted", "input_id": inp.input_id}
        return {"status": "refused", "input_id": inp.input_id,
                "reason_code": outcome.refusal.code, "message": outcome.refusal.message}

    async def close(self) -> None:
        pass


def simulator(slow: set[int]) -> tuple[TableSimulator, SlowOnce]:
    table = Table("T1")
    door = SlowOnce(table, slow)
    factory = InputFactory("T1", key_for, table.clock.now, run_tag="s")
    return TableSimulator(SimConfig("sbo-baccarat", "T1", rounds=1, seed=7), door,
                          factory), door


def test_a_stale_input_is_signed_again_under_a_new_id_and_applied():
    sim, door = simulator(slow={1})
    report = asyncio.run(sim.send(NewShoe, shoe_id="S1", profile="sbo-baccarat"))
    assert report["status"] == "accepted"
    first, again = door.sent
    assert again.input_id != first.input_id and again.sent_at > first.sent_at
    assert sim.summary.unexpected == []
    assert sim.summary.refused["stale_input"] == 1 and sim.summary.resigned == 1


def test_an_input_that_stays_stale_is_reported_not_retried_forever():
    sim, door = simulator(slow={1, 2, 3, 4, 5})
    report = asyncio.run(sim.send(NewShoe, shoe_id="S1", profile="sbo-baccarat"))
    assert report["reason_code"] == "stale_input"
    assert len(door.sent) == 3
    assert len(sim.summary.unexpected) == 1 and "stale_input" in sim.summary.unexpected[0]
