"""Player recall, statements and the significant-event log, from an archive on a local
directory (DuckDB over its Parquet files; no broker: the live tail is off)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.archive.queries import ArchiveQueries, recall_status
from services.infra.archive_store import DirectoryStore
from shared.topics import OPERATOR_ACTIONS_TOPIC, TABLE_EVENTS_TOPIC
from tests.archive_builder import archive_records, archive_rounds
from tests.round_builder import RecordedRound

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def alice_round(i: int) -> RecordedRound:
    return RecordedRound(table_id=f"T{i % 3}", round_id=f"R{i:02d}",
                         t0=T0 + timedelta(minutes=5 * i), cards="AS,3H,2D,3C,9S",
                         bets=((f"a{i}-1", "alice", "banker", 1_000 + i),
                               (f"a{i}-2", "alice", "fortune_six", 100),
                               (f"b{i}", "bob", "player", 500)))


@pytest.fixture(scope="module")
def archived(tmp_path_factory):
    store = DirectoryStore(tmp_path_factory.mktemp("archive"))
    rounds = [alice_round(i) for i in range(12)]
    rounds[11].annul(supervisor="Sari")
    archive_rounds(store, rounds)
    queries = ArchiveQueries(store)
    yield queries, rounds
    queries.close()


def test_recall_gives_the_last_ten_rounds_newest_first_with_cards_bets_and_balances(archived):
    queries, rounds = archived
    recall = queries.recall("alice", limit=10)
    got = recall["rounds"]
    assert [r["round_id"] for r in got] == [f"R{i:02d}" for i in range(11, 1, -1)]
    newest, settled = got[0], got[1]
    assert newest["status"] == "annulled"
    rec = rounds[10]
    assert settled["status"] == "settled" and settled["dealer"] == "Ana"
    assert settled["cards"] == [c for c in rec.result.model_dump(mode="json")["cards"]]
    assert settled["result"] == rec.result.model_dump(mode="json")["result"]
    assert [(b["bet"], b["stake"]) for b in settled["bets"]] == [("banker", 1_010),
                                                                 ("fortune_six", 100)]
    expected = {s.bet_id: s.returned for s in rec.settlements if s.player_id == "alice"}
    assert {b["bet_id"]: b["returned"] for b in settled["bets"]} == expected
    assert settled["per_category"]["banker"]["stake"] == 1_010
    alice_txs = [tx for tx in rec.wallet if tx.player_id == "alice"]
    assert settled["balance_before"] == 100_000
    assert settled["balance_after"] == alice_txs[-1].balance_after
    assert settled["staked"] == 1_110 and settled["returned"] == sum(expected.values())


def test_recall_of_a_player_with_no_rounds_and_a_bad_limit(archived):
    queries, _ = archived
    assert queries.recall("nobody") == {"player_id": "nobody", "rounds": []}
    with pytest.raises(ValueError, match="limit must be between 1 and 100"):
        queries.recall("alice", limit=0)


def test_a_statement_lists_the_movements_of_the_range_with_their_bets(archived):
    queries, rounds = archived
    since, until = T0 + timedelta(minutes=10), T0 + timedelta(minutes=20)  # rounds 2 and 3
    statement = queries.statement("alice", since, until)
    expected = [tx for r in rounds[2:4] for tx in r.wallet if tx.player_id == "alice"]
    assert [m["tx_id"] for m in statement["movements"]] == [tx.tx_id for tx in expected]
    first = statement["movements"][0]
    assert (first["kind"], first["amount"], first["bet"]) == ("stake_debit", -1_002, "banker")
    payouts = [m for m in statement["movements"] if m["kind"] == "payout"]
    assert payouts and all(m["bet"] and m["outcome"] == "win" for m in payouts)
    assert statement["closing_balance"] == expected[-1].balance_after
    assert statement["credits"] - statement["debits"] == sum(m["amount"] for m in
                                                             statement["movements"])
    with pytest.raises(ValueError, match="is not after its start"):
        queries.statement("alice", until, since)


def test_the_event_log_names_the_annulment_its_reversals_and_large_wins(archived):
    queries, rounds = archived
    events = queries.events()
    annulled = [e for e in events if e["kind"] == "round_annulled"]
    assert len(annulled) == 1
    assert annulled[0]["who"] == "Sari" and annulled[0]["round_id"] == "R11"
    assert annulled[0]["why"].startswith("card_exposed: a card was exposed")
    assert annulled[0]["topic"] == TABLE_EVENTS_TOPIC and annulled[0]["offset"] >= 0
    reversed_ = [e for e in events if e["kind"] == "settlement_reversed"]
    assert len(reversed_) == sum(1 for s in rounds[11].settlements
                                 if s.type == "settlement_reversed")
    first_profile = [e for e in events if e["kind"] == "profile_version_first_round"]
    assert len(first_profile) == 1 and first_profile[0]["round_id"] == "R00"
    assert not [e for e in events if e["kind"] == "large_win"]
    wins = queries.events(large_win=1_000)
    assert {e["who"] for e in wins if e["kind"] == "large_win"} == {"alice"}
    assert queries.events(since=T0 + timedelta(days=1)) == []


def test_seed002_keluhan_each_late_complaint_override_is_a_significant_event(tmp_path):
    """Every use of the late-complaint override is on `operator.actions`; the significant
    event log lists each with who, why and where it stands in the log."""
    from services.operator.complaints import check_window, complaint_from, override_record

    store = DirectoryStore(tmp_path / "archive")
    fields = {"player_id": "alice", "played_at": T0, "dealer": "Ana", "table_id": "T1",
              "round_id": "R1"}
    complaint = complaint_from(fields, T0 + timedelta(hours=30), override="regulator asked")
    override = check_window(complaint, T0, override_allowed=True)
    assert override is not None
    uses = [override_record(complaint, T0, override, "operator", T0 + timedelta(hours=30, minutes=m),
                            f"use-{m}") for m in (1, 2)]
    archive_records(store, [(OPERATOR_ACTIONS_TOPIC, u.table_id, u.model_dump_json().encode(),
                              int(u.occurred_at.timestamp() * 1000)) for u in uses])
    queries = ArchiveQueries(store)
    try:
        found = [e for e in queries.events() if e["kind"] == "complaint_window_overridden"]
    finally:
        queries.close()
    assert len(found) == 2
    assert {(e["table_id"], e["round_id"], e["who"], e["topic"]) for e in found} == {
        ("T1", "R1", "operator", OPERATOR_ACTIONS_TOPIC)}
    assert found[0]["why"] == "regulator asked (complaint of alice filed 30 h after the round)"


def test_realised_rtp_by_table_dealer_and_day_beside_the_exact_rtp(archived):
    queries, rounds = archived
    rows = queries.realised_rtp()
    banker = [r for r in rows if r["bet"] == "banker"]
    assert {r["table_id"] for r in banker} == {"T0", "T1", "T2"}
    assert all(r["dealer"] == "Ana" and r["profile"] == "sbo-baccarat" for r in rows)
    settled = [s for r in rounds[:11] for s in r.settlements if s.bet == "banker"]
    assert sum(r["bets"] for r in banker) == len(settled)  # the annulled round takes no part
    assert sum(r["returned"] for r in banker) == sum(s.returned for s in settled)
    one = banker[0]
    assert one["realised_rtp"] == round(one["returned"] / one["stake"], 6)
    assert 0.98 < one["exact_rtp"] < 0.99 and one["z"] is not None


def test_a_refreshed_connection_sees_new_segments(tmp_path):
    """The operator API keeps one connection: after `refresh`, a new segment is part of the
    answer."""
    store = DirectoryStore(tmp_path / "archive")
    archive_rounds(store, [alice_round(0)])
    queries = ArchiveQueries(store)
    try:
        assert len(queries.recall("alice")["rounds"]) == 1
        archive_rounds(store, [alice_round(1)])
        queries.refresh()
        assert [r["round_id"] for r in queries.recall("alice")["rounds"]] == ["R01", "R00"]
    finally:
        queries.close()


def test_the_floor_counts_the_open_rounds_bets_and_a_shoes_realised_rtp(archived):
    queries, rounds = archived
    # table T2 played R02, R05, R08 and R11 (annulled: its settlements reversed, left out)
    shoe = [r.round_id for r in rounds if r.table_id == "T2"]
    found = queries.floor(["R05", "R99"], {"T2": shoe, "T0": []})
    assert found["open_rounds"] == {"R05": [{"currency": "IDR", "bets": 3,
                                             "stake": 1_005 + 100 + 500}]}
    kept = [s for r in rounds[:11] if r.table_id == "T2" for s in r.settlements]
    (t2,) = found["shoes"]["T2"]
    assert (t2["bets"], t2["stake"], t2["returned"]) == (
        len(kept), sum(s.stake for s in kept), sum(s.returned for s in kept))
    assert t2["realised_rtp"] == round(t2["returned"] / t2["stake"], 6)
    assert "T0" not in found["shoes"]


def test_a_recalled_rounds_status_is_its_final_phase_or_the_recalls_own_word():
    assert [recall_status(p, True) for p in ("voided", "annulled", "completed", None)] == [
        "voided", "annulled", "settled", "settled"]
    assert [recall_status(p, False) for p in ("betting", "dealing", "completed", "voided")] == [
        "open", "open", "open", "voided"]
