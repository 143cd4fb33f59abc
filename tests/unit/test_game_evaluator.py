"""game-evaluation's pure core: completion from the rules, one result, voids and redelivery."""

from __future__ import annotations

from services.dealer_event.input_parsing import parse_raw, rejection_id
from services.game_evaluation.evaluator import EvaluationState, observe
from shared.cards import parse_card, parse_cards
from shared.events.inputs import ScanCard, VoidRound
from shared.events.table import RoundCompleted, seal
from shared.profile import load_profile
from shared.rounds import evaluate_round
from tests.unit.table_machine_support import Table


def _follow(events, view=None):
    view = view or EvaluationState(table_id="T1")
    out, problems = [], []
    for event in events:
        seen = observe(view, event)
        view = seen.view
        problems += seen.problems
        if seen.result is not None:
            out.append(seen.result)
    return view, out, problems


def test_one_result_per_completed_round_equal_to_the_rule_engine():
    t = Table()
    t.shoe("triple-face-jp")
    t.round("R1", "AS,2S,3S,4S,5S,6S,7S,8S,9S,TS,JS,QS,KS")
    t.ok(ScanCard, round_id="R1", card=parse_card("AH"))  # surplus: never used
    view, results, problems = _follow(t.events)
    assert problems == [] and len(results) == 1
    result = results[0]
    cards = parse_cards("AS,2S,3S,4S,5S,6S,7S,8S,9S,TS,JS,QS,KS")
    assert result.result == evaluate_round(load_profile("triple-face-jp"), cards)
    assert result.result_id == "result:T1:R1" and result.dealer == "Ayu"
    assert set(result.result.hands) == {"player1", "player2", "player3", "banker"}
    # redelivery of the whole stream publishes nothing again
    assert _follow(t.events, view)[1] == []


def test_a_voided_round_gets_no_result():
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S")  # open, close, one card: not complete
    t.ok(VoidRound, round_id="R1", reason_code="card_exposed", reason_text="exposed")
    assert _follow(t.events)[1] == []


def test_a_completion_claim_the_rules_do_not_back_is_a_problem_not_a_result():
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S")  # open, close, one card: not complete
    last = t.events[-1]
    claim = seal(RoundCompleted, table_id="T1", seq=last.seq + 1, prev_hash=last.hash,
                 occurred_at=last.occurred_at, round_id="R1", cards=(parse_card("9S"),))
    _, results, problems = _follow([*t.events, claim])
    assert results == [] and len(problems) == 1 and "rules say open" in problems[0]


def test_raw_inputs_that_cannot_be_read_name_the_problem():
    assert "not JSON" in parse_raw(b"{oops").refusal.message
    parsed = parse_raw(b'{"table_id": "T1", "command": "scan_card", "input_id": "i1"}')
    assert parsed.refusal.code == "malformed_input" and parsed.table_id == "T1"
    assert "scan_card" in parsed.refusal.message or "sent_at" in parsed.refusal.message
    assert rejection_id("T1", "i1", "x", "a") == rejection_id("T1", "i1", "x", "b")
    assert rejection_id("unknown", None, "x", "a") != rejection_id("unknown", None, "x", "b")
