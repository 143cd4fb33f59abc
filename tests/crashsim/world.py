"""The world around the services: the dealer (a device and a supervisor sending signed
inputs to dealer-event's real pure machine, which decides the table's signed event chain;
the model's own shoe, tableau and betting window say what it should decide), the rule
oracle (what a round's cards say and what each bet returns) and the operator's wallet
(seamless mode).

The oracle is a few lines of Punto Banco written from the rules, not from
`shared.baccarat`, `shared.rounds` or game-evaluation, and the dealer's
expectations are the model's own rules (its shoe's counts, its rounds, `baccarat`), not the
machine's helpers: so a bug in any of them cannot hide in the expectation. dealer-event's
machine is the one service code imported here (it is the code under test).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig, MachineStep, step, tick
from shared.events.inputs import (
    AnnulRounds,
    CloseBetting,
    InputBase,
    NewShoe,
    OpenRound,
    ScanCard,
    VoidRound,
    make_input,
)
from shared.events.table import TableEventBase, event_auth

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


WINDOW = timedelta(seconds=30)  # seed 002: players bet until the 30-second timer ends
DECKS = 8  # the profile's shoe: every card eight times
CARDS = [rank + suit for rank in "A23456789TJQK" for suit in "SHDC"]


def input_key(table_id: str, role: str) -> bytes:
    """The key a table's device (or supervisor console) signs its inputs with."""
    return b"crashsim-input-key:" + table_id.encode() + b":" + role.encode()


# dealer-event's configuration: inputs signed by input_key, the profile's betting window,
# every event authenticated with the key the downstream stages verify (runtime.machine_config)
MACHINE = MachineConfig(AdmissionPolicy(input_key), None, TABLE_KEY)


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
    opened_seq: int | None = None  # its RoundOpened's, as the wallet's door reads it


@dataclass
class Decision:
    """One input (or timer tick: `inp` None) handed to dealer-event's machine: what the
    model's rules expect (event types, or a refusal code after any timer close) and what it
    decided."""

    inp: InputBase | None
    expected: tuple[tuple[str, ...], str | None]
    decided: tuple[tuple[str, ...], str | None]

    @property
    def as_the_rules_say(self) -> bool:
        return self.expected == self.decided

    @property
    def what(self) -> str:
        inp = self.inp
        if inp is None:
            return "timer"
        return f"{inp.command} {inp.input_id}" + "".join(
            f" {getattr(inp, f)}" for f in ("round_id", "card") if getattr(inp, f, None))


class Table:
    """One table's dealer: a device and a supervisor sending signed inputs to dealer-event's
    real pure machine (`table_machine.step`, and `tick` as the runtime's betting timer),
    whose events (authenticated as its runtime does) are the table's chain. The model keeps
    its own knowledge (the shoe's counts, each round's cards, its betting window, the
    tableau by `baccarat`) and records, per input, what its own rules expect of the machine.
    `probe` (a random source of its own, so the schedule's stream is untouched) picks the
    inputs the machine must refuse: a resend, a device closing betting early, a void of an
    ended round; a `stacked` table also deals one card until the shoe holds no more of it,
    in the drain, and then scans it again."""

    def __init__(self, table_id: str, rng: random.Random,
                 probe: random.Random | None = None, stacked: bool = False) -> None:
        self.table_id = table_id
        self.rng = rng
        self.probe = probe or random.Random(table_id)
        self.stacked = stacked
        self.machine = TableState(table_id)
        self.rounds: list[Round] = []
        self.started = False
        self.shoe: dict[str, int] = {}
        self.sent: list[InputBase] = []
        self.decisions: list[Decision] = []

    @property
    def current(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None

    @property
    def seq(self) -> int:
        """The table's chain so far: how many events the machine wrote."""
        return self.machine.seq

    def open_round(self) -> Round | None:
        current = self.current
        return current if current is not None and current.status == "open" else None

    # ---------------------------------------------------------------- to the machine

    def _timer(self, now: datetime) -> tuple[str, ...]:
        """The model's betting timer: the round open for betting past its window closes
        before anything else is decided."""
        current = self.current
        if current is not None and current.status == "open" and now >= current.closes_at:
            current.status, current.closed_at = "closed", now
            return ("betting_closed",)
        return ()

    def _decided(self, inp: InputBase | None, expected: tuple[tuple[str, ...], str | None],
                 outcome: MachineStep) -> list[TableEventBase]:
        self.machine = outcome.state
        code = None if outcome.refusal is None else outcome.refusal.code
        self.decisions.append(Decision(inp, expected,
                                       (tuple(e.type for e in outcome.events), code)))
        return [e.model_copy(update={"auth": event_auth(TABLE_KEY, e.hash)})
                for e in outcome.events]

    def _send(self, inp: InputBase, now: datetime, events: tuple[str, ...] = (),
              refused: str | None = None) -> list[TableEventBase]:
        """`inp` decided by dealer-event's machine; the model expects `events` (after a
        timer close, if its window ran out), or the refusal `refused`."""
        expected = (self._timer(now) + events, refused)
        return self._decided(inp, expected, step(self.machine, inp, now, MACHINE))

    def _input(self, kind: type[InputBase], now: datetime, role: str = "device",
               **fields: Any) -> InputBase:
        signer = "sup" if role == "supervisor" else "Ana"
        inp = make_input(kind, key=input_key(self.table_id, role), sent_at=now,
                         input_id=f"{self.table_id}-i{len(self.sent) + 1}",
                         table_id=self.table_id, role=role, signer=signer, **fields)
        self.sent.append(inp)
        return inp

    def tick(self, now: datetime) -> list[TableEventBase]:
        """dealer-event's betting timer (the runtime's `tick_all`)."""
        return self._decided(None, (self._timer(now), None), tick(self.machine, now))

    # ---------------------------------------------------------------- the dealer's moves

    def _start(self, now: datetime) -> list[TableEventBase]:
        self.started = True
        self.shoe = dict.fromkeys(CARDS, DECKS)
        return self._send(self._input(NewShoe, now, "supervisor", shoe_id="S1",
                                      profile=PROFILE), now, ("shoe_started",))

    def _annul(self, current: Round, now: datetime) -> list[TableEventBase]:
        current.annulled = True
        return self._send(self._input(AnnulRounds, now, "supervisor",
                                      round_id=current.round_id, reason_code="misdeal",
                                      reason_text="annulled"), now, ("round_annulled",))

    def _open(self, now: datetime) -> list[TableEventBase]:
        round_id = f"{self.table_id}-r{len(self.rounds) + 1}"
        self.rounds.append(Round(round_id, now, now + WINDOW))
        events = self._send(self._input(OpenRound, now, round_id=round_id, dealer="Ana"),
                            now, ("round_opened",))
        self.rounds[-1].opened_seq = next((e.seq for e in events if e.type == "round_opened"),
                                          None)
        return events

    def _close(self, current: Round, now: datetime) -> list[TableEventBase]:
        """Betting closed before its window ends: only a supervisor may, with a reason; a
        device trying first is refused."""
        out: list[TableEventBase] = []
        if self.probe.random() < 0.1:
            out += self._send(self._input(CloseBetting, now, round_id=current.round_id),
                              now, refused="betting_window_open")
        current.status, current.closed_at = "closed", now
        out += self._send(self._input(CloseBetting, now, "supervisor",
                                      round_id=current.round_id, reason_text="closed early"),
                          now, ("betting_closed",))
        return out

    def _void(self, current: Round, now: datetime) -> list[TableEventBase]:
        current.status = "voided"
        return self._send(self._input(VoidRound, now, "supervisor",
                                      round_id=current.round_id, reason_code="other",
                                      reason_text="a card dropped"), now, ("round_voided",))

    def _scan(self, current: Round, card: str, now: datetime) -> list[TableEventBase]:
        inp = self._input(ScanCard, now, round_id=current.round_id, card=card)
        if self.shoe.get(card, 0) <= 0:  # every copy of it is out: a double scan
            return self._send(inp, now, refused="card_not_in_shoe")
        self.shoe[card] -= 1
        current.cards.append(card)
        outcome = baccarat(current.cards)
        if not outcome.complete:
            return self._send(inp, now, ("card_dealt",))
        current.status, current.outcome = "complete", outcome
        return self._send(inp, now, ("card_dealt", "round_completed"))

    def _probe(self, now: datetime) -> list[TableEventBase]:
        """Inputs the machine must refuse, now and then: an input sent again (its id
        decided once), a void of a round already ended."""
        out: list[TableEventBase] = []
        if self.sent and self.probe.random() < 0.05:
            out += self._send(self.probe.choice(self.sent), now, refused="duplicate_input")
        current = self.current
        if current is not None and current.status in ("complete", "voided") \
                and self.probe.random() < 0.15:
            refused = ("round_already_voided" if current.status == "voided" else
                       "round_already_annulled" if current.annulled else
                       "void_after_completion")
            out += self._send(self._input(VoidRound, now, "supervisor",
                                          round_id=current.round_id, reason_code="other",
                                          reason_text="void it again"), now, refused=refused)
        return out

    def step(self, now: datetime, void_p: float = 0.05, annul_p: float = 0.2
             ) -> list[TableEventBase]:
        """The dealer's next move: open a round, close betting, deal a card (the round
        completes when the tableau says so), void a round, or annul a completed one."""
        out = self._moves(now, void_p, annul_p)
        return out + self._probe(now)

    def _moves(self, now: datetime, void_p: float, annul_p: float) -> list[TableEventBase]:
        rng, out = self.rng, []
        if not self.started:
            out += self._start(now)
        current = self.current
        if current is None or current.status in ("complete", "voided"):
            if current is not None and current.status == "complete" and not current.annulled \
                    and rng.random() < annul_p:
                return out + self._annul(current, now)
            return out + self._open(now)
        if current.status == "open":
            if now >= current.closes_at:  # the timer closes it
                return out + self.tick(now)
            return out + self._close(current, now)
        if rng.random() < void_p:
            return out + self._void(current, now)
        card = rng.choice("A23456789TJQK") + rng.choice("SHDC")
        return out + self._scan(current, card, now)

    def finish(self, now: datetime, annul_p: float) -> list[TableEventBase]:
        """Deal the round in play to its end (no void), maybe annul it, maybe probe: the
        drain. A stacked table then deals rounds of one card until the shoe holds none of it, and
        scans it once more."""
        out: list[TableEventBase] = []
        while self.current is not None and self.current.status in ("open", "closed"):
            out += self._moves(now, 0.0, 0.0)
        current = self.current
        if current is not None and current.status == "complete" and not current.annulled \
                and self.rng.random() < annul_p:
            out += self._annul(current, now)
        out += self._probe(now)
        if self.stacked:
            out += self._exhaust(now)
        return out

    def _exhaust(self, now: datetime) -> list[TableEventBase]:
        out = [] if self.started else self._start(now)
        gone = self.probe.choice(CARDS)
        probed = False
        while not probed or self.current.status != "complete":  # type: ignore[union-attr]
            current = self.current
            if current is None or current.status in ("complete", "voided"):
                out += self._open(now)
                current = self.current
                assert current is not None
            if current.status == "open":
                out += self._close(current, now)
            if self.shoe[gone] > 0:
                out += self._scan(current, gone, now)
            elif not probed:
                probed = True
                out += self._scan(current, gone, now)  # refused: card_not_in_shoe
            else:
                out += self._scan(current, self.probe.choice(
                    [c for c in CARDS if self.shoe[c] > 0]), now)
        return out + self._probe(now)


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
