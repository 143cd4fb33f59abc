"""Card parsing and point values (RULES §2, seed 002's worked sums)."""

import pytest

from shared.cards import DECK, Card, CardError, parse_card, parse_cards, points


@pytest.mark.parametrize(
    ("token", "canonical"),
    [("TH", "TH"), ("10H", "TH"), ("QS", "QS"), ("as", "AS"), (" 9d ", "9D"), ("10c", "TC")],
)
def test_parse_card_canonical(token, canonical):
    assert str(parse_card(token)) == canonical


@pytest.mark.parametrize("token", ["", "X", "1H", "11H", "TX", "QSS", "0H", "H", "10"])
def test_parse_card_error_names_the_token(token):
    with pytest.raises(CardError) as err:
        parse_card(token)
    assert repr(token) in str(err.value)


def test_parse_cards_mixed_forms():
    assert [str(c) for c in parse_cards("TH,10H, QS")] == ["TH", "TH", "QS"]


def test_parse_cards_names_the_bad_token():
    with pytest.raises(CardError, match="'ZZ'"):
        parse_cards("AS,ZZ,2D")
    with pytest.raises(CardError, match="position 2"):
        parse_cards("AS,,2D")


@pytest.mark.parametrize(
    ("hand", "expected"),
    [("4S,2H,6D", 2), ("5S,6H,8D", 9), ("7S,3H", 0), ("TS,TH,TD", 0), ("KS,QH,JD", 0),
     ("AS,9H", 0), ("AS,AH", 2), ("9S,9H,9D", 7)],
)
def test_points(hand, expected):
    assert points(parse_cards(hand)) == expected


def test_values_and_pictures():
    assert [parse_card(r + "S").value for r in "A23456789TJQK"] == [1, 2, 3, 4, 5, 6, 7, 8, 9,
                                                                     0, 0, 0, 0]
    assert [r for r in "A23456789TJQK" if parse_card(r + "S").is_picture] == ["J", "Q", "K"]


def test_card_is_a_frozen_value_serialised_as_text():
    card = Card.model_validate("10H")
    assert card == parse_card("TH") and hash(card) == hash(parse_card("TH"))
    assert card.model_dump() == "TH" and card.model_dump_json() == '"TH"'
    assert Card(rank="Q", suit="S") == parse_card("QS")
    with pytest.raises(ValueError):
        Card(rank="X", suit="S")
    assert len(set(DECK)) == 52
