"""Simulated players betting through the wallet's HTTP API, as real clients would.

The operator API opens and funds accounts and issues tokens; each player then
watches the tables' open rounds and bets across every bet the table offers
(with positions on Triple Face), with a share of bets the platform must refuse:
below the minimum, not offered, bad position, more than the balance, or on a
round already closed. Every answer is counted by status and error code.
The demo calls `PlayerSimulator` directly while tables run.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp

from services.infra.http_retry import TRANSPORT_ERRORS, Reply, read_reply, with_retry
from services.simulators.operator_wallet.client import (
    OperatorWalletClient,
    OperatorWalletError,
)

log = logging.getLogger(__name__)

# Requests a simulator has in flight to the wallet at once, each on a connection kept open.
# aiohttp, not httpx: in one run, 400 bets sent 32 at a time took 3.5 s through httpx and
# 1.15 s through aiohttp, the simulator's own CPU being what held them back; a session
# of six tables and 600 bets a round was bound by it (docs/decisions/scale.md).
IN_FLIGHT = 32

OTHER_GAME_BET = {"baccarat": "three_knights", "triple_face": "dragon_bonus_player"}
BAD_KINDS = ("below_minimum", "bet_not_offered", "bad_position", "insufficient_funds",
             "round_closed")


@dataclass
class Player:
    player_id: str
    token: str
    deposit: int
    operator_session: str | None = None  # seamless mode: the player's session at the operator


@dataclass
class PlayerSimulator:
    wallet_url: str
    operator_token: str
    tables: list[str]
    players: int = 5
    deposit: int = 1_000_000
    currency: str = "IDR"
    seed: int = 1
    bad_share: float = 0.15
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    # seamless mode: the operator's wallet holds the money; the players are funded there
    # and bet with a session of theirs there (None: transfer mode, funded by deposits)
    operator_wallet: OperatorWalletClient | None = None
    answers: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._session: aiohttp.ClientSession | None = None  # made in the running loop
        self.roster: list[Player] = []
        self.seen_rounds: dict[str, str] = {}  # table -> last round bet on
        self.closed_rounds: dict[str, str] = {}  # table -> a round that is over

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                base_url=self.wallet_url.rstrip("/"), timeout=aiohttp.ClientTimeout(total=30),
                connector=aiohttp.TCPConnector(limit=IN_FLIGHT))
        return self._session

    async def _call(self, method: str, url: str, **kwargs) -> Reply:
        """One request, sent again (same body, same ids) while the wallet fails over."""
        response, _ = await with_retry(lambda: read_reply(self.session, method, url, **kwargs))
        return response

    @property
    def _operator(self) -> dict:
        return {"Authorization": f"Bearer {self.operator_token}"}

    async def setup(self) -> list[Player]:
        """Open and fund every account (idempotent: the same ids on a rerun) and get tokens.
        The last player is funded with only a little, so some bets must bounce."""
        for i in range(self.players):
            player_id = f"sim-{self.run_id}-{i}"
            deposit = self.deposit if i < self.players - 1 or self.players == 1 else 2_000
            await self._ok(self._call("POST", "/accounts", headers=self._operator,
                                             json={"player_id": player_id,
                                                   "currency": self.currency}))
            session = None
            if self.operator_wallet is None:
                await self._ok(self._call("POST", f"/accounts/{player_id}/deposits",
                                                 headers=self._operator,
                                                 json={"request_id": f"seed-{player_id}",
                                                       "amount": deposit}))
            else:
                session = await asyncio.to_thread(self._fund_at_operator, player_id, deposit)
            token = (await self._ok(self._call("POST", f"/players/{player_id}/token",
                                                     headers=self._operator)))["token"]
            self.roster.append(Player(player_id, token, deposit, session))
        return self.roster

    def _fund_at_operator(self, player_id: str, deposit: int) -> str:
        """Seamless mode: the player's balance at the operator's wallet (set once: a rerun
        keeps what the player has), and a session there for the day."""
        assert self.operator_wallet is not None
        try:
            self.operator_wallet.player(player_id)
        except OperatorWalletError:
            self.operator_wallet.put_player(player_id, currency=self.currency, balance=deposit)
        return self.operator_wallet.issue_session(player_id, ttl_seconds=24 * 3600)

    async def _ok(self, request) -> dict:
        response = await request
        if response.status_code >= 300:
            raise RuntimeError(f"wallet refused setup: {response.status_code} {response.text}")
        return response.json()

    async def current_round(self, table_id: str) -> dict | None:
        # the limits and chips in the players' currency (they all have the simulator's)
        response = await self._call("GET", f"/tables/{table_id}/current-round",
                                    params={"currency": self.currency})
        return response.json() if response.status_code == 200 else None

    def round_opened(self, table_id: str, round_id: str) -> bool:
        """Note `round_id` as the table's open round: the one noted before it is over, and
        the `round_closed` refusals bet on it. False when this round was noted already."""
        last = self.seen_rounds.get(table_id)
        if last == round_id:
            return False
        if last is not None:
            self.closed_rounds[table_id] = last
        self.seen_rounds[table_id] = round_id
        return True

    async def bet_when_open(self, table_id: str, round_id: str, within_s: float,
                            bets_per_player: int) -> bool:
        """Bet on the round once the wallet shows it open (the wallet learns of it from the
        log, a moment after the table opens it), trying for `within_s` seconds. False when
        the wallet had not seen it open in time: nobody bet on it."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            current = await self.current_round(table_id)
            if current and current["round_id"] == round_id and current["status"] == "open":
                self.round_opened(table_id, round_id)
                await self.bet_on_round(current, bets_per_player)
                return True
            await asyncio.sleep(0.05)
        return False

    def _good_bet(self, info: dict) -> dict:
        """A bet within the limits in the players' currency: a few of the smallest chip that
        fits the bet (the table's minimum when it has no such chip), up to the maximum."""
        name = self.rng.choice(sorted(info["bets"]))
        spec = info["bets"][name]
        units = self.rng.choice([1, 1, 2, 3, 5, 10])
        fits = [chip for limits in info.get("limits", [])[:1] for chip in limits["chips"]
                if spec["min_stake"] <= chip <= spec["max_stake"]]
        chip = fits[0] if fits else spec["min_stake"]
        stake = max(chip, min(spec["max_stake"] // chip * chip, chip * units))
        position = self.rng.choice(spec["positions"]) if spec["positions"] else None
        return {"bet": name, "stake": stake, "position": position}

    def _bad_bet(self, info: dict, kind: str) -> dict:
        bet = self._good_bet(info)
        spec = info["bets"][bet["bet"]]
        if kind == "below_minimum":
            bet["stake"] = max(1, spec["min_stake"] - 1)
        elif kind == "bet_not_offered":
            bet.update(bet=OTHER_GAME_BET[info["game"]], position=None)
        elif kind == "bad_position":
            bet["position"] = None if spec["positions"] else 2
        elif kind == "insufficient_funds":  # placed by the poorly funded last player
            bet["stake"] = spec["max_stake"]
        return bet

    @staticmethod
    def _largest_open_bet(info: dict) -> dict:
        """The table's maximum on the bet with the largest one that no restriction keeps
        from a player with no other bet in the round (a Tiger wager needs a main bet first:
        refused `needs_main_bet` at the door, before any money is asked for)."""
        restricted = {b for r in info.get("restrictions", ()) for b in r["bets"]}
        name = max((b for b in info["bets"] if b not in restricted),
                   key=lambda b: (info["bets"][b]["max_stake"], b))
        spec = info["bets"][name]
        return {"bet": name, "stake": spec["max_stake"],
                "position": spec["positions"][0] if spec["positions"] else None}

    async def bet_on_round(self, info: dict, bets_per_player: int = 2) -> Counter[str]:
        """Every player places a few bets on the open round `info` (a current-round body)."""
        table_id, round_id = info["table_id"], info["round_id"]
        if not info.get("limits"):  # the table does not offer the players' currency
            log.warning("table %s offers no limits in %s (it takes %s): no bets", table_id,
                        self.currency, ", ".join(info.get("currencies") or ()))
            return Counter()
        jobs = []
        for player in self.roster:
            for _ in range(bets_per_player):
                who, target = player, round_id
                if self.rng.random() < self.bad_share:
                    kind = self.rng.choice(BAD_KINDS)
                    if kind == "round_closed" and table_id in self.closed_rounds:
                        body, target = self._good_bet(info), self.closed_rounds[table_id]
                    else:
                        body = self._bad_bet(info, kind)
                        who = self.roster[-1] if kind == "insufficient_funds" else player
                else:
                    body = self._good_bet(info)
                jobs.append(self.place(who, table_id, target, body))
        counted = Counter(await asyncio.gather(*jobs))
        self.answers.update(counted)
        return counted

    async def bet_beyond_funds(self, within_s: float) -> str:
        """The poorly funded last player bets a table's maximum on an open round, again on
        each new round while the answer is that the round closed or the wallet failed over,
        for `within_s` seconds: the answer the operator's refusal gives (402), made certain
        rather than left to the share of bad bets. "no decision" when none came in time.
        Answers of 5xx (failing over, the operator's faults) count as no decision."""
        answer = "no decision"
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            async for info in self._newly_open_rounds():
                if not info.get("limits"):  # the table does not offer the players' currency
                    continue
                answer = await self.place(self.roster[-1], info["table_id"], info["round_id"],
                                          self._largest_open_bet(info))
                if not answer.startswith(("409 round_closed", "5", "no answer")):
                    return answer
            await asyncio.sleep(0.2)
        return answer

    async def place(self, player: Player, table_id: str, round_id: str, body: dict) -> str:
        payload = {"bet_id": f"{player.player_id}-{uuid.uuid4().hex[:12]}", "table_id": table_id,
                   "round_id": round_id, **body}
        if player.operator_session is not None:
            payload["operator_session"] = player.operator_session
        try:
            response = await self._call("POST", f"/players/{player.player_id}/bets",
                                        json=payload,
                                        headers={"Authorization": f"Bearer {player.token}"})
        except TRANSPORT_ERRORS:  # the wallet unreachable past the retries: as a client sees it
            return "no answer"
        if response.status_code < 300:
            return str(response.status_code)
        return f"{response.status_code} {response.json()['error']['code']}"

    async def watch(self, duration_s: float, poll_s: float = 0.5) -> Counter[str]:
        """Bet once on every new open round of every table until `duration_s` passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + duration_s
        while loop.time() < deadline:
            async for info in self._newly_open_rounds():
                await self.bet_on_round(info)
            await asyncio.sleep(poll_s)
        return self.answers

    async def _newly_open_rounds(self) -> AsyncIterator[dict]:
        """Each table's open round (its current-round body) the first time it is seen open,
        noted then (`round_opened`), one table after another."""
        for table_id in self.tables:
            info = await self.current_round(table_id)
            if info is not None and info["status"] == "open" \
                    and self.round_opened(table_id, info["round_id"]):
                yield info

    async def balances(self) -> dict[str, int]:
        out = {}
        for player in self.roster:
            r = await self._call("GET", f"/players/{player.player_id}/balance",
                                      headers={"Authorization": f"Bearer {player.token}"})
            out[player.player_id] = r.json()["balance"]
        return out

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
