"""Triple Face: both dealing procedures, the 31-rank ladder and Pair Plus (RULES §4)."""

import pytest

from shared.cards import RANKS, parse_card, parse_cards
from shared.triple_face import HAND_NAMES, cards_needed, deal, hand_rank, pair_plus

LADDER = ("3P 2P9 P9 9 2P8 P8 8 2P7 P7 7 2P6 P6 6 2P5 P5 5 2P4 P4 4 2P3 P3 3 2P2 P2 2 "
          "2P1 P1 1 2P0 P0 0").split()
TWELVE = "AS,2S,3S,4S,5S,6S,7S,8S,9S,TS,JS,QS"

# Seed 001, written independently: the first card's rank -> who gets the first dealt card.
START = {"A": "banker", "5": "banker", "9": "banker", "K": "banker",
         "2": "player1", "6": "player1", "T": "player1",
         "3": "player2", "7": "player2", "J": "player2",
         "4": "player3", "8": "player3", "Q": "player3"}


def test_seed_000_tie_example():
    result = deal("fixed", parse_cards("JS,2C,3C,QS,3H,4C,5C,TH,6D,7C,8C,9D"))
    assert result.hands["player1"].rank == result.hands["banker"].rank == "P9"
    assert result.winners["player1"] == "tie"


def test_fixed_deals_p1_p2_p3_b_three_times_round():
    result = deal("fixed", parse_cards(TWELVE + ",KS"))
    names = {name: [str(c) for c in result.hands[name].cards] for name in HAND_NAMES}
    assert names == {"player1": ["AS", "5S", "9S"], "player2": ["2S", "6S", "TS"],
                     "player3": ["3S", "7S", "JS"], "banker": ["4S", "8S", "QS"]}
    assert [str(c) for c in result.surplus] == ["KS"] and result.first_card is None


@pytest.mark.parametrize("rank", list(RANKS))
def test_first_card_start_position_for_every_rank(rank):
    first = parse_card(rank + "H")
    result = deal("first_card", [first, *parse_cards(TWELVE)])
    assert result.first_card == first
    start = START[rank]
    assert result.hands[start].cards[0] == parse_card("AS")
    cycle = HAND_NAMES[HAND_NAMES.index(start):] + HAND_NAMES[:HAND_NAMES.index(start)]
    assert [result.hands[name].cards[0] for name in cycle] == parse_cards("AS,2S,3S,4S")
    assert all(len(h.cards) == 3 for h in result.hands.values())


def test_ladder_labels_and_order():
    hands = {"3P": "JS,QS,KS", "2P9": "JS,QS,9S", "P9": "JS,4S,5S", "9": "4S,5S,TS",
             "2P0": "JS,KH,TS", "P0": "QS,TS,TH", "0": "TS,TH,TD", "P6": "KS,AS,5S",
             "6": "AS,2S,3S", "2P6": "JH,JS,6D"}
    for label, cards in hands.items():
        assert hand_rank(parse_cards(cards)).label == label
    strengths = {}
    for pictures in range(4):
        for total in range(10):
            rank = hand_rank_of(pictures, total)
            strengths[rank.label] = rank.strength
    assert sorted(strengths, key=strengths.get, reverse=True) == LADDER
    assert len(set(strengths.values())) == 31


def hand_rank_of(pictures: int, total: int):
    numbers = {0: "T", **{v: RANKS[v - 1] for v in range(1, 10)}}
    cards = ["JS", "QS", "KS"][:pictures]
    if pictures < 3:
        rest = [numbers[total]] + ["T"] * (2 - pictures)
        cards += [r + s for r, s in zip(rest, "HDC", strict=False)]
    return hand_rank(parse_cards(",".join(cards)))


@pytest.mark.parametrize(
    ("cards", "category"),
    [("8H,7H,6H", "straight_flush"), ("AS,2S,3S", "straight_flush"), ("QD,KD,AD", "straight_flush"),
     ("TS,TH,TD", "three_of_a_kind"), ("8H,7S,6H", "straight"), ("AS,2H,3D", "straight"),
     ("QS,KH,AD", "straight"), ("KS,AH,2D", "nothing"), ("KS,AS,2S", "flush"),
     ("TH,4H,2H", "flush"), ("AS,AH,8D", "pair"), ("TS,TH,QS", "pair"), ("2S,7H,QD", "nothing"),
     ("TS,JH,QD", "straight")],
)
def test_pair_plus(cards, category):
    assert pair_plus(parse_cards(cards)) == category


@pytest.mark.parametrize(("procedure", "given", "needed"),
                         [("fixed", 0, 12), ("fixed", 11, 1), ("fixed", 14, 0),
                          ("first_card", 12, 1), ("first_card", 13, 0)])
def test_cards_needed(procedure, given, needed):
    cards = parse_cards(TWELVE + ",KS,KH")[:given]
    assert cards_needed(procedure, cards) == needed


def test_too_few_cards():
    with pytest.raises(ValueError, match="too few cards"):
        deal("first_card", parse_cards(TWELVE))
