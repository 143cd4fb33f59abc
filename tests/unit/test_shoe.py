"""Shoes: composition, injected shuffling, live removal, burns and the cut card."""

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.cards import DECK, parse_card
from shared.shoe import Shoe, ShoeError, start_burn_count


def test_new_shoe_composition():
    shoe = Shoe(8)
    assert len(shoe) == 416
    assert shoe.remaining == Counter({card: 8 for card in DECK})


def test_same_seed_same_order_and_draw_updates_composition():
    a, b = Shoe(6), Shoe(6)
    a.shuffle(random.Random(42))
    b.shuffle(random.Random(42))
    drawn = [a.draw() for _ in range(30)]
    assert drawn == [b.draw() for _ in range(30)]
    assert sum(a.remaining.values()) == 312 - 30
    assert a.remaining + Counter(drawn) == Shoe(6).remaining


def test_draw_before_shuffle_is_refused():
    with pytest.raises(ShoeError, match="shuffle"):
        Shoe(1).draw()


def test_system_random_is_accepted():
    shoe = Shoe(1)
    shoe.shuffle(random.SystemRandom())
    assert len({shoe.draw() for _ in range(52)}) == 52
    with pytest.raises(ShoeError, match="empty"):
        shoe.draw()


def test_remove_refuses_a_card_not_held():
    shoe = Shoe(1)
    shoe.remove(parse_card("QS"))
    with pytest.raises(ShoeError, match="QS"):
        shoe.remove(parse_card("QS"))
    assert not shoe.holds(parse_card("QS")) and len(shoe) == 51


@pytest.mark.parametrize(("rank", "burned"), [("A", 1), ("5", 5), ("9", 9), ("T", 10),
                                               ("J", 10), ("Q", 10), ("K", 10)])
def test_start_burn_count(rank, burned):
    assert start_burn_count(parse_card(rank + "H")) == burned


def test_start_burn_draws_first_card_plus_its_value():
    shoe = Shoe(8)
    shoe.shuffle(random.Random(3))
    burned = shoe.start_burn()
    assert len(burned) == 1 + start_burn_count(burned[0])
    assert shoe.dealt == len(burned)


def test_cut_card():
    shoe = Shoe(1, cut_card_from_end=14)
    shoe.shuffle(random.Random(0))
    shoe.burn(37)
    assert not shoe.cut_card_out
    shoe.burn(1)
    assert shoe.cut_card_out and len(shoe) == 14
    with pytest.raises(ShoeError):
        Shoe(1, cut_card_from_end=52)


@given(seed=st.integers(0, 2**32), decks=st.integers(1, 3), n=st.integers(0, 156),
       scans=st.lists(st.sampled_from(DECK), max_size=20))
def test_shoe_never_yields_a_card_it_does_not_hold(seed, decks, n, scans):
    shoe = Shoe(decks)
    shoe.shuffle(random.Random(seed))
    for card in scans:  # the live path interleaved with draws
        if shoe.holds(card):
            shoe.remove(card)
        else:
            with pytest.raises(ShoeError):
                shoe.remove(card)
    for _ in range(min(n, len(shoe))):
        before = shoe.remaining
        card = shoe.draw()
        assert before[card] > 0
        assert shoe.remaining[card] == before[card] - 1
    assert all(count <= decks for count in shoe.remaining.values())
