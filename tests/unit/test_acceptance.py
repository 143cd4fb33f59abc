"""Issue 12's bet acceptance and the money side of management voids, clause by clause:
seed 002's table maximum per spot, a bet counting by its time, seed 002's Tiger wagers with
a main bet, and seeds 000 §1 / 004 §1, §4's voids after completion (compensating records)."""

import random
from datetime import timedelta

import pytest

from services.bet_settlement import decision_metrics, round_book
from services.wallet import handlers
from services.wallet.commands import EndBet, PlaceBet, ReverseSettlement
from services.wallet.ledger_fold import Lookups
from shared.events.bet_events import (
    BetSettled,
    IntakeMark,
    SettlementReversed,
    manifest_digest,
)
from shared.events.results import RoundResultPublished
from shared.events.table import BettingClosed, RoundAnnulled, RoundOpened, RoundVoided
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.simulate import deal_rounds
from shared.topics import BETS_SETTLED_TOPIC
from tests.unit.round_book_support import NOW, event, kinds, placed
from tests.unit.wallet_support import Ledger, fold_all

MAX = 5_000_000  # sbo-baccarat and sbo-tiger: player, banker
CLOSES = NOW + timedelta(seconds=30)
ANNUL = dict(reason_code="other", reason_text="wrong result entered, found after the round",
             supervisor="Sam")


def opened(profile="sbo-baccarat", round_id="R1"):
    return event(RoundOpened, 1, round_id, shoe_id="s1", round_number=1, dealer="D",
                 profile=profile, betting_closes_at=CLOSES)


def closed(at=CLOSES, seq=2):
    return event(BettingClosed, seq, reason="timer").model_copy(update={"occurred_at": at})


def at(seconds: float, **kw):
    return placed(**kw).model_copy(update={"placed_at": NOW + timedelta(seconds=seconds)})


def mark(partitions=(0,), count=1):
    return IntakeMark(table_id="T1", round_id="R1", partitions=partitions, partition_count=count,
                      worker="w0", through=CLOSES + timedelta(seconds=1))


def result(profile="sbo-baccarat", seed=3):
    p = load_profile(profile)
    cards = next(deal_rounds(p, random.Random(seed)))
    return RoundResultPublished(
        result_id="result:T1:R1", table_id="T1", round_id="R1", shoe_id="s1", profile=profile,
        dealer="D", cards=tuple(cards), completed_seq=9, completed_hash="0" * 64,
        occurred_at=CLOSES + timedelta(seconds=20), result=evaluate_round(p, cards))


def run(state, *bets):
    out = []
    for b in bets:
        state, more = round_book.on_bet(state, b, NOW)
        out += more
    return state, out


def codes(out):
    return [getattr(r, "reason_code", "accepted") for _, _, r in out
            if type(r).__name__ in ("BetAccepted", "BetRejected")]


# --- seed 002: "hingga nilai taruhan maksimal di meja itu" --------------------------------

def test_seed002_table_maximum_is_per_spot_per_round():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, out = run(state, placed("a", stake=MAX), placed("b", stake=MAX),
                     placed("c", stake=1000), placed("d", bet="banker", stake=MAX),
                     placed("e", player="p2", stake=MAX))
    assert codes(out) == ["accepted", "spot_maximum", "spot_maximum", "accepted", "accepted"]
    assert "IDR 50,000.00 already on 'player'" in out[1][2].message
    assert state.header.accepted == 3 and state.header.total_stake == 3 * MAX


def test_seed002_table_maximum_adds_up_the_clicks_on_one_spot():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, out = run(state, placed("a", stake=3_000_000), placed("b", stake=2_000_000),
                     placed("c", stake=1000))
    assert codes(out) == ["accepted", "accepted", "spot_maximum"]
    # Triple Face: one spot per position
    tf = round_book.on_table_event(None, opened("triple-face-id"), NOW)[0]
    spec = load_profile("triple-face-id").limits_in("IDR").bets["win"]  # placed() bets IDR
    _, out = run(tf, placed("x", bet="win", position=1, stake=spec.max_stake),
                 placed("y", bet="win", position=2, stake=spec.max_stake),
                 placed("z", bet="win", position=1, stake=spec.min_stake))
    assert codes(out) == ["accepted", "accepted", "spot_maximum"]


def test_seed002_wallet_refuses_a_second_bet_past_the_spot_maximum_at_its_door():
    led = SpotLedger(deposit=3 * MAX)

    def bet(bet_id, stake, bet="player"):
        return led.run(handlers.place_bet, PlaceBet(
            player_id="p1", bet_id=bet_id, table_id="T1", round_id="R1", bet=bet,
            stake=stake, spot_max=MAX))
    assert bet("a", MAX).answer.status == 201
    second = bet("b", MAX)
    assert (second.answer.status, second.answer.body["error"]["code"]) == (422, "spot_maximum")
    assert second.txs == [] and led.account.balance == 2 * MAX  # nothing debited
    assert bet("c", MAX, bet="banker").answer.status == 201  # another spot
    assert bet("a", MAX).answer.status == 200  # a retry of a known bet is its first answer
    assert led.account.balance == MAX
    # one plain total per spot of the round, in the fold
    assert sorted(led.spots.values()) == [MAX, MAX]
    assert led.look.spot_total(handlers.spot_key("p1", "T1", "R1", "player", None)) == MAX


def test_seed002_the_door_and_bet_settlement_refuse_a_spot_maximum_in_the_same_words():
    """One rule, one home: the player reads the same reason whether the wallet's door or
    bet-settlement's binding decision refused the bet."""
    led = SpotLedger(deposit=3 * MAX)
    led.run(handlers.place_bet, PlaceBet(player_id="p1", bet_id="a", table_id="T1",
                                         round_id="R1", bet="player", stake=MAX, spot_max=MAX))
    door = led.run(handlers.place_bet, PlaceBet(
        player_id="p1", bet_id="b", table_id="T1", round_id="R1", bet="player", stake=MAX,
        spot_max=MAX)).answer.body["error"]
    state = round_book.on_table_event(None, opened(), NOW)[0]
    _, out = run(state, placed("a", stake=MAX), placed("b", stake=MAX))
    book = out[1][2]
    assert (door["code"], door["message"]) == (book.reason_code, book.message)
    assert "IDR 50,000.00 already on 'player'" in door["message"]


def test_seed002_wallet_spot_total_is_the_sum_of_the_bets_placed_on_it():
    """Clicks on one spot add up to the table maximum and no further; a refused or retried
    bet adds nothing, and the total is the entries' (a rebuild counts the same)."""
    led = SpotLedger(deposit=3 * MAX)

    def bet(bet_id, stake):
        return led.run(handlers.place_bet, PlaceBet(
            player_id="p1", bet_id=bet_id, table_id="T1", round_id="R1", bet="player",
            stake=stake, spot_max=MAX))
    assert [bet(b, s).answer.status for b, s in (("a", 3_000_000), ("b", 2_000_000),
                                                 ("a", 3_000_000), ("c", 1))] == [
        201, 201, 200, 422]
    key = handlers.spot_key("p1", "T1", "R1", "player", None)
    assert led.look.spot_total(key) == MAX
    assert [e.spot.total for _, e in led.entries if e.spot is not None] == [3_000_000, MAX]
    assert Lookups(fold_all(led.entries).kv).spot_total(key) == MAX


# --- issue 12 item 4: a bet counts by its time, not by arrival ---------------------------

def test_issue12_bet_placed_after_the_close_is_rejected_whichever_record_is_read_first():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, out = run(state, at(29, bet_id="in-time"), at(31, bet_id="late-read-first"))
    assert codes(out) == ["accepted"]  # the late one waits for the close
    assert state.header.deferred == 1
    state, out = round_book.on_table_event(state, closed(CLOSES + timedelta(seconds=2)), NOW)
    assert codes(out) == ["accepted"]  # placed at 31 s, the close came at 32 s
    state, out = round_book.on_table_event(
        round_book.on_table_event(None, opened(), NOW)[0], closed(), NOW)
    state, out = run(state, at(31, bet_id="late-read-after"))
    assert codes(out) == ["round_closed"]
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, _ = run(state, at(31, bet_id="late"))
    state, out = round_book.on_table_event(state, closed(), NOW)
    assert codes(out) == ["round_closed"]


def test_issue12_bet_placed_before_the_close_is_accepted_even_if_read_after_it():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, _ = run(state, at(10, bet_id="a"))
    state, out = round_book.on_table_event(state, closed(), NOW)
    assert out == [] and state.status == "closing"
    state, out = run(state, at(29.9, bet_id="b", stake=3000))  # read after the close
    assert codes(out) == ["accepted"]
    state, out = round_book.on_mark(state, mark((0, 2), 3), NOW)
    assert out == []  # partition 1's worker has not marked yet: still waiting
    state, out = round_book.on_mark(state, mark((1,), 3), NOW)
    manifest = out[0][2]
    assert (manifest.bet_count, manifest.total_stake, manifest.closed_at) == (2, 5000, CLOSES)
    assert manifest.digest == manifest_digest(["a", "b"])
    state, out = run(state, at(29.95, bet_id="c"))  # after the manifest: too late
    assert codes(out) == ["round_closed"]


def test_issue12_an_early_close_read_late_leaves_accepted_bets_standing_and_says_so(caplog):
    """Decision (acceptance.md): a supervisor's close before the announced time, read after a
    bet stamped later than it was accepted: the bet stands (final once accepted), reported."""
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, out = run(state, at(12, bet_id="a"))
    assert codes(out) == ["accepted"]
    with caplog.at_level("WARNING"):
        state, out = round_book.on_table_event(state, closed(NOW + timedelta(seconds=10)), NOW)
    assert "closed early" in caplog.text and state.header.accepted == 1
    _, out = run(state, at(11, bet_id="b"))
    assert codes(out) == ["round_closed"]


def test_issue12_marks_read_before_the_close_close_the_round_at_the_close():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, _ = round_book.on_mark(state, mark((0,), 1), NOW)
    state, out = round_book.on_table_event(state, closed(), NOW)
    assert kinds(out) == ["RoundManifest"] and state.status == "closed"


def test_issue12_the_result_ends_the_wait_when_no_wallet_marked():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, _ = run(state, at(10, bet_id="a"))
    state, _ = round_book.on_table_event(state, closed(), NOW)
    state, out = round_book.on_result(state, result(), NOW)
    assert kinds(out) == ["RoundManifest", "BetSettled"]


def test_issue12_a_void_decides_the_bets_that_waited_for_the_close():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, _ = run(state, at(31, bet_id="w", stake=4000))
    void = event(RoundVoided, 2, reason_code="misdeal", reason_text="x", supervisor="S")
    void = void.model_copy(update={"occurred_at": CLOSES + timedelta(seconds=5)})
    state, out = round_book.on_table_event(state, void, NOW)
    assert kinds(out) == ["BetAccepted", "BetSettled"] and out[1][2].returned == 4000


# --- seed 002: Tiger wagers only with a Player, Banker or Tie bet -------------------------

def test_seed002_tiger_wager_needs_a_main_bet_at_the_sbo_tiger_table():
    assert load_profile("sbo-tiger").tiger_needs_main_bet
    assert not load_profile("sbo-baccarat").tiger_needs_main_bet
    state = round_book.on_table_event(None, opened("sbo-tiger"), NOW)[0]
    state, out = run(state, placed("t1", bet="tiger"), placed("m", bet="banker"),
                     placed("t2", bet="tiger"), placed("t3", bet="tiger_pair", player="p2"),
                     placed("m2", bet="tie", player="p2"), placed("t4", bet="big_tiger",
                                                                  player="p2"))
    assert codes(out) == ["needs_main_bet", "accepted", "accepted", "needs_main_bet",
                          "accepted", "accepted"]


def test_seed002_tiger_wager_needs_a_main_bet_at_the_wallets_door():
    led = SpotLedger(deposit=100_000)

    def bet(bet_id, bet, needs_main=False):
        return led.run(handlers.place_bet, PlaceBet(
            player_id="p1", bet_id=bet_id, table_id="T1", round_id="R1", bet=bet,
            stake=1000, spot_max=MAX, needs_main_bet=needs_main))
    refused = bet("t1", "tiger", needs_main=True)
    assert refused.answer.body["error"]["code"] == "needs_main_bet" and refused.txs == []
    assert bet("m", "player").answer.status == 201
    assert bet("t2", "tiger", needs_main=True).answer.status == 201


# --- seeds 000 §1, 004 §1 and §4: a management void after completion ---------------------

def settled_round(profile="sbo-baccarat"):
    state = round_book.on_table_event(None, opened(profile), NOW)[0]
    state, _ = run(state, placed("a", bet="player", stake=2000),
                   placed("b", bet="banker", stake=3000, player="p2"),
                   placed("c", bet="tie", stake=1000))
    state, _ = round_book.on_table_event(state, closed(), NOW)
    state, out = round_book.on_result(state, result(profile), NOW)
    return state, [r for _, _, r in out if isinstance(r, BetSettled)]


def annulled(seq=10):
    return event(RoundAnnulled, seq, **ANNUL)


def test_seed000_004_annulment_reverses_every_settlement_then_refunds_the_stake():
    state, originals = settled_round()
    later = NOW + timedelta(minutes=5)
    annulled_state, out = round_book.on_table_event(state, annulled(), later)
    records = [r for _, _, r in out]
    assert [type(r).__name__ for r in records] == ["SettlementReversed", "BetSettled"] * 3
    assert {topic for topic, _, _ in out} == {BETS_SETTLED_TOPIC}
    for original, reversal, refund in zip(originals, records[::2], records[1::2], strict=True):
        assert isinstance(reversal, SettlementReversed)
        assert (reversal.reversal_id, reversal.settlement_id, reversal.amount) == (
            f"reverse:{original.settlement_id}", original.settlement_id, original.returned)
        assert (reversal.reason_code, reversal.supervisor, reversal.cause) == (
            "other", "Sam", "annul:T1:R1")
        assert (refund.settlement_id, refund.outcome, refund.returned) == (
            f"annul-refund:{original.bet_id}", "void_refund", original.stake)
        assert refund.settlement_id != original.settlement_id
    assert [r.last_of_round for r in records[1::2]] == [False, False, True]
    assert annulled_state.status == "annulled"
    # every original settlement stays as it was; the reversal sits beside it
    assert annulled_state.settlements == state.settlements
    # redelivered: the same records, nothing new
    _, again = round_book.on_table_event(annulled_state, annulled(), later + timedelta(seconds=9))
    assert [r for _, _, r in again if not isinstance(r, BetSettled) or
            r.settlement_id.startswith("annul-refund:")] == records
    _, again = round_book.on_result(annulled_state, result(), later)
    assert round_book.conflicts(annulled_state.header, annulled_state, result()) == []
    fresh = decision_metrics.fresh(state, annulled_state, [r for _, _, r in out])
    assert [s.settlement_id for s in fresh.settlements] == [r.settlement_id for r in records[1::2]]
    assert all(len(e.model_dump_json()) < 4096 for e in annulled_state.entries.values())


def test_seed000_004_annulment_read_before_the_result_refunds_and_ignores_the_result():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    state, _ = run(state, placed("a", stake=2000))
    state, _ = round_book.on_table_event(state, closed(), NOW)
    voided, out = round_book.on_table_event(state, annulled(), NOW)
    assert [(type(r).__name__, r.outcome) for _, _, r in out] == [("BetSettled", "void_refund")]
    assert voided.status == "voided" and voided.header.cause == "annul:T1:R1"
    _, after = round_book.on_result(voided, result(), NOW)
    assert [r.outcome for _, _, r in after] == ["void_refund"]  # the refund again, no payout
    assert round_book.conflicts(voided.header, voided, result()) == []


# the wallet's side

class SpotLedger(Ledger):
    """The handlers' ledger (spot totals are in the fold too), with p1's account funded."""

    def __init__(self, deposit: int) -> None:
        super().__init__()
        from services.wallet.commands import CreateAccount, Deposit
        self.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
        self.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d",
                                                     amount=deposit))


def _won_bet(led: SpotLedger, stake=2000, returned=4000):
    led.run(handlers.place_bet, PlaceBet(player_id="p1", bet_id="a", table_id="T1",
                                         round_id="R1", bet="player", stake=stake))
    led.run(handlers.end_bet, EndBet(player_id="p1", bet_id="a", ending="settled",
                                     returned=returned, settlement_id="settle:a",
                                     table_id="T1", round_id="R1"))


def reverse(amount=4000):
    return ReverseSettlement(player_id="p1", bet_id="a", reversal_id="reverse:settle:a",
                             settlement_id="settle:a", amount=amount, table_id="T1",
                             round_id="R1")


REFUND = EndBet(player_id="p1", bet_id="a", ending="voided", returned=2000,
                settlement_id="annul-refund:a", table_id="T1", round_id="R1")


def test_seed000_004_wallet_takes_the_payout_back_then_refunds_the_stake_once():
    led = SpotLedger(deposit=10_000)
    _won_bet(led)
    assert led.account.balance == 12_000
    out = led.run(handlers.reverse_settlement, reverse())
    assert [(t.kind, t.tx_id, t.amount, t.balance_after) for t in out.txs] == [
        ("payout_reversal", "payout_reversal:reverse:settle:a", 4000, 8000)]
    assert led.bets["a"].status == "reversed"
    out = led.run(handlers.end_bet, REFUND)
    assert [(t.kind, t.amount, t.balance_after) for t in out.txs] == [("bet_refund", 2000, 10_000)]
    assert led.bets["a"].status == "voided" and led.account.balance == 10_000  # as if no bet
    for cmd, fn in ((reverse(), handlers.reverse_settlement), (REFUND, handlers.end_bet)):
        again = led.run(fn, cmd)
        assert again.txs == [] and again.breach is None  # redelivered: nothing moves
    assert led.account.balance == 10_000


def test_seed000_004_wallet_reversal_the_balance_cannot_cover_goes_below_zero_and_is_logged():
    from services.wallet.commands import Withdraw
    led = SpotLedger(deposit=2000)
    _won_bet(led)  # balance 4000
    led.run(handlers.operator_movement, Withdraw(player_id="p1", request_id="w", amount=4000))
    out = led.run(handlers.reverse_settlement, reverse())
    assert out.change.account.balance == -4000 and out.txs[0].balance_after == -4000
    from services.wallet.balance_guard import guarded
    assert guarded(out) is out  # a reversal may, nothing else may
    out = led.run(handlers.end_bet, REFUND)
    assert led.account.balance == -2000 and guarded(out) is out
    # no debit but a reversal passes the balance: bets are refused until it is covered
    refused = led.run(handlers.place_bet, PlaceBet(player_id="p1", bet_id="z", table_id="T1",
                                                   round_id="R2", bet="player", stake=1000))
    assert refused.answer.body["error"]["code"] == "insufficient_funds"


def test_seed000_004_wallet_reversal_of_a_lost_bet_moves_nothing_but_marks_it():
    led = SpotLedger(deposit=10_000)
    _won_bet(led, returned=0)
    out = led.run(handlers.reverse_settlement, reverse(amount=0))
    assert out.txs == [] and led.bets["a"].status == "reversed"
    led.run(handlers.end_bet, REFUND)
    assert led.account.balance == 10_000


@pytest.mark.parametrize("raw_type", ["settlement_reversed", "bet_settled"])
def test_seed000_004_wallet_turns_bets_settled_records_into_commands(raw_type):
    from services.wallet.commands import ending_command
    state, _ = settled_round()
    _, out = round_book.on_table_event(state, annulled(), NOW)
    record = next(r for _, _, r in out if r.type == raw_type)
    cmd = ending_command(record.model_dump_json().encode())
    if raw_type == "settlement_reversed":
        assert isinstance(cmd, ReverseSettlement) and cmd.amount == record.amount
    else:
        assert (cmd.ending, cmd.returned, cmd.settlement_id) == (
            "voided", record.returned, record.settlement_id)

