"""The console's pieces that need no server: money in the currency's own unit, the wallet's
list of tables, and the rounds a shoe's roads hold (the floor's RTP is over those)."""

from __future__ import annotations

import pytest

from services.operator.console_floor import shoe_round_ids
from services.operator.money_text import money
from services.wallet.api_models import ROUTES, Tables
from services.wallet.rounds_view import roads_body, tables_body
from shared.shoe_history import ShoeRoads
from tests.shoe_builder import BANKER, PLAYER, TIE, played, wallet_view


@pytest.mark.parametrize(("amount", "currency", "text"), [
    (123_450, "IDR", "IDR 1,234.50"), (5, "EUR", "EUR 0.05"), (-12_345, "JPY", "-JPY 12,345"),
    (7, "BHD", "BHD 0.007"), (10**15 + 1, "USD", "USD 10,000,000,000,000.01"),
    (None, "IDR", "-"), (250, None, "250 minor units")])
def test_money_is_shown_in_the_currencys_unit_with_its_minor_units_exactly(amount, currency,
                                                                           text):
    assert money(amount, currency) == text


def test_the_tables_list_names_each_tables_newest_round_and_shoe():
    view = wallet_view(played(BANKER, PLAYER).events)
    body = tables_body({"T1": view})
    Tables.model_validate(body)
    [table] = body["tables"]
    limits = table.pop("limits")
    assert body == {"tables": [{"table_id": "T1", "current_round": "S1-r2",
                                "round_status": "completed", "profile": "sbo-baccarat",
                                "shoe_id": "S1", "flagged": None,
                                "currencies": table["currencies"]}]}
    # none asked: every currency's limits (a v1 round: one set, in any currency)
    assert [entry["currency"] for entry in limits] == (table["currencies"] or [None])
    assert limits[0]["bets"]["banker"] == {"min_stake": 1000, "max_stake": 5_000_000}
    assert any(r.path == "/tables" and r.response is Tables for r in ROUTES)


def test_the_rounds_of_a_shoe_are_those_its_roads_hold():
    table = played(TIE, BANKER, PLAYER)
    roads = ShoeRoads.model_validate(roads_body(wallet_view(table.events), "T1", None))
    assert shoe_round_ids(roads) == ["S1-r1", "S1-r2", "S1-r3"]


def test_the_floor_names_each_tables_round_by_its_phase():
    """The wallet answers in its public words; the console reads them back as the round's
    phase (shared.round_phase), the words the replay report uses too."""
    import asyncio

    from services.operator.console_floor import read_floor

    class Wallet:
        async def tables(self):
            return [{"table_id": "T1", "current_round": "R7", "round_status": "open",
                     "profile": "sbo-baccarat", "shoe_id": "S1", "flagged": None},
                    {"table_id": "T2", "current_round": "R3", "round_status": "closed",
                     "profile": "sbo-baccarat", "shoe_id": "S1", "flagged": None},
                    {"table_id": "T3", "current_round": None, "round_status": None,
                     "profile": None, "shoe_id": None, "flagged": None}]

        async def current_round(self, table_id):
            return None

        async def roads(self, table_id):
            return None

    async def query(fn):
        return fn(None)

    floor = asyncio.run(read_floor(Wallet(), query))  # type: ignore[arg-type]
    assert [(t.status, t.round_phase) for t in floor.tables] == [
        ("betting", "betting"), ("dealing", "dealing"), ("no round yet", None)]
