"""The baccarat deal: card assignment, the whole tableau, and the result's facts."""

import pytest

from shared.baccarat import cards_needed, deal
from shared.cards import card_for_value, parse_cards

# Written from RULES §3.2 independently of shared.baccarat: when the player drew,
# the banker (two-card total) draws exactly for these values of the player's third card.
BANKER_DRAWS_WHEN_P3_IS = {
    0: set(range(10)),
    1: set(range(10)),
    2: set(range(10)),
    3: {0, 1, 2, 3, 4, 5, 6, 7, 9},
    4: {2, 3, 4, 5, 6, 7},
    5: {4, 5, 6, 7},
    6: {6, 7},
    7: set(),
}
BANKER_THIRD = 3  # value of the card offered to the banker in the table test


def _expected(p: int, b: int, p3: int) -> tuple[int, int, int, int]:
    """(player cards, banker cards, player points, banker points) by the written rules."""
    if p >= 8 or b >= 8:
        return 2, 2, p, b
    if p >= 6:  # player stands; banker draws on 0-5
        return (2, 3, p, (b + p3) % 10) if b <= 5 else (2, 2, p, b)
    drew = p3 in BANKER_DRAWS_WHEN_P3_IS[b]
    return 3, 3 if drew else 2, (p + p3) % 10, (b + BANKER_THIRD) % 10 if drew else b


CASES = [(p, b, p3) for p in range(10) for b in range(10) for p3 in range(10)]


@pytest.mark.parametrize(("p", "b", "p3"), CASES)
def test_tableau_case_by_case(p, b, p3):
    # shoe order P1 B1 P2 B2 then the 5th and 6th cards; every value via a real card
    cards = [card_for_value(p, "S"), card_for_value(b, "H"), card_for_value(0, "D"),
             card_for_value(0, "C"), card_for_value(p3, "D"), card_for_value(BANKER_THIRD, "C"),
             card_for_value(9, "H")]
    result = deal(cards)
    got = (len(result.player), len(result.banker), result.player_points, result.banker_points)
    assert got == _expected(p, b, p3)
    assert result.cards_dealt == got[0] + got[1]
    assert list(result.surplus) == cards[result.cards_dealt:]


def test_assignment_order_p_b_p_b_then_thirds():
    result = deal(parse_cards("AS,2S,3S,4S,5S,6S"))  # P 1+3=4 draws 5 -> 9; B 2+4=6, P3=5: stand
    assert [str(c) for c in result.player] == ["AS", "3S", "5S"]
    assert [str(c) for c in result.banker] == ["2S", "4S"]
    assert result.surplus == (parse_cards("6S")[0],)
    assert (result.player_points, result.banker_points, result.winner) == (9, 6, "player")


def test_result_facts():
    natural = deal(parse_cards("9S,4H,KD,4C,4S"))
    assert natural.player_natural and natural.banker_natural
    assert natural.banker_pair and not natural.player_pair
    assert (natural.winner, natural.margin, natural.cards_dealt) == ("player", 1, 4)
    assert (natural.player_points, natural.banker_points) == (9, 8)
    assert [str(c) for c in natural.surplus] == ["4S"]
    pair_ten_king = deal(parse_cards("TS,2H,KD,3C,9S,9H"))
    assert not pair_ten_king.player_pair  # 10-K is not a pair


@pytest.mark.parametrize(
    ("cards", "needed"),
    [("", 4), ("AS", 3), ("AS,2S,3S", 1), ("9S,2S,TS,3S", 0), ("AS,2S,3S,4S", 1),
     ("AS,2S,3S,4S,5S", 0), ("6S,2S,TS,TH", 1), ("6S,2S,TS,TH,4D", 0),
     ("AS,AH,AD,AC", 1), ("AS,AH,AD,AC,2S", 1), ("AS,AH,AD,AC,2S,3S", 0)],
)
def test_cards_needed(cards, needed):
    assert cards_needed(parse_cards(cards) if cards else []) == needed


def test_too_few_cards_is_refused():
    with pytest.raises(ValueError, match="too few cards"):
        deal(parse_cards("AS,2S,3S,4S"))


def test_seed004_natural_against_natural_follows_seed002_nine_beats_eight():
    """Seed 004: a natural wins "kecuali pemain baccarat lainnya juga mendapat natural, yang
    mana akan menjadi seri"; seed 002: "Sisi tertinggi yang mungkin adalah sembilan natural
    ... Sisi tertinggi kedua adalah delapan natural". Decision (docs/decisions/procedures.md):
    seed 002's ranking, at every baccarat table: equal naturals tie, 9 beats 8."""
    from shared.profile import load_profile
    from shared.settlement import Bet, settle

    nine_eight = deal(parse_cards("4S,3S,5H,5D"))  # P 4 5 = 9, B 3 5 = 8
    assert nine_eight.player_natural and nine_eight.banker_natural
    assert (nine_eight.winner, nine_eight.cards_dealt) == ("player", 4)
    assert deal(parse_cards("4S,4H,5H,5D")).winner == "tie"  # 9 against 9
    table = load_profile("baccarat-big-small")  # seed 004's own table
    assert settle(Bet(bet="tie", stake=1000), nine_eight, table).outcome == "lose"
    assert settle(Bet(bet="player", stake=1000), nine_eight, table).returned == 2000


def test_seed004_both_on_six_or_seven_stand_and_the_higher_wins():
    """Seed 004: "Jika kedua Banker dan Player memiliki 6 atau 7, maka terjadi Tie", read
    literally a 6 against a 7 would tie. Decision: it is the tables' "6 atau 7 Stand" (no
    third card for either), and the higher total wins; equal totals tie (RULES §3.2)."""
    six_seven = deal(parse_cards("3S,4S,3H,3D"))  # P 3 3 = 6, B 4 3 = 7
    assert (six_seven.player_points, six_seven.banker_points) == (6, 7)
    assert (six_seven.winner, six_seven.cards_dealt) == ("banker", 4)
    assert deal(parse_cards("3S,3H,3D,3C")).winner == "tie"  # 6 against 6
    assert deal(parse_cards("4S,4H,3D,3C")).winner == "tie"  # 7 against 7
