"""Players through the wallet's HTTP API: the operator opens and funds accounts and
issues tokens (as services/simulators/players.py does), then players bet. In seamless
mode (`operator_wallet` given) the money is the operator's: each player is funded at the
reference operator wallet, not deposited, and bets with a session issued there.

The client is aiohttp (already installed: faust's own HTTP stack), not httpx: measured
on this machine against a server that answers in 50 ms, httpx's async pool spent
0.9–14 ms of client CPU per request and topped out near 100–900 requests/s at 64
concurrent connections, so it, not the wallet, would have set the intake figures;
aiohttp spent 0.12 ms and reached 1,150/s (64) and 3,900/s (256). One session, a
bounded connection pool: its size is the number of concurrent clients the wallet sees.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass

import aiohttp

from services.simulators.operator_wallet.client import OperatorWalletClient

DEPOSIT = 10**11  # minor units: no player runs dry during a run
CURRENCY = "IDR"
STAKE = 1000  # sbo-baccarat's minimum for player and banker
BETS = ("player", "banker")
OPEN_LOOP_CONNECTIONS = 256


@dataclass(frozen=True)
class Player:
    player_id: str
    token: str
    operator_session: str | None = None  # seamless mode: the player's session at the operator


@dataclass(frozen=True)
class BetAnswer:
    status: int  # HTTP status, 0 for a transport error or timeout
    code: str | None  # the wallet's error code, if any
    seconds: float  # request start → answer


class Players:
    def __init__(self, wallet_url: str, operator_token: str, tag: str, clients: int,
                 timeout_s: float = 30.0, operator_wallet: str | None = None) -> None:
        self.url = wallet_url.rstrip("/")
        self.operator = {"Authorization": f"Bearer {operator_token}"}
        self.tag = tag
        # closed-loop phases use `clients` connections; the open loop may need more, as
        # real players do not wait for each other (bounded all the same)
        self.pool = max(clients, OPEN_LOOP_CONNECTIONS)
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self.roster: list[Player] = []
        self._ids = itertools.count()
        self.operator_wallet = None if operator_wallet is None else \
            OperatorWalletClient(operator_wallet)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:  # created inside the running loop
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.pool), timeout=self.timeout)
        return self._session

    async def _ok(self, method: str, path: str, body: dict | None = None) -> dict:
        async with self.session.request(method, self.url + path, json=body,
                                        headers=self.operator) as r:
            if r.status >= 300:
                raise RuntimeError(f"wallet refused setup: {r.status} {await r.text()}")
            return await r.json()

    async def _one(self, i: int) -> Player:
        pid = f"bp-{self.tag}-{i}"
        await self._ok("POST", "/accounts", {"player_id": pid, "currency": CURRENCY})
        session = None
        if self.operator_wallet is None:
            await self._ok("POST", f"/accounts/{pid}/deposits",
                           {"request_id": f"seed-{pid}", "amount": DEPOSIT})
        else:
            session = await asyncio.to_thread(self._fund_at_operator, pid)
        token = (await self._ok("POST", f"/players/{pid}/token"))["token"]
        return Player(pid, token, session)

    def _fund_at_operator(self, player_id: str) -> str:
        assert self.operator_wallet is not None
        self.operator_wallet.put_player(player_id, currency=CURRENCY, balance=DEPOSIT)
        return self.operator_wallet.issue_session(player_id, ttl_seconds=24 * 3600)

    async def setup(self, count: int, concurrency: int = 32) -> list[Player]:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> Player:
            async with gate:
                return await self._one(i)

        self.roster = list(await asyncio.gather(*(one(i) for i in range(count))))
        return self.roster

    async def wait_round_open(self, table_id: str, round_id: str, timeout_s: float = 30.0
                              ) -> None:
        """The wallet refuses bets on a round it has not seen open yet."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            async with self.session.get(f"{self.url}/tables/{table_id}/current-round") as r:
                body = await r.json() if r.status == 200 else {}
            if body.get("round_id") == round_id and body.get("status") == "open":
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"the wallet did not see {round_id} open within {timeout_s}s")

    async def bet(self, player: Player, table_id: str, round_id: str) -> BetAnswer:
        n = next(self._ids)
        body = {"bet_id": f"{player.player_id}-{n}", "table_id": table_id, "round_id": round_id,
                "bet": BETS[n % 2], "stake": STAKE, "position": None}
        if player.operator_session is not None:
            body["operator_session"] = player.operator_session
        began = time.perf_counter()
        try:
            async with self.session.post(f"{self.url}/players/{player.player_id}/bets",
                                         json=body,
                                         headers={"Authorization": f"Bearer {player.token}"}
                                         ) as r:
                status = r.status
                payload = await r.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            return BetAnswer(0, type(exc).__name__, time.perf_counter() - began)
        seconds = time.perf_counter() - began
        code = None
        if status >= 300:
            try:
                code = json.loads(payload)["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = "unreadable"
        return BetAnswer(status, code, seconds)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self.operator_wallet is not None:
            self.operator_wallet.close()
