"""Issue 11 finding 10: one id pattern for players, bets, requests, tables, rounds, shoes and
inputs; the audit, replay and rebuild key bets and transactions by (player, id) as the
wallet does, so two players may both use `dep-1` or the same bet id; and a player id that is
not an id (`..`, accepted by an older wallet) cannot crash `croupier rebuild`."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter, ValidationError

from services.operator.audit import Books, audit
from services.operator.complaints import ComplaintError, complaint_from
from services.wallet.api_models import CreateAccountRequest, MovementRequest, PlaceBetRequest
from services.wallet.commands import Deposit
from shared.events import ids
from shared.events.bet_events import BetAccepted, BetRejected, RoundManifest, manifest_digest
from shared.events.inputs import ScanCard
from shared.events.wallet_events import WalletTransaction, tx_id
from shared.topics import TABLE_EVENTS_TOPIC, WALLET_LEDGER_TOPIC
from tests.unit.audit_support import Ledger

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
KINDS = {"bet": ids.BetId, "request": ids.RequestId, "input": ids.InputId,
         "round": ids.RoundId, "shoe": ids.ShoeId, "table": ids.TableId,
         "player": ids.PlayerId}
RUN = uuid.uuid4().hex[:8]
# what the platform itself generates: simulators, demo, tests, benchmarks
GENERATED = {
    "player": ["alice", f"sim-{RUN}-3", "lifer", "p17", f"bob-{RUN}", "dealer_1", "a.b"],
    "table": [f"bac-{RUN}", f"tf-{RUN}", "T1", f"BENCH-{RUN[:6]}", f"MBAC-{RUN}", "SBO-BAC-01"],
    "round": ["R1", f"R-{RUN}", f"bac-{RUN}-r12", "R000042", "T1:R1", "round.7"],
    "shoe": ["S1", f"bac-{RUN}-s1", f"bac-{RUN}-S1"],
    "bet": [f"sim-{RUN}-3-{uuid.uuid4().hex[:12]}", f"big-{uuid.uuid4().hex}", "b1",
            str(uuid.uuid4()), f"retry-{RUN}", "R1-b9999"],
    "request": ["dep-1", f"seed-sim-{RUN}-3", f"dep-alice-{RUN}", "wd-1", "op:2026-11-30"],
    "input": [f"bac-{RUN}-{RUN}-17", "i-1", str(uuid.uuid4())],
}
REFUSED = ["", ".", "..", "...", "a/b", "/", "../x", "\x00", "a\x00", "a\x7f", " ", "a b",
           " a", "a\n", "\n", "a\tb", "é", "a;b", "a%2F", "a\\b"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_id_the_platform_generates_passes(kind):
    adapter = TypeAdapter(KINDS[kind])
    for value in GENERATED[kind]:
        assert adapter.validate_python(value) == value
        assert ids.id_problem(value, kind) is None


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("value", REFUSED)
def test_dot_only_slash_control_whitespace_and_empty_are_refused(kind, value):
    with pytest.raises(ValidationError):
        TypeAdapter(KINDS[kind]).validate_python(value)
    assert ids.id_problem(value, kind)


@pytest.mark.parametrize("kind", ["table", "player"])
def test_table_and_player_ids_have_no_colon(kind):
    """bet-settlement keys a round `<table>:<round>`: the first `:` ends the table id."""
    with pytest.raises(ValidationError):
        TypeAdapter(KINDS[kind]).validate_python("T:1")
    assert TypeAdapter(ids.RoundId).validate_python("T:1") == "T:1"


def test_the_wallets_fold_keys_read_one_way():
    """The wallet's state is keyed `x/<player>/<tx id>`, `b/<player>/<bet id>`, ...: no id
    holds a `/`, so two players' items never share a key, whatever their ids."""
    from services.wallet.ledger_fold import bet_key, tx_id_key
    for kind in KINDS:
        assert ids.id_problem("a/b", kind)
    pairs = [("alice", "deposit:dep-1"), ("bob", "deposit:dep-1"), ("alice", "b1"),
             ("a.b", "c"), ("a", "b.c"), ("a-b", "c"), ("a", "b-c")]
    for key_of in (tx_id_key, bet_key):
        keys = [key_of(player, item) for player, item in pairs]
        assert len(set(keys)) == len(pairs)
        assert all(k.split("/")[1:] == list(p) for k, p in zip(keys, pairs, strict=True))


def test_dots_are_allowed_inside_an_id_but_not_alone():
    for value in ("a.b", ".a", "a.", "..a", "a.."):
        assert ids.id_problem(value, "player") is None


def test_lengths_are_per_kind():
    assert ids.id_problem("x" * 64, "table") is None and ids.id_problem("x" * 65, "table")
    assert ids.id_problem("x" * 128, "bet") is None and ids.id_problem("x" * 129, "bet")


def test_the_one_pattern_is_what_every_model_uses():
    """Defined once: the wallet's door, its commands and the event contracts refuse alike."""
    with pytest.raises(ValidationError):
        CreateAccountRequest(player_id="..", currency="IDR")
    with pytest.raises(ValidationError):
        MovementRequest(request_id="..", amount=1)
    with pytest.raises(ValidationError):
        Deposit(player_id="alice", request_id="a/b", amount=1)
    with pytest.raises(ValidationError):
        PlaceBetRequest(bet_id="b1", table_id="..", round_id="R1", bet="banker", stake=1)
    with pytest.raises(ValidationError):
        PlaceBetRequest(bet_id="b1", table_id="T1", round_id="R/1", bet="banker", stake=1)
    with pytest.raises(ValidationError):
        ScanCard.model_validate({"input_id": "..", "table_id": "T1", "role": "device",
                                 "signer": "s", "sent_at": NOW, "round_id": "R1", "card": "AS"})
    schema = CreateAccountRequest.model_json_schema()["properties"]["player_id"]
    assert schema["pattern"] == ids.NAME_PATTERN


def test_a_complaint_naming_a_bad_id_is_refused_by_name():
    fields = {"player_id": "..", "played_at": NOW, "dealer": "Ayu", "table_id": "T1",
              "round_id": "R1"}
    with pytest.raises(ComplaintError) as refused:
        complaint_from(fields, filed_at=NOW)
    assert refused.value.code == "bad_id"


# --- the audit keys by (player, id) -------------------------------------------------------

@pytest.fixture
def shared_ids() -> Ledger:
    """Alice and bob both deposit with the operator guide's `dep-1` and both bet `b1` in round R1:
    bet-settlement accepts alice's (first) and rejects bob's `duplicate_bet_id`; the wallet
    settles alice's and refunds bob's."""
    book = Ledger()
    book.move("alice", "deposit", 100_000, "dep-1")
    book.move("bob", "deposit", 50_000, "dep-1")
    alices = book.bet("alice", "b1", "banker", 1_000)
    book.books.add(BetAccepted(**alices.model_dump(exclude={"type", "debit_tx_id", "placed_at"}),
                               decided_at=NOW))
    book.settle(alices)
    bobs = book.bet("bob", "b1", "player", 2_000)
    book.books.add(BetRejected(**bobs.model_dump(exclude={"type", "debit_tx_id", "placed_at"}),
                               reason_code="duplicate_bet_id", message="taken", decided_at=NOW))
    book.move("bob", "bet_refund", 2_000, "b1")
    book.books.add(RoundManifest(table_id="T1", round_id="R1", bet_count=1, total_stake=1_000,
                                 digest=manifest_digest(["b1"]), closed_at=NOW))
    return book


def test_two_players_sharing_a_request_id_and_a_bet_id_balance_apart(shared_ids):
    report = audit(shared_ids.books, allow_pending=False)
    assert report.invariants_ok, [c for c in report.invariants if not c.ok]
    assert report.balances == {"alice": 100_000 - 1_000 + 1_950, "bob": 50_000}
    assert report.deposits == 150_000 and report.bets == 2 and report.rejected == 1
    assert (report.settled, report.stake, report.refunds) == (1, 3_000, 2_000)
    assert not shared_ids.books.conflicts
    assert set(shared_ids.books.placed) == {("alice", "b1"), ("bob", "b1")}


def test_same_id_for_two_players_is_no_conflict_but_two_records_for_one_player_are(shared_ids):
    bobs = shared_ids.books.txs[("bob", "deposit:dep-1")]
    shared_ids.books.add(bobs.model_copy(update={"amount": 1}))
    assert shared_ids.books.conflicts == [
        "wallet transaction deposit:dep-1 of bob: two different records with the same id"]


def test_money_credited_to_the_wrong_player_is_caught(shared_ids):
    """Alice's payout for `b1` written to bob's account: alice is short, bob paid twice."""
    key = ("alice", "payout:settle:b1")
    paid = shared_ids.books.txs.pop(key)
    shared_ids.books.ledger["alice"].remove(paid)
    shared_ids.books.add(WalletTransaction(
        tx_id=tx_id("payout", "settle:b1"), player_id="bob", kind="payout", amount=paid.amount,
        balance_after=50_000 + paid.amount, currency="IDR", cause_id="settle:b1",
        occurred_at=NOW))
    failed = {c.name for c in audit(shared_ids.books).invariants if not c.ok}
    assert "the wallet moved each bet's money exactly once" in failed


def test_the_session_part_keeps_both_players(shared_ids):
    part = shared_ids.books.only({"T1"}, {"alice", "bob"})
    assert audit(part, allow_pending=False).balances.keys() == {"alice", "bob"}
    open_bets = [b for b in part.placed if b not in part.settled and b not in part.rejected]
    assert open_bets == []


# --- rebuild: one bad id cannot crash it, and it compares both players ---------------------

_COMMAND_OF = {"deposit": "deposit", "withdrawal": "withdrawal", "stake_debit": "place_bet",
               "bet_refund": "end_bet", "payout": "end_bet",
               "payout_reversal": "reverse_settlement"}


def ledger_of(books: Books) -> list:
    """The wallet's ledger that wrote the books' movements: one chained entry each, every
    player on partition 0, each player's entries in one record (a pack, as a wallet batch
    sends them), each record parsed as `croupier rebuild` reads it (`event_reader`: the
    record's entries)."""
    from services.infra.packs import pack_values
    from services.operator.event_reader import PARSERS, LogRecord
    from shared.events.sources import InputRef
    from shared.events.wallet_ledger import Account, LedgerEntry

    records, prev, written = [], "", 0
    for player, txs in books.ledger.items():
        values = []
        for seq, tx in enumerate(txs, start=1):
            entry = LedgerEntry(
                entry_id=f"w0:{written}", prev=prev,
                source=InputRef(topic="commands", partition=0, offset=written),
                command=_COMMAND_OF[tx.kind],
                account=Account(player_id=player, currency=tx.currency,
                                balance=tx.balance_after, tx_count=seq),
                tx=tx, published_through=-1, recorded_at=NOW)
            values.append(entry.model_dump_json().encode())
            prev, written = entry.entry_id, written + 1
        entries = PARSERS[WALLET_LEDGER_TOPIC](pack_values(values))
        records.append(LogRecord(WALLET_LEDGER_TOPIC, 0, len(records), 0, entries))
    return records


def _rebuild_with(monkeypatch, books: Books, live: dict[str, int]):
    from services.operator import rebuild as rb

    ledger = ledger_of(books)
    monkeypatch.setattr(rb, "read_topic", lambda bootstrap, topic, *a, **k: iter(
        ledger if topic == WALLET_LEDGER_TOPIC else ()))
    monkeypatch.setattr(rb, "read_books", lambda *a, **k: (books, []))
    asked: list[str] = []

    def live_balances(players: list[str]) -> dict[str, int | None]:
        for player in players:
            assert ids.id_problem(player, "player") is None, f"asked for {player!r}"
        asked.extend(players)
        return {p: live.get(p) for p in players}

    return rb.rebuild("unused:9092", live_balances), asked


def test_rebuild_compares_both_players_sharing_ids(monkeypatch, shared_ids):
    report, asked = _rebuild_with(monkeypatch, shared_ids.books,
                                  {"alice": 100_950, "bob": 50_000})
    assert report.differences == [] and report.clean
    assert asked == ["alice", "bob"] and report.live_players == 2


def test_rebuild_names_a_player_whose_ledger_and_transactions_disagree(monkeypatch,
                                                                       shared_ids):
    """Bob's movements on wallet.transactions and his account in the fold of wallet.ledger
    (the wallet's state) must tell the same balance: a ledger entry lost or altered is a
    difference, named by player, even when the live wallet agrees with the transactions."""
    from services.operator import rebuild as rb

    ledger = ledger_of(shared_ids.books)
    last_of_bob = max(i for i, r in enumerate(ledger) if r.value[-1].account.player_id == "bob")
    *before, entry = ledger[last_of_bob].value  # bob's last entry, the last of its record
    ledger[last_of_bob] = dataclasses.replace(ledger[last_of_bob], value=[
        *before, entry.model_copy(update={"account": entry.account.model_copy(
            update={"balance": entry.account.balance + 1})})])
    monkeypatch.setattr(rb, "read_topic", lambda bootstrap, topic, *a, **k: iter(
        ledger if topic == WALLET_LEDGER_TOPIC else ()))
    monkeypatch.setattr(rb, "read_books", lambda *a, **k: (shared_ids.books, []))
    report = rb.rebuild("unused:9092", lambda players: {"alice": 100_950, "bob": 50_000})
    assert report.differences == ["player bob: wallet.transactions add up to 50000, the fold "
                                  "of wallet.ledger says 50001"]


def test_an_account_named_dot_dot_cannot_crash_rebuild(monkeypatch, shared_ids):
    shared_ids.move("..", "deposit", 7, "dep-1")  # written by a wallet before the pattern
    report, asked = _rebuild_with(monkeypatch, shared_ids.books,
                                  {"alice": 100_950, "bob": 50_000})
    assert asked == ["alice", "bob"]
    assert len(report.differences) == 1 and report.differences[0].startswith("player '..'")
    assert report.audit.balances[".."] == 7


# --- replay of one round: two players with the same bet id ---------------------------------

def test_replay_lists_both_players_bets_with_the_same_id_and_matches():
    from services.operator.replay import replay_round
    from tests.round_builder import RecordedRound

    rec = RecordedRound()  # alice's b1 on banker (wins 1,950), alice's b2, bob's b3
    carol = dict(bet_id="b1", player_id="carol", table_id=rec.table_id, round_id=rec.round_id,
                 bet="player", stake=700, currency="IDR")
    manifest_at = next(i for i, d in enumerate(rec.decisions) if isinstance(d, RoundManifest))
    rec.decisions.insert(manifest_at, BetRejected(**carol, reason_code="duplicate_bet_id",
                                                  message="taken", decided_at=NOW))
    rec.wallet += [rec._tx("carol", "stake_debit", 700, "b1", 100_000 - 700),
                   rec._tx("carol", "bet_refund", 700, "b1", 100_000)]
    report = replay_round(rec.table_id, rec.round_id, rec.events, None, rec.result,
                          rec.decisions, rec.settlements, rec.wallet)
    assert report.verdict == "MATCH", report.differences
    lines = {(b.player_id, b.bet_id): b for b in report.bets}
    assert lines[("alice", "b1")].returned == 1_950
    assert lines[("carol", "b1")].decision == "rejected (duplicate_bet_id)"
    assert len(lines[("carol", "b1")].wallet) == 2 and len(lines[("alice", "b1")].wallet) == 2
    only_carol = replay_round(rec.table_id, rec.round_id, rec.events, None, rec.result,
                              rec.decisions, rec.settlements, rec.wallet, player_id="carol")
    assert only_carol.verdict == "MATCH" and [b.player_id for b in only_carol.bets] == ["carol"]


def test_a_round_whose_cards_give_no_result_is_a_difference_not_a_crash(monkeypatch):
    from services.operator import rebuild as rb
    from services.operator.event_reader import LogRecord
    from tests.round_builder import RecordedRound

    rec = RecordedRound()
    events = [e for e in rec.events if e.type != "card_dealt"]  # the chain breaks too
    books = Books()
    books.add(rec.result)
    monkeypatch.setattr(rb, "read_topic", lambda bootstrap, topic, *a, **k: iter(
        [LogRecord(TABLE_EVENTS_TOPIC, 0, i, 0, e) for i, e in enumerate(events)]
        if topic == TABLE_EVENTS_TOPIC else []))
    monkeypatch.setattr(rb, "read_books", lambda *a, **k: (books, []))
    report = rb.rebuild("unused:9092", lambda players: {})
    assert any(d.startswith("T1/R1: its cards give no result") for d in report.differences)
