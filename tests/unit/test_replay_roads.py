"""The replay report's roads: the round's shoe up to that round, folded from the events the
replay read, drawn in the HTML page exactly as the JSON report states them."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from services.operator.replay import replay_roads, replay_round
from services.operator.report_render import to_html, to_json, to_text
from shared.cards import parse_cards
from shared.events.table import CardDealt, RoundCompleted, seal
from tests.event_keys import events_key
from tests.shoe_builder import BANKER, PAIRS, PLAYER, TIE, Table

DERIVED = ("big_eye_boy", "small_road", "cockroach_pig")


class Cells(HTMLParser):
    """Every drawn road cell of a page: (road, col, row, hand) -> its text."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, int, int, int], str] = {}
        self._open: tuple[str, int, int, int] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "data-col" in a:
            self._open = (a["data-road"], int(a["data-col"]), int(a["data-row"]),
                          int(a["data-hand"]))
            self.cells[self._open] = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self.cells[self._open] += data


def drawn(page: str) -> dict[tuple[str, int, int, int], str]:
    parser = Cells()
    parser.feed(page)
    return parser.cells


def report_of(table: Table, round_id: str, events=None):
    """The round's replay (no bets) with its shoe's roads, as `run_replay` assembles it."""
    events = table.events if events is None else events
    report = replay_round(table.table_id, round_id, [e for e in events
                                                     if getattr(e, "round_id", None) == round_id],
                          None, None, [], [], [], events_key=events_key())
    roads, notes = replay_roads(table.table_id, table.shoe_id, round_id, events, events_key())
    return report.model_copy(update={"roads": roads}), notes


def test_the_page_draws_the_roads_cells_the_json_report_holds():
    table = Table()
    table.shoe("S1")
    for cards in (TIE, BANKER, BANKER, PAIRS, TIE, PLAYER, PLAYER, BANKER, PLAYER, BANKER,
                  BANKER, BANKER, PLAYER):
        table.play(cards)
    report, notes = report_of(table, "S1-r13")
    assert notes == []
    data = json.loads(to_json(report))["roads"]
    assert data["shoe_id"] == "S1" and data["complete"]
    roads = data["roads"]
    expected = {("bead_plate", c["col"], c["row"], c["hand"]): c["winner"][0].upper()
                for c in roads["bead_plate"]["cells"]}
    expected |= {("big_road", c["col"], c["row"], c["hand"]):
                 c["side"][0].upper() + (str(c["ties"]) if c["ties"] else "")
                 for c in roads["big_road"]["cells"]}
    for name in DERIVED:
        expected |= {(name, c["col"], c["row"], c["hand"]): c["colour"][0]
                     for c in roads[name]["cells"]}
    got = drawn(to_html(report))  # a natural's bead is marked N after its letter
    assert {k: v.rstrip("N") for k, v in got.items()} == expected
    # and what that is, worked by hand: T B B B(pairs) T P P B P B B B P
    assert roads["counts"]["hands"] == 13 and len(roads["bead_plate"]["cells"]) == 13
    assert [(c["col"], c["row"], c["ties"]) for c in roads["big_road"]["cells"][:3]] == [
        (0, 0, 1), (0, 1, 0), (0, 2, 1)]
    assert [c["side"][0] for c in roads["big_road"]["cells"]] == list("bbbppbpbbbp")
    assert any(k[0] == "big_eye_boy" for k in got) and any(k[0] == "small_road" for k in got)
    text = to_text(report)
    assert "Roads of shoe S1 up to this round: 13 hands, banker 7, player 4, tie 2" in text


def test_the_roads_stop_at_the_round_replayed():
    table = Table()
    table.shoe("S1")
    table.play(BANKER)
    second = table.play(PLAYER)
    table.play(PLAYER)
    report, _ = report_of(table, second)
    assert report.roads.roads.counts.hands == 2
    assert [(k[0], k[3]) for k in drawn(to_html(report)) if k[0] == "bead_plate"] == [
        ("bead_plate", 1), ("bead_plate", 2)]


def test_a_forged_event_takes_no_part_in_the_roads_and_is_named():
    table = Table()
    table.shoe("S1")
    table.play(BANKER)
    round_id = table.open()
    real = table.add(RoundCompleted, round_id=round_id, cards=tuple(parse_cards(PLAYER)))
    forged = seal(RoundCompleted, table_id=table.table_id, seq=real.seq, prev_hash=real.prev_hash,
                  occurred_at=real.occurred_at, key=b"someone else's key",
                  round_id=round_id, cards=tuple(parse_cards(BANKER)))
    events = [*table.events[:-1], forged, real]
    roads, notes = replay_roads(table.table_id, "S1", round_id, events, events_key())
    assert [c.winner for c in roads.roads.bead_plate.cells] == ["banker", "player"]
    assert notes and f"seq {forged.seq} (round_completed) left out" in notes[0]


def test_a_shoe_whose_start_was_not_read_is_drawn_from_its_first_round_read():
    table = Table()
    table.shoe("S1")
    table.play(BANKER)
    last = table.play(PLAYER)
    roads, notes = replay_roads(table.table_id, "S1", last, table.events[3:], events_key())
    assert not roads.complete and [c.winner for c in roads.roads.bead_plate.cells] == ["player"]
    assert "the start of shoe S1 was not found" in notes[0]
    assert replay_roads(table.table_id, "S9", last, table.events, None)[0] is None


def test_a_triple_face_report_draws_each_positions_history():
    table = Table(profile="triple-face-id")
    table.shoe("F1")
    table.play("JS,2C,3C,QS,3H,4C,5C,TH,6D,5D,7C,9D")  # P1 ties, P2 and P3 lose
    last = table.open()
    for i, card in enumerate(parse_cards("KS,AS,9S,2S,QS,AH,TS,2H,JS,AC,TH,9H")):
        table.add(CardDealt, round_id=last, card=card, shoe_position=i, round_position=i)
    table.add(RoundCompleted, round_id=last,
              cards=tuple(parse_cards("KS,AS,9S,2S,QS,AH,TS,2H,JS,AC,TH,9H")))
    report, _ = report_of(table, last)
    assert report.winner == {"player1": "player1", "player2": "tie", "player3": "player3"}
    data = json.loads(to_json(report))["roads"]["roads"]
    expected = {(name, c["col"], c["row"], c["hand"]): c["outcome"][0].upper()
                for name, p in data["positions"].items() for c in p["cells"]}
    assert drawn(to_html(report)) == expected
    assert expected == {("player1", 0, 0, 1): "T", ("player1", 0, 1, 2): "W",
                        ("player2", 0, 0, 1): "L", ("player2", 0, 1, 2): "T",
                        ("player3", 0, 0, 1): "L", ("player3", 0, 1, 2): "W"}
    assert "win-lose-tie player1 1-0-1" in to_text(report)
