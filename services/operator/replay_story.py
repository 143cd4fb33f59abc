"""Reading a round for its replay (`replay`): the round's story as its own events tell it, the
events that are authentic and on the chain, where the chain breaks, and the round's status."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from services.operator.replay_difference import Difference
from shared.cards import Card
from shared.events.chain import follow_chain, verify_chain
from shared.events.event_auth import VOID, auth_problem
from shared.events.table import (
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
from shared.round_phase import RoundPhase, phase_after
from shared.topics import TABLE_EVENTS_TOPIC

E = TypeVar("E", bound=TableEventBase)


def first_of(events: Sequence[TableEventBase], kind: type[E]) -> E | None:
    return next((e for e in events if isinstance(e, kind)), None)


@dataclass(frozen=True)
class RoundStory:
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


def round_story(events: Sequence[TableEventBase], round_id: str,
                late: Sequence[TableEventBase]) -> RoundStory:
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
    return RoundStory(
        timeline=told,
        opened=first_of(mine, RoundOpened), voided=first_of(mine, RoundVoided),
        completed=first_of(mine, RoundCompleted),
        annulled=first_of(told, RoundAnnulled),
        corrections=[e for e in told if isinstance(e, RoundCorrected)],
        cards=[e.card for e in mine[redealt + 1:] if isinstance(e, CardDealt)],
        surplus=[e.card for e in mine if isinstance(e, SurplusCardRecorded)],
        burns=[e.card for e in mine if isinstance(e, CardBurned)])


def authenticated(events: Sequence[TableEventBase], late: Sequence[TableEventBase],
                  key: bytes, accept_unsigned: bool, diffs: list[Difference]
                  ) -> tuple[list[TableEventBase], list[TableEventBase]]:
    """The events, and the corrections and annulment read further on, that dealer-event
    signed: an event anyone else could have written must not decide the round."""
    return (_authentic(events, key, accept_unsigned, diffs),
            _authentic(late, key, accept_unsigned, diffs))


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


def on_chain(events: Sequence[TableEventBase], anchor: TableEventBase | None,
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


def chain_breaks(events: Sequence[TableEventBase], anchor: TableEventBase | None,
                 story: RoundStory, late: Sequence[TableEventBase], notes: list[str]
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


def check_opened(story: RoundStory, round_id: str, diffs: list[Difference]) -> None:
    """A round that never opened in the window read has nothing to be replayed against."""
    if story.opened is None:
        diffs.append(Difference(where=TABLE_EVENTS_TOPIC, expected=f"round {round_id} opened",
                                recorded="no round_opened event in the log window"))


def check_annulled_round_completed(story: RoundStory, diffs: list[Difference]) -> None:
    """An annulment voids a completed round (its settlements are reversed); one of a round
    that never completed is a supervisor action on the wrong round."""
    if story.annulled is not None and story.completed is None:
        diffs.append(Difference(where=f"round_annulled (seq {story.annulled.seq})",
                                expected="an annulment of a completed round",
                                recorded="the round never completed"))


def status_of(story: RoundStory) -> str:
    """The report's status: the round's phase as its story tells it (shared.round_phase's
    fold), and two words of the report's own: "corrected" (completed, and its result
    superseded by a correction: the report shows the original and the corrected result) and
    "unknown" (no event of the window says the round's phase)."""
    phase: RoundPhase | None = None
    for event in story.timeline:
        phase = phase_after(phase, event)
    if phase is None:
        return "unknown"
    return "corrected" if phase == "completed" and story.corrections else phase


def ended_at(story: RoundStory) -> datetime | None:
    ended = story.completed or story.voided
    if ended is not None:
        return ended.occurred_at
    return story.timeline[-1].occurred_at if story.timeline else None


def describe(event: TableEventBase) -> str:
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
