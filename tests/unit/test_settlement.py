"""Settlement: every bet id against hand-checked rounds, exact integer rounding, and
properties that must hold for any round and any stake."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.bets import GAME_RULES
from shared.cards import DECK, parse_cards
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.settlement import Bet, BetError, settle, validate_bet

# Rounds in shoe order, each checked by hand against RULES §3.2.
P9_NATURAL = "9S,4H,KD,2C"            # P 9 (natural) v B 6, 4 cards
B6_TWO = "AS,3H,2D,3C,9S"             # P 3 draws 9 -> 2; B 6 stands on P3=9: Banker by 4 on 6
TIE_6 = "2S,3H,4D,3C"                 # P 6 v B 6, both stand
NATURAL_TIE = "9S,9H,TD,KC"           # 9 v 9 naturals
P_BY_9 = "TS,TH,TD,KC,9S,QD"          # P 0 draws 9 -> 9; B 0 draws Q -> 0: Player by 9
PAIRS = "8S,KH,8D,KC,5S"              # P 8-8 = 6 stands; B K-K = 0 draws 5: Player 6 v 5
TWIN = "JS,JH,JD,JC,2S,3S"            # P J-J draws 2; B J-J draws 3: Banker 3 v 2
B_NON_NATURAL_BY_5 = "TS,3H,TD,4C,TH,KH"  # P 0 draws T -> 0; B 7 stands: Banker by 7


CASES = [
    # profile, cards, bet, stake, outcome, returned
    ("sbo-baccarat", P9_NATURAL, "player", 1000, "win", 2000),
    ("sbo-baccarat", P9_NATURAL, "banker", 1000, "lose", 0),
    ("sbo-baccarat", P9_NATURAL, "tie", 1000, "lose", 0),
    ("sbo-baccarat", P9_NATURAL, "dragon_bonus_player", 1000, "win", 2000),
    ("sbo-baccarat", P9_NATURAL, "dragon_bonus_banker", 1000, "lose", 0),
    ("sbo-baccarat", B6_TWO, "banker", 1000, "win", 1950),
    ("sbo-baccarat", B6_TWO, "fortune_six", 1000, "win", 13000),
    ("sbo-baccarat", B6_TWO, "dragon_bonus_banker", 1000, "win", 2000),  # by 4, non-natural
    ("sbo-baccarat", TIE_6, "player", 1000, "push", 1000),
    ("sbo-baccarat", TIE_6, "banker", 1000, "push", 1000),
    ("sbo-baccarat", TIE_6, "tie", 1000, "win", 9000),
    ("sbo-baccarat", TIE_6, "dragon_bonus_player", 1000, "lose", 0),  # non-natural tie
    ("sbo-baccarat", TIE_6, "fortune_six", 1000, "lose", 0),
    ("sbo-baccarat", NATURAL_TIE, "dragon_bonus_player", 1000, "push", 1000),
    ("sbo-baccarat", NATURAL_TIE, "dragon_bonus_banker", 1000, "push", 1000),
    ("sbo-baccarat", P_BY_9, "dragon_bonus_player", 1000, "win", 31000),
    ("sbo-baccarat", B_NON_NATURAL_BY_5, "dragon_bonus_banker", 1000, "win", 7000),  # by 7: 6:1
    ("sbo-baccarat", PAIRS, "player_pair", 1000, "win", 12000),
    ("sbo-baccarat", PAIRS, "banker_pair", 1000, "win", 12000),
    ("sbo-baccarat", P9_NATURAL, "player_pair", 1000, "lose", 0),
    ("sbo-super-six", B6_TWO, "banker", 1000, "win", 1500),
    ("sbo-super-six", B6_TWO, "super_six", 1000, "win", 13000),
    ("sbo-super-six", B_NON_NATURAL_BY_5, "banker", 1000, "win", 2000),
    ("sbo-super-six", B_NON_NATURAL_BY_5, "super_six", 1000, "lose", 0),
    ("sbo-tiger", B6_TWO, "tiger", 1000, "win", 13000),
    ("sbo-tiger", B6_TWO, "small_tiger", 1000, "win", 23000),
    ("sbo-tiger", B6_TWO, "big_tiger", 1000, "lose", 0),
    ("sbo-tiger", TIE_6, "tiger_tie", 1000, "win", 36000),
    ("sbo-tiger", NATURAL_TIE, "tiger_tie", 1000, "lose", 0),
    ("sbo-tiger", PAIRS, "tiger_pair", 1000, "win", 21000),
    ("sbo-tiger", TWIN, "tiger_pair", 1000, "win", 101000),
    ("sbo-tiger", B6_TWO, "tiger_pair", 1000, "win", 5000),  # banker 3-3 only
    ("sbo-tiger", P9_NATURAL, "tiger_pair", 1000, "lose", 0),
    ("sbo-tiger", "8S,KH,8D,QC,5S", "tiger_pair", 1000, "win", 5000),
    ("baccarat-big-small", P9_NATURAL, "small", 1000, "win", 2500),
    ("baccarat-big-small", P9_NATURAL, "big", 1000, "lose", 0),
    ("baccarat-big-small", B6_TWO, "big", 1000, "win", 1540),
    ("baccarat-big-small", P_BY_9, "big", 1000, "win", 1540),
]


@pytest.mark.parametrize(("profile", "cards", "bet", "stake", "outcome", "returned"), CASES)
def test_baccarat_bets(profile, cards, bet, stake, outcome, returned):
    table = load_profile(profile)
    result = evaluate_round(table, parse_cards(cards))
    settled = settle(Bet(bet=bet, stake=stake), result, table)
    assert (settled.outcome, settled.returned) == (outcome, returned)


def test_round_facts_of_the_cases():
    table = load_profile("sbo-tiger")
    stood = evaluate_round(table, parse_cards("TS,2H,TD,4C,5S,2D"))  # B 6 stands on P3=5
    assert (stood.player_points, stood.banker_points, len(stood.banker)) == (5, 6, 2)
    assert [str(c) for c in stood.surplus] == ["2D"]
    big_tiger = evaluate_round(table, parse_cards("TS,2H,TD,2C,5S,2D"))  # B 4 draws 2 -> 6
    assert (big_tiger.banker_points, len(big_tiger.banker), big_tiger.winner) == (6, 3, "banker")
    assert settle(Bet(bet="big_tiger", stake=10), big_tiger, table).returned == 510
    assert settle(Bet(bet="tiger", stake=10), big_tiger, table).returned == 210


def test_sbo_tiger_pays_the_banker_without_commission_a_decision_no_sheet_states():
    """Seed 002's Tiger Baccarat section names five side bets "used on a Baccarat table"
    and says nothing of the Banker's commission. Decision (docs/decisions/procedures.md):
    `sbo-tiger` pays the Banker as Super Six does, 1:1 and 1:2 on a win with 6 points."""
    tiger, commission = load_profile("sbo-tiger"), load_profile("sbo-baccarat")
    assert tiger.banker_mode == "no_commission"
    by_7 = evaluate_round(tiger, parse_cards(B_NON_NATURAL_BY_5))  # Banker 7 v 0
    on_6 = evaluate_round(tiger, parse_cards(B6_TWO))
    banker = Bet(bet="banker", stake=1000)
    assert settle(banker, by_7, tiger).returned == 2000
    assert settle(banker, on_6, tiger).returned == 1500
    assert settle(banker, by_7, commission).returned == 1950
    assert settle(Bet(bet="tiger", stake=1000), on_6, tiger).returned == 13_000  # 12:1


# Triple Face rounds, dealt `fixed`: P1 P2 P3 B three times round.
TF_TIE = "JS,2C,3C,QS,3H,4C,5C,TH,6D,7C,8C,9D"      # P1 J3 6 = P9 v B Q T 9 = P9
TF_P1_SIX = "AS,2C,3C,TH,2H,4C,5C,TD,3S,7C,8C,KD"  # P1 A 2 3 = 6 v B T T K = P0
TF_B_SIX = "TH,2C,3C,AS,TD,4C,5C,2H,KD,7C,8C,3S"   # B A 2 3 = 6 (straight) v P1 = P0
TF_KNIGHTS = "JS,2C,3C,AS,QH,4C,5C,2S,KS,7C,8C,3D"  # P1 J Q K = 3P

TF_CASES = [
    (TF_TIE, "win", 1, "push", 1000),
    (TF_TIE, "lose", 1, "push", 1000),
    (TF_TIE, "tie", 1, "win", 9000),
    (TF_P1_SIX, "win", 1, "win", 1500),
    (TF_P1_SIX, "lose", 1, "lose", 0),
    (TF_B_SIX, "lose", 1, "win", 1500),
    (TF_B_SIX, "win", 1, "lose", 0),
    (TF_B_SIX, "pair_plus", "banker", "win", 7000),
    (TF_P1_SIX, "pair_plus", 1, "win", 7000),
    (TF_KNIGHTS, "three_knights", 1, "win", 17000),
    (TF_KNIGHTS, "three_knights", 2, "lose", 0),
    (TF_KNIGHTS, "win", 1, "win", 2000),
    (TF_KNIGHTS, "pair_plus", 1, "win", 7000),  # J-Q-K is a straight
    (TF_TIE, "pair_plus", 1, "lose", 0),
    (TF_KNIGHTS, "pair_plus", "banker", "win", 7000),  # A-2-3
]


@pytest.mark.parametrize(("cards", "bet", "position", "outcome", "returned"), TF_CASES)
def test_triple_face_bets(cards, bet, position, outcome, returned):
    table = load_profile("triple-face-id")
    result = evaluate_round(table, parse_cards(cards))
    settled = settle(Bet(bet=bet, position=position, stake=1000), result, table)
    assert (settled.outcome, settled.returned) == (outcome, returned)


@pytest.mark.parametrize(
    ("profile", "cards", "bet", "stake", "returned"),
    [("sbo-baccarat", B6_TWO, "banker", 1, 1),       # 0.95 -> 0 winnings, stake back
     ("sbo-baccarat", B6_TWO, "banker", 19, 37),     # 19*19/20 = 18.05 -> 18
     ("sbo-baccarat", B6_TWO, "banker", 21, 40),     # 21*19/20 = 19.95 -> 19
     ("sbo-super-six", B6_TWO, "banker", 1, 1),      # 0.5 -> 0
     ("sbo-super-six", B6_TWO, "banker", 3, 4),      # 1.5 -> 1
     ("baccarat-big-small", B6_TWO, "big", 1, 1),    # 0.54 -> 0
     ("baccarat-big-small", B6_TWO, "big", 99, 152),  # 53.46 -> 53
     ("baccarat-big-small", P9_NATURAL, "small", 1, 2),  # 1.5 -> 1
     ("baccarat-big-small", P9_NATURAL, "small", 3, 7)],  # 4.5 -> 4
)
def test_rounding_house_keeps_the_remainder(profile, cards, bet, stake, returned):
    table = load_profile(profile)
    result = evaluate_round(table, parse_cards(cards))
    assert settle(Bet(bet=bet, stake=stake), result, table).returned == returned


@pytest.mark.parametrize(
    ("profile", "bet", "code"),
    [("sbo-baccarat", Bet(bet="super_six", stake=1000), "bet_not_offered"),
     ("sbo-baccarat", Bet(bet="dragon", stake=1000), "unknown_bet"),
     ("sbo-baccarat", Bet(bet="banker", position=1, stake=1000), "bad_position"),
     ("sbo-baccarat", Bet(bet="banker", stake=999), "below_minimum"),
     ("sbo-baccarat", Bet(bet="banker", stake=5_000_001), "above_maximum"),
     ("triple-face-jp", Bet(bet="three_knights", position=1, stake=1000), "bet_not_offered"),
     ("triple-face-id", Bet(bet="win", stake=1000), "bad_position"),
     ("triple-face-id", Bet(bet="win", position="banker", stake=1000), "bad_position")],
)
def test_validate_bet_codes(profile, bet, code):
    with pytest.raises(BetError) as err:
        validate_bet(bet, load_profile(profile), "IDR")
    assert err.value.code == code


@pytest.mark.parametrize(("bet", "position"), [("pair_plus", "banker"), ("win", 3)])
def test_validate_bet_accepts_limits_inclusive(bet, position):
    table = load_profile("triple-face-id")
    spec = table.limits_in("IDR").bets[bet]
    at_limit = [Bet(bet=bet, position=position, stake=s) for s in (spec.min_stake, spec.max_stake)]
    assert [validate_bet(b, table, "IDR") for b in at_limit] == [None, None]  # no BetError
    codes = []
    for stake in (spec.min_stake - 1, spec.max_stake + 1):  # one past a limit: refused
        with pytest.raises(BetError) as err:
            validate_bet(Bet(bet=bet, position=position, stake=stake), table, "IDR")
        codes.append(err.value.code)
    assert codes == ["below_minimum", "above_maximum"]


def test_bet_model_refuses_non_positive_or_float_stakes():
    for stake in (0, -5, 1.5, True):
        with pytest.raises(ValueError):
            Bet(bet="player", stake=stake)
    with pytest.raises(ValueError):
        Bet(bet="win", position=4, stake=10)


def test_wrong_game_result_is_refused():
    tf = evaluate_round(load_profile("triple-face-id"), parse_cards(TF_TIE))
    with pytest.raises(BetError) as err:
        settle(Bet(bet="tie", stake=10), tf, load_profile("sbo-baccarat"))
    assert err.value.code == "wrong_game"


def _bets_for(profile):
    rules = GAME_RULES[profile.game]
    return st.sampled_from([
        (bet_id, position)
        for bet_id in profile.bets
        for position in (rules[bet_id].positions or (None,))
    ])


@settings(max_examples=300)
@given(data=st.data(), name=st.sampled_from(["sbo-baccarat", "sbo-super-six", "sbo-tiger",
                                             "baccarat-big-small", "triple-face-id",
                                             "triple-face-jp"]),
       stake=st.integers(1, 10**12))
def test_settlement_properties(data, name, stake):
    table = load_profile(name)
    if table.decks == 1:
        cards = data.draw(st.permutations(DECK))[: 13 + data.draw(st.integers(0, 3))]
    else:
        cards = data.draw(st.lists(st.sampled_from(DECK), min_size=6, max_size=9))
    result = evaluate_round(table, cards)
    bet_id, position = data.draw(_bets_for(table))
    settled = settle(Bet(bet=bet_id, position=position, stake=stake), result, table)
    assert type(settled.returned) is int and settled.returned >= 0
    if settled.outcome == "push":
        assert settled.returned == stake
    elif settled.outcome == "lose":
        assert settled.returned == 0
    else:
        odds = table.bets[bet_id].pays[settled.line]
        assert settled.returned == stake + stake * odds.num // odds.den >= stake
