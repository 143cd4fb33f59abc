"""Wallet commands: bets debit once per id and end once; a duplicate changes nothing and
writes no entry (its outputs were published from the first attempt's entry); the door's
verdict binds only a bet never placed; every entry stays the same size whatever the
player's history; and the state is the fold of the entries, nothing else."""

import itertools
import random
from collections import Counter

import pytest

from services.infra.own_log import Batch, Landed, PartitionState, entries_of
from services.infra.packs import unpack
from services.wallet import handlers, seamless
from services.wallet.commands import (
    ENVELOPE,
    CreateAccount,
    Deposit,
    DoorRefusal,
    EndBet,
    Envelope,
    OperatorAnswered,
    PlaceBet,
    ReverseSettlement,
    Withdraw,
    ending_command,
)
from services.wallet.ledger_fold import WALLET_FOLD, Lookups, pending_calls
from services.wallet.seamless import SeamlessRules
from shared.events.bet_events import (
    BetAccepted,
    BetRejected,
    RoundManifest,
    manifest_digest,
)
from shared.events.operator_wallet import OperatorAnswer
from shared.events.sources import InputRef
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import BETS_PLACED_TOPIC, WALLET_TRANSACTIONS_TOPIC
from tests.unit.wallet_support import NOW, Ledger, bet, fold_all


@pytest.fixture
def ledger() -> Ledger:
    led = Ledger()
    led.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
    led.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d1", amount=10_000))
    return led


def test_bet_debits_once_and_a_retry_gets_the_same_answer(ledger):
    first = ledger.run(handlers.place_bet, bet())
    placed_entry = ledger.last_entry()
    retry = ledger.run(handlers.place_bet, bet())
    assert (first.answer.status, retry.answer.status) == (201, 200)
    assert first.answer.body == retry.answer.body and ledger.account.balance == 7000
    # the retry writes nothing: its records were published from the first entry (outbox)
    assert retry.change is None and retry.txs == [] and ledger.last_entry() is placed_entry
    assert [t for t, _, _ in WALLET_FOLD.outputs(placed_entry)] == [WALLET_TRANSACTIONS_TOPIC,
                                                                    BETS_PLACED_TOPIC]
    assert ledger.run(handlers.place_bet, bet(stake=4000)).answer.status == 409


def test_a_bet_is_one_entry_carrying_every_fact_it_changed(ledger):
    """The account, the debit, its index, the bet's record and the spot's total are written
    together or not at all: no state can hold one of them without the others."""
    first = ledger.run(handlers.place_bet, bet())
    entry = ledger.last_entry()
    assert (entry.command, entry.bet_id, entry.account.tx_count) == ("place_bet", "b1", 2)
    assert entry.tx == first.txs[0] and entry.tx.kind == "stake_debit"
    assert entry.bet.debit_seq == 2 and entry.spot.total == 3000
    assert entry.placed.debit_tx_id == entry.tx.tx_id
    assert ledger.look.seq_of("p1", entry.tx.tx_id) == 2
    assert ledger.look.tx_at("p1", 2) == entry.tx


def test_a_bet_id_reused_in_another_round_is_refused_and_moves_nothing(ledger):
    ledger.run(handlers.place_bet, bet())
    reused = ledger.run(handlers.place_bet, bet().model_copy(update={"round_id": "R2"}))
    assert (reused.answer.status, reused.answer.body["error"]["code"]) == (409, "bet_id_conflict")
    assert ledger.account.balance == 7000 and reused.change is None and reused.txs == []
    assert ledger.bets["b1"].round_id == "R1"


def test_insufficient_funds_is_402_and_moves_nothing(ledger):
    entries = len(ledger.entries)
    out = ledger.run(handlers.place_bet, bet(stake=20_000))
    assert out.answer.status == 402 and out.answer.body["error"]["code"] == "insufficient_funds"
    assert ledger.account.balance == 10_000 and out.change is None
    assert len(ledger.entries) == entries


ROUND_CLOSED = DoorRefusal(status=409, code="round_closed", message="betting closed")


def test_a_bet_resent_after_its_round_closed_gets_its_first_answer_and_changes_nothing(ledger):
    """The first attempt was placed while the round was open; its resend reaches the door
    after the close (the client timed out and retried): the door's verdict travels with the
    command but binds only a bet id never placed."""
    first = ledger.run(handlers.place_bet, bet())
    entries = len(ledger.entries)
    resent = ledger.run(handlers.place_bet, bet(door_refusal=ROUND_CLOSED))
    assert (resent.answer.status, resent.answer.body) == (200, first.answer.body)
    assert resent.change is None and len(ledger.entries) == entries
    assert ledger.account.balance == 7000


def test_a_door_refusal_on_a_new_bet_is_its_answer_and_changes_nothing(ledger):
    entries = len(ledger.entries)
    out = ledger.run(handlers.place_bet, bet(bet_id="late", door_refusal=ROUND_CLOSED))
    assert (out.answer.status, out.answer.body["error"]["code"]) == (409, "round_closed")
    assert out.answer.body["error"]["message"] == "betting closed"
    assert out.change is None and len(ledger.entries) == entries
    assert ledger.bet_of("late") is None and ledger.account.balance == 10_000
    # refused, never placed: the same id, once the door lets it through, is a new bet
    assert ledger.run(handlers.place_bet, bet(bet_id="late")).answer.status == 201


@pytest.mark.parametrize("ending,returned,kind,balance", [
    ("rejected", 3000, "bet_refund", 10_000),
    ("voided", 3000, "bet_refund", 10_000),
    ("settled", 6000, "payout", 13_000),
    ("settled", 0, None, 7000),
])
def test_a_bet_ends_once(ledger, ending, returned, kind, balance):
    ledger.run(handlers.place_bet, bet())
    end = EndBet(player_id="p1", bet_id="b1", ending=ending, returned=returned,
                 settlement_id="settle:b1", table_id="T1", round_id="R1")
    first = ledger.run(handlers.end_bet, end)
    again = ledger.run(handlers.end_bet, end)
    assert ledger.account.balance == balance
    assert ledger.bets["b1"].status == ending
    assert [tx.kind for tx in first.txs] == ([kind] if kind else []) and again.txs == []
    assert first.change is not None and again.change is None  # a redelivery writes nothing
    other = "rejected" if ending != "rejected" else "settled"
    clash = ledger.run(handlers.end_bet, end.model_copy(update={"ending": other}))
    assert clash.answer.status == 409 and ledger.account.balance == balance


def test_seed002_a_players_own_connection_failure_does_not_void_the_round(ledger):
    """Seed 002, Kerusakan Elektronik: "Kegagalan pada peralatan Pemain tanpa dibatasi
    termasuk jaringan terputus atau masalah komputer, tidak akan membatalkan hasil
    permainan. Pemain dapat memeriksa riwayat taruhan mereka di bagian Statement." """
    from services.bet_settlement import round_book
    from shared.events.bet_events import BetSettled
    from tests.unit.round_book_support import NOW as OPENED_AT
    from tests.unit.round_book_support import open_round, placed, result

    first = ledger.run(handlers.place_bet, bet())  # the answer never reaches the player
    assert first.answer.status == 201
    # nothing the player's device does or fails to do is an input of the round: it is
    # settled on its result, not refunded
    book, _ = round_book.on_bet(open_round(), placed("b1", stake=3000), OPENED_AT)
    _, out = round_book.on_result(book, result(), OPENED_AT)
    [settlement] = [r for _, _, r in out if isinstance(r, BetSettled)]
    assert settlement.outcome in ("win", "lose")
    ending = ending_command(settlement.model_dump_json().encode())
    assert isinstance(ending, EndBet) and ending.ending == "settled"
    paid = ledger.run(handlers.end_bet, ending)
    assert ledger.bets["b1"].status == "settled"
    assert ledger.account.balance == 10_000 - 3000 + settlement.returned
    assert [tx.kind for tx in paid.txs] == (["payout"] if settlement.returned else [])
    # back online, the player's resend gets the first answer: one bet, one debit
    again = ledger.run(handlers.place_bet, bet())
    assert (again.answer.status, again.answer.body) == (200, first.answer.body)
    assert ledger.account.balance == 10_000 - 3000 + settlement.returned


def test_an_ending_for_a_bet_never_debited_moves_nothing(ledger):
    out = ledger.run(handlers.end_bet, EndBet(player_id="p1", bet_id="ghost", ending="settled",
                                              returned=5000, table_id="T1", round_id="R1"))
    assert out.answer.status == 409 and ledger.account.balance == 10_000
    assert out.change is None


def test_handle_looks_the_account_up_itself():
    led = Ledger()
    assert led.handle(Deposit(player_id="p1", request_id="d", amount=5)).answer.status == 404
    assert led.handle(CreateAccount(player_id="p1", currency="IDR")).answer.status == 201
    assert led.handle(CreateAccount(player_id="p1", currency="IDR")).answer.status == 200
    assert led.handle(CreateAccount(player_id="p1", currency="EUR")).answer.status == 409
    assert led.handle(Deposit(player_id="p1", request_id="d", amount=5)).answer.status == 201
    assert led.account.balance == 5 and len(led.entries) == 2


def test_envelopes_round_trip_and_refuse_junk():
    env = ENVELOPE.validate_json(b'{"command": {"type": "deposit", "player_id": "p",'
                                 b' "request_id": "r", "amount": 5}}')
    assert env.command.amount == 5
    with pytest.raises(ValueError):
        ENVELOPE.validate_json(b'{"command": {"type": "deposit", "player_id": "p",'
                               b' "request_id": "r", "amount": 5.5}}')


def _bet_and_settle(ledger: Ledger, i: int) -> int:
    """One bet and its settlement; the largest entry either wrote."""
    ledger.run(handlers.place_bet, bet(stake=1000, bet_id=f"b{i}"))
    size = ledger.largest_value
    ledger.run(handlers.end_bet, EndBet(player_id="p1", bet_id=f"b{i}", ending="settled",
                                        returned=1000, settlement_id=f"settle:b{i}",
                                        table_id="T1", round_id="R1"))
    return max(size, ledger.largest_value)


def test_state_does_not_grow_with_lifetime_bets(ledger):
    sizes = [_bet_and_settle(ledger, i) for i in range(2000)]
    # only the digits of ids and counters may grow (b99 -> b1999)
    assert max(sizes[-100:]) <= max(sizes[100:200]) + 64 < 4096
    assert len(ledger.account.model_dump_json()) < 2048
    assert ledger.account.tx_count == 1 + 2 * 2000 and ledger.account.balance == 10_000
    retry = ledger.run(handlers.place_bet, bet(stake=1000, bet_id="b0"))  # an old bet id
    assert retry.answer.status == 200 and not retry.txs and retry.change is None


# --- the fold of the entries is the state the handlers saw ----------------------------

def _random_command(rng: random.Random, players: list[str]):
    player = rng.choice(players)
    bet_id = f"b{rng.randrange(12)}"
    pick = rng.randrange(8)
    if pick == 0:
        return CreateAccount(player_id=player, currency="IDR")
    if pick == 1:
        return Deposit(player_id=player, request_id=f"d{rng.randrange(10)}",
                       amount=rng.randrange(1, 5000))
    if pick == 2:
        return Withdraw(player_id=player, request_id=f"w{rng.randrange(10)}",
                        amount=rng.randrange(1, 3000))
    if pick in (3, 4):
        refusal = ROUND_CLOSED if rng.random() < 0.15 else None
        return bet(stake=rng.randrange(1, 2000), bet_id=bet_id, door_refusal=refusal,
                   spot_max=rng.choice([None, 3000])).model_copy(update={"player_id": player})
    if pick == 5:
        return ReverseSettlement(player_id=player, bet_id=bet_id, reversal_id=f"r:{bet_id}",
                                 settlement_id=f"s:{bet_id}", amount=rng.randrange(0, 3000),
                                 table_id="T1", round_id="R1")
    return EndBet(player_id=player, bet_id=bet_id,
                  ending=rng.choice(["rejected", "settled", "voided"]),
                  returned=rng.randrange(0, 4000), settlement_id=f"s:{bet_id}",
                  table_id="T1", round_id="R1")


def _seamless_command(rng: random.Random, players: list[str], state):
    """Seamless mode's commands: the same, bets carrying an operator session, and the
    operator's answers to calls the state owes (yes, a named no, or none), with a late or
    repeated answer now and then."""
    owed = pending_calls(state)
    if owed and rng.random() < 0.45:
        call = rng.choice(owed).request
        pick = rng.random()
        answer = (OperatorAnswer(outcome="ok", balance=rng.randrange(0, 50_000), answered_at=NOW)
                  if pick < 0.6 else
                  OperatorAnswer(outcome="refused", error_code=rng.choice(
                      ["insufficient_funds", "player_blocked", "session_expired",
                       "transaction_not_found"]), answered_at=NOW)
                  if pick < 0.85 else OperatorAnswer(outcome="no_answer", answered_at=NOW))
        return OperatorAnswered(player_id=call.player_id, transaction_id=call.transaction_id,
                                answer=answer)
    if rng.random() < 0.05:  # an answer to nothing owed: late, repeated or unknown
        return OperatorAnswered(player_id=rng.choice(players),
                                transaction_id=f"debit:b{rng.randrange(12)}",
                                answer=OperatorAnswer(outcome="ok", balance=1, answered_at=NOW))
    cmd = _random_command(rng, players)
    if isinstance(cmd, PlaceBet) and rng.random() < 0.95:
        cmd = cmd.model_copy(update={"operator_session": "sess"})
    return cmd


MODES = {
    "transfer": (lambda env, look: handlers.handle(env, NOW, look),
                 lambda rng, players, state: _random_command(rng, players)),
    "seamless": (lambda env, look: seamless.handle(env, NOW, look, SeamlessRules()),
                 _seamless_command),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", range(8))
def test_the_fold_of_the_entries_is_the_state_the_handlers_saw(mode, seed):
    """Seeded random commands in batches, decided as the kernel decides them, in each
    wallet mode: each command reads the state its batch's earlier commands left
    (`Batch.scratch`), its change is chained as the next entry. Then the entries alone, as
    the records the batches sent (packs of entries) read back, folded into a fresh dict (a
    restart, `croupier rebuild`): the same state the handlers saw, key for key, and in
    seamless mode the same calls owed the operator."""
    decide, next_command = MODES[mode]
    rng = random.Random(seed)
    players = ["p1", "p2", "p3"]
    first = [CreateAccount(player_id=p, currency="IDR") for p in players]
    state: PartitionState = PartitionState(0)
    log: list[tuple[int, bytes]] = []  # the ledger partition's records, as bytes
    statuses: Counter[int | None] = Counter()
    ids = itertools.count(1)
    offset = 0
    while offset < 400 + len(first):
        batch = Batch(state, WALLET_FOLD, lambda: f"w0:{next(ids)}")
        for _ in range(rng.randrange(1, 20)):
            cmd = first[offset] if offset < len(first) else next_command(
                rng, players, batch.scratch)
            outcome = decide(Envelope(reply_id=f"r{offset}", command=cmd),
                             Lookups(batch.scratch))
            statuses[outcome.answer.status if outcome.answer else None] += 1
            if outcome.change is not None:
                source = InputRef(topic="wallet-commands", partition=0, offset=offset)
                batch.add(lambda entry_id, prev, through, c=outcome.change, s=source:
                          c.entry(entry_id, prev, through, s, NOW))
            offset += 1
        seen = dict(batch.scratch)  # the state as the batch's last command saw it
        landed = [Landed(o, NOW) for o in batch.expected]  # nothing came in between
        assert batch.landed_as_chained(landed)
        sent = batch.records(lambda e: e.account.player_id.encode())  # none if empty
        log += [(o, value) for o, (_, value) in zip(batch.expected, sent, strict=True)]
        batch.commit(landed)
        assert state.kv == seen
    assert statuses[201] > 10 and statuses[200] > 0 and statuses[409] > 0
    if mode == "seamless":  # bets waited on the operator; some were refused, some timed out
        assert statuses[None] > 10 and statuses[504] > 0
        assert statuses[401] + statuses[402] + statuses[403] > 0
    assert any(unpack(raw) for _, raw in log)  # some records hold several entries
    rebuilt = fold_all([(o, entry) for o, raw in log
                        for entry in entries_of(raw, LedgerEntry.model_validate_json)])
    assert rebuilt.kv == state.kv
    assert (rebuilt.head, rebuilt.end, rebuilt.inputs, rebuilt.void) == (
        state.head, state.end, state.inputs, 0)
    assert pending_calls(rebuilt.kv) == pending_calls(state.kv)
    look = Lookups(rebuilt.kv)
    for player in players:  # and each balance is what its history adds up to
        account = look.account(player)
        history = [look.tx_at(player, s) for s in range(1, account.tx_count + 1)]
        assert sum(tx.signed_amount for tx in history) == account.balance


# --- bet-settlement's records, read by their type ---------------------------------------

@pytest.mark.parametrize("text", ["bet_settled", "settlement_reversed"])
def test_an_id_that_reads_like_a_record_type_does_not_change_what_the_record_is(text):
    """Issue: some id values make a record be read as another kind. An acceptance or a
    manifest whose ids are the text of a settlement's type is still nothing for the wallet
    to do; a rejection with such ids is still a refund."""
    facts = dict(bet_id=text, player_id=text, table_id=text, round_id=text, bet="player",
                 stake=3000, currency="IDR")
    accepted = BetAccepted(**facts, decided_at=NOW)
    manifest = RoundManifest(table_id=text, round_id=text, bet_count=1, total_stake=3000,
                             digest=manifest_digest([text]), closed_at=NOW)
    for record in (accepted, manifest):
        raw = record.model_dump_json().encode()
        assert f'"{text}"'.encode() in raw  # what a search of the bytes would have found
        assert ending_command(raw) is None
    rejected = BetRejected(**facts, reason_code="round_closed", message=text, decided_at=NOW)
    refund = ending_command(rejected.model_dump_json().encode())
    assert isinstance(refund, EndBet)
    assert (refund.ending, refund.bet_id, refund.returned) == ("rejected", text, 3000)


def test_a_record_of_no_known_type_is_refused_not_guessed():
    with pytest.raises(ValueError):
        ending_command(b'{"type": "bet_placed", "note": "bet_settled"}')
    with pytest.raises(ValueError):
        ending_command(b'{"bet_id": "settlement_reversed"}')


def test_a_settlement_seen_again_after_its_bet_was_annulled_moves_nothing_and_is_no_breach(
        ledger):
    """Issue 29 (b): a management void after completion takes the payout back (reversal)
    and refunds the stake (voided); the original settlement, redelivered afterwards, is
    the one that was taken back: nothing moves, and no money breach is raised (the money
    is right; a breach would page an operator for nothing)."""
    ledger.run(handlers.place_bet, bet())
    settled = EndBet(player_id="p1", bet_id="b1", ending="settled", returned=6000,
                     settlement_id="settle:b1", table_id="T1", round_id="R1")
    ledger.run(handlers.end_bet, settled)
    ledger.run(handlers.reverse_settlement, ReverseSettlement(
        player_id="p1", bet_id="b1", reversal_id="rev:b1", settlement_id="settle:b1",
        amount=6000, table_id="T1", round_id="R1"))
    ledger.run(handlers.end_bet, settled.model_copy(update={"ending": "voided",
                                                            "returned": 3000}))
    assert ledger.bets["b1"].status == "voided" and ledger.account.balance == 10_000
    entries = len(ledger.entries)
    again = ledger.run(handlers.end_bet, settled)
    assert again.breach is None and again.change is None and again.txs == []
    assert (again.answer.status, again.answer.body["status"]) == (200, "voided")
    assert ledger.account.balance == 10_000 and len(ledger.entries) == entries
    # the reversal seen again is no breach either, and moves nothing
    rev = ledger.run(handlers.reverse_settlement, ReverseSettlement(
        player_id="p1", bet_id="b1", reversal_id="rev:b1", settlement_id="settle:b1",
        amount=6000, table_id="T1", round_id="R1"))
    assert rev.breach is None and rev.txs == [] and ledger.account.balance == 10_000
    # a settlement under another id (a corrected round settling anew) is still refused
    other = ledger.run(handlers.end_bet, settled.model_copy(update={"settlement_id": "s2"}))
    assert other.answer.status == 409 and ledger.account.balance == 10_000
