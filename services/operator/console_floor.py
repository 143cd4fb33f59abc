"""The floor as the console draws it: every table the wallet's view holds, its round and
shoe, the shoe's roads (the wallet's `GET /tables/{id}/roads`), the bets and stake on its
newest round and the shoe's realised RTP (the archive's queries over the archive and the
log's live tail). Each source is asked once per read, whatever the number of pages open.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from services.operator.wallet_client import Wallet, WalletError
from shared.round_phase import RoundPhase, phase_of_betting_status
from shared.shoe_history import ShoeRoads

SHOE_LOOK_BACK = timedelta(hours=12)  # a shoe's bets lie within this of now


@dataclass
class TableOnFloor:
    table_id: str
    profile: str | None
    # the newest round's phase (shared.round_phase), or "flagged: why", or "no round yet"
    status: str
    round_id: str | None
    # the wallet answers in its public words ("open", "closed", ...): read back as the phase
    round_phase: RoundPhase | None
    shoe_id: str | None
    flagged: str | None
    betting_closes_at: str | None = None
    roads: ShoeRoads | None = None
    round_bets: list[dict[str, Any]] = field(default_factory=list)  # per currency
    shoe_figures: list[dict[str, Any]] = field(default_factory=list)  # per currency


@dataclass
class FloorView:
    tables: list[TableOnFloor]
    problems: list[str] = field(default_factory=list)


def shoe_round_ids(roads: ShoeRoads) -> list[str]:
    """The rounds whose results the shoe's roads hold."""
    inner = roads.roads
    cells = inner.bead_plate.cells if inner.game == "baccarat" else \
        [c for p in inner.positions.values() for c in p.cells]
    return sorted({c.round_id for c in cells if c.round_id})


Query = Callable[[Callable[[Any], Any]], Awaitable[Any]]


async def read_floor(wallet: Wallet, query: Query) -> FloorView:
    """One read of the floor. A source that does not answer is named in `problems` and
    the rest is still drawn."""
    problems: list[str] = []
    try:
        listed = await wallet.tables()
    except WalletError as exc:
        return FloorView([], [f"wallet: {exc}"])
    tables = []
    for item in listed:
        phase = phase_of_betting_status(item.get("round_status"))
        status = f"flagged: {item['flagged']}" if item.get("flagged") else \
            (phase or item.get("round_status") or "no round yet")
        tables.append(TableOnFloor(item["table_id"], item.get("profile"), status,
                                   item.get("current_round"), phase,
                                   item.get("shoe_id"), item.get("flagged")))

    async def details(table: TableOnFloor) -> None:
        try:
            current, roads = await asyncio.gather(wallet.current_round(table.table_id),
                                                  wallet.roads(table.table_id))
        except WalletError as exc:
            problems.append(f"wallet, table {table.table_id}: {exc}")
            return
        if current is not None:
            table.betting_closes_at = current.get("betting_closes_at")
        if roads is not None:
            table.roads = ShoeRoads.model_validate(roads)

    await asyncio.gather(*(details(t) for t in tables))
    open_rounds = [t.round_id for t in tables if t.round_id]
    shoes = {t.table_id: shoe_round_ids(t.roads) for t in tables if t.roads is not None}
    since = datetime.now(UTC) - SHOE_LOOK_BACK
    try:
        figures = await query(lambda qs: qs.floor(open_rounds, shoes, since))
    except Exception as exc:  # noqa: BLE001 - the roads are still worth drawing
        problems.append(f"archive queries: {type(exc).__name__}: {exc}")
        figures = {"open_rounds": {}, "shoes": {}}
    for t in tables:
        t.round_bets = figures["open_rounds"].get(t.round_id or "", [])
        t.shoe_figures = figures["shoes"].get(t.table_id, [])
    return FloorView(tables, problems)


class FloorCache:
    """The floor read at most once per `every_s`, shared by every page and stream."""

    def __init__(self, read: Callable[[], Awaitable[FloorView]], every_s: float) -> None:
        self._read, self._every = read, every_s
        self._lock = asyncio.Lock()
        self._view: FloorView | None = None
        self._at = 0.0

    async def get(self) -> FloorView:
        async with self._lock:
            if self._view is None or time.monotonic() - self._at >= self._every:
                self._view = await self._read()
                self._at = time.monotonic()
            return self._view
