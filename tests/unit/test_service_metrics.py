"""The services' metrics logic, pure: route templates, consumer lag, what counts as a
new decision, the per-round stake-squared grouping, latency marks and breaches."""

from datetime import timedelta
from types import SimpleNamespace

import pytest
from kafka import TopicPartition
from prometheus_client import REGISTRY

from services.bet_settlement import decision_metrics, round_book
from services.infra import metrics
from services.infra.observability import UNMATCHED_ROUTE, lag_by_topic, route_template
from services.wallet import handlers, money_metrics
from services.wallet.commands import CreateAccount, Deposit, EndBet, Envelope
from shared.events.bet_events import BetSettled
from shared.events.table import RoundVoided
from tests.unit.round_book_support import NOW, event, open_round, placed, result
from tests.unit.wallet_support import Ledger, bet


def value(name: str, **labels) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


# --------------------------------------------------------------------- routes, lag

def request_for(canonical):
    resource = SimpleNamespace(canonical=canonical)
    return SimpleNamespace(match_info=SimpleNamespace(route=SimpleNamespace(resource=resource)))


def test_route_is_the_template_never_the_raw_path():
    assert route_template(request_for("/accounts/{player_id}")) == "/accounts/{player_id}"
    assert route_template(SimpleNamespace(match_info=None)) == UNMATCHED_ROUTE
    assert route_template(request_for(None)) == UNMATCHED_ROUTE


def test_lag_is_end_minus_committed_summed_per_topic():
    a0, a1, b0, c0 = (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0),
                      TopicPartition("c", 0))
    committed = {a0: 10, a1: 5, b0: 7, c0: -1}
    ends = {a0: 12, a1: 9, b0: 3, c0: 50}  # b0 behind the commit (truncated): never negative
    assert lag_by_topic(committed, ends) == {"a": 6, "b": 0}
    assert lag_by_topic({a0: 1}, {}) == {}


# ------------------------------------------------------------ bet-settlement decision metrics

def settled_round(*bets):
    state = open_round()
    for b in bets:
        state, _ = round_book.on_bet(state, b, NOW)
    return state


def test_replayed_decisions_and_settlements_are_not_new():
    state0 = open_round()
    state1, out = round_book.on_bet(state0, placed("a"), NOW)
    assert len(decision_metrics.fresh(state0, state1, [r for *_, r in out]).decisions) == 1
    state2, again = round_book.on_bet(state1, placed("a"), NOW)
    assert decision_metrics.fresh(state1, state2, [r for *_, r in again]).decisions == []
    # a clashing id from another player is a new (not stored) rejection
    state3, clash = round_book.on_bet(state1, placed("a", player="p2"), NOW)
    assert len(decision_metrics.fresh(state1, state3, [r for *_, r in clash]).decisions) == 1

    state4, settled = round_book.on_result(state1, result(), NOW)
    new = decision_metrics.fresh(state1, state4, [r for *_, r in settled])
    assert len(new.settlements) == 1 and new.profile == "sbo-baccarat"
    state5, replay = round_book.on_result(state4, result(), NOW)
    assert decision_metrics.fresh(state4, state5, [r for *_, r in replay]).settlements == []


def settlement(bet_id, bet, stake, position=None, outcome="lose"):
    return BetSettled(**placed(bet_id, bet=bet, stake=stake, position=position).model_dump(
        exclude={"type", "debit_tx_id", "placed_at"}), settlement_id=f"settle:{bet_id}",
        outcome=outcome, returned=0, cause="result:T1:R1", settled_at=NOW)


def test_stake_squared_counts_each_bet_and_position_once_per_round():
    round_ = [settlement("a", "banker", 100), settlement("b", "banker", 300),
              settlement("c", "tie", 50), settlement("d", "pair_plus", 10, position=1),
              settlement("e", "pair_plus", 20, position=2),
              settlement("f", "pair_plus", 30, position=1),
              settlement("g", "player", 999, outcome="void_refund"),
              settlement("h", "made_up", 5)]
    assert decision_metrics.stake_squared_by_bet(round_) == {
        "banker": 400 ** 2, "tie": 50 ** 2, "pair_plus": 40 ** 2 + 20 ** 2, "other": 5 ** 2}


def test_exactly_one_settlement_of_a_batch_is_last_of_round_with_its_timing():
    state = settled_round(placed("a"), placed("b", bet="banker"), placed("c", bet="tie"))
    published = result().model_copy(update={"last_card_at": NOW - timedelta(seconds=1)})
    at = NOW + timedelta(seconds=1)
    _, out = round_book.on_result(state, published, NOW, result_at=at)
    settled = [r for *_, r in out if isinstance(r, BetSettled)]
    assert [s.last_of_round for s in settled] == [False, False, True]
    assert {(s.result_at, s.last_card_at) for s in settled} == {(at, published.last_card_at)}
    void = event(RoundVoided, 5, reason_code="misdeal", reason_text="x", supervisor="S")
    _, out = round_book.on_table_event(state, void, NOW)
    voided = [r for *_, r in out if isinstance(r, BetSettled)]
    assert [s.last_of_round for s in voided] == [False, False, True]
    assert voided[-1].result_at == void.occurred_at and voided[-1].last_card_at is None


def test_a_second_different_settlement_of_a_round_is_a_conflict():
    state = settled_round(placed("a", bet="banker"), placed("b", bet="player"))
    assert round_book.conflicting_settlements(state, result(), NOW) == []  # not settled yet
    settled, _ = round_book.on_result(state, result(), NOW)
    assert round_book.conflicting_settlements(settled, result(), NOW) == []  # a redelivery
    void = event(RoundVoided, 5, reason_code="misdeal", reason_text="x", supervisor="S")
    assert round_book.conflicting_settlements(settled, void, NOW) != []


def test_exact_rtp_gauges_and_zero_series_are_set_at_start():
    decision_metrics.init_metrics()
    labels = {"profile": "sbo-baccarat", "bet": "banker"}
    assert 0.98 < value("croupier_rtp_exact_ratio", **labels) < 0.99
    assert 0.5 < value("croupier_rtp_exact_variance_ratio", **labels) < 1.5
    # the series exists from the start (0 then; other tests of this process may settle on it)
    assert value("croupier_settled_stake_squared_minor_units_total", **labels) is not None
    assert value("croupier_bets_total", bet="tiger", state="voided") is not None


# ------------------------------------------------------------------------ wallet

def ending(returned, last=True, **timing):
    return EndBet(player_id="p1", bet_id="b1", ending="settled", returned=returned,
                  settlement_id="settle:b1", table_id="T1", round_id="R1",
                  last_of_round=last, **timing)


@pytest.fixture
def ledger() -> Ledger:
    led = Ledger()
    led.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
    led.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d1", amount=10_000))
    led.run(handlers.place_bet, bet())
    return led


@pytest.mark.parametrize("returned", [0, 6000])
def test_latency_is_observed_once_when_the_marked_ending_first_applies(ledger, returned):
    cmd = ending(returned, result_at=NOW - timedelta(seconds=2),
                 last_card_at=NOW - timedelta(seconds=3))
    first = ledger.run(handlers.end_bet, cmd)
    assert money_metrics.round_latencies(cmd, first, NOW) == (2.0, 3.0)
    again = ledger.run(handlers.end_bet, cmd)
    assert money_metrics.round_latencies(cmd, again, NOW) == (None, None)


def test_unmarked_or_untimed_endings_observe_nothing(ledger):
    unmarked = ending(6000, last=False, result_at=NOW)
    assert money_metrics.round_latencies(unmarked, ledger.run(handlers.end_bet, unmarked),
                                           NOW) == (None, None)


def test_wallet_breaches_are_named(ledger):
    assert ledger.run(handlers.end_bet, ending(6000)).breach is None
    assert ledger.run(handlers.end_bet, ending(7000)).breach == "tx_id_conflict"
    refund = ending(3000).model_copy(update={"ending": "voided"})
    assert ledger.run(handlers.end_bet, refund).breach == "bet_ended_twice"
    stranger = ending(3000).model_copy(update={"bet_id": "nobody"})
    assert ledger.run(handlers.end_bet, stranger).breach == "ending_for_unknown_bet"
    assert set(metrics.WALLET_INVARIANTS) >= {"tx_id_conflict", "bet_ended_twice",
                                              "ending_for_unknown_bet"}


def test_wallet_record_counts_new_money_and_the_house_result(ledger):
    def money():
        return (value("croupier_money_minor_units_total", kind="payout", currency="IDR") or 0,
                value("croupier_house_result_minor_units", currency="IDR") or 0)

    before = money()
    cmd = ending(6000)
    outcome = ledger.run(handlers.end_bet, cmd)
    money_metrics.record(Envelope(command=cmd), outcome)
    money_metrics.record(Envelope(command=cmd), ledger.run(handlers.end_bet, cmd))  # replay
    after = money()
    assert (after[0] - before[0], after[1] - before[1]) == (6000, -6000)


def test_init_series_creates_every_combination_at_zero():
    metrics.init_series(metrics.INVARIANT_BREACHES, metrics.INVARIANTS)
    for name in metrics.INVARIANTS:
        assert value("croupier_invariant_breaches_total", invariant=name) is not None
    with pytest.raises(ValueError):
        metrics.breach("not_an_invariant")
