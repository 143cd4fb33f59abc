"""The per-table state machine: (state, input, now) -> new state and events, or a refusal.

Pure: no Kafka, no clock, no I/O. The worker hands in the state (a fold over the
table's log), one parsed input and the time; it gets back the events to publish,
already sealed into the table's hash chain, or the reason the input is refused.
The betting timer is the explicit `tick(state, now)`; the watch over rounds left hanging is
`watch(state, now, quiet, config)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from services.dealer_event.admission import AdmissionPolicy, authenticate, check_freshness
from services.dealer_event.refusals import InputRefusal, Refused
from services.dealer_event.state import (
    TableState,
    fold_into,
    remember_input,
)
from services.dealer_event.table_checks import (
    _current_round,
    _dealt_round,
    _kept_round_status,
    _no_round_in_progress,
    _not_abandoned,
    _not_ended,
    _not_in_shoe,
    _round_shoe,
    _round_status,
    _shoe_in_play,
    _shoe_playable,
    _table_open,
)
from shared.cards import parse_card
from shared.events.inputs import (
    AnnulRounds,
    Burn,
    CloseBetting,
    CloseTable,
    CorrectRound,
    CutCard,
    EndShoe,
    ExposeCard,
    InputBase,
    NewShoe,
    OpenRound,
    ReopenTable,
    ReportBurnError,
    ReportMisdeal,
    ReportTwoCards,
    ScanCard,
    ShoeFirstCard,
    VoidRound,
)
from shared.events.sources import InputPosition
from shared.events.table import (
    BettingClosed,
    CardBurned,
    CardDealt,
    CorrectionReason,
    CutCardReached,
    MisdealCorrected,
    RoundAnnulled,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    RoundRedealt,
    RoundStalled,
    RoundVoided,
    ShoeEnded,
    ShoeStartBurned,
    ShoeStarted,
    SurplusCardRecorded,
    TableClosed,
    TableEventBase,
    TableReopened,
    TwoCardsDrawn,
    VoidReason,
    seal,
)
from shared.profile import (
    AnyProfile,
    BaccaratProfile,
    TripleFaceProfile,
    UnknownProfileError,
    load_profile,
    pinned,
    round_profile,
)
from shared.round_phase import has_result, in_progress
from shared.rounds import cards_needed
from shared.shoe import start_burn_count
from shared.triple_face import dealing_order

# who a void decided by the rule book itself is recorded under (no person decided it)
BY_THE_RULES = "dealer-event"
# a correction of a round completed longer ago than the dispute window (RULES §6: 24 hours)
# names it with a reason code of its own
CORRECTION_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class MachineConfig:
    admission: AdmissionPolicy
    betting_window_override: int | None = None  # seconds; None = the profile's window
    # signs every event the runtime writes (shared/events/event_auth.py); None: unsigned
    table_events_key: bytes | None = None
    # a round with no input this long is stalled (a significant event), then abandoned
    # (the platform voids it): CROUPIER_ROUND_STALL_SECONDS, CROUPIER_ROUND_ABANDON_SECONDS
    stall_after: timedelta = timedelta(seconds=300)
    abandon_after: timedelta = timedelta(seconds=3600)


@dataclass(frozen=True)
class MachineStep:
    state: TableState
    events: tuple[TableEventBase, ...] = ()
    refusal: InputRefusal | None = None


@dataclass
class _Emitter:
    """Seals each new event onto the chain and folds it into the (copied) state."""

    state: TableState
    now: datetime
    input_id: str | None
    input_ref: InputPosition | None = None  # the dealer.inputs record being decided
    events: list[TableEventBase] = field(default_factory=list)

    def emit(self, event_type: type[TableEventBase], **fields: Any) -> None:
        event = seal(event_type, table_id=self.state.table_id, seq=self.state.seq + 1,
                     prev_hash=self.state.head_hash, occurred_at=self.now,
                     input_id=self.input_id, input_ref=self.input_ref, **fields)
        fold_into(self.state, event)
        self.events.append(event)


def tick(state: TableState, now: datetime, input_ref: InputPosition | None = None
         ) -> MachineStep:
    """Close the betting window of a round whose timer ran out (`input_ref`: the input whose
    decision found it overdue, if any)."""
    rnd = state.round
    if state.corrupt or rnd is None or rnd.phase != "betting" or now < rnd.betting_closes_at:
        return MachineStep(state)
    em = _Emitter(state.copy(), now, None, input_ref)
    em.emit(BettingClosed, round_id=rnd.round_id, reason="timer")
    return MachineStep(em.state, tuple(em.events))


def watch(state: TableState, now: datetime, quiet: timedelta, config: MachineConfig
          ) -> MachineStep:
    """A round left hanging (docs/decisions/abandoned-rounds.md): no input for
    `config.stall_after` raises RoundStalled once; none for `config.abandon_after` voids it
    under the platform's own name (`round_abandoned`), which refunds every stake downstream.

    How long the round has waited is the shorter of two measures, so that no single clock
    can end a round early: the wall clock since its last input (`now` against the log's
    `last_input_at`, which a worker whose clock runs ahead would overstate) and `quiet`, how
    long the deciding worker itself watched the table without a new event (a monotonic
    clock, which no clock reset moves; it starts again when a worker takes the table)."""
    rnd = state.round
    if state.corrupt or rnd is None or not rnd.in_progress or rnd.last_input_at is None:
        return MachineStep(state)
    waited = min(now - rnd.last_input_at, quiet)
    em = _Emitter(state.copy(), now, None)
    if waited >= config.abandon_after:
        _void(em, rnd.round_id, VoidReason.ROUND_ABANDONED,
              f"no input for {_span(waited)} (CROUPIER_ROUND_ABANDON_SECONDS: "
              f"{_span(config.abandon_after)}): the platform voids the round and returns "
              "every stake", BY_THE_RULES)
    elif waited >= config.stall_after and not rnd.stalled:
        em.emit(RoundStalled, round_id=rnd.round_id, last_input_at=rnd.last_input_at,
                quiet_seconds=int(waited.total_seconds()))
    return MachineStep(em.state, tuple(em.events))


def tick_due(state: TableState, now: datetime, quiet: timedelta, config: MachineConfig
             ) -> bool:
    """`tick` or `watch` would write an event now (the timer's question, without copying
    the state)."""
    rnd = state.round
    if state.corrupt or rnd is None:
        return False
    if rnd.phase == "betting" and now >= rnd.betting_closes_at:
        return True
    if not rnd.in_progress or rnd.last_input_at is None:
        return False
    waited = min(now - rnd.last_input_at, quiet)
    return waited >= config.abandon_after or (waited >= config.stall_after
                                              and not rnd.stalled)


def _span(duration: timedelta) -> str:
    seconds = int(duration.total_seconds())
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def step(state: TableState, inp: InputBase, now: datetime, config: MachineConfig,
         input_ref: InputPosition | None = None) -> MachineStep:
    """What the worker calls per input: the timer first (an input after the deadline
    sees betting closed), then the input itself. Every event names `input_ref`, the
    input's record in dealer.inputs (the worker's checkpoint), when given."""
    timed = tick(state, now, input_ref)
    outcome = apply(timed.state, inp, now, config, input_ref)
    return MachineStep(outcome.state, timed.events + outcome.events, outcome.refusal)


def apply(state: TableState, inp: InputBase, now: datetime, config: MachineConfig,
          input_ref: InputPosition | None = None) -> MachineStep:
    if inp.table_id != state.table_id:
        raise ValueError(f"input for table {inp.table_id} handed to table {state.table_id}")
    try:
        _admit(state, inp, now, config.admission)
    except Refused as refused_by:  # refused before the rules are consulted: state untouched
        return MachineStep(state, (), refused_by.refusal)
    em = _Emitter(state.copy(), now, inp.input_id, input_ref)
    try:
        _table_open(state, inp)
        _not_abandoned(state, inp)
        _DECIDE[type(inp)](em, inp, config)
    except Refused as refused_by:
        refused = state.copy()
        remember_input(refused.refused_inputs, inp.input_id, refused_by.refusal.code)
        return MachineStep(refused, (), refused_by.refusal)
    return MachineStep(em.state, tuple(em.events))


def _admit(state: TableState, inp: InputBase, now: datetime, policy: AdmissionPolicy) -> None:
    """Authentic, its table's chain intact, not decided before, and timely; or Refused."""
    authenticate(inp, policy)
    if state.corrupt:
        raise Refused("chain_corrupt", f"table {state.table_id} is out of play: its log "
                                       f"does not continue its hash chain ({state.corrupt})")
    _not_decided_before(state, inp)
    check_freshness(inp, now, policy)


def _not_decided_before(state: TableState, inp: InputBase) -> None:
    if inp.input_id in state.applied_inputs:
        raise Refused("duplicate_input", f"input {inp.input_id} was already applied; "
                                         "it is not applied twice")
    earlier = state.refused_inputs.get(inp.input_id)
    if earlier is not None:
        raise Refused("duplicate_input", f"input {inp.input_id} was already refused "
                                         f"({earlier}); send a new input id to try again")


# --- shoe commands ---------------------------------------------------------------------
# Each decision emits its events or raises Refused (before emitting anything).

def _new_shoe(em: _Emitter, inp: NewShoe, config: MachineConfig) -> None:
    try:
        profile = load_profile(inp.profile)
    except UnknownProfileError as exc:
        raise Refused("unknown_profile", str(exc)) from exc
    state, shoe = em.state, em.state.shoe
    _no_round_in_progress(state)
    if shoe is not None and not shoe.finished:
        raise Refused("shoe_already_open", f"shoe {shoe.shoe_id} is still in play; "
                                           "end it (end_shoe) before starting a new one")
    if shoe is not None:
        em.emit(ShoeEnded, shoe_id=shoe.shoe_id, reason="cut card reached")
    em.emit(ShoeStarted, shoe_id=inp.shoe_id, profile=profile.name, decks=profile.decks)


def _shoe_first_card(em: _Emitter, inp: ShoeFirstCard, config: MachineConfig) -> None:
    shoe = _shoe_in_play(em.state)
    rules = shoe.rules
    if not (isinstance(rules, BaccaratProfile) and rules.shoe_start_burn):
        raise Refused("start_burn_not_expected",
                      f"profile {shoe.profile} has no shoe-start burn; scan the round's cards")
    if not shoe.start_burn_pending:
        raise Refused("start_burn_already_done",
                      f"shoe {shoe.shoe_id} already had its first card burned")
    if shoe.remaining.get(str(inp.card), 0) <= 0:
        raise _not_in_shoe(str(inp.card), shoe.shoe_id)
    em.emit(ShoeStartBurned, shoe_id=shoe.shoe_id, first_card=inp.card,
            burn_count=start_burn_count(inp.card))


def _burn(em: _Emitter, inp: Burn, config: MachineConfig) -> None:
    state = em.state
    shoe = _shoe_playable(state)
    rnd = state.round if state.round_in_progress else None
    if rnd is not None and rnd.cards:
        raise Refused("burn_during_deal", f"round {rnd.round_id} is being dealt; "
                                          "burns come before its first card")
    allowed = shoe.rules.burn_per_round
    if allowed == 0:
        raise Refused("no_burn_at_table", f"profile {shoe.profile} burns no card "
                                          "(seed 002: \"Tidak ada Burn Card\")")
    if shoe.pending_burns >= allowed:
        raise Refused("too_many_burns", f"profile {shoe.profile} burns {allowed} card(s) "
                                        f"before each round; {shoe.pending_burns} already "
                                        "burned")
    position = 0 if shoe.fresh_deck_due else shoe.position
    if inp.card is not None and not shoe.fresh_deck_due \
            and shoe.remaining.get(str(inp.card), 0) <= 0:
        raise _not_in_shoe(str(inp.card), shoe.shoe_id)
    em.emit(CardBurned, shoe_id=shoe.shoe_id, round_id=rnd.round_id if rnd else None,
            card=inp.card, shoe_position=position)


def _expose_card(em: _Emitter, inp: ExposeCard, config: MachineConfig) -> None:
    """A card exposed by accident outside the deal. Seed 004 §6: "Jika tidak di sengaja kartu
    terbuka, akan dinyatakan sebagai kartu terbakar pada permainan berikutnya": it is burned
    for the next game (the round open for betting, or the next one), counting among its
    burns. Seed 002, whose tables burn nothing: "Jika ada kartu yang terbuka secara tidak
    sengaja saat pengacakan, kotak tersebut akan diganti": the shoe is replaced (a round
    open for betting is voided with it, its bets refunded). During the deal it is seed 004
    §4's "selama permainan": the hand is voided (void_round, card_exposed), not this. Triple
    Face (seed 000 §2: management acts "tergantung dari kondisi dan jumlah kartu yang
    terbuka") leaves it to a supervisor."""
    state = em.state
    shoe = _shoe_in_play(state)
    if shoe.start_burn_pending or shoe.finished:
        raise Refused("exposed_outside_play", f"shoe {shoe.shoe_id} is not in play ("
                      + ("its first card is turned and burned next: a card exposed during "
                         "the start does not affect the game, seed 004 §4"
                         if shoe.start_burn_pending else "the cut card ended it") + ")")
    rnd = state.round if state.round_in_progress else None
    if rnd is not None and rnd.cards:
        raise Refused("exposed_during_deal", f"round {rnd.round_id} is being dealt: a card "
                                             "exposed during the game voids the hand "
                                             "(void_round, reason card_exposed; seed 004 §4)")
    rules = shoe.rules
    if isinstance(rules, TripleFaceProfile):
        raise Refused("exposed_card_management", "at Triple Face management decides by the "
                                                 "cards exposed (seed 000 §2): a supervisor "
                                                 "voids the round or ends the shoe")
    card = str(inp.card)
    if not shoe.fresh_deck_due and shoe.remaining.get(card, 0) <= 0:
        raise _not_in_shoe(card, shoe.shoe_id)
    if rules.burn_per_round > 0:
        em.emit(CardBurned, shoe_id=shoe.shoe_id, round_id=rnd.round_id if rnd else None,
                card=inp.card, shoe_position=0 if shoe.fresh_deck_due else shoe.position,
                exposed=True)
        return
    text = (f"card {card} exposed by accident outside the deal (seed 002): the shoe is "
            "replaced")
    if rnd is not None:
        _void(em, rnd.round_id, VoidReason.CARD_EXPOSED, text, BY_THE_RULES)
    if em.state.shoe is not None:
        em.emit(ShoeEnded, shoe_id=shoe.shoe_id, reason=text)


def _cut_card(em: _Emitter, inp: CutCard, config: MachineConfig) -> None:
    state = em.state
    shoe = _shoe_in_play(state)
    if isinstance(shoe.rules, TripleFaceProfile):
        raise Refused("no_cut_card_in_game", "Triple Face takes a fresh deck every round; "
                                             "it has no cut card")
    if shoe.cut_card_out:
        raise Refused("cut_card_already_reached",
                      f"the cut card of shoe {shoe.shoe_id} already came out")
    rnd = state.round if state.round_in_progress else None
    em.emit(CutCardReached, shoe_id=shoe.shoe_id, round_id=rnd.round_id if rnd else None)
    if rnd is not None and not rnd.cards and shoe.rules.burn_per_round > 0:
        # seed 004 §3: out in the burn for this round, so the round is not started
        em.emit(RoundVoided, round_id=rnd.round_id, reason_code=VoidReason.CUT_CARD_IN_BURN,
                reason_text="the cut card came out in the burn for this round (seed 004 §3): "
                            "the round is not started, every bet is refunded",
                supervisor=BY_THE_RULES)
        em.emit(ShoeEnded, shoe_id=shoe.shoe_id, reason="cut card came out in the burn")


def _end_shoe(em: _Emitter, inp: EndShoe, config: MachineConfig) -> None:
    state = em.state
    shoe = _shoe_in_play(state)
    _no_round_in_progress(state)
    em.emit(ShoeEnded, shoe_id=shoe.shoe_id, reason=inp.reason)


# --- round commands --------------------------------------------------------------------

def _open_round(em: _Emitter, inp: OpenRound, config: MachineConfig) -> None:
    state = em.state
    shoe = _shoe_playable(state)
    _no_round_in_progress(state)
    if inp.round_id in state.round_status:
        raise Refused("round_id_reused", f"round id {inp.round_id} was already used on table "
                                         f"{state.table_id}; every round needs a new id")
    window = config.betting_window_override or shoe.rules.betting_window_seconds
    version, digest = pinned(shoe.profile)  # the rules this round settles by, for good
    em.emit(RoundOpened, shoe_id=shoe.shoe_id, round_id=inp.round_id,
            round_number=shoe.round_count + 1, dealer=inp.dealer, profile=shoe.profile,
            betting_closes_at=em.now + timedelta(seconds=window),
            profile_version=version, profile_digest=digest)


def _close_betting(em: _Emitter, inp: CloseBetting, config: MachineConfig) -> None:
    rnd = _current_round(em.state, inp.round_id)
    if rnd.phase != "betting":
        raise Refused("betting_already_closed",
                      f"betting on round {inp.round_id} is already closed")
    if em.now >= rnd.betting_closes_at:
        em.emit(BettingClosed, round_id=inp.round_id, reason="dealer")
        return
    # seed 002: players bet until the timer ends; only a supervisor closes early
    if inp.role != "supervisor":
        raise Refused("betting_window_open", f"betting on round {inp.round_id} is open until "
                                             f"{rnd.betting_closes_at.isoformat()}; the timer "
                                             "closes it (a supervisor may close early, with "
                                             "a reason)")
    if inp.reason_text is None:
        raise Refused("close_reason_required", f"closing round {inp.round_id} before its "
                                               "timer ends needs a reason_text")
    em.emit(BettingClosed, round_id=inp.round_id, reason="supervisor", supervisor=inp.signer,
            reason_text=inp.reason_text)


def _scan_card(em: _Emitter, inp: ScanCard, config: MachineConfig) -> None:
    state = em.state
    card = str(inp.card)
    rnd = _current_round(state, inp.round_id, allow_complete=True)
    if rnd.phase == "betting":
        raise Refused("betting_still_open", f"betting on round {rnd.round_id} is still open; "
                                            "no card is dealt before it closes")
    shoe = _round_shoe(state)
    burns_needed = shoe.rules.burn_per_round
    if rnd.phase == "dealing" and not rnd.cards and shoe.pending_burns < burns_needed:
        raise Refused("burns_required", f"{burns_needed} card(s) must be burned before the "
                                        f"first card of a round; {shoe.pending_burns} burned")
    if shoe.decks == 1 and card in rnd.cards:
        raise Refused("duplicate_card_in_round", f"card {card} was already dealt in round "
                                                 f"{rnd.round_id}; a one-deck game has one")
    if shoe.remaining.get(card, 0) <= 0:
        raise _not_in_shoe(card, shoe.shoe_id)
    if has_result(rnd.phase):
        if shoe.pending_burns:
            raise Refused("round_not_in_progress", f"round {rnd.round_id} is over and the "
                                                   "next round's burns have begun")
        em.emit(SurplusCardRecorded, round_id=rnd.round_id, card=inp.card,
                shoe_position=shoe.position)
        if shoe.rules.extra_card_ends_shoe:  # seed 002: the result stands, the shoe goes
            em.emit(ShoeEnded, shoe_id=shoe.shoe_id, reason="an extra card after the game: "
                                                            "the shoe is replaced")
        return
    em.emit(CardDealt, round_id=rnd.round_id, card=inp.card, shoe_position=shoe.position,
            round_position=len(rnd.cards))
    cards = [parse_card(c) for c in rnd.cards]  # the fold appended the card to this round
    if cards_needed(shoe.rules, cards) == 0:
        em.emit(RoundCompleted, round_id=rnd.round_id, cards=tuple(cards),
                corrections_indexed=True)  # dealer_fold puts its corrections on the index
        if rnd.shoe_cancelled:  # seed 004 §6: the hand stood by the card rules; the shoe goes
            em.emit(ShoeEnded, shoe_id=shoe.shoe_id, reason=_two_cards_shoe_end(rnd.round_id))


def _void_round(em: _Emitter, inp: VoidRound, config: MachineConfig) -> None:
    status = _round_status(em.state, inp.round_id)
    if status == "completed":
        raise Refused("void_after_completion", f"round {inp.round_id} is complete and its "
                                               "result is final; it can no longer be voided")
    _not_ended(inp.round_id, status)
    rules = _round_shoe(em.state).rules
    if inp.reason_code == VoidReason.TWO_CARDS_DEALT and rules.two_cards_policy == "card_rules":
        raise Refused("two_cards_by_card_rules", f"at profile {rules.name} two or more cards "
                                                 "drawn at once do not void the hand (seed 004 "
                                                 "§6): report them (report_two_cards); the "
                                                 "hand's result follows the card rules and "
                                                 "the shoe ends after it")
    _void(em, inp.round_id, inp.reason_code, inp.reason_text, inp.signer)


def _void(em: _Emitter, round_id: str, reason: VoidReason, text: str, supervisor: str) -> None:
    """Void the round in progress; the profile says which reasons also end the shoe or
    close the table (seeds 002 and 004 §4)."""
    shoe, rnd = _round_shoe(em.state), em.state.round
    rules, shoe_id = shoe.rules, shoe.shoe_id
    cancelled = rnd is not None and rnd.round_id == round_id and rnd.shoe_cancelled
    em.emit(RoundVoided, round_id=round_id, reason_code=reason, reason_text=text,
            supervisor=supervisor)
    if reason in rules.shoe_ends_on:
        em.emit(ShoeEnded, shoe_id=shoe_id, reason=f"round voided ({reason}): the shoe is "
                                                   "replaced")
    elif cancelled:  # two cards drawn at once earlier in the round cancelled the shoe
        em.emit(ShoeEnded, shoe_id=shoe_id, reason=_two_cards_shoe_end(round_id))
    if reason in rules.table_closes_on:
        em.emit(TableClosed, reason_code=reason, reason_text=text, supervisor=supervisor)



def _report_misdeal(em: _Emitter, inp: ReportMisdeal, config: MachineConfig) -> None:
    """Seed 001 voids every misdeal; seeds 000, 002 and 004 correct the layout."""
    rnd = _dealt_round(em.state, inp.round_id)
    rules = _round_shoe(em.state).rules
    if rules.misdeal_policy == "correct":
        em.emit(MisdealCorrected, round_id=rnd.round_id, reason_text=inp.reason_text,
                supervisor=inp.signer)
    elif has_result(rnd.phase):
        em.emit(RoundAnnulled, round_id=rnd.round_id, reason_code=VoidReason.MISDEAL,
                reason_text=inp.reason_text, supervisor=inp.signer)
    else:
        _void(em, rnd.round_id, VoidReason.MISDEAL, inp.reason_text, inp.signer)


def _report_two_cards(em: _Emitter, inp: ReportTwoCards, config: MachineConfig) -> None:
    """Two or more cards came out of the shoe at once. Seed 002 voids the round and replaces
    the shoe ("putaran tersebut akan dibatalkan ... kotak kartu (shoe) terkait akan
    diganti"). Seed 004 §6 keeps the hand: "hasil dari kesalahan pada hand akan tergantung
    pada peraturan kartu permainan and shoe ... akan di batalkan": the cards count in the
    order they left the shoe, the round completes by the card rules and is settled, and the
    shoe ends after it (at once, when the round is already complete)."""
    rnd = _dealt_round(em.state, inp.round_id)
    shoe = _round_shoe(em.state)
    if shoe.rules.two_cards_policy == "void":
        if has_result(rnd.phase):
            raise Refused("void_after_completion", f"round {rnd.round_id} is complete and its "
                                                   "result is final; a card drawn after it "
                                                   "is a surplus card (scan it)")
        _void(em, rnd.round_id, VoidReason.TWO_CARDS_DEALT, inp.reason_text, inp.signer)
        return
    if rnd.shoe_cancelled:
        raise Refused("two_cards_already_reported", f"two cards drawn at once in round "
                                                    f"{rnd.round_id} were already reported; "
                                                    "the shoe ends with the round")
    em.emit(TwoCardsDrawn, round_id=rnd.round_id, reason_text=inp.reason_text,
            supervisor=inp.signer)
    if has_result(rnd.phase):
        em.emit(ShoeEnded, shoe_id=shoe.shoe_id, reason=_two_cards_shoe_end(rnd.round_id))


def _two_cards_shoe_end(round_id: str) -> str:
    return (f"two or more cards drawn at once in round {round_id}: the hand stands by the "
            "card rules, the shoe is cancelled (seed 004 §6)")


def _report_burn_error(em: _Emitter, inp: ReportBurnError, config: MachineConfig) -> None:
    """Seed 004 §2 voids the hand; seed 000 §1 reshuffles and redeals it when the error is
    found before Player 1's second card, and management voids it otherwise."""
    state = em.state
    if state.shoe is not None and state.shoe.rules.burn_error_policy == "none":
        raise Refused("no_burn_at_table", f"profile {state.shoe.profile} burns no card; "
                                          "there is no burning error to report")
    rnd = _dealt_round(state, inp.round_id, allow_betting=True)
    rules = _round_shoe(state).rules
    if has_result(rnd.phase):
        em.emit(RoundAnnulled, round_id=rnd.round_id, reason_code=VoidReason.BURN_ERROR,
                reason_text=inp.reason_text, supervisor=inp.signer)
    elif rules.burn_error_policy == "redeal" and isinstance(rules, TripleFaceProfile) \
            and _before_player1_second_card(rules, rnd.cards):  # redeal: Triple Face only
        em.emit(RoundRedealt, round_id=rnd.round_id,
                set_aside=tuple(parse_card(c) for c in rnd.cards),
                reason_text=inp.reason_text, supervisor=inp.signer)
    else:
        _void(em, rnd.round_id, VoidReason.BURN_ERROR, inp.reason_text, inp.signer)


def _before_player1_second_card(rules: TripleFaceProfile, cards: list[str]) -> bool:
    """Has Player 1 not yet received its second card (seed 000 §1's limit for a redeal)?"""
    first_card = rules.procedure == "first_card"
    if first_card and not cards:
        return True
    order = dealing_order(rules.procedure, parse_card(cards[0]) if first_card else None)
    second = [i for i, hand in enumerate(order) if hand == "player1"][1]
    return len(cards) - first_card <= second


def _annul_rounds(em: _Emitter, inp: AnnulRounds, config: MachineConfig) -> None:
    """Management's void after completion: the round, or every completed round of its shoe
    from it on (a round of it still in progress is voided) and no further round of it. A
    reason that closes the table (seed 002: an operator system failure) closes it too."""
    _annul(em, inp)
    profile = em.state.profile
    if (profile is not None and inp.reason_code in load_profile(profile).table_closes_on
            and em.state.closed is None):
        em.emit(TableClosed, reason_code=inp.reason_code, reason_text=inp.reason_text,
                supervisor=inp.signer)


def _annul(em: _Emitter, inp: AnnulRounds) -> None:
    state = em.state
    status = _kept_round_status(state, inp.round_id, "round_too_old_to_annul")
    if inp.scope == "round":
        _not_ended(inp.round_id, status)
        if status != "completed":
            raise Refused("round_not_completed", f"round {inp.round_id} is not complete; "
                                                 "void it (void_round) instead")
        em.emit(RoundAnnulled, round_id=inp.round_id, reason_code=inp.reason_code,
                reason_text=inp.reason_text, supervisor=inp.signer)
        return
    rest = _rest_of_shoe(state, inp.round_id)
    shoe_id = state.round_shoe[inp.round_id]
    current = state.shoe is not None and state.shoe.shoe_id == shoe_id
    if not current and all(state.round_status[r] != "completed" for r in rest):
        raise Refused("round_already_annulled", f"shoe {shoe_id} holds no completed round "
                                                f"from {inp.round_id} on left to annul")
    for round_id in rest:
        if state.round_status[round_id] == "completed":
            em.emit(RoundAnnulled, round_id=round_id, reason_code=inp.reason_code,
                    reason_text=inp.reason_text, supervisor=inp.signer)
        elif in_progress(state.round_status[round_id]):
            _void(em, round_id, inp.reason_code, inp.reason_text, inp.signer)
    if em.state.shoe is not None and em.state.shoe.shoe_id == shoe_id:
        em.emit(ShoeEnded, shoe_id=shoe_id, reason=f"rest of the shoe annulled from round "
                                                   f"{inp.round_id}")


def _correct_round(em: _Emitter, inp: CorrectRound, config: MachineConfig) -> None:
    """Seed 004 §5: management corrects the result of a wrong hand. The completed round's
    cards as corrected supersede its result (`round_corrected`; the log is never edited);
    a correction of a correction works the same way."""
    state = em.state
    status = _kept_round_status(state, inp.round_id, "round_too_old_to_correct")
    _not_ended(inp.round_id, status)
    if status != "completed":
        raise Refused("round_not_completed", f"round {inp.round_id} is not complete; a round "
                                             "is corrected once its result stands")
    kept = state.completed[inp.round_id]  # every completed round kept, with its facts
    if inp.cards is not None:
        cards = tuple(str(c) for c in inp.cards)
    else:
        assert inp.position is not None and inp.card is not None  # the input's validator
        if inp.position >= len(kept.cards):
            raise Refused("correction_not_a_round",
                          f"round {inp.round_id} has {len(kept.cards)} cards: position "
                          f"{inp.position} is not one of them (0 is the first)")
        cards = (*kept.cards[:inp.position], str(inp.card), *kept.cards[inp.position + 1:])
    if cards == kept.cards:
        raise Refused("correction_changes_nothing", f"round {inp.round_id} already has the "
                                                    f"cards {list(cards)}")
    profile = round_profile(kept.profile, kept.profile_version)
    problem = _not_a_round(profile, cards)
    if problem is not None:
        raise Refused("correction_not_a_round", f"round {inp.round_id}: {problem}")
    late = em.now - kept.completed_at > CORRECTION_WINDOW
    if late != (inp.reason_code == CorrectionReason.LATE_CORRECTION):
        raise Refused("late_correction_reason", (
            f"round {inp.round_id} completed more than 24 hours ago (the dispute window): "
            "its correction names reason late_correction") if late else (
            f"round {inp.round_id} completed within the dispute window: name what was "
            "wrong (mis_scan, manual_entry), not late_correction"))
    em.emit(RoundCorrected, round_id=inp.round_id, shoe_id=kept.shoe_id, profile=kept.profile,
            profile_version=kept.profile_version, profile_digest=kept.profile_digest,
            dealer=kept.dealer, cards=tuple(parse_card(c) for c in cards),
            replaced_cards=tuple(parse_card(c) for c in kept.cards),
            correction=kept.corrections + 1, reason_code=inp.reason_code,
            reason_text=inp.reason_text, supervisor=inp.signer)


def _not_a_round(profile: AnyProfile, cards: tuple[str, ...]) -> str | None:
    """Why `cards` are not exactly one complete round under `profile` (None: they are)."""
    try:
        parsed = [parse_card(c) for c in cards]
    except ValueError as error:
        return str(error)
    if profile.decks == 1 and len(set(cards)) != len(cards):
        return f"one deck deals each card once: {list(cards)} repeats one"
    for n in range(len(parsed)):
        if cards_needed(profile, parsed[:n]) == 0:
            return (f"the rules complete the round after {n} cards; {len(parsed)} were given "
                    f"({list(cards)})")
    if cards_needed(profile, parsed) != 0:
        return (f"the rules need {cards_needed(profile, parsed)} more card(s) after "
                f"{list(cards)}")
    return None


def _rest_of_shoe(state: TableState, round_id: str) -> list[str]:
    """`round_id` and the rounds after it, in log order, while they belong to its shoe."""
    shoe_id, rounds = state.round_shoe[round_id], list(state.round_shoe)
    rest = []
    for later in rounds[rounds.index(round_id):]:
        if state.round_shoe[later] != shoe_id:
            break
        rest.append(later)
    return rest


def _close_table(em: _Emitter, inp: CloseTable, config: MachineConfig) -> None:
    """Out of play between rounds; a round in progress is voided instead (its void closes
    the table when its reason is one the profile closes on)."""
    _no_round_in_progress(em.state)
    em.emit(TableClosed, reason_code=inp.reason_code, reason_text=inp.reason_text,
            supervisor=inp.signer)


def _reopen_table(em: _Emitter, inp: ReopenTable, config: MachineConfig) -> None:
    if em.state.closed is None:
        raise Refused("table_not_closed", f"table {em.state.table_id} is not closed")
    em.emit(TableReopened, reason_text=inp.reason_text, supervisor=inp.signer)


_DECIDE: dict[type[InputBase], Callable[..., None]] = {
    NewShoe: _new_shoe, ShoeFirstCard: _shoe_first_card, Burn: _burn, CutCard: _cut_card,
    EndShoe: _end_shoe, OpenRound: _open_round, CloseBetting: _close_betting,
    ScanCard: _scan_card, VoidRound: _void_round, ReportMisdeal: _report_misdeal,
    ReportBurnError: _report_burn_error, AnnulRounds: _annul_rounds,
    ReportTwoCards: _report_two_cards,
    CorrectRound: _correct_round, ExposeCard: _expose_card, CloseTable: _close_table,
    ReopenTable: _reopen_table,
}
