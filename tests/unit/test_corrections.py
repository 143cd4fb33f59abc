"""Seed 004 §5, "Pihak manajemen memiliki wewenang untuk membatalkan atau mengoreksi hasil dari
hand yang salah": a completed round's result corrected, through the pure cores downstream of
dealer-event. game-evaluation publishes the corrected result naming the one it replaces;
bet-settlement reverses and settles again only the bets whose settlement changes (records
that compensate, never edits); the wallet moves exactly what those records say, once,
whatever is delivered again; a correction of a correction works the same way."""

from __future__ import annotations

from services.bet_settlement import round_book
from services.game_evaluation.evaluator import EvaluationState, corrected_result, observe
from services.wallet import handlers
from services.wallet.commands import (
    CreateAccount,
    Deposit,
    EndBet,
    ReverseSettlement,
    ending_command,
)
from shared.cards import parse_cards
from shared.events.bet_events import BetSettled, SettlementReversed
from shared.events.results import RoundResultPublished, result_id
from shared.events.table import RoundCorrected
from shared.profile import load_profile
from shared.rounds import evaluate_round
from tests.unit.round_book_support import NOW, PROFILE, event, kinds, open_round, opened, placed
from tests.unit.wallet_support import Ledger, bet

ORIGINAL = "9S,2H,KD,5C"  # Player 9 (a natural) against Banker 7: Player wins
CORRECTED = "2S,2H,KD,5C,3D"  # Player 2, draws 3: 5 against Banker 7: Banker wins


def original_result() -> RoundResultPublished:
    cards = parse_cards(ORIGINAL)
    return RoundResultPublished(
        result_id=result_id("T1", "R1"), table_id="T1", round_id="R1", shoe_id="s1",
        profile=PROFILE, dealer="D", cards=tuple(cards), completed_seq=9,
        completed_hash="0" * 64, occurred_at=NOW,
        result=evaluate_round(load_profile(PROFILE), cards))


def correction(n: int, cards: str, replaced: str, seq: int = 20) -> RoundCorrected:
    return event(RoundCorrected, seq + n, shoe_id="s1", profile=PROFILE, dealer="D",
                 cards=tuple(parse_cards(cards)), replaced_cards=tuple(parse_cards(replaced)),
                 correction=n, reason_code="mis_scan", reason_text="the video shows 2S",
                 supervisor="sup-1")


def settled_round():
    book = open_round()
    for bet_id, side in (("b1", "player"), ("b2", "banker"), ("b3", "tie")):
        book, _ = round_book.on_bet(book, placed(bet_id, bet=side, stake=2000), NOW)
    book, out = round_book.on_result(book, original_result(), NOW)
    return book, out


def by_bet(outputs) -> dict[str, list]:
    records: dict[str, list] = {}
    for _, _, r in outputs:
        if isinstance(r, BetSettled | SettlementReversed):
            records.setdefault(r.bet_id, []).append(r)
    return records


def test_game_evaluation_publishes_the_corrected_result_naming_the_one_it_replaces():
    first = corrected_result(correction(1, CORRECTED, ORIGINAL))
    assert first.result_id == "result:T1:R1:c1" and first.result.winner == "banker"
    assert first.correction is not None and first.correction.replaces == "result:T1:R1"
    assert (first.correction.reason_code, first.correction.supervisor) == ("mis_scan", "sup-1")
    second = corrected_result(correction(2, ORIGINAL, CORRECTED))
    assert second.result_id == "result:T1:R1:c2" and second.correction.replaces == first.result_id
    assert second.result == original_result().result
    # the evaluator publishes it for the event itself, whatever round it follows now
    seen = observe(EvaluationState(table_id="T1", last_seq=20, last_hash="0" * 64),
                   correction(1, CORRECTED, ORIGINAL).model_copy(
                       update={"seq": 21, "prev_hash": "0" * 64}))
    assert seen.result == first
    # a result without a correction dumps exactly as before (its field is left out)
    assert "correction" not in original_result().model_dump(mode="json")


def test_bet_settlement_reverses_and_settles_again_only_the_bets_the_correction_changes():
    book, first_out = settled_round()
    first = {b: rs[0] for b, rs in by_bet(first_out).items()}
    assert {b: (s.outcome, s.returned) for b, s in first.items()} == {
        "b1": ("win", 4000), "b2": ("lose", 0), "b3": ("lose", 0)}
    book, out = round_book.on_result(book, corrected_result(correction(1, CORRECTED, ORIGINAL)),
                                     NOW)
    records = by_bet(out)
    assert set(records) == {"b1", "b2"}  # the tie bet loses either way: it stands
    for bet_id, (reversal, again) in records.items():
        assert isinstance(reversal, SettlementReversed) and isinstance(again, BetSettled)
        assert reversal.settlement_id == first[bet_id].settlement_id
        assert reversal.amount == first[bet_id].returned
        assert again.settlement_id == f"settle:{bet_id}:c1" and again.cause == "result:T1:R1:c1"
        assert reversal.supervisor == "sup-1" and reversal.reason_code == "mis_scan"
    assert (records["b1"][1].outcome, records["b1"][1].returned) == ("lose", 0)
    assert (records["b2"][1].outcome, records["b2"][1].returned) == ("win", 3900)  # 5% commission
    # seen again: nothing new
    _, again_out = round_book.on_result(book, corrected_result(correction(1, CORRECTED, ORIGINAL)),
                                        NOW)
    assert by_bet(again_out) == {}
    # a correction of the correction, back to the original cards
    book, out = round_book.on_result(book, corrected_result(correction(2, ORIGINAL, CORRECTED)),
                                     NOW)
    back = by_bet(out)
    assert {b: (r.settlement_id, s.settlement_id, s.returned) for b, (r, s) in back.items()} == {
        "b1": ("settle:b1:c1", "settle:b1:c2", 4000), "b2": ("settle:b2:c1", "settle:b2:c2", 0)}
    # a correction naming a result that no longer stands changes nothing
    _, stale = round_book.on_result(book, corrected_result(correction(1, CORRECTED, ORIGINAL)),
                                    NOW)
    assert by_bet(stale) == {}


def test_the_wallet_moves_exactly_what_the_records_say_once_whatever_is_delivered_again():
    led = Ledger()
    led.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
    led.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d1", amount=10_000))
    led.run(handlers.place_bet, bet(bet_id="b1", stake=3000))
    assert led.account.balance == 7000

    def end(settlement_id: str, returned: int) -> EndBet:
        return EndBet(player_id="p1", bet_id="b1", ending="settled", returned=returned,
                      settlement_id=settlement_id, table_id="T1", round_id="R1")

    def reverse(settlement_id: str, amount: int) -> ReverseSettlement:
        return ReverseSettlement(player_id="p1", bet_id="b1", settlement_id=settlement_id,
                                 reversal_id=f"reverse:{settlement_id}", amount=amount,
                                 table_id="T1", round_id="R1")

    moves: list[str] = []

    def run(fn, cmd):
        out = led.run(fn, cmd)
        moves.extend(tx.kind for tx in out.txs)
        return out

    run(handlers.end_bet, end("settle:b1", 6000))
    assert led.account.balance == 13_000
    run(handlers.reverse_settlement, reverse("settle:b1", 6000))  # the correction: lost
    run(handlers.end_bet, end("settle:b1:c1", 0))
    assert led.account.balance == 7000 and led.bets["b1"].status == "settled"
    assert led.bets["b1"].settlement_id == "settle:b1:c1"
    for stale in (end("settle:b1", 6000), reverse("settle:b1", 6000)):  # delivered again
        out = run(handlers.end_bet if isinstance(stale, EndBet) else
                  handlers.reverse_settlement, stale)
        assert out.answer.status == 200 and out.change is None and out.breach is None
    assert led.account.balance == 7000 and led.bets["b1"].status == "settled"
    run(handlers.reverse_settlement, reverse("settle:b1:c1", 0))  # corrected back: won
    run(handlers.end_bet, end("settle:b1:c2", 6000))
    assert led.account.balance == 13_000 and led.bets["b1"].settlement_id == "settle:b1:c2"
    assert moves == ["payout", "payout_reversal", "payout"]
    # the wallet reads bet-settlement's records by their parsed type, as it does live
    book, _ = settled_round()
    _, out = round_book.on_result(book, corrected_result(correction(1, CORRECTED, ORIGINAL)),
                                  NOW)
    commands = [ending_command(r.model_dump_json().encode()) for r in by_bet(out)["b1"]]
    assert [type(c).__name__ for c in commands] == ["ReverseSettlement", "EndBet"]


def test_an_annulment_after_a_correction_takes_back_the_settlement_standing_then_refunds():
    """The round, corrected, is then annulled (seeds 000 §1, 004 §1): each bet's standing
    settlement (the correction's where it changed the bet, the original where not) is
    reversed, then the stake refunded; the wallet ends every bet at its stake, once."""
    from shared.events.table import RoundAnnulled

    book, first_out = settled_round()
    book, fix_out = round_book.on_result(
        book, corrected_result(correction(1, CORRECTED, ORIGINAL)), NOW)
    standing = {b: rs[-1] for b, rs in (by_bet(first_out) | by_bet(fix_out)).items()}
    annul = event(RoundAnnulled, 40, reason_code="other", reason_text="video review",
                  supervisor="sup-2")
    _, out = round_book.on_table_event(book, annul, NOW)
    records = by_bet(out)
    assert set(records) == {"b1", "b2", "b3"}
    for bet_id, (reversal, refund) in records.items():
        assert isinstance(reversal, SettlementReversed) and isinstance(refund, BetSettled)
        assert reversal.settlement_id == standing[bet_id].settlement_id
        assert reversal.amount == standing[bet_id].returned
        assert (refund.outcome, refund.returned) == ("void_refund", 2000)
    assert records["b1"][0].settlement_id == "settle:b1:c1"  # the correction's, not the first
    assert records["b3"][0].settlement_id == "settle:b3"  # unchanged by the correction

    # the wallet, fed every record in log order, ends each bet at exactly its stake back
    led = Ledger()
    led.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
    led.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d1", amount=10_000))
    for bet_id in ("b1", "b2", "b3"):
        led.run(handlers.place_bet, bet(bet_id=bet_id, stake=2000))
    assert led.account.balance == 4000
    for _, _, record in [*first_out, *fix_out, *out]:
        if isinstance(record, BetSettled | SettlementReversed):
            command = ending_command(record.model_dump_json().encode())
            fn = handlers.end_bet if isinstance(command, EndBet) else handlers.reverse_settlement
            assert led.run(fn, command).breach is None
    assert led.account.balance == 10_000
    assert {b: led.bets[b].status for b in ("b1", "b2", "b3")} == dict.fromkeys(
        ("b1", "b2", "b3"), "voided")


def test_a_round_id_reused_after_its_round_settled_moves_none_of_the_old_rounds_money():
    """A device reuses a round id more than 500 rounds later (dealer-event no longer keeps
    the first round, docs/decisions/tables.md): the new round's bets are rejected
    `round_closed`, and its annulment, its correction and its result, which name the id but
    follow the new RoundOpened on the chain, never reverse or settle again the old round's
    bets. A correction of the old round itself (before the reuse on the chain, read late
    from `rounds.results`) still applies."""
    from shared.events.table import RoundAnnulled

    book, first_out = settled_round()
    book, out = round_book.on_table_event(book, opened(seq=600), NOW)
    assert out == [] and book.header.reused_at == 600 and book.status == "settled"
    _, out = round_book.on_bet(book, placed("b9", stake=1000), NOW)
    assert kinds(out) == ["BetRejected:round_closed"]
    annul = event(RoundAnnulled, 700, reason_code="other", reason_text="video review",
                  supervisor="sup-2")
    after_annul, out = round_book.on_table_event(book, annul, NOW)
    assert out == [] and after_annul.status == "settled"
    new_fix = corrected_result(correction(1, CORRECTED, ORIGINAL, seq=640))
    assert new_fix.completed_seq > 600
    _, out = round_book.on_result(book, new_fix, NOW)
    assert out == []
    old_fix = corrected_result(correction(1, CORRECTED, ORIGINAL))  # seq 21: the old round's
    _, out = round_book.on_result(book, old_fix, NOW)
    assert set(by_bet(out)) == {"b1", "b2"}  # the bets the correction changes
