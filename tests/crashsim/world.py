"""The world around the services: the dealer (a device and a supervisor sending signed
inputs to dealer.inputs, where dealer-event's workers decide them on the kernel; the model's
own shoe, tableau and betting window say what each decision should be), the rule oracle
(what a round's cards say and what each bet returns) and the operator's wallet (seamless
mode).

The oracle is a few lines of Punto Banco written from the rules, not from
`shared.baccarat`, `shared.rounds` or game-evaluation, and the dealer's expectations are
the model's own rules (`TableModel`: its shoe's counts, its rounds, its admission window,
`baccarat`), not dealer-event's machine or helpers: so a bug in any of them cannot hide in
the expectation. dealer-event's configuration (`MACHINE`) is the one service object
built here (the stage's workers decide with it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.table_machine import MachineConfig
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


# players bet until the timer ends (seed 002: 30 s; here 10 s, so that in a schedule's 24
# seconds the timer closes a round as often as a supervisor does)
WINDOW = timedelta(seconds=10)
MAX_AGE = timedelta(seconds=30)  # an input older than this is refused stale_input
MAX_AHEAD = timedelta(seconds=5)  # one dated further ahead is refused input_from_future
DECKS = 8  # the profile's shoe: every card eight times
CARDS = [rank + suit for rank in "A23456789TJQK" for suit in "SHDC"]
PIPELINE = 3  # a table's inputs in flight (sent, not yet decided in the log) at most
# a table knows its last 500 rounds (docs/decisions/tables.md, "Rounds a table keeps"): an
# older id is a new id to it, and an annulment naming one is refused round_too_old_to_annul
# (a schedule deals a few rounds a table, its ids all new: the rule is written, not met)
KEPT_ROUNDS = 500


def input_key(table_id: str, role: str) -> bytes:
    """The key a table's device (or supervisor console) signs its inputs with."""
    return b"crashsim-input-key:" + table_id.encode() + b":" + role.encode()


# dealer-event's configuration: inputs signed by input_key, the betting window, every event
# authenticated with the key the downstream stages verify
# (decisions.machine_config)
MACHINE = MachineConfig(AdmissionPolicy(input_key), int(WINDOW.total_seconds()), TABLE_KEY)

Verdict = tuple[tuple[str, ...], str | None]  # the event types, the refusal's code
# refusals that say nothing of the input's fact (the same input may be applied later)
NOT_ITS_FACT = frozenset({"duplicate_input", "stale_input", "input_from_future",
                          "malformed_input", "unsigned", "bad_signature", "wrong_partition"})


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

    @property
    def in_play(self) -> bool:
        return self.status in ("open", "closed")


class TableModel:
    """A table as the model's own rules say it is after the inputs decided so far: its
    shoe's counts, its rounds (betting window, cards, the tableau by `baccarat`), the input
    ids it applied or refused on its rules, and the chain of events it sealed (type, card).
    `decide` is the rules, from the admission window to the tableau, written here and not
    taken from dealer-event: an input decided at `now` (the decision's clock, as its
    dealer.log entry records it) gives these event types, or this refusal."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.shoe: dict[str, int] | None = None
        self.rounds: list[Round] = []
        self.applied: set[str] = set()
        self.refused: set[str] = set()
        self.chain: list[tuple[str, str | None]] = []  # (event type, card) in seq order

    def copy(self) -> TableModel:
        new = TableModel(self.table_id)
        new.shoe = None if self.shoe is None else dict(self.shoe)
        new.rounds = [replace(r, cards=list(r.cards)) for r in self.rounds]
        new.applied, new.refused = set(self.applied), set(self.refused)
        new.chain = list(self.chain)
        return new

    @property
    def seq(self) -> int:
        return len(self.chain)

    @property
    def current(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None

    def round(self, round_id: str) -> Round | None:
        """The round of that id among those the table keeps (None: no such round, or older)."""
        return next((r for r in self.rounds[-KEPT_ROUNDS:] if r.round_id == round_id), None)

    def decide(self, inp: InputBase | None, now: datetime) -> Verdict:
        """The rules' verdict on `inp` (None: dealer-event's timer tick) decided at `now`;
        the model moves on as they say."""
        events: list[str] = []
        current = self.current
        if current is not None and current.status == "open" and now >= current.closes_at:
            current.status, current.closed_at = "closed", now  # the timer, before anything
            events.append(self._emit("betting_closed"))
        if inp is None:
            return tuple(events), None
        if inp.input_id in self.applied or inp.input_id in self.refused:
            return tuple(events), "duplicate_input"
        if now - inp.sent_at > MAX_AGE:
            return tuple(events), "stale_input"
        if inp.sent_at - now > MAX_AHEAD:
            return tuple(events), "input_from_future"
        try:
            events += self._rules(inp, now)
        except _Refused as refused:
            self.refused.add(inp.input_id)
            return tuple(events), refused.code
        self.applied.add(inp.input_id)
        return tuple(events), None

    def _emit(self, kind: str, card: str | None = None) -> str:
        self.chain.append((kind, card))
        return kind

    def _rules(self, inp: InputBase, now: datetime) -> list[str]:
        current = self.current
        in_play = current is not None and current.in_play
        if isinstance(inp, NewShoe):
            if in_play:
                raise _Refused("round_in_progress")
            if self.shoe is not None:
                raise _Refused("shoe_already_open")
            self.shoe = dict.fromkeys(CARDS, DECKS)
            return [self._emit("shoe_started")]
        if isinstance(inp, OpenRound):
            if self.shoe is None:
                raise _Refused("no_shoe")
            if in_play:
                raise _Refused("round_in_progress")
            if self.round(inp.round_id) is not None:
                raise _Refused("round_id_reused")
            self.rounds.append(Round(inp.round_id, now, now + WINDOW))
            out = [self._emit("round_opened")]
            self.rounds[-1].opened_seq = self.seq
            return out
        rnd = self.round(getattr(inp, "round_id", ""))
        if rnd is None and isinstance(inp, AnnulRounds) and len(self.rounds) > KEPT_ROUNDS:
            raise _Refused("round_too_old_to_annul")
        if rnd is None:
            raise _Refused("round_not_found")
        if isinstance(inp, CloseBetting):
            if rnd is not current or not rnd.in_play:
                raise _Refused("round_not_in_progress")
            if rnd.status != "open":
                raise _Refused("betting_already_closed")
            if inp.role != "supervisor":  # (the timer closed it first if its time is up)
                raise _Refused("betting_window_open")
            if inp.reason_text is None:
                raise _Refused("close_reason_required")
            rnd.status, rnd.closed_at = "closed", now
            return [self._emit("betting_closed")]
        if isinstance(inp, ScanCard):
            card = str(inp.card)
            if rnd is not current or not (rnd.in_play or rnd.status == "complete"):
                raise _Refused("round_not_in_progress")
            if rnd.status == "open":
                raise _Refused("betting_still_open")
            assert self.shoe is not None
            if self.shoe[card] <= 0:  # every copy of it is out: a double scan
                raise _Refused("card_not_in_shoe")
            if rnd.status == "complete":
                raise _Unmodelled(f"a card scanned after {rnd.round_id} completed")
            self.shoe[card] -= 1
            rnd.cards.append(card)
            out = [self._emit("card_dealt", card)]
            outcome = baccarat(rnd.cards)
            if outcome.complete:
                rnd.status, rnd.outcome = "complete", outcome
                out.append(self._emit("round_completed"))
            return out
        if isinstance(inp, VoidRound):
            if rnd.status == "complete" and not rnd.annulled:
                raise _Refused("void_after_completion")
            self._not_ended(rnd)
            rnd.status = "voided"
            return [self._emit("round_voided")]
        if isinstance(inp, AnnulRounds):
            self._not_ended(rnd)
            if rnd.status != "complete":
                raise _Refused("round_not_completed")
            rnd.annulled = True
            return [self._emit("round_annulled")]
        raise _Unmodelled(f"{inp.command} is no input of the dealer model")

    @staticmethod
    def _not_ended(rnd: Round) -> None:
        if rnd.status == "voided":
            raise _Refused("round_already_voided")
        if rnd.annulled:
            raise _Refused("round_already_annulled")


class _Refused(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class _Unmodelled(Exception):
    """A state the dealer model never drives its table into (a finding if it is met)."""


@dataclass
class Decision:
    """One record of dealer.inputs (an input, a timer tick: `inp` None, or garbage) as
    dealer-event's valid log decided it: what the model's rules expect at the decision's
    time (event types, or a refusal code after any timer close) and what the entry says."""

    what: str
    expected: Verdict
    decided: Verdict

    @property
    def as_the_rules_say(self) -> bool:
        return self.expected == self.decided


def describe(inp: InputBase | None) -> str:
    if inp is None:
        return "timer"
    fields = vars(inp)  # (a pydantic model's fields: a missing one costs no AttributeError)
    return f"{inp.command} {inp.input_id}" + "".join(
        f" {fields[f]}" for f in ("round_id", "card") if fields.get(f))


class Table:
    """One table's dealer: a device and a supervisor sending signed inputs to dealer.inputs,
    where dealer-event's workers decide them (`pipeline`). `truth` is the model's table as
    the inputs dealer-event's valid log decided leave it, by the model's own rules
    (`judge`, called for each valid dealer.log entry of the table, in order); the dealer
    plans its next moves on the truth with its inputs still in flight applied (as they
    should be decided now), at most `PIPELINE` of them in flight. `probe` (a random
    source of its own, so the schedule's stream is untouched) picks the inputs the machine
    must refuse: a resend, a device closing betting early, a void of an ended round; a
    `stacked` table also deals one card until the shoe holds no more of it, in the drain,
    and then scans it again."""

    def __init__(self, table_id: str, rng: random.Random,
                 probe: random.Random | None = None, stacked: bool = False) -> None:
        self.table_id = table_id
        self.rng = rng
        self.probe = probe or random.Random(table_id)
        self.stacked = stacked
        self.truth = TableModel(table_id)
        self.sent: list[InputBase] = []
        self.pending: list[tuple[int, int, InputBase]] = []  # records not decided yet
        self.decisions: list[Decision] = []
        self.unmodelled: list[str] = []
        self.finished = False  # the drain's finish planned
        self.gone: str | None = None  # a stacked table's card dealt out of its shoe
        self.exhausted = False

    @property
    def rounds(self) -> list[Round]:
        return self.truth.rounds

    @property
    def current(self) -> Round | None:
        return self.truth.current

    @property
    def seq(self) -> int:
        """The table's chain so far, as dealer-event's log decided it."""
        return self.truth.seq

    def open_round(self) -> Round | None:
        current = self.current
        return current if current is not None and current.status == "open" else None

    # ---------------------------------------------------------------- the log's decisions

    def judge(self, offset: tuple[int, int], inp: InputBase | None, now: datetime,
              decided: Verdict) -> None:
        """A valid dealer.log entry decided this table's record at `offset` (`inp`, or a
        tick) at `now`: the truth moves on by the model's rules, and the verdict is kept."""
        self.pending = [x for x in self.pending if (x[0], x[1]) != offset]
        try:
            expected = self.truth.decide(inp, now)
        except _Unmodelled as why:
            self.unmodelled.append(f"{describe(inp)}: {why}")
            return
        self.decisions.append(Decision(describe(inp), expected, decided))

    def plan(self, now: datetime) -> TableModel:
        """The truth with the inputs in flight decided now, as the rules say."""
        plan = self.truth.copy()
        for _, _, inp in self.pending:
            try:
                plan.decide(inp, now)
            except _Unmodelled:
                pass
        return plan

    # ---------------------------------------------------------------- the dealer's moves

    def _input(self, plan: TableModel, out: list[InputBase], kind: type[InputBase],
               now: datetime, role: str = "device", **fields: Any) -> Verdict:
        signer = "sup" if role == "supervisor" else "Ana"
        inp = make_input(kind, key=input_key(self.table_id, role), sent_at=now,
                         input_id=f"{self.table_id}-i{len(self.sent) + 1}",
                         table_id=self.table_id, role=role, signer=signer, **fields)
        self.sent.append(inp)
        return self._again(plan, out, inp, now)

    @staticmethod
    def _again(plan: TableModel, out: list[InputBase], inp: InputBase, now: datetime
               ) -> Verdict:
        out.append(inp)
        try:
            return plan.decide(inp, now)
        except _Unmodelled:
            return (), None

    def step(self, now: datetime, void_p: float = 0.05, annul_p: float = 0.2
             ) -> list[InputBase]:
        """The dealer's next move, unless `PIPELINE` inputs are in flight: open a round,
        close betting, deal a card (the round completes when the tableau says so), void a
        round, or annul a completed one; then maybe a probe."""
        if len(self.pending) >= PIPELINE:
            return []
        plan, out = self.plan(now), list[InputBase]()
        self._move(plan, out, now, void_p, annul_p)
        self._probe(plan, out, now)
        return out

    def _move(self, plan: TableModel, out: list[InputBase], now: datetime, void_p: float,
              annul_p: float) -> None:
        rng = self.rng
        if plan.shoe is None:
            self._input(plan, out, NewShoe, now, "supervisor", shoe_id="S1", profile=PROFILE)
            return
        current = plan.current
        if current is None or not current.in_play:
            if current is not None and current.status == "complete" and not current.annulled \
                    and rng.random() < annul_p:
                self._input(plan, out, AnnulRounds, now, "supervisor",
                            round_id=current.round_id, reason_code="misdeal",
                            reason_text="annulled")
                return
            self._input(plan, out, OpenRound, now, round_id=self._next_round_id(plan),
                        dealer="Ana")
            return
        if current.status == "open" and now < current.closes_at:
            if self.open_round() is not None:  # bets come in once the log opened it
                self._close(plan, out, current, now)
            return
        if rng.random() < void_p:
            self._input(plan, out, VoidRound, now, "supervisor", round_id=current.round_id,
                        reason_code="other", reason_text="a card dropped")
            return
        card = rng.choice("A23456789TJQK") + rng.choice("SHDC")
        self._input(plan, out, ScanCard, now, round_id=current.round_id, card=card)

    def _next_round_id(self, plan: TableModel) -> str:
        return f"{self.table_id}-r{len(plan.rounds) + 1}"

    def _close(self, plan: TableModel, out: list[InputBase], current: Round, now: datetime
               ) -> None:
        """Betting closed before its window ends: only a supervisor may, with a reason; a
        device trying first is refused."""
        if self.probe.random() < 0.1:
            self._input(plan, out, CloseBetting, now, round_id=current.round_id)
        self._input(plan, out, CloseBetting, now, "supervisor", round_id=current.round_id,
                    reason_text="closed early")

    def _probe(self, plan: TableModel, out: list[InputBase], now: datetime) -> None:
        """Inputs the machine must refuse, now and then: an input it decided sent again (its
        id decided once), a void of a round already ended."""
        decided = [i for i in self.sent if i.input_id in plan.applied | plan.refused]
        if decided and self.probe.random() < 0.05:
            self._again(plan, out, self.probe.choice(decided), now)
        current = plan.current
        if current is not None and current.status in ("complete", "voided") \
                and self.probe.random() < 0.15:
            self._input(plan, out, VoidRound, now, "supervisor", round_id=current.round_id,
                        reason_code="other", reason_text="void it again")

    def resend(self) -> InputBase | None:
        """An input still in flight, sent again (the same record: the device's resend)."""
        if not self.pending:
            return None
        return self.probe.choice(self.pending)[2]

    def finish(self, now: datetime, annul_p: float) -> list[InputBase]:
        """The drain (clean workers, no more faults): once every input in flight is
        decided, deal the round in play to its end (no void), the first time maybe annul it
        and probe; a stacked table then deals rounds of one card until the shoe holds none
        of it, and scans it once more. Nothing when the table has finished."""
        if self.pending:
            return []
        plan, out = self.truth.copy(), list[InputBase]()
        while plan.shoe is None or (plan.current is not None and plan.current.in_play):
            self._move(plan, out, now, 0.0, 0.0)
            if len(out) > 40:
                return out
        if not self.finished:
            self.finished = True
            current = plan.current
            if current is not None and current.status == "complete" and not current.annulled \
                    and self.rng.random() < annul_p:
                self._input(plan, out, AnnulRounds, now, "supervisor",
                            round_id=current.round_id, reason_code="misdeal",
                            reason_text="annulled")
            self._probe(plan, out, now)
        if self.stacked and not self.exhausted:
            self._exhaust(plan, out, now)
        return out

    def _exhaust(self, plan: TableModel, out: list[InputBase], now: datetime) -> None:
        assert plan.shoe is not None
        if self.gone is None:
            self.gone = self.probe.choice(CARDS)
        gone = self.gone
        probed = False
        while not probed or plan.current.status != "complete":  # type: ignore[union-attr]
            current = plan.current
            if current is None or not current.in_play:
                self._input(plan, out, OpenRound, now, round_id=self._next_round_id(plan),
                            dealer="Ana")
                current = plan.current
                assert current is not None
            if current.status == "open":
                self._close(plan, out, current, now)
            if plan.shoe[gone] > 0:
                self._input(plan, out, ScanCard, now, round_id=current.round_id, card=gone)
            elif not probed:
                probed = True  # refused: card_not_in_shoe
                self._input(plan, out, ScanCard, now, round_id=current.round_id, card=gone)
            else:
                self._input(plan, out, ScanCard, now, round_id=current.round_id,
                            card=self.probe.choice([c for c in CARDS if plan.shoe[c] > 0]))
        self.exhausted = True
        self._probe(plan, out, now)


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
