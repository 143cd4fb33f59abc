"""The world around the services, modelled independently of their code: the dealer (a
shoe, the baccarat tableau, the table's signed event chain), the rule oracle (what a round's
cards say and what each bet returns) and the operator's wallet (seamless mode).

Nothing here imports a service: the oracle is a few lines of Punto Banco written from the
rules, not from `croupier.shared.baccarat` or game-evaluation, so a bug in either cannot
hide in the expectation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from croupier.shared.cards import parse_card
from croupier.shared.events.canonical import GENESIS_HASH
from croupier.shared.events.table import (
    BettingClosed,
    CardDealt,
    RoundAnnulled,
    RoundCompleted,
    RoundOpened,
    RoundVoided,
    ShoeStarted,
    TableEventBase,
    seal,
)

TABLE_KEY = b"crashsim-table-events-key"
PROFILE = "sbo-baccarat"

# ------------------------------------------------------------------ the rule oracle


def points(card: str) -> int:
    rank = card[0]
    return 1 if rank == "A" else 0 if rank in "TJQK" else int(rank)


@dataclass(frozen=True)
class Outcome:
    """A baccarat round by the cards alone: complete or not, the points, the winner."""

    complete: bool
    player: int = 0
    banker: int = 0
    winner: str = ""


def baccarat(cards: list[str]) -> Outcome:
    """Punto Banco's tableau over the cards dealt so far (player, banker, player, banker,
    then the third cards)."""
    if len(cards) < 4:
        return Outcome(False)
    p = (points(cards[0]) + points(cards[2])) % 10
    b = (points(cards[1]) + points(cards[3])) % 10
    n = 4
    if p < 8 and b < 8:
        third = None
        if p <= 5:
            if len(cards) <= n:
                return Outcome(False)
            third = points(cards[n])
            p = (p + third) % 10
            n += 1
        banker_draws = b <= 5 if third is None else (
            b <= 2 or (b == 3 and third != 8) or (b == 4 and 2 <= third <= 7)
            or (b == 5 and 4 <= third <= 7) or (b == 6 and 6 <= third <= 7))
        if banker_draws:
            if len(cards) <= n:
                return Outcome(False)
            b = (b + points(cards[n])) % 10
    winner = "player" if p > b else "banker" if b > p else "tie"
    return Outcome(True, p, b, winner)


def returned(bet: str, stake: int, winner: str) -> int:
    """What a commission-baccarat bet returns (stake included): player 1:1, banker 19:20,
    tie 8:1; a tie returns the player and banker bets' stakes."""
    if bet == "tie":
        return 9 * stake if winner == "tie" else 0
    if winner == "tie":
        return stake
    if bet != winner:
        return 0
    return 2 * stake if bet == "player" else stake + stake * 19 // 20


# ------------------------------------------------------------------ the dealer


@dataclass
class Round:
    round_id: str
    opened_at: datetime
    closes_at: datetime
    status: str = "open"  # open, closed, complete, voided
    cards: list[str] = field(default_factory=list)
    closed_at: datetime | None = None
    annulled: bool = False
    outcome: Outcome | None = None


class Table:
    """One table's dealer: its chain of signed events, its shoe, its rounds."""

    def __init__(self, table_id: str, rng: random.Random) -> None:
        self.table_id = table_id
        self.rng = rng
        self.seq = 0
        self.prev_hash = GENESIS_HASH
        self.rounds: list[Round] = []
        self.shoe_position = 0
        self.started = False

    @property
    def current(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None

    def open_round(self) -> Round | None:
        current = self.current
        return current if current is not None and current.status == "open" else None

    def _event(self, kind: type[TableEventBase], now: datetime, **fields) -> TableEventBase:
        self.seq += 1
        event = seal(kind, table_id=self.table_id, seq=self.seq, prev_hash=self.prev_hash,
                     occurred_at=now, key=TABLE_KEY, **fields)
        self.prev_hash = event.hash
        return event

    def step(self, now: datetime, void_p: float = 0.05, annul_p: float = 0.2
             ) -> list[TableEventBase]:
        """The dealer's next move: open a round, close betting, deal a card (the round
        completes when the tableau says so), void a round, or annul a completed one."""
        rng, out = self.rng, []
        if not self.started:
            self.started = True
            out.append(self._event(ShoeStarted, now, shoe_id="S1", profile=PROFILE, decks=8))
        current = self.current
        if current is None or current.status in ("complete", "voided"):
            if current is not None and current.status == "complete" and not current.annulled \
                    and rng.random() < annul_p:
                current.annulled = True
                out.append(self._event(RoundAnnulled, now, round_id=current.round_id,
                                       reason_code="misdeal", reason_text="annulled",
                                       supervisor="sup"))
                return out
            round_id = f"{self.table_id}-r{len(self.rounds) + 1}"
            rnd = Round(round_id, now, now + timedelta(seconds=30))
            self.rounds.append(rnd)
            out.append(self._event(RoundOpened, now, shoe_id="S1", round_id=round_id,
                                   round_number=len(self.rounds), dealer="Ana",
                                   profile=PROFILE, betting_closes_at=rnd.closes_at))
            return out
        if current.status == "open":
            current.status, current.closed_at = "closed", now
            out.append(self._event(BettingClosed, now, round_id=current.round_id,
                                   reason="dealer"))
            return out
        if rng.random() < void_p:
            current.status = "voided"
            out.append(self._event(RoundVoided, now, round_id=current.round_id,
                                   reason_code="card_dropped", reason_text="dropped",
                                   supervisor="sup"))
            return out
        card = rng.choice("A23456789TJQK") + rng.choice("SHDC")
        current.cards.append(card)
        out.append(self._event(CardDealt, now, round_id=current.round_id,
                               card=parse_card(card), shoe_position=self.shoe_position,
                               round_position=len(current.cards) - 1))
        self.shoe_position += 1
        outcome = baccarat(current.cards)
        if outcome.complete:
            current.status, current.outcome = "complete", outcome
            out.append(self._event(RoundCompleted, now, round_id=current.round_id,
                                   cards=tuple(parse_card(c) for c in current.cards)))
        return out

    def finish(self, now: datetime, annul_p: float) -> list[TableEventBase]:
        """Deal the round in play to its end (no void), maybe annul it: the drain."""
        out: list[TableEventBase] = []
        while self.current is not None and self.current.status in ("open", "closed"):
            out += self.step(now, void_p=0.0, annul_p=0.0)
        current = self.current
        if current is not None and current.status == "complete" and not current.annulled \
                and self.rng.random() < annul_p:
            current.annulled = True
            out.append(self._event(RoundAnnulled, now, round_id=current.round_id,
                                   reason_code="misdeal", reason_text="annulled",
                                   supervisor="sup"))
        return out


# ------------------------------------------------------------------ the operator's wallet


@dataclass
class OperatorWallet:
    """The operator's wallet (seamless mode), in process, as croupier's protocol asks of it
    (docs/decisions/seamless.md): balances, transactions applied once by id (a repeat is
    answered as the first delivery), a rollback of an unknown transaction leaves a tombstone
    (the late debit is then refused `transaction_rolled_back`); and faults: no answer,
    before or after the call was applied."""

    rng: random.Random
    start_balance: int = 50_000
    balances: dict[str, int] = field(default_factory=dict)
    applied: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # tx -> kind, player, +-
    refused: dict[str, str] = field(default_factory=dict)  # tx -> its error code
    rolled_back: set[str] = field(default_factory=set)
    tombstones: set[str] = field(default_factory=set)
    fail_p: float = 0.15

    def balance(self, player_id: str) -> int:
        return self.balances.setdefault(player_id, self.start_balance)

    def call(self, kind: str, tx: str, player_id: str, amount: int, reference: str | None
             ) -> tuple[str, str | None, int | None]:
        """(outcome, error code, balance): ok, refused or no_answer."""
        roll = self.rng.random()
        if roll < self.fail_p / 2:
            return "no_answer", None, None  # lost on the way in
        outcome = self._apply(kind, tx, player_id, amount, reference)
        if roll < self.fail_p:
            return "no_answer", None, None  # applied, the answer lost
        return outcome

    def _apply(self, kind: str, tx: str, player_id: str, amount: int, reference: str | None
               ) -> tuple[str, str | None, int | None]:
        balance = self.balance(player_id)
        if tx in self.applied:
            return "ok", None, balance
        if tx in self.refused:  # a repeat is answered as the first delivery
            return "refused", self.refused[tx], balance
        if tx in self.tombstones and kind != "rollback":
            self.refused[tx] = "transaction_rolled_back"
            return "refused", "transaction_rolled_back", balance
        if kind == "debit":
            if amount > balance:
                self.refused[tx] = "insufficient_funds"
                return "refused", "insufficient_funds", balance
            self.balances[player_id] = balance - amount
            self.applied[tx] = (kind, player_id, -amount)
        elif kind == "credit":
            self.balances[player_id] = balance + amount
            self.applied[tx] = (kind, player_id, amount)
        else:  # a rollback undoes its reference, if the operator holds it
            undone = self.applied.get(reference or "")
            if undone is None:
                self.tombstones.add(reference or "")
                self.refused[tx] = "transaction_not_found"
                return "refused", "transaction_not_found", balance
            if reference not in self.rolled_back:
                self.rolled_back.add(reference or "")
                self.balances[player_id] = balance - undone[2]
            self.applied[tx] = (kind, player_id, -undone[2])
        return "ok", None, self.balances[player_id]
