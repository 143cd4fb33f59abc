"""The dealer and table statistics' live metrics (docs/decisions/archive.md, "Dealer and
table statistics"): dealer-event counts each dealer's rounds, voids, corrections and refused
inputs; bet-settlement each table's stake, return, theoretical return and its variance."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import REGISTRY

from services.bet_settlement.decision_metrics import Fresh, record_table_hold
from services.dealer_event.decisions import count_published, dealer_of
from services.dealer_event.state import CompletedRound, TableRound, TableState
from shared.events.bet_events import BetSettled
from shared.events.table import MisdealCorrected, RoundCompleted, RoundVoided
from shared.profile import load_profile
from shared.rtp import exact_rtp
from tests.unit.round_book_support import NOW, event, placed


def value(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def state_with(table: str, newest: str, dealer: str) -> TableState:
    state = TableState(table)
    state.round = TableRound(round_id=newest, round_number=2, dealer=dealer,
                             profile="sbo-baccarat", betting_closes_at=NOW)
    state.completed["R1"] = CompletedRound(
        shoe_id="S1", profile="sbo-baccarat", profile_version=None, profile_digest=None,
        dealer="Ana", cards=("AS", "3H", "2D", "3C"), completed_at=NOW)
    return state


def test_the_dealer_of_a_round_is_its_own_not_the_tables_newest():
    state = state_with("T1", "R2", "Budi")
    assert dealer_of(state) == "Budi"
    assert dealer_of(state, "R2") == "Budi"
    assert dealer_of(state, "R1") == "Ana"  # completed before Budi took the table
    assert dealer_of(state, "R0") == "unknown"
    assert dealer_of(TableState("T9")) == "none" and dealer_of(None) == "none"


def test_rounds_voids_and_corrections_are_counted_per_table_and_dealer():
    state = state_with("T1", "R2", "Budi")
    before = {(k, d): value("croupier_dealer_activity_total", table="T1", dealer=d, kind=k)
              for k in ("completed", "voided", "corrected") for d in ("Ana", "Budi")}
    count_published(event(RoundCompleted, 1, round_id="R1", cards=()), state)
    count_published(event(RoundVoided, 2, round_id="R2", reason_code="card_dropped",
                          reason_text="a card fell", supervisor="Sari"), state)
    count_published(event(MisdealCorrected, 3, round_id="R1", reason_text="laid wrong",
                          supervisor="Sari"), state)
    after = {k: value("croupier_dealer_activity_total", table="T1", dealer=k[1], kind=k[0])
             for k in before}
    assert {k: after[k] - before[k] for k in before} == {
        ("completed", "Ana"): 1, ("voided", "Ana"): 0, ("corrected", "Ana"): 1,
        ("completed", "Budi"): 0, ("voided", "Budi"): 1, ("corrected", "Budi"): 0}


def test_an_event_counted_without_the_tables_state_has_no_dealer_and_no_game():
    """dealer-event counts what its log backs; a round's end counted with no state at hand
    (`state` None) is still counted, under dealer `none` and game `other`."""
    labels = dict(table="T1", dealer="none", kind="voided")
    before = value("croupier_dealer_activity_total", **labels)
    rounds = value("croupier_rounds_total", table="T1", game="other", outcome="voided")
    count_published(event(RoundVoided, 2, round_id="R2", reason_code="card_dropped",
                          reason_text="a card fell", supervisor="Sari"), None)
    assert value("croupier_dealer_activity_total", **labels) == before + 1
    assert value("croupier_rounds_total", table="T1", game="other",
                 outcome="voided") == rounds + 1


def settled(bet_id, bet, stake, returned, table, position=None, outcome="win"):
    facts = placed(bet_id, bet=bet, stake=stake, position=position).model_dump(
        exclude={"type", "debit_tx_id", "placed_at"})
    return BetSettled(**{**facts, "table_id": table}, settlement_id=f"settle:{bet_id}",
                      outcome=outcome, returned=returned, cause="result:T1:R1",
                      settled_at=NOW + timedelta(seconds=1))


def test_a_tables_stake_return_theory_and_variance_are_counted():
    table = "HOLD-T1"
    odds = exact_rtp(load_profile("sbo-baccarat")).bets
    record_table_hold(Fresh("sbo-baccarat", settlements=[
        settled("a", "banker", 1_000, 1_950, table), settled("b", "banker", 3_000, 5_850, table),
        settled("c", "player", 500, 0, table, outcome="lose"),
        settled("d", "tie", 200, 200, table, outcome="void_refund")]))  # voided: no part

    def got(name: str) -> float:
        return value(f"croupier_table_{name}_total", table=table, currency="IDR")

    assert got("settled_stake_minor_units") == 4_500
    assert got("settled_returned_minor_units") == 7_800
    assert got("theoretical_returned_minor_units") == \
        4_000 * float(odds["banker"].rtp) + 500 * float(odds["player"].rtp)
    # the round's two banker bets win or lose together: one bet of 4,000
    assert got("hold_variance_minor_units_squared") == \
        4_000**2 * float(odds["banker"].variance) + 500**2 * float(odds["player"].variance)
