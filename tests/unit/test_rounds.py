"""The game-agnostic door the services call: completeness, evaluation, refusal, JSON."""

import pytest

from shared.cards import parse_card, parse_cards
from shared.profile import load_profile
from shared.rounds import ROUND_RESULT, RoundError, cards_needed, evaluate_round, is_complete

TF_ROUND = "JS,2C,3C,QS,3H,4C,5C,TH,6D,7C,8C,9D"


def test_cards_one_at_a_time_until_complete():
    profile = load_profile("sbo-baccarat")
    shoe_order = parse_cards("AS,3H,2D,3C,9S,KD,QH")
    seen = []
    for card in shoe_order:
        if is_complete(profile, seen):
            break
        seen.append(card)
    assert len(seen) == 5  # P draws, B stands on 6 against P3 = 9
    result = evaluate_round(profile, shoe_order)
    assert [str(c) for c in result.surplus] == ["KD", "QH"]


@pytest.mark.parametrize(("name", "needed"), [("triple-face-id", 12), ("triple-face-jp", 13)])
def test_triple_face_needs(name, needed):
    assert cards_needed(load_profile(name), []) == needed


def test_results_round_trip_as_json():
    for name, cards in (("sbo-tiger", "AS,3H,2D,3C,9S"), ("triple-face-id", TF_ROUND),
                        ("triple-face-jp", "KD," + TF_ROUND)):
        result = evaluate_round(load_profile(name), parse_cards(cards))
        assert ROUND_RESULT.validate_json(result.model_dump_json()) == result


def test_refusals():
    with pytest.raises(RoundError, match="duplicate card JS"):
        evaluate_round(load_profile("triple-face-id"), parse_cards("JS," + TF_ROUND))
    with pytest.raises(RoundError, match="too few cards"):
        evaluate_round(load_profile("triple-face-jp"), parse_cards(TF_ROUND))
    nine_aces = [parse_card("AS")] * 9
    with pytest.raises(RoundError, match="9 copies in a shoe of 8 decks"):
        evaluate_round(load_profile("sbo-baccarat"), nine_aces)
    eight = evaluate_round(load_profile("sbo-baccarat"), parse_cards("AS,AS,AS,AS,AS,AS"))
    assert eight.cards_dealt == 6
