"""The crash simulator finds issue 17's scenarios on TODAY's wallet: each as the issue tells
it (a crafted schedule) and by a seed search of the explorer's random schedules. These tests
document that the design is broken; when the wallet becomes a fold of its log they are to
be turned around (the same schedules, every invariant holding).
docs/decisions/crash-simulator.md prints the reproducers."""

from __future__ import annotations

import pytest

from tests.crashsim.explorer import replay
from tests.crashsim.scenarios import SCENARIOS, crafted, searched


def details(result, name: str) -> list[str]:
    return [detail for broken, detail in result.failures if broken == name]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_crafted_schedule_breaks_what_the_issue_says(name):
    result = crafted(name)
    assert set(SCENARIOS[name].broken) <= result.names, result.reproducer()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_seed_search_finds_the_scenario_by_itself(name):
    scenario = SCENARIOS[name]
    found = searched(name)
    assert found is not None, f"no seed breaks {scenario.search_for}"
    assert found.seed is not None and found.reproducer().startswith(f"seed {found.seed}:")


def test_scenario_1_a_restarted_worker_ahead_of_its_changelog_makes_the_gap_permanent():
    steps = SCENARIOS["1"].steps
    moved = steps.index(("move", 0, "w1", False)) + 1
    at_move = replay(steps[:moved], SCENARIOS["1"].config)
    # the new owner recovered the account without the payout: the issue's numbers
    assert details(at_move, "served_balance_is_not_ledger") == [
        "p0: ledger 1,000,500, balance 997,500 (tx_count 2) on w1"]
    later = crafted("1")
    assert details(later, "history_overwritten") == [
        "p0:0000000003: payout:settle:b0, then stake_debit:b1 (offset 3)"]
    # the payout's redelivery finds its tx-ids entry "applied" and repairs nothing
    assert details(later, "served_balance_is_not_ledger") == [
        "p0: ledger 999,500, balance 996,500 (tx_count 3) on w1"]


def test_scenario_2_a_lost_idempotency_record_pays_twice_with_no_breach_flagged():
    result = crafted("2")
    assert details(result, "credits_are_not_endings") == [
        "b0 of p0 (settled 3,000, stake 500): endings say payout 3,000, ledger has payout 6,000"]
    assert not any(name.startswith("wallet_breach") for name in result.names)


def test_scenario_2b_a_retried_bet_whose_debit_index_was_lost_is_debited_twice_and_answered_200():
    result = crafted("2b")
    assert details(result, "bet_debited_twice") == ["b0 of p0: 2 stake debits"]
    assert details(result, "retry_answer_differs") == [
        "bet:p0:b0: answered 200 with stake_debit:b0 at balance 1,003,000; the ledger applied "
        "it first at 997,500"]


def test_scenario_3_a_lost_bet_status_keeps_the_payout_and_refunds_the_stake():
    result = crafted("3")
    assert details(result, "credits_are_not_endings") == [
        "b0 of p0 (annulled 3,000, stake 500): endings say bet_refund 500, payout 3,000, "
        "payout_reversal 3,000, ledger has bet_refund 500, payout 3,000"]
    assert "wallet_breach:reversal_of_unsettled_bet" in result.names
    assert details(result, "payout_kept_and_stake_refunded") == [
        "b0 of p0: payout 3,000 never reversed, stake 500 refunded"]


def test_scenario_4_faust_commits_past_a_record_it_dropped_around_a_rebalance():
    result = crafted("4")
    assert details(result, "input_lost") == [
        "bet_refund:b0 of p0 (commands offset 3) is not in the ledger"]


def test_beyond_the_issue_a_bet_status_ahead_of_its_account_loses_a_payout_from_the_ledger():
    """No worker ahead of its changelog here: an empty disk, and every tx-ids entry kept.
    The bet's `voided` reached the log, the refund's account write did not; `known_bet`
    checks only the debit's seq, so the redelivered settlement is refused as ended twice and
    its payout, whose record was never sent, is in the balance and never in the ledger."""
    result = crafted("5")
    assert details(result, "input_lost") == [
        "payout:settle:b0 of p0 (commands offset 3) is not in the ledger"]
    assert details(result, "served_balance_is_not_ledger") == [
        "p0: ledger 998,000, balance 1,000,000 (tx_count 5) on w0"]


def test_beyond_the_issue_a_settlement_re_published_after_an_annulment_is_a_false_breach():
    result = crafted("6")
    assert result.names == {"wallet_breach:bet_ended_twice"}
