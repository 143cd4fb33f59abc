"""Table procedures as the operator sheets state them (issue 12), one test per clause.

Each test is named after its sheet and clause: `seed004_s3` is seed 004, section 3
(`/work/shared/seeds/`); seed 002 and seed 001 have no numbered sections where the
clause is quoted by its heading. Decisions: docs/decisions/procedures.md.
"""

from __future__ import annotations

from shared.cards import parse_card, parse_cards
from shared.events.inputs import (
    AnnulRounds,
    Burn,
    CloseBetting,
    CloseTable,
    CorrectRound,
    CutCard,
    ExposeCard,
    NewShoe,
    OpenRound,
    ReopenTable,
    ReportBurnError,
    ReportMisdeal,
    ReportTwoCards,
    ScanCard,
    ShoeFirstCard,
    VoidRound,
)
from shared.events.table import (
    BettingClosed,
    RoundAnnulled,
)
from tests.unit.round_book_support import placed
from tests.unit.table_machine_support import Table, types
from tests.unit.table_procedures_support import (
    TF_ROUND,
    assert_rebuilds,
    big_small,
    results_of,
    scan,
    settled,
)

# --- item 1: seed 004 §3, the cut card burned for the next game ---------------------------

def test_seed004_s3_cut_card_in_the_burn_voids_the_next_round():
    """"Jika permainan berakhir dan kartu kuning terbakar untuk game berikutnya, permainan
    yang terakhir tidak akan di mulai." """
    t = big_small()
    t.round("R1", "9S,2H,KD,5C", burns=1)
    t.ok(OpenRound, round_id="R2", dealer="Ayu")
    t.close("R2")
    events = t.ok(CutCard)  # the yellow card came out while burning for R2
    assert types(events) == ["cut_card_reached", "round_voided", "shoe_ended"]
    assert events[1].round_id == "R2" and events[1].reason_code == "cut_card_in_burn"
    assert t.state.round_status == {"R1": "completed", "R2": "voided"}
    assert t.refused(OpenRound, round_id="R3", dealer="Ayu") == "no_shoe"
    assert types(t.ok(NewShoe, shoe_id="S2", profile="baccarat-big-small")) == ["shoe_started"]
    assert_rebuilds(t)


def test_seed004_s3_cut_card_between_two_cards_still_makes_the_round_the_last():
    """"Jika kartu kuning tertutup diantara 2 kartu, permainan pada kartu yang berjalan akan
    menjadi hand terakhir": a round already being dealt is finished."""
    t = big_small()
    t.round("R1", "9S", burns=1)
    assert types(t.ok(CutCard)) == ["cut_card_reached"]
    assert types(scan(t, "R1", "2H,KD,5C"))[-1] == "round_completed"
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "shoe_finished"


def test_seed002_cut_card_after_a_round_opened_at_an_sbo_table_deals_it_as_the_last():
    """Seed 002: "Tidak ada Burn Card": a cut card reported once a round opened, before its
    first card, cannot have come out in a burn; the round is dealt as the last of the shoe
    (seed 004 §3: "permainan pada kartu yang berjalan akan menjadi hand terakhir")."""
    t = Table()
    t.shoe("sbo-tiger")
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    events = t.ok(CutCard)
    assert types(events) == ["cut_card_reached"] and events[0].round_id == "R1"  # no void
    t.close("R1")
    assert types(scan(t, "R1", "9S,2H,KD,5C"))[-1] == "round_completed"
    bets = [placed("a", bet="player", stake=1000)]
    assert [(s.outcome, s.returned) for s in settled(t, "R1", bets)] == [("win", 2000)]
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "shoe_finished"
    assert types(t.ok(NewShoe, shoe_id="S2", profile="sbo-tiger")) == ["shoe_ended",
                                                                      "shoe_started"]
    assert_rebuilds(t)


# --- item 3: seed 002, the 30-second betting timer ----------------------------------------

def test_seed002_betting_timer_a_device_cannot_close_before_the_30_seconds_end():
    """"Pemain harus memasang taruhan sebelum Betting Timer (Waktu Bertaruh) 30 detik pada
    bagian tengah layar berakhir." """
    t = Table()
    t.shoe("sbo-baccarat")
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    t.clock.advance(5)
    assert t.refused(CloseBetting, round_id="R1") == "betting_window_open"
    assert t.refused(CloseBetting, round_id="R1", role="supervisor") == "close_reason_required"
    t.clock.advance(25)  # the window ends: the timer closes it, a device's close finds it so
    outcome = t.send(t.make.make(CloseBetting, round_id="R1"))
    assert outcome.refusal.code == "betting_already_closed"
    assert types(outcome.events) == ["betting_closed"] and outcome.events[0].reason == "timer"
    assert_rebuilds(t)


def test_seed002_betting_timer_a_supervisor_may_close_early_with_a_reason():
    t = Table()
    t.shoe("sbo-baccarat")
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    closed = t.ok(CloseBetting, round_id="R1", role="supervisor",
                  reason_text="studio evacuation drill")[0]
    assert closed.reason == "supervisor" and closed.supervisor == "supervisor-1"
    assert closed.reason_text == "studio evacuation drill"
    # a close without the supervisor's fields hashes as it did before they existed
    timer = BettingClosed(event_id="T1:9", table_id="T1", seq=9, occurred_at=closed.occurred_at,
                          prev_hash="0" * 64, hash="0" * 64, round_id="R1", reason="timer")
    assert "supervisor" not in timer.model_dump() and "reason_text" not in timer.model_dump()
    assert_rebuilds(t)


def test_seed002_betting_timer_a_device_may_close_once_the_window_has_ended():
    t = Table()
    t.shoe("sbo-baccarat")
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    t.clock.advance(30)
    from services.dealer_event.table_machine import apply  # no timer tick before the input

    outcome = apply(t.state, t.make.make(CloseBetting, round_id="R1"), t.clock.now(), t.config)
    assert outcome.refusal is None and outcome.events[0].reason == "dealer"


# --- item 5: seed 001, a misdeal voids the round at triple-face-jp -------------------------

def test_seed001_misdeal_voids_the_round_and_refunds_every_bet():
    """"カードを落としたり、間違った配り順序やカードの配置をした場合、このラウンドは無効となり、
    すべての賭け金を返金する必要があります" """
    t = Table()
    t.shoe("triple-face-jp")
    t.round("R1", "AS,2S,3S")
    assert t.refused(ReportMisdeal, round_id="R1", role="device",
                     reason_text="wrong box") == "role_not_allowed"
    events = t.ok(ReportMisdeal, round_id="R1", reason_text="P2's card laid in P3's box")
    assert types(events) == ["round_voided"] and events[0].reason_code == "misdeal"
    # a misdeal seen once the round was complete annuls it: its bets are refunded too
    t.round("R2", "AS,2S,3S,4S,5S,6S,7S,8S,9S,TS,JS,QS,KS")
    events = t.ok(ReportMisdeal, round_id="R2", reason_text="dealt in the wrong order")
    assert types(events) == ["round_annulled"] and events[0].reason_code == "misdeal"
    assert t.refused(ReportMisdeal, round_id="R2", reason_text="again") \
        == "round_already_annulled"
    assert_rebuilds(t)


def test_seed002_and_seed000_s5_a_misplaced_card_is_corrected_not_voided():
    """Seed 002: "pengawas akan memperbaiki posisi kartu sesuai dengan posisi pada layar
    komputer"; seed 000 §5 "Penyusunan ulang kartu akan dilakukan"."""
    for profile, burns in (("sbo-baccarat", 0), ("triple-face-id", 4)):
        t = Table()
        t.shoe(profile)
        t.round("R1", "9S,2H", burns=burns)
        events = t.ok(ReportMisdeal, round_id="R1", reason_text="card in the wrong box")
        assert types(events) == ["misdeal_corrected"]
        assert t.state.round.phase == "dealing" and t.state.round.cards == ["9S", "2H"]
        assert_rebuilds(t)


# --- item 6: burn counts both ways ---------------------------------------------------------

def test_seed004_s2_one_burn_before_each_hand_a_second_is_refused():
    """"1 kartu akan di buang di sebelum permulaan di setiap hand." """
    t = big_small()
    t.ok(Burn, card=parse_card("4D"))
    assert t.refused(Burn, card=parse_card("4C")) == "too_many_burns"
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    assert t.refused(Burn) == "too_many_burns"
    t.close("R1")
    scan(t, "R1", "9S,2H,KD,5C")
    t.ok(Burn)  # the next hand's burn


def test_seed000_s1_four_burns_before_each_hand_a_fifth_is_refused():
    """"4 kartu akan di – skip (diabaikan) sebelum awal dari tiap hand." """
    t = Table()
    t.shoe("triple-face-id")
    for card in parse_cards("2C,3C,4C,5C"):
        t.ok(Burn, card=card)
    assert t.refused(Burn, card=parse_card("6C")) == "too_many_burns"


def test_seed002_no_burn_card_any_burn_is_refused():
    """"Tidak ada Burn Card. Dealer tidak membuang kartu di dalam permainan." """
    t = Table()
    t.shoe("sbo-baccarat")
    assert t.refused(Burn, card=parse_card("4C")) == "no_burn_at_table"
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    assert t.refused(Burn) == "no_burn_at_table"
    assert t.refused(ReportBurnError, round_id="R1", reason_text="x") == "no_burn_at_table"


def test_seed004_s2_a_burning_error_voids_the_hand():
    """"Kesalahan dalam pembuangan kartu/Burn Card akan mengakibatkan hasil di batalkan pada
    hand tertentu." """
    t = big_small()
    t.round("R1", "9S,2H", burns=1)
    events = t.ok(ReportBurnError, round_id="R1", reason_text="the burn card was dealt")
    assert types(events) == ["round_voided"] and events[0].reason_code == "burn_error"
    assert t.state.shoe is not None  # the shoe goes on
    assert_rebuilds(t)


# --- item 7: seed 000 §1, reshuffle and redeal ----------------------------------------------

def test_seed000_s1_burning_error_before_player1_second_card_reshuffles_and_redeals():
    """"Kartu akan dikocok ulang apabila kesalahan dalam prosedur card burning sudah
    diketahui sebelum pembagian kartu kedua pada Hand Player 1." """
    t = Table()
    t.shoe("triple-face-id")
    t.round("R1", "JS,QS,KS,AH", burns=4)  # P1, P2, P3, Banker: P1's second card is next
    events = t.ok(ReportBurnError, round_id="R1", reason_text="three cards burned, not four")
    assert types(events) == ["round_redealt"]
    assert [str(c) for c in events[0].set_aside] == ["JS", "QS", "KS", "AH"]
    assert t.state.round_status["R1"] == "dealing" and t.state.round.cards == []
    assert t.refused(ScanCard, round_id="R1", card=parse_card("JS")) == "burns_required"
    for card in parse_cards("2C,3C,4C,5C"):  # the reshuffled deck holds every card again
        t.ok(Burn, card=card)
    done = scan(t, "R1", TF_ROUND)[-1]
    assert done.type == "round_completed" and [str(c) for c in done.cards] == TF_ROUND.split(",")
    assert_rebuilds(t)
    # game-evaluation settles the redealt cards, not the ones set aside
    results = results_of(t)
    assert len(results) == 1 and [str(c) for c in results[0].cards] == TF_ROUND.split(",")


def test_seed000_s1_burning_error_after_player1_second_card_voids_the_hand():
    """"Sebaliknya, pihak manajemen mempunyai hak untuk membatalkan / void kartu pada Hand
    yang salah / error." """
    t = Table()
    t.shoe("triple-face-id")
    t.round("R1", "JS,QS,KS,AH,2H", burns=4)  # the fifth card is Player 1's second
    events = t.ok(ReportBurnError, round_id="R1", reason_text="found late")
    assert types(events) == ["round_voided"] and events[0].reason_code == "burn_error"


# --- item 8 (table side): management voids after completion --------------------------------

def test_seed000_s1_and_seed004_s2_management_annuls_a_completed_round():
    """Seed 000 §1: "pihak manajemen mempunyai hak untuk membatalkan / void kartu pada Hand
    yang salah"; seed 004 §2: "Managemen mempunyai wewenang untuk membantalkan pada kesalahan
    hand"."""
    t = big_small()
    t.round("R1", "9S,2H,KD,5C", burns=1)
    annul = {"round_id": "R1", "reason_code": "burn_error", "reason_text": "video review"}
    assert t.refused(AnnulRounds, role="device", **annul) == "role_not_allowed"
    events = t.ok(AnnulRounds, **annul)
    assert types(events) == ["round_annulled"]
    assert isinstance(events[0], RoundAnnulled) and events[0].supervisor == "supervisor-1"
    assert t.refused(AnnulRounds, **annul) == "round_already_annulled"
    assert t.refused(VoidRound, **annul) == "round_already_annulled"
    t.round("R2", "9S", burns=1)
    assert t.refused(AnnulRounds, **{**annul, "round_id": "R2"}) == "round_not_completed"
    assert t.refused(AnnulRounds, **{**annul, "round_id": "R9"}) == "round_not_found"
    assert_rebuilds(t)


def test_seed004_s1_management_annuls_the_rest_of_a_shoe():
    """"Tergantung pada situasi, kebijakan managemen untuk membatalkan permainan pada hasil
    Shoe." """
    t = big_small()
    for n in (1, 2, 3):
        t.round(f"R{n}", "9S,2H,KD,5C", burns=1)
    t.round("R4", "9S", burns=1)
    events = t.ok(AnnulRounds, round_id="R2", scope="rest_of_shoe", reason_code="other",
                  reason_text="shoe found to be short a deck")
    assert types(events) == ["round_annulled", "round_annulled", "round_voided", "shoe_ended"]
    assert [e.round_id for e in events[:3]] == ["R2", "R3", "R4"]
    assert t.state.round_status == {"R1": "completed", "R2": "annulled", "R3": "annulled",
                                    "R4": "voided"}
    assert t.refused(OpenRound, round_id="R5", dealer="Ayu") == "no_shoe"
    assert t.refused(AnnulRounds, round_id="R2", scope="rest_of_shoe", reason_code="other",
                     reason_text="again") == "round_already_annulled"
    # a finished shoe: its rounds from R1 on, and the new shoe's rounds are left alone
    t.ok(NewShoe, shoe_id="S2", profile="baccarat-big-small")
    t.ok(ShoeFirstCard, card=parse_card("5H"))
    t.round("R5", "9S,2H,KD,5C", burns=1)
    events = t.ok(AnnulRounds, round_id="R1", scope="rest_of_shoe", reason_code="other",
                  reason_text="whole shoe")
    assert types(events) == ["round_annulled"] and events[0].round_id == "R1"
    assert t.state.round_status["R5"] == "completed" and t.state.shoe.shoe_id == "S2"
    assert_rebuilds(t)


# --- item 9: events that end a shoe or close the table -------------------------------------

def test_seed002_two_cards_at_once_voids_the_round_and_replaces_the_shoe():
    """"Jika ada dua kartu atau lebih yang dibagikan secara bersamaan secara tidak sengaja,
    putaran tersebut akan dibatalkan, semua taruhan akan dikembalikan dan kotak kartu (shoe)
    terkait akan diganti dengan kotak baru." """
    for reason in ("two_cards_dealt", "card_dropped"):  # and "kartu yang jatuh dari meja"
        t = Table()
        t.shoe("sbo-baccarat")
        t.round("R1", "9S,2H")
        events = t.ok(VoidRound, round_id="R1", reason_code=reason, reason_text="seen on video")
        assert types(events) == ["round_voided", "shoe_ended"]
        assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "no_shoe"
        assert types(t.ok(NewShoe, shoe_id="S2", profile="sbo-baccarat")) == ["shoe_started"]
        assert_rebuilds(t)
    # report_two_cards is the same void at a table whose profile voids (two_cards_policy)
    t.round("R2", "9S")
    events = t.ok(ReportTwoCards, round_id="R2", reason_text="two cards came out together")
    assert types(events) == ["round_voided", "shoe_ended"]
    assert events[0].reason_code == "two_cards_dealt"
    t.shoe("sbo-baccarat", shoe_id="S3")
    t.round("R3", "9S,2H,KD,5C")  # complete: a card after it is a surplus card, not a void
    assert t.refused(ReportTwoCards, round_id="R3", reason_text="late") == "void_after_completion"
    assert_rebuilds(t)


def test_seed002_an_extra_card_after_the_game_stands_and_replaces_the_shoe():
    """"Jika dealer memberikan kartu tambahan setelah permainan saat ini selesai, hasil
    permainan saat ini akan dianggap sah dan kotak tersebut akan diganti dengan kotak yang
    baru." """
    t = Table()
    t.shoe("sbo-super-six")
    t.round("R1", "9S,2H,KD,5C")
    events = t.ok(ScanCard, round_id="R1", card=parse_card("3H"))
    assert types(events) == ["surplus_card_recorded", "shoe_ended"]
    assert t.state.round_status["R1"] == "completed"
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "no_shoe"
    assert_rebuilds(t)


def test_seed004_s4_an_exposed_card_voids_the_hand_and_the_shoe():
    """"adanya kartu yang terbuka( Sedikit kartu tebuka) selama permainan akan menyebabkan
    pembatalan pada hand dan shoe." """
    t = big_small()
    t.round("R1", "9S,2H", burns=1)
    events = t.ok(VoidRound, round_id="R1", reason_code="card_exposed", reason_text="flashed")
    assert types(events) == ["round_voided", "shoe_ended"]
    assert t.refused(Burn) == "no_shoe"


def test_seed004_s6_two_cards_drawn_at_once_the_hand_follows_the_card_rules_and_the_shoe_ends():
    """"Jika 2 kartu atau lebih yang ditaraik, hasil dari kesalahan pada hand akan tergantung
    pada peraturan kartu permainan and shoe yang alaoin akan di batalkan": the cards count in
    the order they left the shoe, the round completes and is settled on its result, and the
    shoe ends after it (no void, no refund)."""
    t = big_small()
    t.round("R1", "9S,2H", burns=1)  # 9S and 2H came out of the shoe together
    events = t.ok(ReportTwoCards, round_id="R1", reason_text="9S and 2H drawn together")
    assert types(events) == ["two_cards_drawn"] and events[0].supervisor == "supervisor-1"
    assert t.refused(ReportTwoCards, round_id="R1", reason_text="again") \
        == "two_cards_already_reported"
    assert t.refused(ReportTwoCards, role="device", round_id="R1",
                     reason_text="x") == "role_not_allowed"
    assert t.refused(VoidRound, round_id="R1", reason_code="two_cards_dealt",
                     reason_text="x") == "two_cards_by_card_rules"  # the sheet keeps the hand
    assert t.state.round.phase == "dealing"  # the deal goes on by the card rules
    assert types(scan(t, "R1", "KD")) == ["card_dealt"]
    assert types(scan(t, "R1", "5C")) == ["card_dealt", "round_completed", "shoe_ended"]
    assert "seed 004 §6" in t.events[-1].reason
    assert t.state.round_status["R1"] == "completed"
    [published] = results_of(t)  # P 9S KD = 9, B 2H 5C = 7: Player, with 4 cards (Small)
    assert published.result.winner == "player" and len(published.cards) == 4
    bets = [placed("p", bet="player", stake=1000), placed("b", bet="banker", stake=1000),
            placed("s", bet="small", stake=2000), placed("g", bet="big", stake=1000)]
    assert [(x.bet_id, x.outcome, x.returned) for x in settled(t, "R1", bets)] == [
        ("p", "win", 2000), ("b", "lose", 0), ("s", "win", 5000), ("g", "lose", 0)]
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "no_shoe"  # cancelled
    # reported once the round is complete: the shoe ends at once
    t.ok(NewShoe, shoe_id="S2", profile="baccarat-big-small")
    t.ok(ShoeFirstCard, card=parse_card("5H"))
    t.round("R2", "9S,2H,KD,5C", burns=1)
    events = t.ok(ReportTwoCards, round_id="R2", reason_text="KD and 5C came out together")
    assert types(events) == ["two_cards_drawn", "shoe_ended"]
    assert t.state.round_status["R2"] == "completed"
    # a reported round voided for another reason (management's misdeal void keeps the shoe
    # at this table): the shoe is cancelled all the same
    t.ok(NewShoe, shoe_id="S3", profile="baccarat-big-small")
    t.ok(ShoeFirstCard, card=parse_card("5H"))
    t.round("R3", "9S,2H", burns=1)
    t.ok(ReportTwoCards, round_id="R3", reason_text="drawn together")
    events = t.ok(VoidRound, round_id="R3", reason_code="misdeal", reason_text="not correctable")
    assert types(events) == ["round_voided", "shoe_ended"]
    t.ok(NewShoe, shoe_id="S4", profile="baccarat-big-small")
    t.ok(ShoeFirstCard, card=parse_card("5H"))
    t.ok(Burn)
    t.ok(OpenRound, round_id="R4", dealer="Ayu")  # not before the deal
    assert t.refused(ReportTwoCards, round_id="R4", reason_text="x") == "round_not_in_progress"
    assert_rebuilds(t)


def test_seed004_s7_a_card_dropped_out_of_sight_during_the_deal_voids_the_hand_and_the_shoe():
    """"Kartu yang terjatuh di luar jangkauan kamera selama pembagaian akan di gunakan kembali
    hanya jika terbuka sebelum terlihat. Sebaliknya hamd tertentu akan di batalkan dan
    beberapa shou akan di ulang kembali": the hand is voided (every bet refunded) and the
    shoe is done again (a new shoe). A card that fell during the burns, or one seen before it
    fell, is picked up and used: nothing is reported, the deal goes on."""
    t = big_small()
    t.round("R1", "9S,2H,KD,5C", burns=1)
    t.round("R2", "9S,2H", burns=1)
    events = t.ok(VoidRound, round_id="R2", reason_code="card_dropped",
                  reason_text="the third card fell out of sight face down")
    assert types(events) == ["round_voided", "shoe_ended"]
    bets = [placed("p", bet="player", stake=1000, round_id="R2"),
            placed("g", bet="big", stake=3000, round_id="R2")]
    assert [(x.bet_id, x.outcome, x.returned) for x in settled(t, "R2", bets)] == [
        ("p", "void_refund", 1000), ("g", "void_refund", 3000)]
    assert t.state.round_status == {"R1": "completed", "R2": "voided"}
    assert t.refused(OpenRound, round_id="R3", dealer="Ayu") == "no_shoe"
    assert types(t.ok(NewShoe, shoe_id="S2", profile="baccarat-big-small")) == ["shoe_started"]
    assert_rebuilds(t)


def test_seed004_s6_a_card_exposed_by_accident_outside_the_deal_is_the_next_games_burn():
    """"Jika tidak di sengaja kartu terbuka, akan dinyatakan sebagai kartu terbakar pada
    permainan berikutnya": between rounds or while betting it is burned for the game to
    come, in place of the dealer's burn; during the deal §4 voids the hand instead."""
    t = big_small()
    t.round("R1", "9S,2H,KD,5C", burns=1)
    events = t.ok(ExposeCard, card=parse_card("7D"))
    assert types(events) == ["card_burned"]
    assert events[0].exposed is True and str(events[0].card) == "7D"
    assert events[0].round_id is None
    assert t.refused(Burn) == "too_many_burns"  # it was the next game's burn
    t.round("R2", "9S,2H,KD,5C")
    assert t.state.round_status["R2"] == "completed"
    t.ok(Burn)
    t.ok(OpenRound, round_id="R3", dealer="Ayu")
    events = t.ok(ExposeCard, card=parse_card("8C"))  # while betting: R3's own burn
    assert types(events) == ["card_burned"] and events[0].round_id == "R3"
    t.close("R3")
    scan(t, "R3", "9S")
    assert t.refused(ExposeCard, card=parse_card("2C")) == "exposed_during_deal"
    events = t.ok(VoidRound, round_id="R3", reason_code="card_exposed", reason_text="flashed")
    assert types(events) == ["round_voided", "shoe_ended"]  # §4: the hand and the shoe
    assert_rebuilds(t)
    burned = [e for e in t.events if e.type == "card_burned"]
    assert [e.exposed for e in burned] == [None, True, None, True]
    assert "exposed" not in burned[0].model_dump(mode="json")  # a dealer's burn: as before


def test_seed002_a_card_exposed_by_accident_outside_the_deal_replaces_the_shoe():
    """"Jika ada kartu yang terbuka secara tidak sengaja saat pengacakan, kotak tersebut
    akan diganti": no burns at this table, so the shoe goes; a round open for betting goes
    with it, its bets refunded."""
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S,2H,KD,5C")
    events = t.ok(ExposeCard, card=parse_card("7D"))
    assert types(events) == ["shoe_ended"]
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "no_shoe"
    t.shoe("sbo-baccarat", shoe_id="S2")
    t.ok(OpenRound, round_id="R2", dealer="Ayu")
    events = t.ok(ExposeCard, card=parse_card("7D"))
    assert types(events) == ["round_voided", "shoe_ended"]
    assert events[0].reason_code == "card_exposed"
    assert_rebuilds(t)


def test_seed000_s2_a_card_exposed_outside_the_deal_at_triple_face_is_managements_call():
    """"Tindakan yang sepantasnya akan diambil oleh pihak manajemen untuk setiap exposed
    card ... tergantung dari kondisi dan jumlah kartu yang terbuka": refused to the device
    with what a supervisor does instead."""
    t = Table()
    t.shoe("triple-face-id")
    assert t.refused(ExposeCard, card=parse_card("7D")) == "exposed_card_management"


def test_seed004_s5_management_corrects_the_result_of_a_wrong_hand():
    """"Pihak manajemen memiliki wewenang untuk membatalkan atau mengoreksi hasil dari hand
    yang salah": a completed round's cards are corrected (all of them, or one at a
    position), superseding its result in a `round_corrected` (the log is never edited); a
    correction of a correction works the same way."""
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S,2H,KD,5C")  # Player 9, Banker 7: a natural, Player wins
    fix = dict(reason_code="mis_scan", reason_text="the video shows the 2 of spades")
    events = t.ok(CorrectRound, round_id="R1", cards=parse_cards("2S,2H,KD,5C,3D"), **fix)
    assert types(events) == ["round_corrected"]
    first = events[0]
    assert (first.correction, first.reason_code) == (1, "mis_scan") and first.supervisor
    assert [str(c) for c in first.replaced_cards] == ["9S", "2H", "KD", "5C"]
    assert [str(c) for c in first.cards] == ["2S", "2H", "KD", "5C", "3D"]
    assert (first.profile, first.dealer, first.shoe_id) == ("sbo-baccarat", "Ayu", "S1")
    events = t.ok(CorrectRound, round_id="R1", position=4, card=parse_card("4D"), **fix)
    again = events[0]
    assert again.correction == 2
    assert [str(c) for c in again.replaced_cards] == ["2S", "2H", "KD", "5C", "3D"]
    assert [str(c) for c in again.cards] == ["2S", "2H", "KD", "5C", "4D"]
    assert t.refused(CorrectRound, round_id="R1", position=4, card=parse_card("4D"),
                     **fix) == "correction_changes_nothing"
    assert t.refused(CorrectRound, round_id="R1", position=5, card=parse_card("4D"),
                     **fix) == "correction_not_a_round"
    assert t.refused(CorrectRound, round_id="R1", cards=parse_cards("2S,2H,KD,5C"),
                     **fix) == "correction_not_a_round"  # Player's 2 draws a third card
    assert t.refused(CorrectRound, round_id="R1", cards=parse_cards("9S,2H,KD,5C,3D"),
                     **fix) == "correction_not_a_round"  # a natural takes no third card
    assert t.refused(CorrectRound, round_id="R1", cards=parse_cards("9S,2H,KD,5C"),
                     reason_code="late_correction", reason_text="x") == "late_correction_reason"
    assert t.refused(CorrectRound, role="device", round_id="R1",
                     cards=parse_cards("9S,2H,KD,5C"), **fix) == "role_not_allowed"
    assert t.refused(CorrectRound, round_id="nope", cards=parse_cards("9S,2H,KD,5C"),
                     **fix) == "round_not_found"
    t.ok(OpenRound, round_id="R2", dealer="Ayu")
    assert t.refused(CorrectRound, round_id="R2", cards=parse_cards("9S,2H,KD,5C"),
                     **fix) == "round_not_completed"
    t.ok(VoidRound, round_id="R2", reason_code="card_dropped", reason_text="floor")
    assert t.refused(CorrectRound, round_id="R2", cards=parse_cards("9S,2H,KD,5C"),
                     **fix) == "round_already_voided"
    t.clock.advance(25 * 3600)  # past the dispute window: a reason code of its own
    assert t.refused(CorrectRound, round_id="R1", cards=parse_cards("9S,2H,KD,5C"),
                     **fix) == "late_correction_reason"
    events = t.ok(CorrectRound, round_id="R1", cards=parse_cards("9S,2H,KD,5C"),
                  reason_code="late_correction", reason_text="the original was right")
    assert events[0].correction == 3
    assert_rebuilds(t)


def test_seed004_s5_a_round_older_than_the_table_keeps_is_refused_by_name(monkeypatch):
    """The table keeps its last KEEP_ROUNDS rounds (bounded), the completed ones' facts with
    them; a round older than that is neither corrected nor annulled, each refusal naming why
    (docs/decisions/tables.md, "Rounds a table keeps")."""
    from services.dealer_event import state as table_state

    monkeypatch.setattr(table_state, "KEEP_ROUNDS", 1)
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S,2H,KD,5C")
    t.round("R2", "9S,2H,KD,5C")
    assert list(t.state.completed) == ["R2"]
    fix = dict(reason_code="mis_scan", reason_text="video")
    assert t.refused(CorrectRound, round_id="R1", cards=parse_cards("2S,2H,KD,5C,3D"),
                     **fix) == "round_too_old_to_correct"
    assert t.refused(AnnulRounds, round_id="R1", reason_code="other",
                     reason_text="video") == "round_too_old_to_annul"
    assert types(t.ok(CorrectRound, round_id="R2", cards=parse_cards("2S,2H,KD,5C,3D"),
                      **fix)) == ["round_corrected"]


def test_seed000_s4_a_dropped_card_voids_the_hand_and_the_shoe_goes_on():
    """"hand yang bersangkutan akan di void dan shoe akan dilanjutkan." """
    t = Table()
    t.shoe("triple-face-id")
    t.round("R1", "JS,QS", burns=4)
    events = t.ok(VoidRound, round_id="R1", reason_code="card_dropped", reason_text="floor")
    assert types(events) == ["round_voided"]
    t.round("R2", TF_ROUND, burns=4)
    assert t.state.round_status["R2"] == "completed"


def test_seed002_an_operator_system_failure_closes_the_table_until_a_supervisor_reopens():
    """"Kerusakan sistem operator dan/atau kegagalan perangkat keras selama Live Baccarat
    berlangsung akan membatalkan permainan dan meja terkait akan ditutup." """
    t = Table()
    t.shoe("sbo-tiger")
    t.round("R1", "9S,2H")
    events = t.ok(VoidRound, round_id="R1", reason_code="system_failure",
                  reason_text="scanner server down")
    assert types(events) == ["round_voided", "table_closed"]
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "table_closed"
    assert t.refused(NewShoe, shoe_id="S2", profile="sbo-tiger") == "table_closed"
    assert t.refused(ReopenTable, role="device", reason_text="fixed") == "role_not_allowed"
    assert types(t.ok(ReopenTable, reason_text="server restored")) == ["table_reopened"]
    assert t.refused(ReopenTable, reason_text="again") == "table_not_closed"
    t.round("R2", "9S,2H,KD,5C")
    assert t.state.round_status["R2"] == "completed"
    assert_rebuilds(t)


def test_seed002_a_completed_round_annulled_for_a_system_failure_closes_the_table():
    """"Kerusakan sistem operator ... akan membatalkan permainan dan meja terkait akan
    ditutup": the failure found after the round completed annuls it, and closes the table
    as a void would have; an annulment for another reason leaves the table in play."""
    t = Table()
    t.shoe("sbo-tiger")
    t.round("R1", "9S,2H,KD,5C")
    t.round("R2", "9S,2H,KD,5C")
    events = t.ok(AnnulRounds, round_id="R1", reason_code="management_decision",
                  reason_text="dealer error on video")
    assert types(events) == ["round_annulled"]
    events = t.ok(AnnulRounds, round_id="R2", reason_code="system_failure",
                  reason_text="results server wrote stale scans")
    assert types(events) == ["round_annulled", "table_closed"]
    assert t.refused(OpenRound, round_id="R3", dealer="Ayu") == "table_closed"
    assert types(t.ok(ReopenTable, reason_text="server restored")) == ["table_reopened"]
    t.round("R3", "9S,2H,KD,5C")
    assert t.state.round_status["R3"] == "completed"
    assert_rebuilds(t)


def test_seed002_a_supervisor_closes_the_table_between_rounds():
    """The same clause with no round to void: a supervisor closes the table between rounds
    (`close_table`); a round in progress is voided instead, which closes the table."""
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S,2H,KD,5C")
    assert t.refused(CloseTable, role="device", reason_text="down") == "role_not_allowed"
    t.ok(OpenRound, round_id="R2", dealer="Ayu")
    assert t.refused(CloseTable, reason_text="down") == "round_in_progress"
    events = t.ok(VoidRound, round_id="R2", reason_code="system_failure",
                  reason_text="studio network down")
    assert types(events) == ["round_voided", "table_closed"]
    assert t.refused(CloseTable, reason_text="again") == "table_closed"
    assert types(t.ok(ReopenTable, reason_text="network back")) == ["table_reopened"]
    events = t.ok(CloseTable, reason_text="operator wallet unreachable")
    assert types(events) == ["table_closed"]
    assert events[0].reason_code == "system_failure" and events[0].supervisor
    assert t.refused(OpenRound, round_id="R3", dealer="Ayu") == "table_closed"
    assert t.refused(NewShoe, shoe_id="S2", profile="sbo-baccarat") == "table_closed"
    assert_rebuilds(t)
