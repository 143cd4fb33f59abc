"""Replay in seamless mode (issue 20): for every bet, each call croupier made to the operator's
wallet (wallet.operator_calls) and its answer, checked against what the round's records call
for; in transfer mode (no calls) nothing changes."""

from __future__ import annotations

import json
from datetime import timedelta

from services.operator.replay import replay_round
from services.operator.replay_calls import OWED_WINDOW
from services.operator.report_render import to_html, to_json, to_text
from shared.events.bet_events import BetRejected
from shared.events.operator_wallet import (
    OperatorAnswer,
    OperatorCallRecord,
    WalletRequest,
)
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.round_builder import T0, RecordedRound

LONG_AFTER = T0 + timedelta(days=2)
PLAYER_WIN = "9S,3H,KD,3C"  # Player 9 (natural) against Banker 6: the banker win becomes a player's


def _replay(rec: RecordedRound, calls=None, now=LONG_AFTER, player=None, **over):
    return replay_round(rec.table_id, rec.round_id, rec.events, None, rec.result,
                        over.get("decisions", rec.decisions), rec.settlements,
                        over.get("wallet", rec.wallet), player_id=player,
                        annulment=over.get("annulment"), corrections=rec.corrections,
                        corrected_results=rec.corrected_results,
                        operator_calls=rec.operator_calls if calls is None else calls, now=now)


def _where(report) -> list[str]:
    return [d.where for d in report.differences]


def _ended_at(rec: RecordedRound):
    return next(e.occurred_at for e in rec.events if e.type == "round_completed")


def _unplaced_debit(rec: RecordedRound, bet_id: str, outcome: str, code: str | None = None,
                    player: str = "alice", amount: int = 5_000) -> OperatorCallRecord:
    """A debit of a bet the wallet never placed: refused (`code`) or unanswered."""
    at = rec.t0 + timedelta(seconds=3)
    return OperatorCallRecord(
        request=WalletRequest(transaction_id=f"debit:{bet_id}", kind="debit", player_id=player,
                              amount=amount, currency="IDR", table_id=rec.table_id,
                              round_id=rec.round_id, bet_id=bet_id, session_token="s",
                              requested_at=at),
        answer=OperatorAnswer(outcome=outcome, error_code=code,
                              http_status=402 if code else None,
                              answered_at=at + timedelta(seconds=3)))


def _rollback_of(debit: OperatorCallRecord, outcome: str = "ok", code: str | None = None
                 ) -> OperatorCallRecord:
    req = debit.request
    return OperatorCallRecord(
        request=req.model_copy(update={"transaction_id": f"rollback:{req.transaction_id}",
                                       "kind": "rollback", "session_token": None,
                                       "reference_transaction_id": req.transaction_id,
                                       "requested_at": debit.answer.answered_at}),
        answer=OperatorAnswer(outcome=outcome, error_code=code, balance=100_000,
                              answered_at=debit.answer.answered_at + timedelta(seconds=1)))


def test_a_clean_seamless_round_shows_every_call_and_matches():
    rec = RecordedRound()
    rec.seamless()
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    assert report.wallet_mode == "seamless" and report.unplaced_bets == []
    b1 = report.bets[0]
    assert [(c.kind, c.transaction_id, c.amount, c.outcome) for c in b1.operator_calls] == [
        ("debit", "debit:b1", 1_000, "ok"), ("credit", "credit:settle:b1", 1_950, "ok")]
    assert b1.operator_calls[0].balance == 99_000 and b1.operator_calls[0].attempts == 1
    assert b1.operator_calls[0].currency == "IDR" and b1.operator_calls[0].requested_at == T0
    # b2 lost: a credit of 0 closes its round at the operator
    assert [(c.kind, c.amount) for c in report.bets[1].operator_calls] == [
        ("debit", 500), ("credit", 0)]


def test_transfer_mode_has_no_calls_and_nothing_changes():
    rec = RecordedRound()
    report = _replay(rec)
    assert report.verdict == "MATCH" and report.wallet_mode == "transfer"
    assert all(b.operator_calls == [] for b in report.bets)
    assert "operator" not in to_text(report) and "operator's wallet" not in to_html(report)


def test_a_lost_bet_without_a_credit_of_zero_is_allowed():
    rec = RecordedRound()
    rec.seamless(zero_credits=False)
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    assert [c.kind for c in report.bets[1].operator_calls] == ["debit"]


def test_a_missing_credit_is_a_difference_once_the_round_ended_long_ago():
    rec = RecordedRound()
    calls = [c for c in rec.seamless() if c.request.transaction_id != "credit:settle:b3"]
    report = _replay(rec, calls)
    assert report.verdict == "DIFFERENCES"
    assert _where(report) == ["wallet.operator_calls credit:settle:b3"]
    diff = report.differences[0]
    assert diff.expected == "credit 1300 IDR, answered ok" and "no call recorded" in diff.recorded
    assert report.bets[2].operator_calls[-1].outcome == "missing"


def test_a_missing_credit_is_owed_while_the_round_ended_recently():
    rec = RecordedRound()
    calls = [c for c in rec.seamless() if c.request.transaction_id != "credit:settle:b3"]
    soon = _ended_at(rec) + OWED_WINDOW - timedelta(seconds=1)
    report = _replay(rec, calls, now=soon)
    assert report.verdict == "MATCH", report.differences
    owed = report.bets[2].operator_calls[-1]
    assert (owed.transaction_id, owed.outcome, owed.amount) == ("credit:settle:b3", "owed", 1_300)
    assert any("owed" in n for n in report.notes)
    assert "credit credit:settle:b3 1,300 IDR -> owed (no answer recorded yet)" in to_text(report)
    late = _replay(rec, calls, now=_ended_at(rec) + OWED_WINDOW)
    assert _where(late) == ["wallet.operator_calls credit:settle:b3"]


def test_a_credit_of_the_wrong_amount_or_currency_is_named():
    rec = RecordedRound()
    calls = rec.seamless()
    i = next(i for i, c in enumerate(calls) if c.request.transaction_id == "credit:settle:b1")
    calls[i] = calls[i].model_copy(update={"request": calls[i].request.model_copy(
        update={"amount": 1_900, "currency": "JPY"})})
    report = _replay(rec, calls)
    assert report.differences[0].where == "wallet.operator_calls credit:settle:b1"
    assert (report.differences[0].expected, report.differences[0].recorded) == (
        "credit 1950 IDR", "credit 1900 JPY")


def _refused(rec: RecordedRound, transaction_id: str, code: str):
    """The round replayed with the operator's answer to `transaction_id` a refusal."""
    calls = rec.seamless()
    i = next(i for i, c in enumerate(calls) if c.request.transaction_id == transaction_id)
    calls[i] = calls[i].model_copy(update={"answer": OperatorAnswer(
        outcome="refused", error_code=code, http_status=404,
        answered_at=calls[i].answer.answered_at)})
    return _replay(rec, calls)


def test_a_refused_credit_is_a_difference():
    report = _refused(RecordedRound(), "credit:settle:b1", "unknown_player")
    assert _where(report) == ["wallet.operator_calls credit:settle:b1"]
    assert report.differences[0].recorded == "refused unknown_player"


def test_a_bet_placed_though_its_debit_was_refused_is_a_difference():
    report = _refused(RecordedRound(), "debit:b2", "insufficient_funds")
    assert _where(report) == ["wallet.operator_calls debit:b2"]
    diff = report.differences[0]
    assert diff.recorded == "refused insufficient_funds" and "the bet was placed" in diff.expected


def test_a_refused_debit_of_a_bet_never_placed_is_shown_and_matches():
    rec = RecordedRound()
    refused = _unplaced_debit(rec, "b9", "refused", "insufficient_funds")
    report = _replay(rec, [*rec.seamless(), refused])
    assert report.verdict == "MATCH", report.differences
    [bet] = report.unplaced_bets
    assert (bet.bet_id, bet.player_id, bet.stake, bet.outcome) == (
        "b9", "alice", 5_000, "refused insufficient_funds")
    assert [c.transaction_id for c in bet.operator_calls] == ["debit:b9"]


def test_an_unanswered_debit_with_its_rollback_matches():
    rec = RecordedRound()
    debit = _unplaced_debit(rec, "b9", "no_answer")
    report = _replay(rec, [*rec.seamless(), debit, _rollback_of(debit)])
    assert report.verdict == "MATCH", report.differences
    [bet] = report.unplaced_bets
    assert [(c.kind, c.transaction_id, c.outcome) for c in bet.operator_calls] == [
        ("debit", "debit:b9", "no_answer"), ("rollback", "rollback:debit:b9", "ok")]
    # the operator never recorded the debit and says so: as good as a yes
    unknown = _replay(rec, [*rec.seamless(), debit,
                            _rollback_of(debit, "refused", "transaction_not_found")])
    assert unknown.verdict == "MATCH", unknown.differences


def test_an_unanswered_debit_without_its_rollback_is_owed_then_a_difference():
    rec = RecordedRound()
    debit = _unplaced_debit(rec, "b9", "no_answer")
    report = _replay(rec, [*rec.seamless(), debit])
    assert _where(report) == ["wallet.operator_calls rollback:debit:b9"]
    soon = _replay(rec, [*rec.seamless(), debit], now=debit.answer.answered_at + timedelta(minutes=1))
    assert soon.verdict == "MATCH" and soon.unplaced_bets[0].operator_calls[-1].outcome == "owed"


def test_an_unplaced_bet_with_a_stake_debit_or_an_ok_debit_without_a_decision_is_named():
    rec = RecordedRound()
    refused = _unplaced_debit(rec, "b9", "refused", "insufficient_funds")
    debited = rec.wallet[0].model_copy(update={"tx_id": "stake_debit:b9", "cause_id": "b9"})
    report = _replay(rec, [*rec.seamless(), refused], wallet=[*rec.wallet, debited])
    assert _where(report) == ["wallet.transactions stake_debit:b9"]
    ok = _unplaced_debit(rec, "b8", "ok")
    assert _where(_replay(rec, [*rec.seamless(), ok])) == ["wallet.operator_calls debit:b8"]


def test_a_rejected_bet_has_the_rollback_of_its_debit():
    rec = RecordedRound(bets=(("b1", "alice", "banker", 1_000),))
    accepted = rec.decisions[0]
    rejected = BetRejected(**accepted.model_dump(exclude={"type"}), reason_code="late",
                           message="after the close")
    rec.decisions = [rejected]  # (no manifest: it lists the accepted bets)
    rec.settlements = []
    rec.wallet = [rec.wallet[0], rec.wallet[0].model_copy(update={
        "tx_id": "bet_refund:b1", "kind": "bet_refund", "balance_after": 100_000})]
    calls = rec.seamless()
    assert [c.request.transaction_id for c in calls] == ["debit:b1", "rollback:debit:b1"]
    assert _replay(rec).verdict == "MATCH", _replay(rec).differences
    report = _replay(rec, calls[:1])
    assert _where(report) == ["wallet.operator_calls rollback:debit:b1"]


def _voided_round() -> RecordedRound:
    """The round voided by a supervisor after betting closed: each stake refunded."""
    from shared.events.bet_events import BetSettled, settlement_id
    from shared.events.table import RoundVoided

    rec = RecordedRound()
    rec.events = [e for e in rec.events if e.type in ("shoe_started", "round_opened",
                                                      "betting_closed")]
    rec._add(RoundVoided, round_id=rec.round_id, reason_code="misdeal",
             reason_text="cards dealt out of order", supervisor="Sari")
    rec.result = None
    accepted = [d for d in rec.decisions if d.type == "bet_accepted"]
    rec.settlements = [BetSettled(**d.model_dump(exclude={"type", "decided_at"}),
                                  settlement_id=settlement_id(d.bet_id), outcome="void_refund",
                                  returned=d.stake, cause=f"void:{rec.round_id}",
                                  settled_at=rec.t0) for d in accepted]
    balances = {p: 100_000 for p in rec.players}
    rec.wallet = [tx for tx in rec.wallet if tx.kind == "stake_debit"] + [
        rec._tx(d.player_id, "bet_refund", d.stake, d.bet_id, balances[d.player_id])
        for d in accepted]
    return rec


def test_a_voided_rounds_bets_have_the_rollback_of_their_debit():
    rec = _voided_round()
    calls = rec.seamless()
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    assert [c.transaction_id for c in report.bets[0].operator_calls] == [
        "debit:b1", "rollback:debit:b1"]
    without = [c for c in calls if c.request.transaction_id != "rollback:debit:b2"]
    assert _where(_replay(rec, without)) == ["wallet.operator_calls rollback:debit:b2"]


def test_a_corrected_round_rolls_back_the_credit_and_credits_again():
    rec = RecordedRound()
    rec.correct(PLAYER_WIN, after=timedelta(minutes=5))
    calls = rec.seamless()
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    changed = [b for b in report.bets if len(b.history) > 1]
    assert changed, "the correction must change a bet"
    for b in changed:
        kinds = [(c.kind, c.transaction_id) for c in b.operator_calls]
        assert kinds[:2] == [("debit", f"debit:{b.bet_id}"),
                             ("credit", f"credit:settle:{b.bet_id}")]
        assert kinds[2:] == [("rollback", f"rollback:credit:settle:{b.bet_id}"),
                             ("credit", f"credit:settle:{b.bet_id}:c1")]
        rollback = b.operator_calls[2]
        assert rollback.amount == b.operator_calls[1].amount
        assert rollback.reference_transaction_id == f"credit:settle:{b.bet_id}"
    b = changed[0]
    without = [c for c in calls if c.request.transaction_id != f"rollback:credit:settle:{b.bet_id}"]
    assert _where(_replay(rec, without)) == [
        f"wallet.operator_calls rollback:credit:settle:{b.bet_id}"]
    # the correction was made a minute ago: its calls are still owed, not yet a difference
    recent = _replay(rec, without, now=rec.corrections[0].occurred_at + timedelta(minutes=1))
    assert recent.verdict == "MATCH", recent.differences


def test_an_annulled_round_rolls_back_each_credit_then_each_debit():
    rec = RecordedRound()
    rec.annul()
    rec.seamless()
    annulment = rec.events[-1]
    report = _replay(rec, annulment=annulment)
    assert report.verdict == "MATCH", report.differences
    assert [c.transaction_id for c in report.bets[0].operator_calls] == [
        "debit:b1", "credit:settle:b1", "rollback:credit:settle:b1", "rollback:debit:b1"]


def test_a_call_for_no_bet_of_the_round_is_named():
    rec = RecordedRound()
    calls = rec.seamless()
    stray = calls[1].model_copy(update={"request": calls[1].request.model_copy(
        update={"transaction_id": "credit:settle:zz", "bet_id": "zz"})})
    assert _where(_replay(rec, [*calls, stray])) == ["wallet.operator_calls credit:settle:zz"]


def test_only_the_complaining_players_calls_are_checked():
    rec = RecordedRound()
    calls = [c for c in rec.seamless() if c.request.player_id == "bob"]
    report = _replay(rec, calls, player="bob")
    assert report.verdict == "MATCH", report.differences
    assert [c.transaction_id for c in report.bets[0].operator_calls] == [
        "debit:b3", "credit:settle:b3"]


# --- rendering ------------------------------------------------------------------------------

def _round_with_every_kind_of_call():
    rec = RecordedRound()
    debit = _unplaced_debit(rec, "b9", "no_answer")
    refused = _unplaced_debit(rec, "b8", "refused", "insufficient_funds", player="bob")
    calls = [c for c in rec.seamless() if c.request.transaction_id != "credit:settle:b3"]
    return _replay(rec, [*calls, debit, _rollback_of(debit), refused],
                   now=_ended_at(rec) + timedelta(minutes=1))


def test_text_shows_each_call_and_answer_per_bet():
    text = to_text(_round_with_every_kind_of_call())
    assert "wallet: seamless" in text
    assert "operator: debit debit:b1 1,000 IDR (requested 09:00:00.000) -> ok, balance 99,000, " \
           "1 attempt, answered 09:00:00.040" in text
    assert "operator: credit credit:settle:b1 1,950 IDR" in text
    assert "credit credit:settle:b3 1,300 IDR -> owed (no answer recorded yet)" in text
    assert "Bets not placed" in text and "b9  alice  stake 5,000 IDR  debit no answer" in text
    assert "operator: rollback rollback:debit:b9 5,000 IDR" in text
    assert "refused insufficient_funds (402)" in text
    assert "VERDICT: MATCH" in text


def test_json_carries_every_call_and_answer():
    data = json.loads(to_json(_round_with_every_kind_of_call()))
    assert data["wallet_mode"] == "seamless" and data["verdict"] == "MATCH"
    debit = data["bets"][0]["operator_calls"][0]
    assert (debit["kind"], debit["transaction_id"], debit["amount"], debit["currency"],
            debit["outcome"], debit["balance"], debit["attempts"]) == (
        "debit", "debit:b1", 1_000, "IDR", "ok", 99_000, 1)
    assert debit["requested_at"].startswith("2026-11-30T09:00:00") and debit["answered_at"]
    assert data["bets"][2]["operator_calls"][-1]["outcome"] == "owed"
    assert [b["bet_id"] for b in data["unplaced_bets"]] == ["b9", "b8"]
    assert data["unplaced_bets"][1]["operator_calls"][0]["error_code"] == "insufficient_funds"


def test_html_shows_each_call_and_answer_per_bet():
    page = to_html(_round_with_every_kind_of_call())
    assert "<th>operator's wallet</th>" in page
    assert "debit debit:b1 1,000 IDR (requested 09:00:00.000) -&gt; ok, balance 99,000" in page
    assert "-&gt; owed (no answer recorded yet)" in page
    assert "Bets not placed" in page and "rollback rollback:debit:b9" in page
    assert "refused insufficient_funds (402)" in page


# --- reading the round's calls from the log -------------------------------------------------

def _reader(topics: dict[str, list[int]]):
    from services.operator.event_reader import PARSERS
    from services.operator.round_reader import RoundReader

    reader = RoundReader.__new__(RoundReader)  # no consumer: only the windows are asked for
    reader._partition_ids = {name: topics.get(name, [0, 1, 2, 3]) for name in PARSERS}
    return reader


def test_the_calls_are_read_on_every_partition_until_the_owed_window_has_passed():
    end_ms = int(T0.timestamp() * 1000)
    owed_ms = end_ms + int(OWED_WINDOW.total_seconds() * 1000)
    windows = {w.topic: w for w in _reader({}).money_windows("T1", "R1", end_ms, None)}
    calls = windows[WALLET_OPERATOR_CALLS_TOPIC]
    assert calls.partitions == [0, 1, 2, 3]
    assert not calls.stop(None, owed_ms) and calls.stop(None, owed_ms + 1)
    assert windows[WALLET_TRANSACTIONS_TOPIC].stop(None, end_ms + 1)  # the movements' window is shorter
    assert calls.keep(b"alice", b'{"round_id":"R1"}') and not calls.keep(b"alice", b'{"R2"}')
    one = {w.topic: w for w in _reader({}).money_windows("T1", "R1", end_ms, "alice")}
    assert len(one[WALLET_OPERATOR_CALLS_TOPIC].partitions) == 1
    assert not one[WALLET_OPERATOR_CALLS_TOPIC].keep(b"bob", b'{"round_id":"R1"}')


def test_a_broker_without_the_calls_topic_is_read_without_it():
    reader = _reader({WALLET_OPERATOR_CALLS_TOPIC: []})
    topics = [w.topic for w in reader.money_windows("T1", "R1", 0, None)]
    assert WALLET_OPERATOR_CALLS_TOPIC not in topics and WALLET_TRANSACTIONS_TOPIC in topics


def test_only_the_rounds_calls_are_kept():
    from services.operator.round_reader import RoundRecords, _keep_round_money

    rec = RecordedRound()
    calls = rec.seamless()
    other = calls[0].model_copy(update={"request": calls[0].request.model_copy(
        update={"round_id": "R2"})})
    found = {ROUND_RESULTS_TOPIC: [], BETS_DECISIONS_TOPIC: [], BETS_SETTLED_TOPIC: [],
             WALLET_TRANSACTIONS_TOPIC: [], WALLET_OPERATOR_CALLS_TOPIC: [*calls, other]}
    records = RoundRecords("T1", "R1")
    _keep_round_money(records, found, None)
    assert records.operator_calls == calls
    _keep_round_money(records, found, "bob")
    assert {c.request.player_id for c in records.operator_calls} == {"bob"}


def test_the_calls_parse_as_the_wallet_publishes_them():
    from services.operator.event_reader import PARSERS

    rec = RecordedRound()
    calls = rec.seamless()
    parsed = [PARSERS[t](v) for t, _, v, _ in rec.records() if t == WALLET_OPERATOR_CALLS_TOPIC]
    assert parsed == calls


def test_a_rounds_calls_aged_out_of_the_log_are_read_from_the_archive(tmp_path):
    from collections import Counter

    from kafka import TopicPartition

    from services.infra.archive_store import DirectoryStore
    from tests.archive_builder import archive_rounds

    rec = RecordedRound()
    calls = rec.seamless()
    store = DirectoryStore(tmp_path / "archive")
    archive_rounds(store, [rec])
    reader = _reader({})
    reader.archive = store
    end_ms = int(_ended_at(rec).timestamp() * 1000)
    [window] = [w for w in reader.money_windows("T1", "R1", end_ms, None)
                if w.topic == WALLET_OPERATOR_CALLS_TOPIC]
    kept: list = []
    for p in window.partitions:  # the log's first offset past every archived one: aged out
        reader._take_archived(TopicPartition(window.topic, p), window, rec.t0, 10**6, 10**6,
                              kept, Counter())
    assert sorted(kept, key=lambda c: c.request.transaction_id) == sorted(
        calls, key=lambda c: c.request.transaction_id)
