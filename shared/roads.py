"""Roads: a shoe's results drawn the way every baccarat table shows them.

Pure: a shoe's results in order in, grids out. The rules, with their sources and each
choice where the sources differ, are in docs/decisions/roads.md; in short:

- **Bead plate**: one bead per hand (ties too), six rows, columns filled top to bottom,
  left to right (Wizard of Odds, "Baccarat Score Boards", the Venetian's sign, read in a copy:
  https://wizardofodds.com/games/baccarat/history/ ; sikwin, "five road rules":
  https://www.sikwin.in/sikwin-casino-baccarat-game-rules-five-road-rules/ ).
- **Big road**: Banker and Player wins only; a new column each time the winning side
  changes, six rows; a streak longer than the column, or one whose next cell down is
  already taken, turns right along its last free row (the *dragon tail*, 138qiu.com,
  "Baccarat Scoreboards": https://138qiu.com/statistics/roads-of-baccarat/index.html ).
  A tie starts no column: it is counted on the last bead (the green slash); ties before
  the first bead are counted on the first bead. Pairs are marked on the bead of their hand
  (Wizard of Odds; baccaratboard.com: https://baccaratboard.com ).
- **Derived roads** (big eye boy, small road, cockroach pig), read off the big road's
  columns with an offset n = 1, 2, 3: the first entry is read at big-road column n+1 row 2,
  or at column n+2 row 1 when that cell is empty (sikwin). For a big-road bead at row 1 of
  column k, red when columns k-1 and k-1-n are as long, else blue; at a row r > 1, red when
  column k-n reaches row r, red too when it reaches neither row r nor row r-1, blue when it
  stops at row r-1 exactly (the standard rule, docs/decisions/roads.md). Red reads "the
  shoe repeats", blue "it is chaotic". Each derived road is laid out like a big road: a
  new column at each change of colour, six rows, the dragon tail.
- **Naturals** are marked on the bead plate (gamicorp live baccarat, game info:
  https://baccarat-vip.gamicorp.com/?lang=en ).

The columns a derived road compares are the big road's *streaks* (a dragon tail is still
one column of its full length), not the cells as drawn. Triple Face has no roads: each
player position gets its own history of win / lose / tie against the Banker, drawn like a
bead plate (`triple_face_history`).

Grid positions are 0-based: `col` is the column as drawn, `row` 0..5 from the top;
`column` is the big road's (or derived road's) streak index. Hands are numbered from 1 in
shoe order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field

from shared.baccarat import BaccaratResult, Side, Winner
from shared.models import FrozenModel
from shared.rounds import AnyResult
from shared.triple_face import PLAYER_HANDS, HandName, TripleFaceResult

ROWS = 6
Colour = Literal["red", "blue"]
DerivedName = Literal["big_eye_boy", "small_road", "cockroach_pig"]
# each derived road and the big-road column it compares with (k - n)
DERIVED: tuple[tuple[DerivedName, int], ...] = (
    ("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3))
FaceOutcome = Literal["win", "lose", "tie"]


class RoadError(ValueError):
    """Results the roads cannot be drawn from (another game's, a mix of games)."""


# --- the results in -----------------------------------------------------------------------

class BaccaratOutcome(FrozenModel):
    """One baccarat hand as the roads need it (`of` takes it from a `BaccaratResult`)."""

    game: Literal["baccarat"] = "baccarat"
    round_id: str | None = None
    winner: Winner
    player_pair: bool = False
    banker_pair: bool = False
    natural: bool | None = Field(default=None, description="Either hand a natural (8 or 9 "
                                                           "on two cards); null: not known.")

    @classmethod
    def of(cls, result: BaccaratResult, round_id: str | None = None) -> BaccaratOutcome:
        return cls(round_id=round_id, winner=result.winner, player_pair=result.player_pair,
                   banker_pair=result.banker_pair,
                   natural=result.player_natural or result.banker_natural)


class TripleFaceOutcome(FrozenModel):
    """One Triple Face round: each player position against the Banker, with the ranks."""

    game: Literal["triple_face"] = "triple_face"
    round_id: str | None = None
    outcomes: dict[HandName, FaceOutcome]
    ranks: dict[HandName, str]

    @classmethod
    def of(cls, result: TripleFaceResult, round_id: str | None = None) -> TripleFaceOutcome:
        outcomes: dict[HandName, FaceOutcome] = {}
        for name in PLAYER_HANDS:
            won = result.winners[name]
            outcomes[name] = "tie" if won == "tie" else "win" if won == name else "lose"
        return cls(round_id=round_id, outcomes=outcomes,
                   ranks={name: hand.rank for name, hand in result.hands.items()})


AnyOutcome = Annotated[BaccaratOutcome | TripleFaceOutcome, Field(discriminator="game")]


def outcome_of(result: AnyResult, round_id: str | None = None
               ) -> BaccaratOutcome | TripleFaceOutcome:
    if isinstance(result, BaccaratResult):
        return BaccaratOutcome.of(result, round_id)
    return TripleFaceOutcome.of(result, round_id)


# --- the grids out ------------------------------------------------------------------------

class Cell(FrozenModel):
    col: int = Field(ge=0, description="Column as drawn, from 0.")
    row: int = Field(ge=0, lt=ROWS, description="Row from the top, 0..5.")
    hand: int = Field(ge=1, description="The hand's number in the shoe, from 1.")


class BeadCell(Cell):
    round_id: str | None
    winner: Winner
    player_pair: bool
    banker_pair: bool
    natural: bool | None


class BigRoadCell(Cell):
    column: int = Field(ge=0, description="The streak this bead belongs to, from 0 (a dragon "
                                          "tail's beads keep their streak's column).")
    round_id: str | None
    side: Side
    ties: int = Field(ge=0, description="Ties counted on this bead: those after it, and on "
                                        "the first bead those before it too.")
    player_pair: bool
    banker_pair: bool
    natural: bool | None


class DerivedCell(Cell):
    column: int = Field(ge=0, description="The colour streak this mark belongs to, from 0.")
    colour: Colour


class BeadPlate(FrozenModel):
    rows: int = ROWS
    columns: int
    cells: tuple[BeadCell, ...]


class BigRoad(FrozenModel):
    rows: int = ROWS
    columns: int = Field(description="Columns drawn, the dragon tails included.")
    cells: tuple[BigRoadCell, ...]
    pending_ties: int = Field(default=0, description="Ties dealt before any Banker or Player "
                                                     "win: they go on the first bead.")


class DerivedRoad(FrozenModel):
    name: DerivedName
    offset: int = Field(description="n: the big-road column k-n this road compares with.")
    rows: int = ROWS
    columns: int
    cells: tuple[DerivedCell, ...]


class ShoeCounts(FrozenModel):
    hands: int
    banker: int
    player: int
    tie: int
    player_pair: int
    banker_pair: int
    natural: int | None = Field(description="Hands with a natural; null when some hand's is "
                                            "not known.")


class BaccaratRoads(FrozenModel):
    game: Literal["baccarat"] = "baccarat"
    counts: ShoeCounts
    bead_plate: BeadPlate
    big_road: BigRoad
    big_eye_boy: DerivedRoad
    small_road: DerivedRoad
    cockroach_pig: DerivedRoad


class FaceCell(Cell):
    round_id: str | None
    outcome: FaceOutcome = Field(description="This position against the Banker.")
    rank: str
    banker_rank: str


class PositionHistory(FrozenModel):
    rows: int = ROWS
    columns: int
    cells: tuple[FaceCell, ...]
    win: int
    lose: int
    tie: int


class TripleFaceRoads(FrozenModel):
    game: Literal["triple_face"] = "triple_face"
    hands: int
    positions: dict[HandName, PositionHistory]


AnyRoads = Annotated[BaccaratRoads | TripleFaceRoads, Field(discriminator="game")]


# --- layout -------------------------------------------------------------------------------

def bead_position(index: int) -> tuple[int, int]:
    """(col, row) of the index-th bead (from 0): columns of six, top to bottom."""
    return divmod(index, ROWS)


def lay_out(keys: Sequence[str]) -> list[tuple[int, int, int]]:
    """(streak, col, row) of each mark of a big road or a derived road, in order: a new
    streak (and column) whenever the key changes; a streak goes down its column and turns
    right for good (the dragon tail) when the next cell down is past row 6 or taken. A new
    streak starts at row 1 of the column after the previous streak's first one, or further
    right while that cell is taken (a tail running along row 1)."""
    taken: set[tuple[int, int]] = set()
    placed: list[tuple[int, int, int]] = []
    streak, start, col, row, turned = -1, -1, 0, 0, False
    previous: str | None = None
    for key in keys:
        if key != previous:
            streak, start, turned = streak + 1, start + 1, False
            while (start, 0) in taken:
                start += 1
            col, row = start, 0
        elif not turned and row + 1 < ROWS and (col, row + 1) not in taken:
            row += 1
        else:
            turned = True
            col += 1
            while (col, row) in taken:
                col += 1
        taken.add((col, row))
        placed.append((streak, col, row))
        previous = key
    return placed


def _columns(cells: Sequence[Cell]) -> int:
    return max((cell.col for cell in cells), default=-1) + 1


# --- baccarat -----------------------------------------------------------------------------

def baccarat_roads(outcomes: Sequence[BaccaratOutcome]) -> BaccaratRoads:
    """The bead plate, the big road, the three derived roads and the counts of one shoe
    (its hands in the order dealt)."""
    for i, outcome in enumerate(outcomes):
        if not isinstance(outcome, BaccaratOutcome):
            raise RoadError(f"hand {i + 1} is not a baccarat result "
                            f"({type(outcome).__name__}): the roads are drawn from baccarat "
                            "results only; a Triple Face table has triple_face_history")
    big_road = _big_road(outcomes)
    streaks = _streak_lengths(big_road.cells)
    derived = {name: _derived_road(name, n, big_road.cells, streaks) for name, n in DERIVED}
    return BaccaratRoads(counts=_counts(outcomes), bead_plate=_bead_plate(outcomes),
                         big_road=big_road, big_eye_boy=derived["big_eye_boy"],
                         small_road=derived["small_road"],
                         cockroach_pig=derived["cockroach_pig"])


def _bead_plate(outcomes: Sequence[BaccaratOutcome]) -> BeadPlate:
    cells = []
    for i, o in enumerate(outcomes):
        col, row = bead_position(i)
        cells.append(BeadCell(col=col, row=row, hand=i + 1, round_id=o.round_id,
                              winner=o.winner, player_pair=o.player_pair,
                              banker_pair=o.banker_pair, natural=o.natural))
    return BeadPlate(columns=_columns(cells), cells=tuple(cells))


def _big_road(outcomes: Sequence[BaccaratOutcome]) -> BigRoad:
    wins: list[tuple[int, BaccaratOutcome]] = []
    ties: list[int] = []  # on each win's bead: the ties after it (the first: before it too)
    pending = 0  # ties before the first win
    for i, o in enumerate(outcomes):
        if o.winner != "tie":
            wins.append((i, o))
            ties.append(pending if not ties else 0)
            pending = 0
        elif ties:
            ties[-1] += 1
        else:
            pending += 1
    cells = [
        BigRoadCell(col=col, row=row, column=streak, hand=i + 1, round_id=o.round_id,
                    side="banker" if o.winner == "banker" else "player", ties=ties[k],
                    player_pair=o.player_pair, banker_pair=o.banker_pair, natural=o.natural)
        for k, ((i, o), (streak, col, row)) in enumerate(
            zip(wins, lay_out([o.winner for _, o in wins]), strict=True))
    ]
    return BigRoad(columns=_columns(cells), cells=tuple(cells), pending_ties=pending)


def _streak_lengths(cells: Sequence[BigRoadCell]) -> list[int]:
    lengths: list[int] = []
    for cell in cells:
        if cell.column == len(lengths):
            lengths.append(0)
        lengths[cell.column] += 1
    return lengths


def derived_colour(column: int, row: int, n: int, lengths: Sequence[int]) -> Colour | None:
    """The colour a derived road (offset n) reads at the big road's streak `column`, bead
    `row` (both from 0), given every streak's length; None before the road's first entry
    (column n+1 row 2, or column n+2 row 1, in the 1-based words of the rules)."""
    if column < n or (column == n and row == 0):
        return None
    if row == 0:  # a new column: are the two columns before it as long?
        return "red" if lengths[column - 1] == lengths[column - 1 - n] else "blue"
    depth = lengths[column - n]  # column k-n: a cell at this row, or none here nor above?
    return "red" if depth > row or depth < row else "blue"


def _derived_road(name: DerivedName, n: int, big: Sequence[BigRoadCell],
                  lengths: Sequence[int]) -> DerivedRoad:
    reads: list[tuple[int, Colour]] = []
    row_in_streak = 0
    for i, cell in enumerate(big):
        row_in_streak = 0 if i == 0 or cell.column != big[i - 1].column else row_in_streak + 1
        colour = derived_colour(cell.column, row_in_streak, n, lengths)
        if colour is not None:
            reads.append((cell.hand, colour))
    cells = [DerivedCell(col=col, row=row, column=streak, hand=hand, colour=colour)
             for (hand, colour), (streak, col, row)
             in zip(reads, lay_out([c for _, c in reads]), strict=True)]
    return DerivedRoad(name=name, offset=n, columns=_columns(cells), cells=tuple(cells))


def _counts(outcomes: Sequence[BaccaratOutcome]) -> ShoeCounts:
    naturals = [o.natural for o in outcomes]
    return ShoeCounts(
        hands=len(outcomes),
        banker=sum(o.winner == "banker" for o in outcomes),
        player=sum(o.winner == "player" for o in outcomes),
        tie=sum(o.winner == "tie" for o in outcomes),
        player_pair=sum(o.player_pair for o in outcomes),
        banker_pair=sum(o.banker_pair for o in outcomes),
        natural=None if None in naturals else sum(bool(n) for n in naturals),
    )


# --- Triple Face --------------------------------------------------------------------------

def triple_face_history(outcomes: Sequence[TripleFaceOutcome]) -> TripleFaceRoads:
    """Each player position's results against the Banker, in order, six to a column."""
    for i, outcome in enumerate(outcomes):
        if not isinstance(outcome, TripleFaceOutcome):
            raise RoadError(f"hand {i + 1} is not a Triple Face result "
                            f"({type(outcome).__name__})")
    positions: dict[HandName, PositionHistory] = {}
    for name in PLAYER_HANDS:
        cells = []
        for i, o in enumerate(outcomes):
            col, row = bead_position(i)
            cells.append(FaceCell(col=col, row=row, hand=i + 1, round_id=o.round_id,
                                  outcome=o.outcomes[name], rank=o.ranks[name],
                                  banker_rank=o.ranks["banker"]))
        positions[name] = PositionHistory(
            columns=_columns(cells), cells=tuple(cells),
            win=sum(c.outcome == "win" for c in cells),
            lose=sum(c.outcome == "lose" for c in cells),
            tie=sum(c.outcome == "tie" for c in cells))
    return TripleFaceRoads(hands=len(outcomes), positions=positions)


def roads_of(outcomes: Sequence[BaccaratOutcome | TripleFaceOutcome],
             game: Literal["baccarat", "triple_face"] | None = None
             ) -> BaccaratRoads | TripleFaceRoads:
    """The roads of one shoe whichever its game (`game` says which for a shoe with no hand
    yet; default baccarat). A shoe is of one game: a mix is refused."""
    faces = [o for o in outcomes if isinstance(o, TripleFaceOutcome)]
    games = {o.game for o in outcomes} | ({game} if game else set())
    if len(games) > 1:
        raise RoadError(f"a shoe holds one game's results, not {sorted(games)}")
    if faces or game == "triple_face":
        return triple_face_history(faces)
    return baccarat_roads([o for o in outcomes if isinstance(o, BaccaratOutcome)])
