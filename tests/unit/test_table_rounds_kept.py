"""A table keeps its last KEEP_ROUNDS rounds, not its whole history (docs/decisions/tables.md,
"Rounds a table keeps"): the state dealer-event copies on every decided input stays the same
size whether the table dealt a hundred rounds or half a million, and a decision naming a
round it no longer keeps is refused by a name that says so."""

from __future__ import annotations

import random

from services.dealer_event import state as table_state
from services.dealer_event.state import KEEP_ROUNDS
from shared.cards import parse_cards
from shared.events.inputs import AnnulRounds, CorrectRound, EndShoe, OpenRound, VoidRound
from shared.profile import load_profile
from shared.shoe import Shoe
from shared.simulate import deal_round
from tests.unit.table_machine_support import Table, types
from tests.unit.table_procedures_support import assert_rebuilds

PROFILE = "sbo-baccarat"  # seed 002: no burns, so a round is open, close, its cards
PER_SHOE = 60  # rounds a shoe deals here: 60 rounds of at most 6 cards fit 8 decks


def deal(t: Table, rounds: int, first: int = 1) -> list[str]:
    """`rounds` rounds dealt from real shuffled shoes, `PER_SHOE` a shoe (then end_shoe and
    a new shoe), every one completed; their ids R<first>, R<first + 1>, ..."""
    profile, rng = load_profile(PROFILE), random.Random(first)
    shoe: Shoe | None = None
    dealt = []
    for n in range(first, first + rounds):
        if (n - 1) % PER_SHOE == 0:
            if shoe is not None:
                t.ok(EndShoe, role="supervisor")
            t.shoe(PROFILE, shoe_id=f"S{(n - 1) // PER_SHOE + 1}")
            shoe = Shoe(profile.decks)
            shoe.shuffle(rng)
        assert shoe is not None
        t.round(f"R{n}", ",".join(str(c) for c in deal_round(profile, shoe)))
        dealt.append(f"R{n}")
    return dealt


def test_the_round_maps_are_bounded_whatever_the_history():
    """620 rounds over 11 shoes: the table keeps the last KEEP_ROUNDS of them, in log order
    (their phase, their shoe and the completed ones' facts), every round of the shoe in play
    among them, and still counts every round it opened."""
    t = Table()
    dealt = deal(t, KEEP_ROUNDS + 120)
    kept = dealt[-KEEP_ROUNDS:]
    state = t.state
    assert list(state.round_status) == kept and list(state.round_shoe) == kept
    assert set(state.round_status.values()) == {"completed"}
    assert list(state.completed) == kept
    in_play = [r for r, shoe in state.round_shoe.items() if shoe == state.shoe.shoe_id]
    assert in_play == dealt[-((len(dealt) - 1) % PER_SHOE + 1):]  # the whole shoe in play
    summary = state.summary()
    assert summary["rounds_seen"] == len(dealt) and summary["rounds_kept"] == KEEP_ROUNDS
    # the fold copies a table per entry: what it copies does not grow with the history
    copied = state.copy()
    assert len(copied.round_status) == len(copied.round_shoe) == KEEP_ROUNDS
    assert_rebuilds(t)  # a restart forgets the very same rounds


def test_a_round_the_table_no_longer_keeps_is_refused_by_name(monkeypatch):
    """A decision after the fact (annul_rounds, either scope; correct_round) naming a round
    older than the table keeps is refused `round_too_old_to_annul` / `_to_correct`: the
    table cannot tell an id it forgot from one it never dealt, and says both. A round it
    keeps is decided as before; a reused id older than the window is not seen by the table."""
    monkeypatch.setattr(table_state, "KEEP_ROUNDS", 3)
    t = Table()
    t.shoe(PROFILE)
    for n in range(1, 6):
        t.round(f"R{n}", "9S,2H,KD,5C")
    assert list(t.state.round_status) == ["R3", "R4", "R5"]
    annul = dict(reason_code="other", reason_text="found on video")
    fix = dict(reason_code="mis_scan", reason_text="video")
    for scope in ("round", "rest_of_shoe"):
        assert t.refused(AnnulRounds, round_id="R1", scope=scope,
                         **annul) == "round_too_old_to_annul"
    assert t.refused(AnnulRounds, round_id="never", **annul) == "round_too_old_to_annul"
    assert t.refused(CorrectRound, round_id="R2", cards=parse_cards("2S,2H,KD,5C,3D"),
                     **fix) == "round_too_old_to_correct"
    outcome = t.send(t.make.make(AnnulRounds, round_id="R1", **annul))
    assert "keeps its last 3 rounds" in outcome.refusal.message
    # any other input naming it: no round of that id on the table, as for any unknown id
    assert t.refused(VoidRound, round_id="R1", reason_code="other",
                     reason_text="x") == "round_not_found"
    # the rest of the shoe from the oldest round kept: annulled as before
    events = t.ok(AnnulRounds, round_id="R3", scope="rest_of_shoe", **annul)
    assert types(events) == ["round_annulled"] * 3 + ["shoe_ended"]
    # the limit: an id older than the window is a new id to the table (the devices' ids,
    # bet-settlement and the wallet guard it: docs/decisions/tables.md)
    t.shoe(PROFILE, shoe_id="S2")
    assert t.refused(OpenRound, round_id="R5", dealer="Ayu") == "round_id_reused"
    assert types(t.ok(OpenRound, round_id="R1", dealer="Ayu")) == ["round_opened"]
    assert t.state.summary()["rounds_seen"] == 6
    assert_rebuilds(t)


def test_a_table_that_forgot_nothing_still_says_round_not_found():
    t = Table()
    t.shoe(PROFILE)
    t.round("R1", "9S,2H,KD,5C")
    assert t.refused(AnnulRounds, round_id="R9", reason_code="other",
                     reason_text="x") == "round_not_found"
    assert t.refused(CorrectRound, round_id="R9", cards=parse_cards("2S,2H,KD,5C,3D"),
                     reason_code="mis_scan", reason_text="x") == "round_not_found"
