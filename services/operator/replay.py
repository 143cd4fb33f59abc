"""Replay one round from its recorded events: rebuild it with the rule engine and compare.

Pure: the caller reads the round's records from the log (by time, never a full
scan) and hands them in; this module verifies the hash chain, rebuilds the
hands, the result and every settlement with the same code the services run,
checks each wallet movement, and ends in a verdict: MATCH, or each difference
spelled out (where, expected, recorded).

What a service decides, replay asks the service's own pure function (game-evaluation's
`corrected_result`, bet-settlement's `settlement_terms`, the wallet's `ending_movement`);
its own code only reads the records and compares (docs/decisions/replay.md). The parts:
`replay_story` (reading the round's events), `replay_result` (its result and corrections),
`replay_bets` (each bet's settlements and wallet movements), `replay_calls` (seamless
mode's calls), `replay_report` (the report's models).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from services.operator.replay_bets import Calls, Decision, bet_lines
from services.operator.replay_calls import (
    CallBook,
    leftovers,
    unplaced,
)
from services.operator.replay_difference import Difference as Difference  # re-exported
from services.operator.replay_report import BetLine as BetLine  # re-exported
from services.operator.replay_report import CorrectionLine as CorrectionLine
from services.operator.replay_report import ReplayReport as ReplayReport
from services.operator.replay_report import SettlementStep as SettlementStep
from services.operator.replay_report import TimelineEntry as TimelineEntry
from services.operator.replay_report import hands_of
from services.operator.replay_report import winner_text as winner_text
from services.operator.replay_result import (
    Stage,
    compare_result,
    corrections_of,
    pinned_profile,
    recompute,
)
from services.operator.replay_story import (
    RoundStory,
    authenticated,
    chain_breaks,
    check_annulled_round_completed,
    check_opened,
    describe,
    ended_at,
    on_chain,
    round_story,
    status_of,
)
from shared.events.bet_events import (
    BetAccepted,
    BetRejected,
    BetSettled,
    RoundManifest,
    SettlementReversed,
    manifest_digest,
)
from shared.events.event_auth import auth_problem
from shared.events.operator_wallet import OperatorCallRecord
from shared.events.results import RoundResultPublished
from shared.events.table import (
    RoundAnnulled,
    RoundCompleted,
    RoundCorrected,
    RoundVoided,
    TableEventBase,
)
from shared.events.wallet_events import WalletTransaction
from shared.profile import (
    LEGACY_VERSION,
    AnyProfile,
)
from shared.rounds import AnyResult
from shared.shoe_history import ShoeHistory, ShoeRoads, fold_shoes, shoe_roads


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
        events, late = authenticated(events, late, events_key, accept_unsigned, diffs)
        events = on_chain(events, anchor, notes)
    story = round_story(events, round_id, late)
    breaks = chain_breaks(events, anchor, story, late, notes)
    check_opened(story, round_id, diffs)
    profile = pinned_profile(story.opened, result, diffs)
    check_annulled_round_completed(story, diffs)
    recomputed = recompute(profile, story, diffs)
    compare_result(recomputed, result, story.voided, diffs)
    stages = corrections_of(table_id, round_id, story, profile, corrected_results, diffs)
    book = CallBook(operator_calls, player_id)
    calls = Calls(book, now or datetime.now(UTC), ended_at(story))
    bets = bet_lines(decisions, settlements, wallet, recomputed, profile, story.voided,
                     player_id, diffs, story.annulled, stages, calls)
    left = unplaced(book, wallet, calls.now, diffs) if book.seamless else []
    leftovers(book, diffs)
    compare_manifest(decisions, diffs)
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
    the table's events read from the shoe's start (`shared.shoe_history`, the fold
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
        authentic = on_chain(authentic, None, notes)
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


def _report(table_id: str, round_id: str, player_id: str | None, story: RoundStory,
            profile: AnyProfile | None, recomputed: AnyResult | None, bets: list[BetLine], *,
            chain: tuple[int, int | None, list[str]], diffs: list[Difference],
            notes: list[str], corrections: Sequence[Stage] = ()) -> ReplayReport:
    """The report: `chain` is (events checked, the anchor's seq, where the chain breaks)."""
    opened, voided, annulled = story.opened, story.voided, story.annulled
    checked, anchor_seq, breaks = chain
    hands, scores, winner = hands_of(recomputed)
    return ReplayReport(
        table_id=table_id, round_id=round_id, player_id=player_id,
        profile=opened.profile if opened else None,
        profile_version=(opened.profile_version or LEGACY_VERSION) if opened else None,
        profile_digest=opened.profile_digest if opened else None,
        game=profile.game if profile else None,
        dealer=opened.dealer if opened else None, shoe_id=opened.shoe_id if opened else None,
        opened_at=opened.occurred_at if opened else None, status=status_of(story),
        chain_checked=checked, chain_anchor_seq=anchor_seq,
        chain_breaks=breaks, cards=story.cards, surplus=story.surplus, burns=story.burns,
        hands=hands, scores=scores, winner=winner,
        void_reason=f"{voided.reason_code}: {voided.reason_text}" if voided else None,
        annul_reason=(f"{annulled.reason_code}: {annulled.reason_text} (supervisor "
                      f"{annulled.supervisor})") if annulled else None,
        timeline=[TimelineEntry(seq=e.seq, at=e.occurred_at, what=e.type, detail=describe(e))
                  for e in story.timeline],
        bets=bets, differences=diffs, notes=notes,
        corrections=[_correction_line(stage) for stage in corrections],
    )


def _correction_line(stage: Stage) -> CorrectionLine:
    event = stage.event
    hands, scores, winner = hands_of(stage.recomputed)
    recorded = hands_of(stage.recorded.result)[2] if stage.recorded is not None else None
    return CorrectionLine(
        correction=event.correction, seq=event.seq, at=event.occurred_at,
        reason_code=str(event.reason_code), reason_text=event.reason_text,
        supervisor=event.supervisor, replaced_cards=list(event.replaced_cards),
        cards=list(event.cards), result_id=stage.result_id, hands=hands, scores=scores,
        winner=winner, recorded_winner=recorded)


def compare_manifest(decisions: Sequence[Decision | RoundManifest],
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
