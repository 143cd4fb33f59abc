"""bet-settlement's round logic: accept while open, manifest on close, settle or refund once."""

from datetime import timedelta

from services.bet_settlement import round_book
from shared.events.bet_events import IntakeMark, manifest_digest
from shared.events.table import BettingClosed, RoundVoided
from shared.profile import load_profile
from shared.settlement import Bet, settle
from tests.unit.round_book_support import (
    NOW,
    PROFILE,
    event,
    kinds,
    open_round,
    opened,
    placed,
    result,
)


def test_accepts_valid_bets_while_open_and_rejects_the_rest_by_name():
    state = open_round()
    out = []
    for bet in [placed("a"), placed("b", bet="big"), placed("c", stake=1),
                placed("d", position=1)]:
        state, more = round_book.on_bet(state, bet, NOW)
        out += more
    assert kinds(out) == ["BetAccepted", "BetRejected:bet_not_offered",
                          "BetRejected:below_minimum", "BetRejected:bad_position"]
    assert list(state.accepted) == ["a"]


def test_redelivered_bet_gets_the_same_decision_and_a_clashing_id_is_rejected():
    state, first = round_book.on_bet(open_round(), placed("a"), NOW)
    again_state, again = round_book.on_bet(state, placed("a"), NOW + timedelta(seconds=5))
    assert again == first and again_state == state
    _, clash = round_book.on_bet(state, placed("a", player="p2"), NOW)
    assert kinds(clash) == ["BetRejected:duplicate_bet_id"]


def mark(partitions=(0,), count=1, round_id="R1"):
    return IntakeMark(table_id="T1", round_id=round_id, partitions=partitions,
                      partition_count=count, worker="w0", through=NOW + timedelta(seconds=31))


def test_close_writes_the_manifest_once_and_late_bets_are_rejected():
    state, _ = round_book.on_bet(open_round(), placed("a"), NOW)
    state, _ = round_book.on_bet(state, placed("b", stake=3000), NOW)
    closing, out = round_book.on_table_event(state, event(BettingClosed, 2, reason="timer"), NOW)
    assert out == [] and closing.status == "closing"  # waits for the wallet's marks
    closing, out = round_book.on_mark(closing, mark((0,), 2), NOW)
    assert out == [] and closing.header.covered == (0,)
    closed_state, out = round_book.on_mark(closing, mark((1,), 2), NOW)
    manifest = out[0][2]
    assert (manifest.bet_count, manifest.total_stake) == (2, 5000)
    assert manifest.digest == manifest_digest(["b", "a"]) == closed_state.header.digest
    assert closed_state.manifest == manifest and closed_state.header.received == 2
    _, again = round_book.on_table_event(closed_state, event(BettingClosed, 2, reason="timer"), NOW)
    assert again == out
    _, again = round_book.on_mark(closed_state, mark((1,), 2), NOW)
    assert again == out
    _, late = round_book.on_bet(closed_state, placed("late"), NOW)
    assert kinds(late) == ["BetRejected:round_closed"]


def test_result_settles_every_accepted_bet_by_the_rule_engine_once():
    state = open_round()
    for bet_id, bet in [("a", "player"), ("b", "banker"), ("c", "tie")]:
        state, _ = round_book.on_bet(state, placed(bet_id, bet=bet), NOW)
    published = result()
    settled_state, out = round_book.on_result(state, published, NOW)
    assert kinds(out) == ["RoundManifest"] + ["BetSettled"] * 3  # the result closed it
    for _, _, s in out[1:]:
        expected = settle(Bet(bet=s.bet, stake=s.stake), published.result,
                          load_profile(PROFILE))
        assert (s.outcome, s.returned, s.settlement_id) == (
            expected.outcome, expected.returned, f"settle:{s.bet_id}")
    _, again = round_book.on_result(settled_state, published, NOW)
    assert again == out[1:]
    _, void_after = round_book.on_table_event(
        settled_state, event(RoundVoided, 5, reason_code="misdeal", reason_text="x",
                             supervisor="S"), NOW)
    assert void_after == out[1:]  # re-published, never refunded on top


def test_void_refunds_every_accepted_bet_in_full():
    state, _ = round_book.on_bet(open_round(), placed("a", stake=4000), NOW)
    voided, out = round_book.on_table_event(
        state, event(RoundVoided, 3, reason_code="misdeal", reason_text="x", supervisor="S"), NOW)
    assert [(r.outcome, r.returned) for _, _, r in out] == [("void_refund", 4000)]
    _, after = round_book.on_result(voided, result(), NOW)
    assert after == out


# seed 001's first-card deal: the first card 3D starts at Player 2, so the shoe order
# P2 P3 B P1 three times round gives P1 AS 2C 3H = 6, P2 AH 4H TS = 5, P3 AC AD 8S = 0,
# Banker TH TD 5C = 5 (no pictures in any hand)
JP_ROUND = "3D,AH,AC,TH,AS,4H,AD,TD,2C,TS,8S,5C,3H"
JP_BETS = [  # bet id, bet, position, outcome, returned (stake 1000)
    ("win1", "win", 1, "win", 1500),        # Player 1 wins with 6 points: 1:0.5
    ("lose1", "lose", 1, "lose", 0),
    ("tie1", "tie", 1, "lose", 0),
    ("win2", "win", 2, "push", 1000),       # 5 against 5: a tie refunds Win and Lose
    ("lose2", "lose", 2, "push", 1000),
    ("tie2", "tie", 2, "win", 9000),        # 8:1
    ("lose3", "lose", 3, "win", 2000),      # the Banker wins with 5, not 6: 1:1
    ("pp3", "pair_plus", 3, "win", 2000),   # A A: a pair, 1:1
    ("ppb", "pair_plus", "banker", "win", 2000),  # T T
]


def test_seed001_triple_face_jp_settles_every_bet_of_a_first_card_round():
    """Seed 001 at `triple-face-jp`: "最初のカード: 3、7、J: ディーリング シーケンス: プレイヤー 2、
    プレイヤー 3、バンカー、プレイヤー 1"; "抽選結果が引き分けの場合、「勝ち」または「負け」の賭け金は
    返金されます"; "「勝ち」に賭けて、プレイヤーのハンドが 6 の任意の組み合わせで勝利した場合、
    オッズは 1:0.5 です"."""
    from shared.cards import parse_cards
    from shared.events.bet_events import BetSettled
    from shared.events.table import RoundOpened
    from shared.rounds import evaluate_round
    from tests.unit.round_book_support import result as sbo_result

    profile = load_profile("triple-face-jp")
    book, _ = round_book.on_table_event(None, event(
        RoundOpened, 1, shoe_id="s1", round_number=1, dealer="D", profile="triple-face-jp",
        betting_closes_at=NOW + timedelta(seconds=30)), NOW)
    for bet_id, bet, position, _, _ in JP_BETS:
        book, out = round_book.on_bet(book, placed(bet_id, bet=bet, position=position,
                                                   stake=1000), NOW)
        assert kinds(out) == ["BetAccepted"], bet_id
    cards = parse_cards(JP_ROUND)
    published = sbo_result().model_copy(update={
        "profile": "triple-face-jp", "cards": tuple(cards),
        "result": evaluate_round(profile, cards)})
    assert published.result.first_card == cards[0]
    assert [str(c) for c in published.result.hands["player1"].cards] == ["AS", "2C", "3H"]
    _, out = round_book.on_result(book, published, NOW)
    got = {s.bet_id: (s.outcome, s.returned) for _, _, s in out if isinstance(s, BetSettled)}
    assert got == {bet_id: (outcome, returned) for bet_id, _, _, outcome, returned in JP_BETS}


def test_a_bet_before_its_round_opened_waits_then_is_decided_or_expires():
    state, out = round_book.on_bet(None, placed("early"), NOW)
    assert out == [] and state.status == "pending"
    opened_state, out = round_book.on_table_event(state, opened(), NOW)
    assert kinds(out) == ["BetAccepted"] and opened_state.pending == []
    assert opened_state.entry("early").decision == out[0][2]  # kept under the bet's own key
    lost, _ = round_book.on_bet(None, placed("lost", round_id="R0"), NOW)
    expired, out = round_book.expire_pending(lost, NOW)
    assert kinds(out) == ["BetRejected:unknown_round"] and expired.status == "unknown"
