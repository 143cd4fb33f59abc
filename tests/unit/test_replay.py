"""Replaying a round from its records: MATCH when all is well; each tampering is named."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from services.infra.settings import Settings
from services.operator.complaints import (
    ComplaintError,
    LateComplaintOverrideDisabled,
    check_window,
    complaint_from,
    override_record,
)
from services.operator.replay import replay_round
from services.operator.report_render import to_html, to_json, to_text
from shared.cards import parse_card
from shared.events.bet_events import BetSettled, SettlementReversed
from shared.events.registry import topic_adapter
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_SETTLED_TOPIC,
    OPERATOR_ACTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.round_builder import T0, RecordedRound


def _replay(rec: RecordedRound, events=None, player=None, **over):
    return replay_round(rec.table_id, rec.round_id, events if events is not None else rec.events,
                        None, over.get("result", rec.result), over.get("decisions", rec.decisions),
                        over.get("settlements", rec.settlements), over.get("wallet", rec.wallet),
                        player_id=player)


def test_a_faithful_round_replays_to_match():
    rec = RecordedRound()
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    assert report.hands == {"player": parse_cards_list("AS,2D,9S"), "banker": parse_cards_list("3H,3C")}
    assert report.scores == {"player": 2, "banker": 6} and report.winner == "banker"
    assert [b.returned for b in report.bets] == [1_950, 0, 1_300]
    assert report.dealer == "Ana" and report.status == "completed"


def parse_cards_list(text):
    return [parse_card(t) for t in text.split(",")]


def test_a_triple_face_round_replays_to_match():
    rec = RecordedRound(profile="triple-face-jp", cards="5H,JS,2C,3C,QS,3H,4C,5C,TH,6D,7C,8C,9D",
                        bets=())
    report = _replay(rec)
    assert report.verdict == "MATCH" and report.scores["player3"] == "P9"


def test_only_the_complaining_players_bets_are_listed():
    report = _replay(RecordedRound(), player="bob")
    assert [b.bet_id for b in report.bets] == ["b3"] and report.verdict == "MATCH"


@pytest.mark.parametrize("tamper, seq, problem", [
    ("change_card", 5, "altered"),        # the second card (seq 5) was changed
    ("drop_event", 6, "seq 5 missing"),   # seq 5 dropped: the chain breaks where 6 follows 4
    ("swap_events", 6, "out of order"),   # 5 and 6 swapped: 6 arrives where 5 belongs
])
def test_tampering_with_a_copy_of_the_events_is_named_at_its_seq(tamper, seq, problem):
    rec = RecordedRound()
    events = list(rec.events)
    cards_at = [i for i, e in enumerate(events) if e.type == "card_dealt"]
    if tamper == "change_card":
        i = cards_at[1]
        events[i] = events[i].model_copy(update={"card": parse_card("KS")})
    elif tamper == "drop_event":
        del events[cards_at[1]]
    else:
        i = cards_at[1]
        events[i], events[i + 1] = events[i + 1], events[i]
    report = _replay(rec, events=events)
    assert report.verdict == "DIFFERENCES"
    assert report.chain_breaks, "the chain must break"
    assert report.chain_breaks[0].startswith(f"chain breaks at seq {seq}:"), report.chain_breaks
    assert problem in report.chain_breaks[0]


def test_a_wrong_payout_and_a_missing_credit_are_spelled_out():
    rec = RecordedRound()
    settlements = [s.model_copy(update={"returned": 2_000}) if s.bet_id == "b1" else s
                   for s in rec.settlements]
    wallet = [tx for tx in rec.wallet if tx.tx_id != "payout:settle:b3"]
    report = _replay(rec, settlements=settlements, wallet=wallet)
    where = {d.where: d for d in report.differences}
    assert where["bets.settled settle:b1"].expected == "win 1950"
    assert where["bets.settled settle:b1"].recorded == "win 2000"
    assert "wallet.transactions payout:settle:b3" in where


def test_a_result_that_differs_from_the_rule_engine_is_named():
    rec = RecordedRound()
    wrong = rec.result.model_copy(update={"result": rec.result.result.model_copy(
        update={"winner": "player"})})
    report = _replay(rec, result=wrong)
    assert any(d.where.endswith(": winner") and d.expected == "banker" for d in report.differences)


def test_a_manifest_that_lists_other_bets_is_caught():
    rec = RecordedRound()
    decisions = [d.model_copy(update={"bet_count": 2}) if d.type == "round_manifest" else d
                 for d in rec.decisions]
    assert any("manifest" in d.where for d in _replay(rec, decisions=decisions).differences)


def test_a_decision_published_again_after_a_crash_is_the_same_bet_in_the_manifest():
    """The e2e run's kill -9 of a wallet worker made it publish some bets again; bet-settlement
    re-published their acceptances (as it must) and replay counted each twice."""
    rec = RecordedRound()
    accepted = [d for d in rec.decisions if d.type == "bet_accepted"]
    at = next(i for i, d in enumerate(rec.decisions) if d.type == "round_manifest")
    decisions = [*rec.decisions[:at], *accepted, *rec.decisions[at:]]
    report = _replay(rec, decisions=decisions)
    assert report.verdict == "MATCH", report.differences
    assert len(report.bets) == len(accepted)


def test_reports_render_for_people_and_systems():
    report = _replay(RecordedRound())
    text = to_text(report)
    assert "VERDICT: MATCH" in text and "A♠" in text and "Ana" in text
    page = to_html(report)
    assert page.startswith("<!doctype html>") and "<svg" in page and "http" not in page.lower()
    assert '"verdict": "MATCH"' in to_json(report)


def test_a_complaint_must_name_everything():
    with pytest.raises(ComplaintError, match="played at, dealer") as err:
        complaint_from({"player_id": "alice", "table_id": "T1", "round_id": "R1"}, T0)
    assert err.value.code == "incomplete"


def test_seed002_keluhan_a_late_complaint_is_refused_by_default_naming_the_rule():
    """Seed 002, Keluhan: "Keluhan apapun yang diajukan setelah periode waktu tersebut akan
    ditolak": the override is off unless the operator setting says otherwise."""
    fields = {"player_id": "alice", "played_at": T0, "dealer": "Ana", "table_id": "T1",
              "round_id": "R1"}
    assert check_window(complaint_from(fields, T0 + timedelta(hours=23)), T0) is None
    with pytest.raises(ComplaintError, match="24-hour") as err:
        check_window(complaint_from(fields, T0 + timedelta(hours=25)), T0)
    assert err.value.code == "out_of_window" and "akan ditolak" in str(err.value)
    # an override asked for where the setting is off is refused, by name
    with pytest.raises(LateComplaintOverrideDisabled) as off:
        check_window(complaint_from(fields, T0 + timedelta(hours=25), override="regulator"), T0)
    assert off.value.code == "override_disabled"
    assert "CROUPIER_LATE_COMPLAINT_OVERRIDE" in str(off.value) and "akan ditolak" in str(off.value)
    assert Settings.model_fields["late_complaint_override"].default is False


def test_seed002_keluhan_the_override_with_the_setting_is_recorded_as_a_significant_event():
    fields = {"player_id": "alice", "played_at": T0, "dealer": "Ana", "table_id": "T1",
              "round_id": "R1"}
    complaint = complaint_from(fields, T0 + timedelta(hours=25), override="regulator asked")
    override = check_window(complaint, T0, override_allowed=True)
    assert override is not None and override.late == timedelta(hours=25)
    assert "overridden" in override.note and "regulator asked" in override.note
    now = T0 + timedelta(hours=25, minutes=1)
    record = override_record(complaint, T0, override, "operator", now, "a1")
    assert (record.type, record.operator, record.reason) == (
        "complaint_window_overridden", "operator", "regulator asked")
    assert (record.table_id, record.round_id, record.player_id) == ("T1", "R1", "alice")
    assert record.late_seconds == 25 * 3600 and record.occurred_at == now
    assert topic_adapter(OPERATOR_ACTIONS_TOPIC).validate_json(record.model_dump_json()) == record


def _floor_round(bets: int, players: int):
    """A round of `bets` bets from `players` players, as parsed records of each topic."""
    from services.operator.event_reader import PARSERS
    from tests.floor_builder import Floor

    floor = Floor(seed=9)
    played = floor.play_round("T9", bets, [f"p{i}" for i in range(players)], T0)
    parsed: dict[str, list] = {}
    for topic, _, value, _ in floor.records:
        if topic in PARSERS:  # not wallet.endings: copies of bets.* records, not events
            parsed.setdefault(topic, []).append(PARSERS[topic](value))
    return played, parsed


def test_a_round_of_two_thousand_bets_replays_to_match_and_renders():
    played, parsed = _floor_round(2_000, 1_000)
    wallet = [tx for tx in parsed[WALLET_TRANSACTIONS_TOPIC] if tx.round_id == played.round_id]
    report = replay_round("T9", played.round_id, parsed[TABLE_EVENTS_TOPIC], None,
                          parsed[ROUND_RESULTS_TOPIC][0], parsed[BETS_DECISIONS_TOPIC],
                          parsed[BETS_SETTLED_TOPIC], wallet)
    assert report.verdict == "MATCH", report.differences[:5]
    assert len(report.bets) == 2_000 and all(b.wallet for b in report.bets)
    assert sum(b.decision.startswith("rejected") for b in report.bets) == 40
    text, page, data = to_text(report), to_html(report), to_json(report)
    assert "VERDICT: MATCH" in text and text.count("\n      wallet: ") >= 2_000
    assert page.count("<tr><td>T9-r1-b") == 2_000 and '"verdict": "MATCH"' in data
    one = replay_round("T9", played.round_id, parsed[TABLE_EVENTS_TOPIC], None,
                       parsed[ROUND_RESULTS_TOPIC][0], parsed[BETS_DECISIONS_TOPIC],
                       parsed[BETS_SETTLED_TOPIC], [tx for tx in wallet if tx.player_id == "p3"],
                       player_id="p3")
    assert one.verdict == "MATCH" and {b.bet_id for b in one.bets} == {"T9-r1-b3", "T9-r1-b1003"}


def test_a_missing_payout_among_thousands_is_named():
    played, parsed = _floor_round(2_000, 1_000)
    wallet = [tx for tx in parsed[WALLET_TRANSACTIONS_TOPIC] if tx.round_id == played.round_id]
    dropped = next(tx for tx in wallet if tx.kind == "payout")
    report = replay_round("T9", played.round_id, parsed[TABLE_EVENTS_TOPIC], None,
                          parsed[ROUND_RESULTS_TOPIC][0], parsed[BETS_DECISIONS_TOPIC],
                          parsed[BETS_SETTLED_TOPIC], [tx for tx in wallet if tx is not dropped])
    assert [d.where for d in report.differences] == [f"wallet.transactions {dropped.tx_id}"]


def test_the_money_window_runs_from_the_rounds_first_event_to_past_its_end():
    from services.operator.round_reader import SETTLE_SLACK, START_SLACK, RoundReader

    rec = RecordedRound()
    start, end_ms = RoundReader.money_span(rec.events, rec.round_id)
    completed = next(e for e in rec.events if e.type == "round_completed")
    assert start == rec.events[0].occurred_at - START_SLACK  # the shoe event before the opening
    assert end_ms == int((completed.occurred_at + SETTLE_SLACK).timestamp() * 1000)
    still_open = [e for e in rec.events if e.type in ("shoe_started", "round_opened")]
    _, open_end = RoundReader.money_span(still_open, rec.round_id)
    assert open_end == int((still_open[-1].occurred_at + SETTLE_SLACK).timestamp() * 1000)


# --- issue 12 item 8: a round annulled after completion ------------------------------------

@pytest.mark.parametrize("refund_key", ["bet", "settlement"])
def test_issue12_item8_replay_shows_the_settlement_its_reversal_and_the_annulment(refund_key):
    rec = RecordedRound()
    rec.annul(refund_key=refund_key)
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    assert report.status == "annulled" and "card_exposed" in report.annul_reason
    assert "Sari" in report.annul_reason and report.timeline[-1].what == "round_annulled"
    assert [b.returned for b in report.bets] == [1_950, 0, 1_300]     # the original settlement
    assert [b.reversed for b in report.bets] == [1_950, 0, 1_300]     # taken back
    assert [b.expected_reversed for b in report.bets] == [1_950, 0, 1_300]
    assert [b.refund for b in report.bets] == [1_000, 500, 100]       # then the stake refunded
    assert report.bets[0].wallet[1:] == [
        "payout 1950 -> balance 100450 (payout:settle:b1)",  # alice staked 1,000 + 500
        "payout_reversal 1950 -> balance 98500 (payout_reversal:reverse:settle:b1)",
        f"bet_refund 1000 -> balance 99500 (bet_refund:{'' if refund_key == 'bet' else 'annul-refund:'}b1)"]
    text = to_text(report)
    assert "ANNULLED after completion by Sari" in text
    assert "annulled: settlement reversed, 1,950 taken back (rule engine: 1,950); then refunded " \
           "1,000 (rule engine: 1,000)" in text
    page = to_html(report)
    assert "<th>annulment</th>" in page and "reversed 1,950 (engine 1,950)" in page
    assert to_json(report)


def test_issue12_item8_an_annulment_read_further_on_in_the_log_is_checked_by_its_hash():
    rec = RecordedRound()
    annulment = rec.annul()
    events = rec.events[:-1]  # the chain run ends with the round; the annulment came later
    report = replay_round(rec.table_id, rec.round_id, events, None, rec.result, rec.decisions,
                          rec.settlements, rec.wallet, annulment=annulment)
    assert report.verdict == "MATCH" and report.status == "annulled", report.differences
    forged = annulment.model_copy(update={"supervisor": "Mallory"})
    report = replay_round(rec.table_id, rec.round_id, events, None, rec.result, rec.decisions,
                          rec.settlements, rec.wallet, annulment=forged)
    assert report.verdict == "DIFFERENCES" and "altered" in report.chain_breaks[-1]


def test_issue12_item8_a_missing_or_short_reversal_and_a_missing_refund_are_named():
    rec = RecordedRound()
    rec.annul()
    settlements = [s for s in rec.settlements if s.type != "settlement_reversed" or s.bet_id != "b1"]
    settlements = [s.model_copy(update={"amount": 1_000}) if s.type == "settlement_reversed"
                   and s.bet_id == "b3" else s for s in settlements]
    settlements = [s for s in settlements if s.settlement_id != "annul-refund:b2"]
    report = _replay(rec, settlements=settlements)
    where = {d.where: d for d in report.differences}
    assert where["bets.settled reverse:settle:b1"].recorded == "no reversal"
    assert where["bets.settled reverse:settle:b3"].expected == "settle:b3 reversed: 1300 taken back"
    assert where["bets.settled annul-refund:b2"].expected == "void_refund 500"


def test_issue12_item8_a_reversal_without_an_annulment_is_a_difference():
    rec = RecordedRound()
    rec.annul()
    report = _replay(rec, events=rec.events[:-1])  # the annulment is not in the log
    assert report.verdict == "DIFFERENCES" and report.status == "completed"
    assert "bets.settled reverse:settle:b1" in {d.where for d in report.differences}


def test_a_redealt_round_replays_with_the_cards_dealt_after_the_redeal():
    """Seed 000 §1 (item 7): the cards before a redeal are set aside, never part of the round."""
    from shared.events.table import CardDealt, RoundRedealt, seal

    rec = RecordedRound()
    base = {"schema_version", "event_id", "table_id", "seq", "occurred_at", "input_id",
            "prev_hash", "hash", "type"}
    specs = [(type(e), {k: getattr(e, k) for k in type(e).model_fields if k not in base})
             for e in rec.events]
    at = next(i for i, (kind, _) in enumerate(specs) if kind is CardDealt)
    aside = [parse_card("KD"), parse_card("QD")]
    specs[at:at] = [*[(CardDealt, {"round_id": rec.round_id, "card": c, "shoe_position": 90 + i,
                                   "round_position": i}) for i, c in enumerate(aside)],
                    (RoundRedealt, {"round_id": rec.round_id, "set_aside": tuple(aside),
                                    "reason_text": "burning error", "supervisor": "Sari"})]
    events, prev = [], "0" * 64
    for seq, (kind, fields) in enumerate(specs, start=1):
        events.append(seal(kind, table_id=rec.table_id, seq=seq, prev_hash=prev,
                           occurred_at=T0 + timedelta(seconds=seq), **fields))
        prev = events[-1].hash
    report = _replay(rec, events=events)
    assert report.verdict == "MATCH", report.differences
    assert [str(c) for c in report.cards] == ["AS", "3H", "2D", "3C", "9S"]
    assert any("REDEALT by Sari" in e.detail and "KD QD" in e.detail for e in report.timeline)


# --- issue 19 item 1: corrections after the fact (seed 004 §5) ------------------------------

PLAYER_WIN = "9S,3H,KD,3C"  # Player 9 (natural) against Banker 6: the banker win becomes a player's


def _corrected(rec: RecordedRound, late: bool = True, **over):
    """The replay of a corrected round; `late`: its corrections read further on in the log
    (passed apart from the round's events), else among them."""
    events = [e for e in rec.events if e.type != "round_corrected"] if late else rec.events
    return replay_round(rec.table_id, rec.round_id, events, None,
                        over.get("result", rec.result), rec.decisions,
                        over.get("settlements", rec.settlements), over.get("wallet", rec.wallet),
                        corrections=over.get("corrections", rec.corrections if late else ()),
                        corrected_results=over.get("corrected_results", rec.corrected_results))


@pytest.mark.parametrize("late", [True, False])
def test_issue19_a_corrected_round_replays_to_match_with_both_settlements(late):
    rec = RecordedRound()
    rec.correct(PLAYER_WIN, reason_text="the video shows 9S, not AS")
    report = _corrected(rec, late)
    assert report.verdict == "MATCH", report.differences
    assert report.status == "corrected" and report.winner == "banker"  # the original result
    [c] = report.corrections
    assert (c.correction, c.reason_code, c.supervisor, c.winner, c.recorded_winner) == (
        1, "mis_scan", "Sari", "player", "player")
    assert " ".join(map(str, c.replaced_cards)) == "AS 3H 2D 3C 9S"
    assert c.result_id == "result:T1:R1:c1" and report.timeline[-1].what == "round_corrected"
    b1, b2, b3 = report.bets
    assert [(s.what, s.record_id, s.amount) for s in b1.history] == [
        ("settled", "settle:b1", 1_950), ("reversed", "reverse:settle:b1", 1_950),
        ("settled", "settle:b1:c1", 0)]
    assert [(s.what, s.record_id, s.amount) for s in b2.history] == [
        ("settled", "settle:b2", 0), ("reversed", "reverse:settle:b2", 0),
        ("settled", "settle:b2:c1", 1_000)]
    assert (b1.net, b2.net, b3.net) == (-1_000, 500, -100)
    assert (b1.expected_net, b2.expected_net, b3.expected_net) == (-1_000, 500, -100)
    assert b1.wallet[-1] == "payout_reversal 1950 -> balance 98500 (payout_reversal:reverse:settle:b1)"
    assert b2.wallet[-1] == "payout 1000 -> balance 99500 (payout:settle:b2:c1)"
    text = to_text(report)
    assert "Correction 1 by Sari at" in text and "mis_scan - the video shows 9S, not AS" in text
    assert "result: player" in text and "settle:b1 win 1,950 -> reversed 1,950 -> settle:b1:c1 " \
        "lose 0; net -1,000" in text
    data = json.loads(to_json(report))
    assert data["corrections"][0]["reason_text"] == "the video shows 9S, not AS"
    assert [s["record_id"] for s in data["bets"][1]["history"]] == [
        "settle:b2", "reverse:settle:b2", "settle:b2:c1"]
    page = to_html(report)
    assert "Correction 1" in page and "the video shows 9S, not AS" in page and "Sari" in page
    assert "settle:b1:c1" in page and "reverse:settle:b1" in page


def test_issue19_a_correction_of_a_correction_replays_to_match():
    rec = RecordedRound()
    rec.correct(PLAYER_WIN)
    rec.correct("AS,3H,2D,3C,9S", supervisor="Budi", reason_text="the first correction was wrong")
    report = _corrected(rec)
    assert report.verdict == "MATCH", report.differences
    assert [(c.correction, c.supervisor, c.winner) for c in report.corrections] == [
        (1, "Sari", "player"), (2, "Budi", "banker")]
    b1 = report.bets[0]
    assert [s.record_id for s in b1.history] == [
        "settle:b1", "reverse:settle:b1", "settle:b1:c1", "reverse:settle:b1:c1", "settle:b1:c2"]
    assert [b.net for b in report.bets] == [950, -500, 1_200]  # as the round first settled
    assert "Correction 2 by Budi" in to_text(report)


def test_issue19_a_bet_the_correction_does_not_change_keeps_its_settlement():
    rec = RecordedRound(bets=(("b1", "alice", "banker", 1_000), ("b9", "carol", "tie", 100)))
    rec.correct(PLAYER_WIN)  # a tie bet loses to the banker win and to the player win alike
    report = _corrected(rec)
    assert report.verdict == "MATCH", report.differences
    assert [s.record_id for s in report.bets[1].history] == ["settle:b9"]
    assert report.bets[1].net == -100
    assert "unchanged" in to_html(report) and "settlements:" not in to_text(report).split(
        "b9", 1)[1]
    # a reversal and a settlement again of the bet the correction does not change are named
    original = next(s for s in rec.settlements if s.settlement_id == "settle:b9")
    facts = original.model_dump(include={"bet_id", "player_id", "table_id", "round_id", "bet",
                                         "position", "stake", "currency"})
    rogue = [SettlementReversed(**facts, reversal_id="reverse:settle:b9",
                                settlement_id="settle:b9", original_outcome="lose", amount=0,
                                reason_code="mis_scan", reason_text="x", supervisor="Sari",
                                cause="result:T1:R1:c1", reversed_at=T0),
             BetSettled(**facts, settlement_id="settle:b9:c1", outcome="lose", returned=0,
                        cause="result:T1:R1:c1", settled_at=T0)]
    where = {d.where: d for d in _corrected(rec, settlements=[*rec.settlements, *rogue]).differences}
    assert set(where) == {"bets.settled reverse:settle:b9", "bets.settled settle:b9:c1"}
    assert where["bets.settled settle:b9:c1"].expected == (
        "nothing: correction 1 does not change the bet (lose 0 either way)")


def test_issue19_a_corrected_result_that_is_not_the_rule_engines_is_named():
    rec = RecordedRound()
    rec.correct(PLAYER_WIN)
    wrong = rec.corrected_results[0]
    wrong = wrong.model_copy(update={"result": wrong.result.model_copy(update={"winner": "banker"})})
    report = _corrected(rec, corrected_results=[wrong])
    assert report.verdict == "DIFFERENCES"
    d = next(d for d in report.differences if d.where == "round.results result:T1:R1:c1: winner")
    assert (d.expected, d.recorded) == ("player", "banker")
    missing = _corrected(rec, corrected_results=[])
    assert any(d.where == "round.results result:T1:R1:c1" and d.recorded ==
               "no corrected result published" for d in missing.differences)


def test_issue19_a_settlement_again_with_a_wrong_amount_and_a_missing_reversal_are_named():
    rec = RecordedRound()
    rec.correct(PLAYER_WIN)
    settlements = [s.model_copy(update={"returned": 900}) if s.type == "bet_settled"
                   and s.settlement_id == "settle:b2:c1" else s for s in rec.settlements]
    settlements = [s for s in settlements if not (s.type == "settlement_reversed"
                                                  and s.bet_id == "b1")]
    report = _corrected(rec, settlements=settlements)
    where = {d.where: d for d in report.differences}
    assert where["bets.settled settle:b2:c1"].expected == "win 1000 (cause result:T1:R1:c1)"
    assert where["bets.settled settle:b2:c1"].recorded == "win 900 (cause result:T1:R1:c1)"
    assert where["bets.settled reverse:settle:b1"].recorded == "no reversal"
    assert where["bets.settled reverse:settle:b1"].expected == (
        "settle:b1 (win) reversed: 1950 taken back (cause result:T1:R1:c1)")
    # a reversal that takes back another amount than the settlement it names returned
    short = [s.model_copy(update={"amount": 1_000}) if s.type == "settlement_reversed"
             and s.bet_id == "b1" else s for s in rec.settlements]
    where = {d.where: d for d in _corrected(rec, settlements=short).differences}
    assert "1000 taken back" in where["bets.settled reverse:settle:b1"].recorded


def test_issue19_the_wallet_moving_other_than_the_records_is_named():
    rec = RecordedRound()
    rec.correct(PLAYER_WIN)
    wallet = [tx for tx in rec.wallet if tx.tx_id != "payout_reversal:reverse:settle:b1"]
    wallet = [tx.model_copy(update={"amount": 999}) if tx.tx_id == "payout:settle:b2:c1" else tx
              for tx in wallet]
    report = _corrected(rec, wallet=wallet)
    where = {d.where: d for d in report.differences}
    assert where["wallet.transactions payout_reversal:reverse:settle:b1"].recorded == "no transaction"
    assert where["wallet.transactions payout:settle:b2:c1"].expected == "1000"
    assert report.bets[1].net == 499 and report.bets[1].expected_net == 500


def test_issue19_a_forged_or_altered_correction_is_named_and_left_out():
    rec = RecordedRound()
    rec.correct(PLAYER_WIN)
    from tests.event_keys import events_key

    forged = rec.corrections[0].model_copy(update={"supervisor": "Mallory"})
    report = replay_round(rec.table_id, rec.round_id, rec.events[:-1], None, rec.result,
                          rec.decisions, rec.settlements, rec.wallet, corrections=[forged],
                          corrected_results=rec.corrected_results, events_key=events_key())
    assert report.verdict == "DIFFERENCES" and not report.corrections
    assert any(d.where == "table.events seq 10 (round_corrected)" for d in report.differences)


def test_issue19_money_windows_around_corrections_that_overlap_are_read_once():
    from services.operator.round_reader import _merged

    def ms(t):
        return int(t.timestamp() * 1000)

    hour = timedelta(hours=1)
    spans = [(T0 + 3 * hour, ms(T0 + 3 * hour + timedelta(minutes=2))),
             (T0, ms(T0 + timedelta(minutes=2))),
             (T0 + timedelta(minutes=1), ms(T0 + timedelta(minutes=3)))]
    assert _merged(spans) == [(T0, ms(T0 + timedelta(minutes=3))),
                              (T0 + 3 * hour, ms(T0 + 3 * hour + timedelta(minutes=2)))]
