"""A replayed round's result (`replay`): the profile it was pinned to, the rule engine's result
of its cards against the published one, and each correction against the result
game-evaluation publishes for it (`evaluator.corrected_result`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.game_evaluation.evaluator import corrected_result
from services.operator.replay_difference import Difference
from services.operator.replay_story import RoundStory
from shared.events.results import RoundResultPublished, result_id
from shared.events.table import (
    RoundCorrected,
    RoundOpened,
    RoundVoided,
)
from shared.profile import (
    LEGACY_VERSION,
    AnyProfile,
    ProfileError,
    round_profile,
    shipped_digest,
)
from shared.rounds import AnyResult, RoundError, evaluate_round
from shared.topics import ROUND_RESULTS_TOPIC


def pinned_profile(opened: RoundOpened | None, result: RoundResultPublished | None,
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


def recompute(profile: AnyProfile | None, story: RoundStory, diffs: list[Difference]
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


def compare_result(recomputed: AnyResult | None, result: RoundResultPublished | None,
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


@dataclass(frozen=True)
class Stage:
    """A correction of the round, checked: its event, the rule engine's result of its cards
    (None when they are not a round under the pinned rules) and its result's id."""

    event: RoundCorrected
    recomputed: AnyResult | None
    result_id: str
    recorded: RoundResultPublished | None


def corrections_of(table_id: str, round_id: str, story: RoundStory, profile: AnyProfile | None,
                   corrected_results: Sequence[RoundResultPublished], diffs: list[Difference]
                   ) -> list[Stage]:
    """Each correction against the round as it stood before it (numbered 1, 2, ... in log
    order, of a completed round, replacing the cards that stood, under the rules the round
    opened with), and its corrected result against the rule engine's result of its cards."""
    stages: list[Stage] = []
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
        expected = None
        if profile is not None and opened is not None:
            try:
                expected = corrected_result(_as_pinned(event, n, opened))
            except RoundError as exc:
                diffs.append(Difference(where=f"{where}.cards", expected="a complete round",
                                        recorded=str(exc)))
        rid = result_id(table_id, round_id, n)
        recorded = by_id.pop(rid, None)
        _compare_corrected_result(table_id, round_id, n, event, expected, rid, recorded, diffs)
        stages.append(Stage(event, expected.result if expected else None, rid, recorded))
        standing = list(event.cards)
    for rid in sorted(by_id):
        diffs.append(Difference(where=f"round.results {rid}",
                                expected="no corrected result without its round_corrected",
                                recorded=f"{by_id[rid].result_id}, round.results of no "
                                         "correction read"))
    return stages


def _as_pinned(event: RoundCorrected, n: int, opened: RoundOpened) -> RoundCorrected:
    """The correction as the log says it should be: the round's n-th, under the profile the
    round opened with (a correction that says otherwise is itself a difference)."""
    return event.model_copy(update={"correction": n, "profile": opened.profile,
                                    "profile_version": opened.profile_version,
                                    "profile_digest": opened.profile_digest})


def _compare_corrected_result(table_id: str, round_id: str, n: int, event: RoundCorrected,
                              expected: RoundResultPublished | None, rid: str,
                              recorded: RoundResultPublished | None,
                              diffs: list[Difference]) -> None:
    """The corrected result is the one game-evaluation's own `corrected_result` gives the
    correction (`expected`; None when its cards are not a round under the pinned rules): it
    names the result it replaces and the event, carries the corrected cards, and its result
    is the rule engine's result of them."""
    if recorded is None:
        diffs.append(Difference(where=f"round.results {rid}",
                                expected=f"the result of correction {n}",
                                recorded="no corrected result published"))
        return
    assert recorded.correction is not None
    replaces = expected.correction.replaces if expected is not None and \
        expected.correction is not None else result_id(table_id, round_id, n - 1)
    named = (recorded.correction.replaces, recorded.correction.event_id, list(recorded.cards))
    if named != (replaces, event.event_id, list(event.cards)):
        diffs.append(Difference(
            where=f"round.results {rid}: correction",
            expected=f"replaces {replaces}, event {event.event_id}, cards "
                     f"{' '.join(map(str, event.cards))}",
            recorded=f"replaces {named[0]}, event {named[1]}, cards "
                     f"{' '.join(map(str, named[2]))}"))
    if expected is not None:
        _compare_fields(rid, expected.result, recorded, diffs)
