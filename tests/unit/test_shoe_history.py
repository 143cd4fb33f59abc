"""A table's shoes folded from `table.events` (shared.shoe_history), and the wallet's
view of them, the one `GET /tables/{id}/roads` answers from."""

from __future__ import annotations

import pytest

from services.wallet.api_models import ROUTES, openapi
from services.wallet.rounds_view import BetRefused, fold_verified, roads_body
from shared import shoe_history
from shared.cards import parse_cards
from shared.events.table import (
    RoundAnnulled,
    RoundCompleted,
    RoundOpened,
    RoundVoided,
    ShoeEnded,
    ShoeStarted,
    VoidReason,
    seal,
)
from shared.shoe_history import (
    KEEP_SHOES,
    ShoeHistory,
    ShoeRoads,
    find_shoe,
    fold_shoes,
    shoe_roads,
)
from tests.event_keys import events_key
from tests.shoe_builder import BANKER, PAIRS, PLAYER, T0, TIE, Table, played, wallet_view


def folded(events, keep: int = KEEP_SHOES) -> tuple[ShoeHistory, ...]:
    shoes: tuple[ShoeHistory, ...] = ()
    for event in events:
        shoes = fold_shoes(shoes, event, keep)
    return shoes


def winners(shoe: ShoeHistory) -> str:
    return "".join(o.winner[0].upper() for o in shoe.outcomes)


def test_a_shoe_holds_its_results_in_order_without_voids_and_annulments():
    table = Table()
    table.shoe("S1")
    table.play(BANKER)
    table.play(TIE)
    third = table.play(PLAYER)
    voided = table.open()
    table.add(RoundVoided, round_id=voided, reason_code=VoidReason.CARD_DROPPED,
              reason_text="a card fell", supervisor="Sari")
    table.play(PAIRS)
    table.add(RoundAnnulled, round_id=third, reason_code=VoidReason.MANAGEMENT_DECISION,
              reason_text="after review", supervisor="Sari")
    (shoe,) = folded(table.events)
    assert winners(shoe) == "BTB" and shoe.annulled == (third,)
    assert [o.round_id for o in shoe.outcomes] == ["S1-r1", "S1-r2", "S1-r5"]
    assert shoe.complete and not shoe.ended
    last = shoe.outcomes[-1]
    assert (last.player_pair, last.banker_pair, last.natural) == (True, True, True)
    body = shoe_roads("T1", shoe)
    assert body.status == "in_play" and body.annulled_rounds == (third,)
    assert body.roads.counts.model_dump() == {"hands": 3, "banker": 2, "player": 0, "tie": 1,
                                              "player_pair": 1, "banker_pair": 1, "natural": 3}
    # the tie of round 2 sits on round 1's bead; rounds 1 and 5 make one Banker column
    assert [(c.col, c.row, c.ties) for c in body.roads.big_road.cells] == [(0, 0, 1), (0, 1, 0)]


def test_cards_that_are_not_exactly_one_round_add_nothing_and_are_counted():
    table = Table()
    table.shoe("S1")
    table.play(BANKER + ",4C")  # complete after four cards: a fifth is no part of it
    table.play("2S,9C,3H")  # not complete
    table.play(PLAYER)
    (shoe,) = folded(table.events)
    assert winners(shoe) == "P" and shoe.missing == 2 and not shoe.complete


def test_a_fold_begun_mid_shoe_says_so():
    table = Table()
    table.shoe("S1")
    table.play(BANKER)
    table.play(PLAYER)
    (shoe,) = folded(table.events[3:])  # from round 2's opening on
    assert winners(shoe) == "P" and not shoe.from_start and not shoe.complete
    # round 1's completion without its opening: the shoe's result is missing, not guessed
    (shoe,) = folded([table.events[0], table.events[2]])
    assert shoe.outcomes == () and shoe.missing == 1
    assert folded(table.events[4:]) == ()  # and with no shoe known at all, nothing


def test_a_table_keeps_its_last_shoes_only_and_each_is_found_by_id_or_shoes_back():
    table = Table()
    for n in range(1, KEEP_SHOES + 2):
        table.shoe(f"S{n}")
        table.play(BANKER if n % 2 else PLAYER)
        table.add(ShoeEnded, shoe_id=f"S{n}", reason="cut card reached")
    shoes = folded(table.events)
    assert [s.shoe_id for s in shoes] == [f"S{n}" for n in range(2, KEEP_SHOES + 2)]
    assert all(s.ended for s in shoes)
    current = f"S{KEEP_SHOES + 1}"
    assert find_shoe(shoes, None).shoe_id == current == find_shoe(shoes, "0").shoe_id
    assert find_shoe(shoes, "1").shoe_id == f"S{KEEP_SHOES}"
    assert find_shoe(shoes, "S2").shoe_id == "S2"
    assert find_shoe(shoes, "S1") is None and find_shoe(shoes, str(KEEP_SHOES)) is None
    assert find_shoe((), None) is None


def test_a_long_triple_face_session_keeps_its_last_hands(monkeypatch):
    monkeypatch.setattr(shoe_history, "MAX_HANDS", 3)
    table = Table(profile="triple-face-id")
    table.shoe("F1")
    for _ in range(5):
        table.play("JS,2C,3C,QS,3H,4C,5C,TH,6D,5D,7C,9D")  # P1 ties, P2 and P3 lose
    (shoe,) = folded(table.events)
    assert shoe.game == "triple_face" and len(shoe.outcomes) == 3 and shoe.dropped == 2
    assert [o.round_id for o in shoe.outcomes] == ["F1-r3", "F1-r4", "F1-r5"]
    body = shoe_roads("T1", shoe)
    assert not body.complete and body.roads.game == "triple_face"
    assert [c.outcome for c in body.roads.positions["player1"].cells] == ["tie"] * 3
    assert body.roads.positions["player2"].lose == 3


def test_an_empty_triple_face_shoe_draws_its_own_history():
    table = Table(profile="triple-face-id")
    table.shoe("F1")
    body = shoe_roads("T1", folded(table.events)[0])
    assert body.game == "triple_face" and body.roads.hands == 0


def test_the_wallet_view_folds_the_shoes_of_authentic_events_only():
    table = played(BANKER, PLAYER)
    view = wallet_view(table.events)
    assert winners(view.shoes[-1]) == "BP"
    forged = seal(RoundCompleted, table_id="T1", seq=len(table.events) + 1,
                  prev_hash=table.events[-1].hash, occurred_at=T0, key=b"not the key" * 3,
                  round_id="S1-r2", cards=tuple(parse_cards(BANKER)))
    after, refused = fold_verified(view, forged, events_key())
    assert refused is not None and after.shoes == view.shoes


def test_the_roads_body_is_the_openapi_response_of_the_route():
    table = Table()
    table.shoe("S1")
    table.play(PAIRS)
    body = shoe_roads("T1", folded(table.events)[0]).model_dump(mode="json")
    assert ShoeRoads.model_validate(body).roads.bead_plate.cells[0].banker_pair
    route = next(r for r in ROUTES if r.path == "/tables/{table_id}/roads")
    assert route.response is ShoeRoads
    op = openapi()["paths"][route.path]["get"]
    assert {"name": "shoe", "in": "query", "required": False,
            "schema": {"type": "string"}} in op["parameters"]


@pytest.mark.parametrize("kind", [ShoeStarted, RoundOpened])
def test_an_unknown_profile_still_starts_a_shoe(kind):
    table = Table(profile="no-such-profile")
    if kind is ShoeStarted:
        table.shoe("S1")
    else:
        table.shoe_id = "S1"
    table.play(BANKER)
    (shoe,) = folded(table.events)
    assert shoe.game is None and shoe.missing == 1 and shoe.outcomes == ()


def test_the_route_answers_the_current_shoe_another_by_id_or_number_and_names_refusals():
    table = Table()
    table.shoe("S1")
    table.play(BANKER)
    table.add(ShoeEnded, shoe_id="S1", reason="cut card reached")
    table.shoe("S2")
    table.play(PLAYER)
    table.play(PLAYER)
    view = wallet_view(table.events)
    current = roads_body(view, "T1", None)
    assert (current["shoe_id"], current["status"], current["complete"]) == ("S2", "in_play", True)
    assert [c["side"] for c in current["roads"]["big_road"]["cells"]] == ["player", "player"]
    assert roads_body(view, "T1", "0") == current
    before = roads_body(view, "T1", "1")
    assert before == roads_body(view, "T1", "S1") and before["status"] == "ended"
    assert before["roads"]["counts"]["banker"] == 1
    for args, status, code in [((None, "T9", None), 404, "unknown_table"),
                               ((view, "T1", "S0"), 404, "unknown_shoe"),
                               ((view, "T1", "7"), 404, "unknown_shoe"),
                               ((view, "T1", "../x"), 422, "malformed_query"),
                               ((view, "T1", "x" * 97), 422, "malformed_query")]:
        with pytest.raises(BetRefused) as err:
            roads_body(*args)
        assert (err.value.status, err.value.code) == (status, code), args
    empty = Table("T2")
    empty.add(ShoeEnded, shoe_id="S0", reason="a table with no shoe yet")
    bare = wallet_view(empty.events)
    with pytest.raises(BetRefused, match="no shoe started yet"):
        roads_body(bare, "T2", None)
