"""Follow one table's events and say when a round is complete and what its result is.

Pure. The evaluator decides completion itself from the rules (`cards_needed`), so
it never trusts `RoundCompleted` blindly: that event is only cross-checked, and a
disagreement is reported as a problem, never turned into a result. Surplus cards
and anything after completion are ignored; a voided round gets no result.
Events at or below the last seq seen are skipped (redelivery is harmless). The state it
follows (`EvaluationState`) is what an entry of game-evaluation's own log carries
(`shared.events.evaluation_log`). Its round's `status` (open, complete, voided) is the
evaluator's own, persisted since the log's first entry: "complete" is its rules' verdict on
the cards, not the table's `round_completed`, and it follows neither the close nor an
annulment; `shared.round_phase.phases_of` maps it to the round's phases
(docs/decisions/round-phase.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from shared.cards import parse_card
from shared.events.evaluation_log import EvaluationState as EvaluationState
from shared.events.evaluation_log import RoundView as RoundView
from shared.events.event_auth import (
    ChainHead,
    TableEventRefused,
    TableFlagged,
    TableWatch,
    verify_next,
)
from shared.events.results import ResultCorrection, RoundResultPublished, result_id
from shared.events.table import (
    CardDealt,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    RoundRedealt,
    RoundVoided,
    TableEventBase,
    TableReopened,
)
from shared.profile import pin_mismatch, round_profile
from shared.rounds import cards_needed, evaluate_round


class Observation(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    view: EvaluationState
    result: RoundResultPublished | None = None
    problems: tuple[str, ...] = ()
    void: str | None = None  # skipped as a lost race (event_auth.VOID): why


def flagged_view(view: EvaluationState, flagged: TableFlagged) -> EvaluationState:
    """The table's view once `flagged` refused an event of it (dead-letter the event)."""
    return view.model_copy(update={"flagged": flagged.watch.flagged})


def observe_verified(view: EvaluationState, event: TableEventBase, key: bytes,
                     accept_unsigned: bool = False) -> Observation:
    """`observe`, for an event that is dealer-event's (its HMAC verifies) and continues the
    chain; skip it (`void`) when it is authentic but does not continue the chain (a lost
    race, docs/decisions/dealer-fencing.md); otherwise raise TableFlagged. A flagged table
    is still followed (authenticity alone is checked, the chain re-anchors on each
    authentic event) so the evaluator sees the supervisor reopen it, but no result is
    published for it until then."""
    head = ChainHead(view.last_seq, view.last_hash, view.void_tips) if view.last_seq else None
    try:
        verdict = verify_next(event, head, key, accept_unsigned=accept_unsigned,
                              check_order=view.flagged is None)
    except TableEventRefused as refused:
        raise TableFlagged(TableWatch(head, view.flagged or str(refused)), refused) from refused
    if verdict == "seen":
        return Observation(view=view)
    if verdict == "void":  # a lost race: skipped, counted, never flagged; a void tip
        assert head is not None  # void needs a head
        return Observation(view=view.model_copy(update={
            "void_tips": head.after_void(event).void_tips}),
            void=f"seq {event.seq} ({event.type}) does not continue seq {view.last_seq}")
    if head is None:  # the first event seen of this table: its anchor
        view = view.model_copy(update={"last_seq": event.seq - 1, "last_hash": event.prev_hash})
    if view.flagged is not None:  # follow without checking the order, result held back
        seen = observe(view.model_copy(update={"last_seq": event.seq - 1,
                                               "last_hash": event.prev_hash}), event)
        problems = list(seen.problems)
        if seen.result is not None:
            problems.append(f"table {event.table_id} is flagged ({view.flagged}): no result "
                            f"for round {seen.result.round_id}")
        cleared = None if isinstance(event, TableReopened) else view.flagged
        return Observation(view=seen.view.model_copy(update={"flagged": cleared}),
                           problems=tuple(problems))
    return observe(view, event)


def observe(view: EvaluationState, event: TableEventBase) -> Observation:
    if event.seq <= view.last_seq:
        return Observation(view=view)
    problems: list[str] = []
    if event.seq != view.last_seq + 1 or event.prev_hash != view.last_hash:
        problems.append(f"table {event.table_id}: seq {event.seq} does not continue the chain "
                        f"at seq {view.last_seq}")
    rnd, result = _follow(view.round, event, problems)
    new = view.model_copy(update={"last_seq": event.seq, "last_hash": event.hash, "round": rnd})
    return Observation(view=new, result=result, problems=tuple(problems))


def _follow(rnd: RoundView | None, event: TableEventBase, problems: list[str]
            ) -> tuple[RoundView | None, RoundResultPublished | None]:
    if isinstance(event, RoundOpened):
        mismatch = pin_mismatch(event.profile, event.profile_version, event.profile_digest)
        if mismatch:
            problems.append(f"table {event.table_id}: round {event.round_id}: {mismatch}")
        return RoundView(round_id=event.round_id, shoe_id=event.shoe_id, profile=event.profile,
                         profile_version=event.profile_version,
                         profile_digest=event.profile_digest, dealer=event.dealer), None
    if isinstance(event, (CardDealt, RoundCompleted, RoundVoided)):
        if rnd is None or rnd.round_id != event.round_id:
            problems.append(f"table {event.table_id}: {event.type} at seq {event.seq} for "
                            f"round {event.round_id}, which was never opened here")
            return rnd, None
        if isinstance(event, CardDealt):
            return _card(rnd, event)
        if isinstance(event, RoundCompleted):
            _cross_check(rnd, event, problems)
            return rnd, None
        if rnd.status == "complete":
            problems.append(f"table {event.table_id}: round {rnd.round_id} voided after its "
                            "result was published")
        return rnd.model_copy(update={"status": "voided"}), None
    if isinstance(event, RoundCorrected):  # seed 004 §5: a result that supersedes one
        return rnd, corrected_result(event)
    if isinstance(event, RoundRedealt) and rnd is not None and rnd.round_id == event.round_id \
            and rnd.status == "open":  # seed 000 §1: the cards so far are set aside
        return rnd.model_copy(update={"cards": ()}), None
    return rnd, None


def _card(rnd: RoundView, event: CardDealt) -> tuple[RoundView, RoundResultPublished | None]:
    if rnd.status != "open":
        return rnd, None  # after completion (or a void) a card is never used
    rnd = rnd.model_copy(update={"cards": (*rnd.cards, str(event.card))})
    profile = round_profile(rnd.profile, rnd.profile_version)
    cards = [parse_card(c) for c in rnd.cards]
    if cards_needed(profile, cards):
        return rnd, None
    rnd = rnd.model_copy(update={"status": "complete"})
    return rnd, RoundResultPublished(
        result_id=result_id(event.table_id, rnd.round_id), table_id=event.table_id,
        round_id=rnd.round_id, shoe_id=rnd.shoe_id, profile=rnd.profile,
        profile_version=rnd.profile_version, profile_digest=rnd.profile_digest, dealer=rnd.dealer,
        cards=tuple(cards), completed_seq=event.seq, completed_hash=event.hash,
        occurred_at=event.occurred_at, last_card_at=event.occurred_at,
        result=evaluate_round(profile, cards),
    )


def corrected_result(event: RoundCorrected) -> RoundResultPublished:
    """The result of a corrected round's cards, by the rules the round opened under, with
    an id of its own and the id of the result it replaces (the round's, or the previous
    correction's)."""
    profile = round_profile(event.profile, event.profile_version)
    return RoundResultPublished(
        result_id=result_id(event.table_id, event.round_id, event.correction),
        table_id=event.table_id, round_id=event.round_id, shoe_id=event.shoe_id,
        profile=event.profile, profile_version=event.profile_version,
        profile_digest=event.profile_digest, dealer=event.dealer, cards=event.cards,
        completed_seq=event.seq, completed_hash=event.hash, occurred_at=event.occurred_at,
        result=evaluate_round(profile, list(event.cards)),
        correction=ResultCorrection(
            replaces=result_id(event.table_id, event.round_id, event.correction - 1),
            correction=event.correction, event_id=event.event_id,
            replaced_cards=event.replaced_cards, reason_code=str(event.reason_code),
            reason_text=event.reason_text, supervisor=event.supervisor))


def _cross_check(rnd: RoundView, event: RoundCompleted, problems: list[str]) -> None:
    theirs = tuple(str(c) for c in event.cards)
    if rnd.status != "complete" or theirs != rnd.cards:
        problems.append(
            f"table {event.table_id}: dealer-event completed round {rnd.round_id} with "
            f"{list(theirs)} but the rules say {rnd.status} with {list(rnd.cards)}; "
            "no result is published from the dealer's claim")
