"""Replay one round from its recorded events: rebuild it with the rule engine and compare.

Pure: the caller reads the round's records from the log (by time, never a full
scan) and hands them in; this module verifies the hash chain, rebuilds the
hands, the result and every settlement with the same code the services run,
checks each wallet movement, and ends in a verdict: MATCH, or each difference
spelled out (where, expected, recorded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeVar

from pydantic import BaseModel

from croupier.services.operator.replay_calls import (
    BetCalls,
    CallBook,
    OperatorCallLine,
    UnplacedBet,
    check_bet,
    leftovers,
    unplaced,
    wanted_calls,
)
from croupier.services.operator.replay_difference import Difference as Difference  # re-exported
from croupier.shared.cards import Card
from croupier.shared.events.bet_events import (
    BetAccepted,
    BetRejected,
    BetSettled,
    RoundManifest,
    SettlementReversed,
    annul_refund_id,
    manifest_digest,
    reversal_id,
    settlement_id,
)
from croupier.shared.events.chain import follow_chain, verify_chain
from croupier.shared.events.event_auth import VOID, auth_problem
from croupier.shared.events.operator_wallet import OperatorCallRecord
from croupier.shared.events.results import RoundResultPublished, result_id
from croupier.shared.events.table import (
    BettingClosed,
    CardBurned,
    CardDealt,
    RoundAnnulled,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    RoundRedealt,
    RoundVoided,
    SurplusCardRecorded,
    TableEventBase,
    TwoCardsDrawn,
)
from croupier.shared.events.wallet_events import CREDITS, WalletTransaction, tx_id
from croupier.shared.profile import (
    LEGACY_VERSION,
    AnyProfile,
    ProfileError,
    round_profile,
    shipped_digest,
)
from croupier.shared.rounds import AnyResult, RoundError, evaluate_round
from croupier.shared.settlement import Bet, settle
from croupier.shared.shoe_history import ShoeHistory, ShoeRoads, fold_shoes, shoe_roads
from croupier.shared.topics import ROUND_RESULTS_TOPIC, TABLE_EVENTS_TOPIC

Decision = BetAccepted | BetRejected


class TimelineEntry(BaseModel):
    seq: int
    at: datetime
    what: str
    detail: str


class SettlementStep(BaseModel):
    """One record of a bet's settlement history: its settlement, then for each correction
    that changes it the reversal of the settlement standing and the settlement again."""

    what: str  # "settled" or "reversed"
    record_id: str  # the settlement id, or the reversal id
    correction: int  # 0: the round's own result; n: its n-th correction
    cause: str | None  # the result (or correction's result) the record follows
    outcome: str | None  # recorded: the settlement's outcome (a reversal's: the one taken back)
    amount: int | None  # recorded: returned, or taken back
    expected_outcome: str | None
    expected_amount: int | None


class CorrectionLine(BaseModel):
    """A supervisor's correction of the completed round (RoundCorrected) and the result the
    rule engine gives its cards."""

    correction: int
    seq: int
    at: datetime
    reason_code: str
    reason_text: str
    supervisor: str
    replaced_cards: list[Card]
    cards: list[Card]
    result_id: str
    hands: dict[str, list[Card]]
    scores: dict[str, int | str]
    winner: str | dict[str, str] | None  # the rule engine's
    recorded_winner: str | dict[str, str] | None  # the corrected result's, as published


class BetLine(BaseModel):
    bet_id: str
    player_id: str
    bet: str
    position: int | str | None
    stake: int
    decision: str
    outcome: str | None
    returned: int | None
    expected_outcome: str | None
    expected_returned: int | None
    wallet: list[str]
    # a round annulled after it was settled: the settlement's reversal, then the stake refund
    reversed: int | None = None
    expected_reversed: int | None = None
    refund: int | None = None
    expected_refund: int | None = None
    # every settlement record in order (the original, then each correction's reversal and
    # settlement again), and what the wallet moved for the bet against what it should have
    history: list[SettlementStep] = []
    net: int | None = None
    expected_net: int | None = None
    # seamless mode: each call croupier made to the operator's wallet for the bet and its
    # answer (and each one its records call for that has no record: owed, or missing)
    operator_calls: list[OperatorCallLine] = []


class ReplayReport(BaseModel):
    table_id: str
    round_id: str
    player_id: str | None
    profile: str | None
    profile_version: int | None = None  # the version the round opened with: it is settled by it
    profile_digest: str | None = None
    game: str | None
    dealer: str | None
    shoe_id: str | None
    opened_at: datetime | None
    status: str
    chain_checked: int
    chain_anchor_seq: int | None
    chain_breaks: list[str]
    cards: list[Card]
    surplus: list[Card]
    burns: list[Card | None]
    hands: dict[str, list[Card]]
    scores: dict[str, int | str]
    winner: str | dict[str, str] | None
    void_reason: str | None
    annul_reason: str | None = None  # a management void after completion (RoundAnnulled)
    corrections: list[CorrectionLine] = []  # seed 004 §5, in order: each supersedes the last
    timeline: list[TimelineEntry]
    bets: list[BetLine]
    differences: list[Difference]
    notes: list[str]
    # the roads of the round's shoe up to this round (`replay_roads`); None: not read
    roads: ShoeRoads | None = None
    # seamless when the round has calls to the operator's wallet (wallet.operator_calls),
    # and the bets it asked the operator to debit that were never placed
    wallet_mode: str = "transfer"
    unplaced_bets: list[UnplacedBet] = []

    @property
    def verdict(self) -> str:
        return "MATCH" if not self.differences and not self.chain_breaks else "DIFFERENCES"


def _describe(event: TableEventBase) -> str:
    match event:
        case RoundOpened():
            return (f"round opened by dealer {event.dealer} on shoe {event.shoe_id} "
                    f"({event.profile}); betting closes {event.betting_closes_at:%H:%M:%S}")
        case BettingClosed():
            return f"betting closed ({event.reason})"
        case CardDealt():
            return f"card {event.card} (shoe position {event.shoe_position})"
        case CardBurned(exposed=True):
            return (f"card {event.card} exposed by accident, burned for the next game "
                    f"(seed 004 §6; shoe position {event.shoe_position})")
        case CardBurned():
            return f"burn {event.card or 'face down'} (shoe position {event.shoe_position})"
        case SurplusCardRecorded():
            return f"surplus card {event.card}, recorded and not used"
        case RoundCompleted():
            return f"round complete with {len(event.cards)} cards"
        case RoundVoided():
            return f"VOIDED by {event.supervisor}: {event.reason_code} - {event.reason_text}"
        case TwoCardsDrawn():
            return (f"TWO OR MORE CARDS DRAWN AT ONCE, reported by {event.supervisor}: "
                    f"{event.reason_text}; the hand stands by the card rules, the shoe is "
                    "cancelled (seed 004 §6)")
        case RoundRedealt():
            return (f"REDEALT by {event.supervisor}: {event.reason_text}; set aside "
                    f"{' '.join(map(str, event.set_aside)) or 'no cards'}")
        case RoundAnnulled():
            return (f"ANNULLED after completion by {event.supervisor}: {event.reason_code} - "
                    f"{event.reason_text}; settlements reversed, stakes refunded")
        case RoundCorrected():
            return (f"CORRECTED (correction {event.correction}) by {event.supervisor}: "
                    f"{event.reason_code} - {event.reason_text}; cards "
                    f"{' '.join(map(str, event.replaced_cards))} -> "
                    f"{' '.join(map(str, event.cards))}")
    return getattr(event, "type", "event").replace("_", " ")


def replay_round(
    table_id: str,
    round_id: str,
    events: Sequence[TableEventBase],
    anchor: TableEventBase | None,
    result: RoundResultPublished | None,
    decisions: Sequence[BetAccepted | BetRejected | RoundManifest],
    settlements: Sequence[BetSettled | SettlementReversed],
    wallet: Sequence[WalletTransaction],
    player_id: str | None = None,
    annulment: RoundAnnulled | None = None,
    events_key: bytes | None = None,
    accept_unsigned: bool = False,
    corrections: Sequence[RoundCorrected] = (),
    corrected_results: Sequence[RoundResultPublished] = (),
    operator_calls: Sequence[OperatorCallRecord] = (),
    now: datetime | None = None,
) -> ReplayReport:
    """`events` are the table's events from the anchor's successor through the round's end;
    `anchor` is the event just before them (None when the run starts at seq 1). `annulment`:
    the round's RoundAnnulled when it was read further on in the log than `events` (its own
    hash is checked; the events between are not read); `corrections` likewise, the round's
    RoundCorrected events read further on (seed 004 §5), and `corrected_results` the
    corrected results published for them (`result` is the round's own). With `events_key`
    (the operator's table-events key) every event's HMAC is checked: one that does not verify
    (forged, or unsigned when legacy events are not accepted) is a difference, and the round
    is rebuilt from the authentic events alone. `operator_calls`: the round's calls to the
    operator's wallet (seamless mode); any there are checked against what each bet's records
    call for (`replay_calls`), a call with no record owed if its cause is less than
    `OWED_WINDOW` before `now` (default: the present).

    The steps run in the order of the report's differences: authenticity, the round's
    opening and pinned profile, its annulment, the recomputed cards and result, its
    corrections and their results, then each bet's settlements (the original, then each
    correction's reversal and settlement again) and wallet movements, then the manifest."""
    diffs: list[Difference] = []
    notes: list[str] = []
    late: list[TableEventBase] = [*corrections, *([annulment] if annulment else [])]
    if events_key is not None:
        events, late = _authenticated(events, late, events_key, accept_unsigned, diffs)
        events = _valid(events, anchor, notes)
    story = _round_story(events, round_id, late)
    breaks = _chain_breaks(events, anchor, story, late, notes)
    _check_opened(story, round_id, diffs)
    profile = _pinned_profile(story.opened, result, diffs)
    _check_annulled_round_completed(story, diffs)
    recomputed = _recompute(profile, story, diffs)
    _compare_result(recomputed, result, story.voided, diffs)
    stages = _corrections(table_id, round_id, story, profile, corrected_results, diffs)
    book = CallBook(operator_calls, player_id)
    calls = _Calls(book, now or datetime.now(UTC), _ended_at(story))
    bets = _bets(decisions, settlements, wallet, recomputed, profile, story.voided, player_id, diffs,
                 story.annulled, stages, calls)
    left = unplaced(book, wallet, calls.now, diffs) if book.seamless else []
    leftovers(book, diffs)
    _compare_manifest(decisions, diffs)
    owed = sum(c.outcome == "owed" for lines in [*(b.operator_calls for b in bets),
                                                  *(u.operator_calls for u in left)]
               for c in lines)
    if owed:
        notes.append(f"{owed} call(s) to the operator's wallet owed, no answer recorded yet "
                     "(the caller retries until answered): replay again later")
    report = _report(table_id, round_id, player_id, story, profile, recomputed, bets,
                     chain=(len(events), anchor.seq if anchor else None, breaks),
                     diffs=diffs, notes=notes, corrections=stages)
    if not book.seamless:
        return report
    return report.model_copy(update={"wallet_mode": "seamless", "unplaced_bets": left})


def replay_roads(table_id: str, shoe_id: str, round_id: str,
                 events: Sequence[TableEventBase], events_key: bytes | None = None,
                 accept_unsigned: bool = False) -> tuple[ShoeRoads | None, list[str]]:
    """The roads of shoe `shoe_id` as they stood when round `round_id` ended, folded from
    the table's events read from the shoe's start (`croupier.shared.shoe_history`, the fold
    the wallet serves the live roads with), and the notes to print with them. With
    `events_key`, an event whose HMAC does not verify takes no part (and is named)."""
    notes: list[str] = []
    shoes: tuple[ShoeHistory, ...] = ()
    authentic = []
    for event in events:
        problem = auth_problem(event, events_key, accept_unsigned) if events_key else None
        if problem is not None:
            notes.append(f"roads: table.events seq {event.seq} ({event.type}) left out: "
                         f"{problem}")
            continue
        authentic.append(event)
    if events_key is not None:
        authentic = _valid(authentic, None, notes)
    for event in authentic:
        shoes = fold_shoes(shoes, event)
        if isinstance(event, RoundCompleted | RoundVoided) and event.round_id == round_id:
            break
    shoe = next((s for s in shoes if s.shoe_id == shoe_id), None)
    if shoe is None:
        return None, [*notes, f"roads: no event of shoe {shoe_id} was read"]
    if not shoe.from_start:
        notes.append(f"roads: the start of shoe {shoe_id} was not found in the log read; the "
                     "roads begin at the first round read")
    return shoe_roads(table_id, shoe), notes


E = TypeVar("E", bound=TableEventBase)


def _first(events: Sequence[TableEventBase], kind: type[E]) -> E | None:
    return next((e for e in events if isinstance(e, kind)), None)


@dataclass(frozen=True)
class _RoundStory:
    """The round as its own events tell it: the events that are the round's (its own, and the
    shoe events and burns around them), its milestones, and the cards it was dealt."""

    timeline: list[TableEventBase]  # its events, and an annulment read further on
    opened: RoundOpened | None
    voided: RoundVoided | None
    completed: RoundCompleted | None
    annulled: RoundAnnulled | None  # its own, or the annulment read further on
    corrections: list[RoundCorrected]  # its own and those read further on, in log order
    cards: list[Card]
    surplus: list[Card]
    burns: list[Card | None]


def _round_story(events: Sequence[TableEventBase], round_id: str,
                 late: Sequence[TableEventBase]) -> _RoundStory:
    """The round's events end at its last own event (what follows is the next round's); shoe
    events and burns (no round id) between belong to its story. A redeal (seed 000 §1) sets
    the cards so far aside: the round is the cards dealt after it. `late`: the round's
    corrections and annulment read further on (those already among `events` count once)."""
    last = max((i for i, e in enumerate(events) if getattr(e, "round_id", None) == round_id),
               default=-1)
    mine = [e for e in events[:last + 1] if getattr(e, "round_id", None) in (round_id, None)]
    redealt = max((i for i, e in enumerate(mine) if isinstance(e, RoundRedealt)), default=-1)
    seen = {e.seq for e in mine}
    after = sorted((e for e in late if e.seq not in seen and getattr(e, "round_id", None)
                    == round_id), key=lambda e: e.seq)
    told = [*mine, *after]
    return _RoundStory(
        timeline=told,
        opened=_first(mine, RoundOpened), voided=_first(mine, RoundVoided),
        completed=_first(mine, RoundCompleted),
        annulled=_first(told, RoundAnnulled),
        corrections=[e for e in told if isinstance(e, RoundCorrected)],
        cards=[e.card for e in mine[redealt + 1:] if isinstance(e, CardDealt)],
        surplus=[e.card for e in mine if isinstance(e, SurplusCardRecorded)],
        burns=[e.card for e in mine if isinstance(e, CardBurned)])


def _authenticated(events: Sequence[TableEventBase], late: Sequence[TableEventBase],
                   key: bytes, accept_unsigned: bool, diffs: list[Difference]
                   ) -> tuple[list[TableEventBase], list[TableEventBase]]:
    """The events, and the corrections and annulment read further on, that dealer-event
    signed: an event anyone else could have written must not decide the round."""
    return (_authentic(events, key, accept_unsigned, diffs),
            _authentic(late, key, accept_unsigned, diffs))


def _valid(events: Sequence[TableEventBase], anchor: TableEventBase | None,
           notes: list[str]) -> list[TableEventBase]:
    """The authentic events on the chain from the anchor on; each one off it is a lost race
    (a worker that had lost the table wrote it): named in the notes and, as every reader
    does, left out of the replay. Not a difference: nothing was tampered with."""
    followed = follow_chain(events, prev_hash=anchor.hash if anchor else None,
                            prev_seq=anchor.seq if anchor else None, authenticated=True)
    notes += [f"table.events seq {e.seq} ({e.type}) {e.hash[:12]}…: {VOID}: written by a "
              "worker that had lost the table (a zombie) and ignored by every reader"
              for e in followed.void]
    return followed.valid


def _chain_breaks(events: Sequence[TableEventBase], anchor: TableEventBase | None,
                  story: _RoundStory, late: Sequence[TableEventBase], notes: list[str]
                  ) -> list[str]:
    """Where the hash chain breaks from the anchor on: a gap, a reorder or an altered event
    is tampering with the log. A correction or an annulment read further on is not chained
    to these events, so its own hash is checked."""
    breaks = [str(b) for b in verify_chain(events, prev_hash=anchor.hash if anchor else None,
                                           prev_seq=anchor.seq if anchor else None)]
    if anchor is None and events and events[0].seq != 1:
        notes.append(f"no event before seq {events[0].seq} was read: the chain is checked "
                     "from there on")
    told = {id(e) for e in story.timeline}
    for event in late:
        if id(event) in told and event.computed_hash() != event.hash:
            breaks.append(f"{event.type} at seq {event.seq}: altered (its hash does not match "
                          "its content)")
    return breaks


def _check_opened(story: _RoundStory, round_id: str, diffs: list[Difference]) -> None:
    """A round that never opened in the window read has nothing to be replayed against."""
    if story.opened is None:
        diffs.append(Difference(where=TABLE_EVENTS_TOPIC, expected=f"round {round_id} opened",
                                recorded="no round_opened event in the log window"))


def _check_annulled_round_completed(story: _RoundStory, diffs: list[Difference]) -> None:
    """An annulment voids a completed round (its settlements are reversed); one of a round
    that never completed is a supervisor action on the wrong round."""
    if story.annulled is not None and story.completed is None:
        diffs.append(Difference(where=f"round_annulled (seq {story.annulled.seq})",
                                expected="an annulment of a completed round",
                                recorded="the round never completed"))


def _status(story: _RoundStory) -> str:
    if story.voided:
        return "voided"
    if story.annulled and story.completed:
        return "annulled"
    if story.corrections and story.completed:
        return "corrected"
    return "complete" if story.completed else "open" if story.opened else "unknown"


def _recompute(profile: AnyProfile | None, story: _RoundStory, diffs: list[Difference]
               ) -> AnyResult | None:
    """The result the rule engine gives the dealt cards (none for a voided round), and
    whether the cards the round recorded on completion are those dealt."""
    recomputed: AnyResult | None = None
    if profile is not None and not story.voided:
        try:
            recomputed = evaluate_round(profile, story.cards)
        except RoundError as exc:
            diffs.append(Difference(where="cards", expected="a complete round",
                                    recorded=str(exc)))
    completed = story.completed
    if completed is not None and list(completed.cards) != story.cards:
        diffs.append(Difference(where=f"round_completed (seq {completed.seq})",
                                expected=" ".join(map(str, story.cards)),
                                recorded=" ".join(map(str, completed.cards))))
    return recomputed


@dataclass(frozen=True)
class _Stage:
    """A correction of the round, checked: its event, the rule engine's result of its cards
    (None when they are not a round under the pinned rules) and its result's id."""

    event: RoundCorrected
    recomputed: AnyResult | None
    result_id: str
    recorded: RoundResultPublished | None


def _corrections(table_id: str, round_id: str, story: _RoundStory, profile: AnyProfile | None,
                 corrected_results: Sequence[RoundResultPublished], diffs: list[Difference]
                 ) -> list[_Stage]:
    """Each correction against the round as it stood before it (numbered 1, 2, ... in log
    order, of a completed round, replacing the cards that stood, under the rules the round
    opened with), and its corrected result against the rule engine's result of its cards."""
    stages: list[_Stage] = []
    by_id = {r.result_id: r for r in corrected_results
             if r.round_id == round_id and r.correction is not None}
    standing = story.cards
    opened, completed = story.opened, story.completed
    for n, event in enumerate(story.corrections, start=1):
        where = f"round_corrected (seq {event.seq})"
        if completed is None or event.seq < completed.seq or story.voided is not None:
            diffs.append(Difference(where=where, expected="a correction of a completed round",
                                    recorded="the round was not complete"))
        if event.correction != n:
            diffs.append(Difference(where=f"{where}.correction", expected=str(n),
                                    recorded=str(event.correction)))
        if list(event.replaced_cards) != standing:
            diffs.append(Difference(where=f"{where}.replaced_cards",
                                    expected=" ".join(map(str, standing)),
                                    recorded=" ".join(map(str, event.replaced_cards))))
        if opened is not None and (event.profile, event.profile_version, event.profile_digest) \
                != (opened.profile, opened.profile_version, opened.profile_digest):
            diffs.append(Difference(
                where=f"{where}.profile",
                expected=f"{opened.profile} v{opened.profile_version} (as the round opened)",
                recorded=f"{event.profile} v{event.profile_version}"))
        recomputed = None
        if profile is not None:
            try:
                recomputed = evaluate_round(profile, list(event.cards))
            except RoundError as exc:
                diffs.append(Difference(where=f"{where}.cards", expected="a complete round",
                                        recorded=str(exc)))
        rid = result_id(table_id, round_id, n)
        recorded = by_id.pop(rid, None)
        _compare_corrected_result(table_id, round_id, n, event, recomputed, rid, recorded, diffs)
        stages.append(_Stage(event, recomputed, rid, recorded))
        standing = list(event.cards)
    for rid in sorted(by_id):
        diffs.append(Difference(where=f"round.results {rid}",
                                expected="no corrected result without its round_corrected",
                                recorded=f"{by_id[rid].result_id}, round.results of no "
                                         "correction read"))
    return stages


def _compare_corrected_result(table_id: str, round_id: str, n: int, event: RoundCorrected,
                              recomputed: AnyResult | None, rid: str,
                              recorded: RoundResultPublished | None,
                              diffs: list[Difference]) -> None:
    """The corrected result names the result it replaces and the event, carries the
    corrected cards, and is the rule engine's result of them."""
    if recorded is None:
        diffs.append(Difference(where=f"round.results {rid}",
                                expected=f"the result of correction {n}",
                                recorded="no corrected result published"))
        return
    assert recorded.correction is not None
    replaces = result_id(table_id, round_id, n - 1)
    named = (recorded.correction.replaces, recorded.correction.event_id, list(recorded.cards))
    if named != (replaces, event.event_id, list(event.cards)):
        diffs.append(Difference(
            where=f"round.results {rid}: correction",
            expected=f"replaces {replaces}, event {event.event_id}, cards "
                     f"{' '.join(map(str, event.cards))}",
            recorded=f"replaces {named[0]}, event {named[1]}, cards "
                     f"{' '.join(map(str, named[2]))}"))
    if recomputed is not None:
        _compare_fields(rid, recomputed, recorded, diffs)


@dataclass(frozen=True)
class _Calls:
    """Seamless mode's part of `_bets`: the round's calls, the replay's time, the round's end."""

    book: CallBook
    now: datetime
    ended_at: datetime | None


def _ended_at(story: _RoundStory) -> datetime | None:
    ended = story.completed or story.voided
    if ended is not None:
        return ended.occurred_at
    return story.timeline[-1].occurred_at if story.timeline else None


def _bet_calls(d: Decision, expected_returned: int | None, changes: Sequence[_Change],
               voided: bool, annulled: RoundAnnulled | None, ended_at: datetime) -> BetCalls:
    """What the bet's records say the operator's wallet was owed: a rejected or voided bet's
    stake back; a settled bet's credit, then for each correction that changes it the
    rollback of the standing credit and the credit again, then (`annulled`: the round was
    annulled after the bet was settled) the rollback of the standing credit and of the
    debit."""
    if isinstance(d, BetRejected):
        return BetCalls(d.bet_id, d.stake, refund_at=d.decided_at)
    if voided:
        return BetCalls(d.bet_id, d.stake, refund_at=ended_at)
    if expected_returned is None:
        return BetCalls(d.bet_id, d.stake)
    steps: list[tuple[Literal["credit", "reverse"], str, int, datetime]] = [
        ("credit", settlement_id(d.bet_id), expected_returned, ended_at)]
    standing = settlement_id(d.bet_id)
    for change in changes:
        steps += [("reverse", standing, 0, change.at), ("credit", change.settlement_id,
                                                          change.returned, change.at)]
        standing = change.settlement_id
    if annulled is None:
        return BetCalls(d.bet_id, d.stake, tuple(steps))
    steps.append(("reverse", standing, 0, annulled.occurred_at))
    return BetCalls(d.bet_id, d.stake, tuple(steps), refund_at=annulled.occurred_at)


def _report(table_id: str, round_id: str, player_id: str | None, story: _RoundStory,
            profile: AnyProfile | None, recomputed: AnyResult | None, bets: list[BetLine], *,
            chain: tuple[int, int | None, list[str]], diffs: list[Difference],
            notes: list[str], corrections: Sequence[_Stage] = ()) -> ReplayReport:
    """The report: `chain` is (events checked, the anchor's seq, where the chain breaks)."""
    opened, voided, annulled = story.opened, story.voided, story.annulled
    checked, anchor_seq, breaks = chain
    hands, scores, winner = _hands(recomputed)
    return ReplayReport(
        table_id=table_id, round_id=round_id, player_id=player_id,
        profile=opened.profile if opened else None,
        profile_version=(opened.profile_version or LEGACY_VERSION) if opened else None,
        profile_digest=opened.profile_digest if opened else None,
        game=profile.game if profile else None,
        dealer=opened.dealer if opened else None, shoe_id=opened.shoe_id if opened else None,
        opened_at=opened.occurred_at if opened else None, status=_status(story),
        chain_checked=checked, chain_anchor_seq=anchor_seq,
        chain_breaks=breaks, cards=story.cards, surplus=story.surplus, burns=story.burns,
        hands=hands, scores=scores, winner=winner,
        void_reason=f"{voided.reason_code}: {voided.reason_text}" if voided else None,
        annul_reason=(f"{annulled.reason_code}: {annulled.reason_text} (supervisor "
                      f"{annulled.supervisor})") if annulled else None,
        timeline=[TimelineEntry(seq=e.seq, at=e.occurred_at, what=e.type, detail=_describe(e))
                  for e in story.timeline],
        bets=bets, differences=diffs, notes=notes,
        corrections=[_correction_line(stage) for stage in corrections],
    )


def _correction_line(stage: _Stage) -> CorrectionLine:
    event = stage.event
    hands, scores, winner = _hands(stage.recomputed)
    recorded = _hands(stage.recorded.result)[2] if stage.recorded is not None else None
    return CorrectionLine(
        correction=event.correction, seq=event.seq, at=event.occurred_at,
        reason_code=str(event.reason_code), reason_text=event.reason_text,
        supervisor=event.supervisor, replaced_cards=list(event.replaced_cards),
        cards=list(event.cards), result_id=stage.result_id, hands=hands, scores=scores,
        winner=winner, recorded_winner=recorded)


def _authentic(events: Sequence[TableEventBase], key: bytes, accept_unsigned: bool,
               diffs: list[Difference]) -> list[TableEventBase]:
    """The events whose HMAC verifies; each other one is a difference (it is not
    dealer-event's: forged, altered, or unsigned) and takes no part in the round."""
    kept = []
    for event in events:
        problem = auth_problem(event, key, accept_unsigned)
        if problem is None:
            kept.append(event)
            continue
        diffs.append(Difference(
            where=f"table.events seq {event.seq} ({event.type})",
            expected="an event authenticated by dealer-event (HMAC of its hash under the "
                     "table-events key)",
            recorded=f"{problem}; left out of the replay"))
    return kept


def _pinned_profile(opened: RoundOpened | None, result: RoundResultPublished | None,
                    diffs: list[Difference]) -> AnyProfile | None:
    """The profile as it was when the round opened (its version; a round recorded before
    versions: version 1), checked against the digest the round recorded. A digest that differs
    from the shipped version's is a difference naming both; the shipped version is still used
    to recompute, so the report shows what those rules give."""
    if opened is None:
        return None
    version = opened.profile_version or LEGACY_VERSION
    try:
        profile = round_profile(opened.profile, opened.profile_version)
        shipped = shipped_digest(opened.profile, version)
    except ProfileError as exc:
        diffs.append(Difference(where=f"round_opened (seq {opened.seq}).profile",
                                expected=f"a shipped profile {opened.profile} v{version}",
                                recorded=str(exc)))
        return None
    if opened.profile_digest is not None and opened.profile_digest != shipped:
        diffs.append(Difference(
            where=f"round_opened (seq {opened.seq}).profile_digest",
            expected=f"{opened.profile} v{version} as shipped: digest {shipped}",
            recorded=f"digest {opened.profile_digest} (the rules the round was played under "
                     "are not the shipped version: edited in place?)"))
    if result is not None and (result.profile, result.profile_version or LEGACY_VERSION) != (
            opened.profile, version):
        diffs.append(Difference(
            where=f"round.results {result.result_id}: profile",
            expected=f"{opened.profile} v{version} (as the round opened)",
            recorded=f"{result.profile} v{result.profile_version or LEGACY_VERSION}"))
    return profile


def _compare_result(recomputed: AnyResult | None, result: RoundResultPublished | None,
                    voided: RoundVoided | None, diffs: list[Difference]) -> None:
    if voided:
        if result is not None:
            diffs.append(Difference(where=ROUND_RESULTS_TOPIC, expected="no result for a voided round",
                                    recorded=f"result {result.result_id}"))
        return
    if recomputed is None:
        return
    if result is None:
        diffs.append(Difference(where=ROUND_RESULTS_TOPIC, expected="one result",
                                recorded="no result published"))
        return
    _compare_fields(result.result_id, recomputed, result, diffs)


def _compare_fields(rid: str, recomputed: AnyResult, result: RoundResultPublished,
                    diffs: list[Difference]) -> None:
    """Each field of the published result against the rule engine's, by name."""
    want, got = recomputed.model_dump(mode="json"), result.result.model_dump(mode="json")
    for key in sorted(set(want) | set(got)):
        if want.get(key) != got.get(key):
            diffs.append(Difference(where=f"round.results {rid}: {key}",
                                    expected=str(want.get(key)), recorded=str(got.get(key))))


def _bets(decisions: Sequence[Decision | RoundManifest],
          settlements: Sequence[BetSettled | SettlementReversed],
          wallet: Sequence[WalletTransaction], recomputed: AnyResult | None,
          profile: AnyProfile | None, voided: RoundVoided | None, player_id: str | None,
          diffs: list[Difference], annulled: RoundAnnulled | None = None,
          stages: Sequence[_Stage] = (), calls: _Calls | None = None) -> list[BetLine]:
    """Each bet of the round (the complaining player's alone with `player_id`): its recorded
    settlement against the rule engine's, each correction's reversal and settlement again,
    an annulment's reversal and refund, and the wallet movements they call for, in that
    order for each bet; a settlement record of the bet none of them calls for is named."""
    pools = _records_by_bet(settlements)
    txs: dict[str, dict[str, WalletTransaction]] = {}
    for tx in wallet:
        txs.setdefault(tx.player_id, {})[tx.tx_id] = tx
    lines = []
    for d in _bet_decisions(decisions, player_id):
        pool = pools.pop((d.player_id, d.bet_id), {})
        recorded = _take(pool, settlement_id(d.bet_id), BetSettled)
        decision, expected_outcome, expected_returned = _expected_settlement(
            d, recorded, recomputed, profile, voided, diffs)
        history = [_step("settled", settlement_id(d.bet_id), 0, recorded,
                         expected_outcome, expected_returned)] if recorded or expected_outcome \
            else []
        changes, (standing_id, standing, standing_returned) = _corrected(
            d, recorded, (expected_outcome, expected_returned), stages, profile, pool, history,
            diffs)
        reversal = _take(pool, reversal_id(standing_id), SettlementReversed)
        refund = _take(pool, annul_refund_id(d.bet_id), BetSettled)
        annul = _annulment_of(d, standing_id, standing, standing_returned, reversal, refund,
                              annulled is not None and isinstance(d, BetAccepted), diffs)
        own = {i for n in range(len(stages) + 1)
               for i in (settlement_id(d.bet_id, n), reversal_id(settlement_id(d.bet_id, n)))}
        moves, net, expected_net = _check_wallet(
            d, expected_returned, txs.get(d.player_id, {}), diffs, changes, annul, own)
        diffs += [Difference(where=f"bets.settled {record_id}",
                             expected="no such record for the bet",
                             recorded=f"{record.type} (cause {record.cause})")
                  for record_id, record in pool.items()]
        operator_calls = []
        if calls is not None and calls.book.seamless:
            wanted = wanted_calls(_bet_calls(
                d, expected_returned, changes, voided is not None,
                annulled if annul is not None else None, calls.ended_at or d.decided_at))
            operator_calls = check_bet(d.player_id, d.bet_id, d.currency, wanted, calls.book,
                                       calls.now, diffs)
        lines.append(BetLine(
            bet_id=d.bet_id, player_id=d.player_id, bet=d.bet, position=d.position,
            stake=d.stake, decision=decision,
            outcome=recorded.outcome if recorded else None,
            returned=recorded.returned if recorded else None,
            expected_outcome=expected_outcome, expected_returned=expected_returned,
            wallet=moves, reversed=reversal.amount if reversal else None,
            expected_reversed=annul[0] if annul else None,
            refund=refund.returned if refund else None,
            expected_refund=annul[1] if annul else None,
            history=history, net=net, expected_net=expected_net,
            operator_calls=operator_calls))
    return lines


BetKey = tuple[str, str]  # (player, bet id)
Record = BetSettled | SettlementReversed
R = TypeVar("R", BetSettled, SettlementReversed)


def _records_by_bet(settlements: Sequence[Record]) -> dict[BetKey, dict[str, Record]]:
    """Each bet's settlement records by their own id (a settlement's, a reversal's), the bets
    by (player, bet id) as the wallet keys them: two players may use the same bet id (the
    second is rejected `duplicate_bet_id` and refunded). A record published again is one."""
    pools: dict[BetKey, dict[str, Record]] = {}
    for s in settlements:
        own = s.reversal_id if isinstance(s, SettlementReversed) else s.settlement_id
        pools.setdefault((s.player_id, s.bet_id), {}).setdefault(own, s)
    return pools


def _take(pool: dict[str, Record], record_id: str, kind: type[R], cause: str | None = None
          ) -> R | None:
    """The bet's record `record_id` of `kind` (and `cause`, given one), taken out of its pool:
    what is left once every check took its own is a record nothing called for."""
    record = pool.get(record_id)
    if not isinstance(record, kind) or (cause is not None and record.cause != cause):
        return None
    del pool[record_id]
    return record


def _step(what: str, record_id: str, correction: int, record: Record | None,
          expected_outcome: str | None, expected_amount: int | None) -> SettlementStep:
    outcome: str | None = None
    amount: int | None = None
    if isinstance(record, SettlementReversed):
        outcome, amount = record.original_outcome, record.amount
    elif record is not None:
        outcome, amount = record.outcome, record.returned
    return SettlementStep(what=what, record_id=record_id, correction=correction,
                          cause=record.cause if record else None, outcome=outcome,
                          amount=amount, expected_outcome=expected_outcome,
                          expected_amount=expected_amount)


@dataclass(frozen=True)
class _Change:
    """A correction that changes a bet: the standing settlement reversed (what it returned
    taken back), then the bet settled again."""

    reversal_id: str
    taken_back: int
    settlement_id: str
    returned: int
    at: datetime  # the correction's time: its calls to the operator's wallet came due then


def _corrected(d: Decision, recorded: BetSettled | None,
               expected: tuple[str | None, int | None], stages: Sequence[_Stage],
               profile: AnyProfile | None, pool: dict[str, Record],
               history: list[SettlementStep], diffs: list[Difference]
               ) -> tuple[list[_Change], tuple[str, BetSettled | None, int | None]]:
    """Each correction's records for the bet, against the rule engine's settlement of the
    corrected cards: where it changes the settlement standing (outcome or amount), a reversal
    naming that settlement and taking back exactly what it returned, caused by the corrected
    result, then a settlement again (`settle:<bet>:c<n>`, the same cause) of the new amount;
    where it does not, no record. Returns the changes and the settlement standing at the end
    (its id, its record, what the rule engine says it returns)."""
    standing_id, standing, (outcome, returned) = settlement_id(d.bet_id), recorded, expected
    changes: list[_Change] = []
    if not isinstance(d, BetAccepted) or outcome is None or returned is None or profile is None:
        return changes, (standing_id, standing, returned)
    for stage in stages:
        if stage.recomputed is None:
            continue
        n = stage.event.correction
        want = settle(Bet(bet=d.bet, position=d.position, stake=d.stake), stage.recomputed,
                      profile)
        rev_id, again_id = reversal_id(standing_id), settlement_id(d.bet_id, n)
        reversal = _take(pool, rev_id, SettlementReversed, cause=stage.result_id)
        again = _take(pool, again_id, BetSettled)
        if (want.outcome, want.returned) == (outcome, returned):
            diffs += [Difference(where=f"bets.settled {record_id}",
                                 expected=f"nothing: correction {n} does not change the bet "
                                          f"({outcome} {returned} either way)",
                                 recorded=f"{record.type} (cause {record.cause})")
                      for record_id, record in ((rev_id, reversal), (again_id, again)) if record]
            continue
        taken_back = standing.returned if standing is not None else returned
        _check_reversal(rev_id, standing_id, standing.outcome if standing else outcome,
                        taken_back, stage.result_id, reversal, diffs)
        history.append(_step("reversed", rev_id, n, reversal, outcome, taken_back))
        expected_again = f"{want.outcome} {want.returned} (cause {stage.result_id})"
        if again is None:
            diffs.append(Difference(where=f"bets.settled {again_id}", expected=expected_again,
                                    recorded="no settlement"))
        elif (again.outcome, again.returned, again.cause) != (want.outcome, want.returned,
                                                              stage.result_id):
            diffs.append(Difference(where=f"bets.settled {again_id}", expected=expected_again,
                                    recorded=f"{again.outcome} {again.returned} "
                                             f"(cause {again.cause})"))
        history.append(_step("settled", again_id, n, again, want.outcome, want.returned))
        changes.append(_Change(rev_id, taken_back, again_id, want.returned,
                               stage.event.occurred_at))
        standing_id, standing, outcome, returned = again_id, again, want.outcome, want.returned
    return changes, (standing_id, standing, returned)


def _check_reversal(rev_id: str, standing_id: str, outcome: str, taken_back: int, cause: str,
                    reversal: SettlementReversed | None, diffs: list[Difference]) -> None:
    """A correction's reversal takes back exactly the settlement it names, the one standing."""
    expected = f"{standing_id} ({outcome}) reversed: {taken_back} taken back (cause {cause})"
    if reversal is None:
        diffs.append(Difference(where=f"bets.settled {rev_id}", expected=expected,
                                recorded="no reversal"))
    elif (reversal.settlement_id, reversal.original_outcome, reversal.amount) != (
            standing_id, outcome, taken_back):
        diffs.append(Difference(
            where=f"bets.settled {rev_id}", expected=expected,
            recorded=f"{reversal.settlement_id} ({reversal.original_outcome}) reversed: "
                     f"{reversal.amount} taken back (cause {reversal.cause})"))


def _bet_decisions(decisions: Sequence[Decision | RoundManifest], player_id: str | None
                   ) -> list[Decision]:
    """The round's bet decisions (the player's alone with `player_id`), each bet once: a
    decision published again after a crash is the same bet."""
    listed: set[BetKey] = set()
    kept: list[Decision] = []
    for d in decisions:
        if isinstance(d, RoundManifest) or (player_id and d.player_id != player_id):
            continue
        if (d.player_id, d.bet_id) not in listed:
            listed.add((d.player_id, d.bet_id))
            kept.append(d)
    return kept


def _expected_settlement(d: Decision, recorded: BetSettled | None, recomputed: AnyResult | None,
                         profile: AnyProfile | None, voided: RoundVoided | None,
                         diffs: list[Difference]) -> tuple[str, str | None, int | None]:
    """(the decision, the outcome and return the rule engine gives the bet), checked against
    its recorded settlement: a rejected bet is never settled; an accepted one is refunded when
    the round is voided, and otherwise settled by the profile the round opened with."""
    if isinstance(d, BetRejected):
        if recorded is not None:
            diffs.append(Difference(where=f"bets.settled {recorded.settlement_id}",
                                    expected="no settlement for a rejected bet",
                                    recorded=f"{recorded.outcome} {recorded.returned}"))
        return f"rejected ({d.reason_code})", None, None
    if voided:
        expected_outcome, expected_returned = "void_refund", d.stake
    elif recomputed is not None and profile is not None:
        want = settle(Bet(bet=d.bet, position=d.position, stake=d.stake), recomputed, profile)
        expected_outcome, expected_returned = want.outcome, want.returned
    else:
        return "accepted", None, None
    expected = f"{expected_outcome} {expected_returned}"
    if recorded is None:
        diffs.append(Difference(where=f"bets.settled {settlement_id(d.bet_id)}",
                                expected=expected, recorded="no settlement"))
    elif (recorded.outcome, recorded.returned) != (expected_outcome, expected_returned):
        diffs.append(Difference(where=f"bets.settled {recorded.settlement_id}",
                                expected=expected,
                                recorded=f"{recorded.outcome} {recorded.returned}"))
    return "accepted", expected_outcome, expected_returned


def _annulment_of(decision: Decision, standing_id: str, recorded: BetSettled | None,
                  expected_returned: int | None, reversal: SettlementReversed | None,
                  refund: BetSettled | None, annulled: bool, diffs: list[Difference]
                  ) -> tuple[int, int, str] | None:
    """For a bet of an annulled round, (what the reversal must take back, the refund, the
    reversal's id): the settlement standing (`standing_id`: the original, or a correction's
    settlement again), its return taken back whole, then the stake. Elsewhere a reversal or
    a refund is itself the difference."""
    reversal_where = f"bets.settled {reversal_id(standing_id)}"
    refund_where = f"bets.settled {annul_refund_id(decision.bet_id)}"
    if not annulled:
        for record, where in ((reversal, reversal_where), (refund, refund_where)):
            if record is not None:
                diffs.append(Difference(where=where, expected="nothing: the round was not "
                                        "annulled (or its annulment was not read)",
                                        recorded=record.type))
        return None
    take_back = recorded.returned if recorded is not None else expected_returned or 0
    expected = f"{standing_id} reversed: {take_back} taken back"
    if reversal is None:
        diffs.append(Difference(where=reversal_where, expected=expected,
                                recorded="no reversal"))
    elif (reversal.settlement_id, reversal.amount) != (standing_id, take_back):
        diffs.append(Difference(where=reversal_where, expected=expected,
                                recorded=f"{reversal.settlement_id} reversed: {reversal.amount} "
                                         "taken back"))
    if refund is None:
        diffs.append(Difference(where=refund_where, expected=f"void_refund {decision.stake}",
                                recorded="no refund"))
    elif (refund.outcome, refund.returned) != ("void_refund", decision.stake):
        diffs.append(Difference(where=refund_where, expected=f"void_refund {decision.stake}",
                                recorded=f"{refund.outcome} {refund.returned}"))
    return take_back, decision.stake, reversal_id(standing_id)


def _signed(kind: str, amount: int) -> int:
    return amount if kind in CREDITS else -amount


def _check_wallet(decision: Decision, expected_returned: int | None,
                  txs: dict[str, WalletTransaction], diffs: list[Difference],
                  changes: Sequence[_Change] = (), annul: tuple[int, int, str] | None = None,
                  own: frozenset[str] | set[str] = frozenset()
                  ) -> tuple[list[str], int, int]:
    """The stake debit, and the refund or credit the decision calls for, each exactly once;
    for each correction that changes the bet the reversal's debit and the settlement's
    credit again; for an annulled round also the reversal's debit and the refund that follows
    it. A payout or payout reversal of one of the bet's settlements (`own`: their ids) that
    none of them calls for is named. `txs`: the decision's player's transactions by tx id.
    Returns the movements, and the bet's net as moved and as called for."""
    moves, net, expected_net = [], 0, 0
    wanted = _wanted_moves(decision, expected_returned, txs, changes, annul)
    for wanted_id, amount in wanted:
        expected_net += _signed(wanted_id.split(":", 1)[0], amount)
        tx = txs.get(wanted_id)
        if tx is None:
            diffs.append(Difference(where=f"wallet.transactions {wanted_id}",
                                    expected=f"{amount} moved", recorded="no transaction"))
            continue
        moves.append(f"{tx.kind} {tx.amount} -> balance {tx.balance_after} ({tx.tx_id})")
        net += _signed(tx.kind, tx.amount)
        if tx.amount != amount:
            diffs.append(Difference(where=f"wallet.transactions {wanted_id}",
                                    expected=str(amount), recorded=str(tx.amount)))
    called = dict(wanted)
    diffs += [Difference(where=f"wallet.transactions {tx.tx_id}",
                         expected="no such movement for the bet",
                         recorded=f"{tx.kind} {tx.amount}")
              for tx in txs.values() if tx.kind in ("payout", "payout_reversal")
              and tx.cause_id in own and tx.tx_id not in called]
    return moves, net, expected_net


def _wanted_moves(decision: Decision, expected_returned: int | None,
                  txs: dict[str, WalletTransaction], changes: Sequence[_Change],
                  annul: tuple[int, int, str] | None) -> list[tuple[str, int]]:
    """(tx id, amount) of each wallet movement the bet calls for. A credit the wallet may
    key more than one way (a payout, or a refund by bet id) is looked for under each; when
    none is there, the first is the one reported missing."""
    wanted = [(tx_id("stake_debit", decision.bet_id), decision.stake)]
    if isinstance(decision, BetRejected):
        wanted.append((tx_id("bet_refund", decision.bet_id), decision.stake))
    elif expected_returned:
        candidates = [tx_id("payout", settlement_id(decision.bet_id)),
                      tx_id("bet_refund", decision.bet_id)]
        found = next((c for c in candidates if c in txs), candidates[0])
        wanted.append((found, expected_returned))
    for change in changes:  # a lost bet returned nothing: nothing taken back, nothing paid
        if change.taken_back:
            wanted.append((tx_id("payout_reversal", change.reversal_id), change.taken_back))
        if change.returned:
            wanted.append((tx_id("payout", change.settlement_id), change.returned))
    if annul is not None:
        take_back, refund, reversed_id = annul
        if take_back:
            wanted.append((tx_id("payout_reversal", reversed_id), take_back))
        candidates = [tx_id("bet_refund", annul_refund_id(decision.bet_id)),
                      tx_id("bet_refund", decision.bet_id),
                      tx_id("payout", annul_refund_id(decision.bet_id))]
        found = next((c for c in candidates if c in txs and c not in dict(wanted)), candidates[0])
        wanted.append((found, refund))
    return wanted


def _compare_manifest(decisions: Sequence[Decision | RoundManifest],
                      diffs: list[Difference]) -> None:
    """The manifest lists exactly the bets accepted before it in the log, each once: a
    decision published again (a bet redelivered after a crash) is the same bet."""
    found = next(((i, d) for i, d in enumerate(decisions) if isinstance(d, RoundManifest)), None)
    if found is None:
        return
    at, manifest = found
    accepted: dict[tuple[str, str], BetAccepted] = {}
    for d in decisions[:at]:
        if isinstance(d, BetAccepted):
            accepted.setdefault((d.player_id, d.bet_id), d)
    want = (len(accepted), sum(d.stake for d in accepted.values()),
            manifest_digest(bet_id for _, bet_id in accepted))
    got = (manifest.bet_count, manifest.total_stake, manifest.digest)
    if want != got:
        diffs.append(Difference(where="bets.decisions round_manifest",
                                expected=f"{want[0]} bets, stake {want[1]}, digest {want[2][:12]}",
                                recorded=f"{got[0]} bets, stake {got[1]}, digest {got[2][:12]}"))


def winner_text(winner: str | dict[str, str] | None) -> str:
    """`banker`, or for Triple Face each player hand against the banker."""
    if winner is None:
        return "-"
    if isinstance(winner, str):
        return winner
    return ", ".join(f"{hand} {'tie' if w == 'tie' else 'wins' if w == hand else 'loses'}"
                     for hand, w in winner.items())


def _hands(result: AnyResult | None
           ) -> tuple[dict[str, list[Card]], dict[str, int | str], str | dict[str, str] | None]:
    if result is None:
        return {}, {}, None
    if result.game == "baccarat":
        return ({"player": list(result.player), "banker": list(result.banker)},
                {"player": result.player_points, "banker": result.banker_points}, result.winner)
    return ({name: list(hand.cards) for name, hand in result.hands.items()},
            {name: hand.rank for name, hand in result.hands.items()},
            {name: winner for name, winner in result.winners.items()})
