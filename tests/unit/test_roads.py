"""Roads against hand-worked shoes (docs/decisions/roads.md has the rules and their sources).

Every expected grid below was worked out by hand from the published rules, column by
column, before the code ran; none was printed by the code. Pictures are rows top to
bottom, columns left to right, `.` an empty cell: B / P a Banker / Player bead, T a tie
(bead plate), r / u a red / blue derived mark.
"""

from __future__ import annotations

import random
from collections.abc import Collection

import pytest

from shared.baccarat import deal
from shared.cards import parse_cards
from shared.roads import (
    BaccaratOutcome,
    RoadError,
    TripleFaceOutcome,
    baccarat_roads,
    lay_out,
    roads_of,
    triple_face_history,
)
from shared.triple_face import deal as deal_triple_face

WINNER = {"B": "banker", "P": "player", "T": "tie"}


def shoe(results: str, player_pairs: Collection[int] = (), banker_pairs: Collection[int] = (),
         naturals: Collection[int] = ()) -> list[BaccaratOutcome]:
    """`results` one letter a hand (B, P, T); the sets name hands by number, from 1."""
    return [BaccaratOutcome(round_id=f"r{i}", winner=WINNER[c], player_pair=i in player_pairs,
                            banker_pair=i in banker_pairs, natural=i in naturals)
            for i, c in enumerate(results, start=1)]


def picture(cells, mark) -> list[str]:
    """The cells drawn as rows of characters (`mark(cell)`), six rows, trailing empties."""
    width = max((c.col for c in cells), default=-1) + 1
    grid = [["."] * width for _ in range(6)]
    for c in cells:
        assert grid[c.row][c.col] == ".", f"two marks at col {c.col} row {c.row}"
        grid[c.row][c.col] = mark(c)
    return ["".join(row) for row in grid]


def big(cell) -> str:
    return cell.side[0].upper()


def bead(cell) -> str:
    return cell.winner[0].upper()


def colour(cell) -> str:
    return "r" if cell.colour == "red" else "u"


def rows(*lines: str) -> list[str]:
    return list(lines)


# --- shoe 1: columns of 2, 1, 3, 2, 1, 3 (no tie): each derived road's first entries ----

SHOE_1 = "BBPBBBPPBPPP"


def test_shoe_1_big_road():
    roads = baccarat_roads(shoe(SHOE_1))
    assert picture(roads.big_road.cells, big) == rows(
        "BPBPBP",
        "B.BP.P",
        "..B..P",
        "......",
        "......",
        "......")
    assert [c.column for c in roads.big_road.cells] == [0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 5, 5]


def test_shoe_1_big_eye_boy_starts_at_column_3_row_1_when_column_2_row_2_is_empty():
    # column 2 holds one bead, so the first read is column 3 row 1: columns 2 and 1 are
    # 1 and 2 long -> blue; column 3 row 2: column 2 stops at row 1 -> blue; row 3: column 2
    # has neither row 3 nor row 2 -> red; column 4 row 1: 3 vs 1 -> blue; row 2: column 3
    # has a row 2 -> red; column 5: 2 vs 3 -> blue; column 6: 1 vs 2 -> blue; row 2:
    # column 5 stops at row 1 -> blue; row 3: neither -> red
    road = baccarat_roads(shoe(SHOE_1)).big_eye_boy
    assert [c.colour for c in road.cells] == ["blue", "blue", "red", "blue", "red", "blue",
                                             "blue", "blue", "red"]
    assert road.cells[0].hand == 4  # the first bead of big-road column 3
    assert picture(road.cells, colour) == rows(
        "ururur",
        "u...u.",
        "....u.",
        "......",
        "......",
        "......")


def test_shoe_1_small_road_starts_at_column_3_row_2():
    # column 3 row 2 against column 1 (2 long) -> red; row 3: column 1 stops at row 2 ->
    # blue; column 4 row 1: columns 3 and 1, 3 vs 2 -> blue; row 2: column 2 stops at row
    # 1 -> blue; column 5: 2 vs 1 -> blue; column 6: 1 vs 3 -> blue; row 2: column 4 has
    # a row 2 -> red; row 3: column 4 stops at row 2 -> blue
    road = baccarat_roads(shoe(SHOE_1)).small_road
    assert road.cells[0].hand == 5  # the second bead of big-road column 3
    assert picture(road.cells, colour) == rows(
        "ruru",
        ".u..",
        ".u..",
        ".u..",
        ".u..",
        "....")


def test_shoe_1_cockroach_pig_starts_at_column_4_row_2():
    # column 4 row 2 against column 1 (2 long) -> red; column 5: columns 4 and 1, 2 vs 2 ->
    # red; column 6: columns 5 and 2, 1 vs 1 -> red; rows 2 and 3 against column 3 (3
    # long) -> red, red
    road = baccarat_roads(shoe(SHOE_1)).cockroach_pig
    assert road.cells[0].hand == 8
    assert picture(road.cells, colour) == rows("r", "r", "r", "r", "r", ".")


# --- shoe 2: ties before the first bead and in a streak, pairs, a dragon tail, a column
# blocked by the dragon tail ------------------------------------------------------------

SHOE_2 = "TTBBTBBBBBPPTTPPPPBBBBBP"


def shoe_2() -> list[BaccaratOutcome]:
    # hand 2 (a tie) and hand 11 hold a player pair, hand 3 a banker pair; hand 24 a natural
    return shoe(SHOE_2, player_pairs={2, 11}, banker_pairs={3}, naturals={24})


def test_shoe_2_bead_plate_fills_columns_of_six_top_to_bottom():
    plate = baccarat_roads(shoe_2()).bead_plate
    assert picture(plate.cells, bead) == rows(
        "TBTB",
        "TBTB",
        "BBPB",
        "BBPB",
        "TPPB",
        "BPPP")
    assert len(plate.cells) == 24 and plate.columns == 4
    assert [c.hand for c in plate.cells if c.player_pair] == [2, 11]
    assert [c.hand for c in plate.cells if c.banker_pair] == [3]
    assert [c.hand for c in plate.cells if c.natural] == [24]


def test_shoe_2_big_road_dragon_tail_and_the_column_it_blocks():
    # seven Bankers: column 1 rows 1-6, then right along row 6 (col 2). The six Players of
    # column 2 find row 6 taken: rows 1-5, then right along row 5 (col 3). Five Bankers of
    # column 3 find row 5 taken: rows 1-4, then right along row 4 (col 4). A Player then
    # starts column 4 at row 1.
    road = baccarat_roads(shoe_2()).big_road
    assert picture(road.cells, big) == rows(
        "BPBP",
        "BPB.",
        "BPB.",
        "BPBB",
        "BPP.",
        "BB..")
    assert road.columns == 4 and road.pending_ties == 0
    cells = {c.hand: c for c in road.cells}
    assert sorted(cells) == [3, 4, 6, 7, 8, 9, 10, 11, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    assert (cells[10].col, cells[10].row, cells[10].column) == (1, 5, 0)  # the tail
    assert (cells[18].col, cells[18].row, cells[18].column) == (2, 4, 1)
    assert (cells[23].col, cells[23].row, cells[23].column) == (3, 3, 2)
    # ties: the two before the first bead and none after it on hand 3; hand 5's on hand 4;
    # hands 13-14 on hand 12
    assert {h: c.ties for h, c in cells.items() if c.ties} == {3: 2, 4: 1, 12: 2}
    # pairs on the bead of their own hand (hand 2's pair was a tie's: bead plate only)
    assert [h for h, c in cells.items() if c.player_pair] == [11]
    assert [h for h, c in cells.items() if c.banker_pair] == [3]


def test_shoe_2_derived_roads_compare_streaks_not_the_cells_drawn():
    # streaks of 7, 6, 5, 1. Big eye boy from column 2 row 2: rows 2-6 of column 2
    # against column 1 (7 long) -> 5 red; column 3 row 1: 6 vs 7 -> blue; rows 2-5 against
    # column 2 (6 long) -> 4 red; column 4 row 1: 5 vs 6 -> blue.
    roads = baccarat_roads(shoe_2())
    assert picture(roads.big_eye_boy.cells, colour) == rows(
        "ruru",
        "r.r.",
        "r.r.",
        "r.r.",
        "r...",
        "....")
    # small road from column 3 row 2: rows 2-5 against column 1 -> 4 red; column 4 row 1:
    # columns 3 and 1, 5 vs 7 -> blue
    assert picture(roads.small_road.cells, colour) == rows("ru", "r.", "r.", "r.", "..", "..")
    # cockroach pig: column 4 has no row 2 and there is no column 5: nothing yet
    assert roads.cockroach_pig.cells == () and roads.cockroach_pig.columns == 0


def test_shoe_2_counts():
    counts = baccarat_roads(shoe_2()).counts
    assert counts.model_dump() == {"hands": 24, "banker": 12, "player": 7, "tie": 5,
                                   "player_pair": 2, "banker_pair": 1, "natural": 1}


# --- shoe 3: a chop (B P B P ...): the derived roads' own dragon tails -------------------

def test_chop_derived_roads_turn_right_like_the_big_road():
    # every column 1 long: each new column's two previous columns are as long -> red, from
    # column 3 (big eye boy: 8 marks), column 4 (small road: 7), column 5 (cockroach: 6)
    roads = baccarat_roads(shoe("BPBPBPBPBP"))
    assert picture(roads.big_road.cells, big) == rows("BPBPBPBPBP", *["." * 10] * 5)
    assert picture(roads.big_eye_boy.cells, colour) == rows(
        "r..", "r..", "r..", "r..", "r..", "rrr")
    assert picture(roads.small_road.cells, colour) == rows("r.", "r.", "r.", "r.", "r.", "rr")
    assert picture(roads.cockroach_pig.cells, colour) == rows("r", "r", "r", "r", "r", "r")
    assert roads.cockroach_pig.cells[0].hand == 5


# --- shoe 4: tails nested under tails, one along row 1 -----------------------------------

def test_nested_dragon_tails_and_a_column_started_past_a_tail_on_row_1():
    # 8 B, 7 P, 6 B, 5 P, 4 B, 3 P, 1 B: each streak turns right one row higher than the
    # one before; the three Players of column 6 find row 2 taken at once and run along row
    # 1 through columns 7 and 8, so the last Banker starts in column 9, the first free
    # column on row 1.
    roads = baccarat_roads(shoe("B" * 8 + "P" * 7 + "B" * 6 + "P" * 5 + "B" * 4 + "PPP" + "B"))
    assert picture(roads.big_road.cells, big) == rows(
        "BPBPBPPPB",
        "BPBPBBB..",
        "BPBPPP...",
        "BPBBB....",
        "BPPP.....",
        "BBB......")
    assert [c.column for c in roads.big_road.cells][-1] == 6
    # big eye boy over streaks 8, 7, 6, 5, 4, 3, 1: rows 2-7 of column 2 against column 1
    # -> 6 red; each later column: blue on row 1 (one shorter than the one before), red on
    # every row below (the column before reaches it)
    assert picture(roads.big_eye_boy.cells, colour) == rows(
        "rururururu",
        "r.r.r.r.r.",
        "r.r.r.r...",
        "r.r.r.....",
        "r.r.......",
        "r.........")


def test_lay_out_the_same_for_any_two_keys():
    placed = lay_out(["x", "x", "y", "x"])
    assert placed == [(0, 0, 0), (0, 0, 1), (1, 1, 0), (2, 2, 0)]


# --- ties only, an empty shoe, bad input ------------------------------------------------

def test_ties_before_any_win_wait_for_the_first_bead():
    roads = baccarat_roads(shoe("TTT"))
    assert roads.big_road.cells == () and roads.big_road.pending_ties == 3
    assert picture(roads.bead_plate.cells, bead) == rows("T", "T", "T", ".", ".", ".")
    then = baccarat_roads(shoe("TTTP"))
    assert then.big_road.pending_ties == 0 and then.big_road.cells[0].ties == 3


def test_an_empty_shoe_draws_empty_roads():
    roads = baccarat_roads([])
    assert roads.counts.hands == 0 and roads.bead_plate.cells == () and roads.big_road.columns == 0


def test_naturals_unknown_are_not_counted_as_none():
    outcomes = [BaccaratOutcome(winner="banker"), BaccaratOutcome(winner="player", natural=True)]
    assert baccarat_roads(outcomes).counts.natural is None


def test_bad_input_is_refused_clearly():
    face = TripleFaceOutcome(outcomes={"player1": "win", "player2": "lose", "player3": "tie"},
                             ranks={"player1": "9", "player2": "1", "player3": "5",
                                    "banker": "5"})
    with pytest.raises(RoadError, match="hand 1 is not a baccarat result"):
        baccarat_roads([face])
    with pytest.raises(RoadError, match="one game's results"):
        roads_of([BaccaratOutcome(winner="tie"), face])
    with pytest.raises(ValueError, match="winner"):
        BaccaratOutcome(winner="dragon")


def test_outcome_from_a_dealt_result():
    # Player 8S 8H (6), Banker 9C 9D (8, a natural): both stand, Banker wins, both pairs
    result = deal(parse_cards("8S,9C,8H,9D"))
    outcome = BaccaratOutcome.of(result, "r1")
    assert outcome.model_dump() == {"game": "baccarat", "round_id": "r1", "winner": "banker",
                                    "player_pair": True, "banker_pair": True, "natural": True}


# --- Triple Face: each position's own history ------------------------------------------

def test_triple_face_history_per_position():
    # fixed deal, P1 P2 P3 B three times round. Round 1: P1 J 3 6 (P9), P2 2 4 5 (1),
    # P3 3 5 7 (5), B Q T 9 (P9): P1 ties, P2 and P3 lose.
    first = deal_triple_face("fixed", parse_cards("JS,2C,3C,QS,3H,4C,5C,TH,6D,5D,7C,9D"))
    # Round 2: B 2 2 9 (3). P1 K Q J (3P) wins, P2 A A A (3) ties, P3 9 T T (9) wins
    second = deal_triple_face("fixed", parse_cards("KS,AS,9S,2S,QS,AH,TS,2H,JS,AC,TH,9H"))
    history = triple_face_history([TripleFaceOutcome.of(first, "t1"),
                                   TripleFaceOutcome.of(second, "t2")])
    assert history.hands == 2
    got = {name: [(c.col, c.row, c.outcome, c.rank, c.banker_rank) for c in p.cells]
           for name, p in history.positions.items()}
    assert got == {
        "player1": [(0, 0, "tie", "P9", "P9"), (0, 1, "win", "3P", "3")],
        "player2": [(0, 0, "lose", "1", "P9"), (0, 1, "tie", "3", "3")],
        "player3": [(0, 0, "lose", "5", "P9"), (0, 1, "win", "9", "3")],
    }
    assert (history.positions["player1"].win, history.positions["player1"].tie) == (1, 1)
    assert history.positions["player2"].lose == 1
    empty = roads_of([], "triple_face")
    assert empty.game == "triple_face" and empty.positions["player1"].cells == ()


# --- property: random shoes -------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_random_shoes_place_every_win_once_and_every_hand_on_the_bead_plate(seed):
    rng = random.Random(seed)
    hands = rng.randint(0, 110)
    # streaky shoes now and then, so that dragon tails and nested tails come up
    sticky = rng.random() < 0.5
    results = []
    for _ in range(hands):
        if sticky and results and results[-1] != "T" and rng.random() < 0.7:
            results.append(results[-1])
        else:
            results.append(rng.choices("BPT", weights=(46, 45, 9))[0])
    outcomes = shoe("".join(results))
    roads = baccarat_roads(outcomes)
    wins = [i for i, c in enumerate(results, start=1) if c != "T"]
    assert [c.hand for c in roads.big_road.cells] == wins
    assert len(roads.bead_plate.cells) == hands == roads.counts.hands
    assert [c.hand for c in roads.bead_plate.cells] == list(range(1, hands + 1))
    assert roads.big_road.pending_ties + sum(c.ties for c in roads.big_road.cells) \
        == results.count("T")
    for road in (roads.bead_plate, roads.big_road, roads.big_eye_boy, roads.small_road,
                 roads.cockroach_pig):
        spots = [(c.col, c.row) for c in road.cells]
        assert len(spots) == len(set(spots)), "two marks in one cell"
        assert all(0 <= row < 6 for _, row in spots)
    # a derived road reads one mark per big-road bead from its first entry on
    streaks = [c.column for c in roads.big_road.cells]
    for road in (roads.big_eye_boy, roads.small_road, roads.cockroach_pig):
        n = road.offset
        expected = sum(1 for k, col in enumerate(streaks)
                       if col > n or (col == n and k > 0 and streaks[k - 1] == n))
        assert len(road.cells) == expected
