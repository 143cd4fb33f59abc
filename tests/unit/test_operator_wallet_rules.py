"""The reference operator wallet's pure parts: what each call does to a player (every
refusal named, in its order), the key ring, the content fingerprint and the seeded dice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.simulators.operator_wallet.faults import Dice, Faults
from services.simulators.operator_wallet.rules import (
    Player,
    Recorded,
    Session,
    decide,
    fingerprint,
    parse_keys,
)
from shared.events.operator_wallet import ERROR_CODES, WalletRequest

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
ALICE = Player("alice", "EUR", 1_000)
LIVE = Session("tok", "alice", NOW + timedelta(hours=1))


def req(kind: str = "debit", amount: int = 300, **kw) -> WalletRequest:
    fields = {"transaction_id": f"{kind}:b1", "kind": kind, "player_id": "alice",
              "amount": amount, "currency": "EUR", "table_id": "t1", "round_id": "r1",
              "bet_id": "b1", "requested_at": NOW,
              "session_token": "tok" if kind == "debit" else None, **kw}
    return WalletRequest.model_validate(fields)


def debit(request=None, player=ALICE, session=LIVE, tombstoned=False):
    return decide(request or req(), player=player, session=session,
                        tombstoned=tombstoned, now=NOW)


def test_a_debit_takes_its_amount():
    decision = debit()
    assert decision.accepted and decision.http_status == 200
    assert (decision.delta, decision.amount, decision.undoes) == (-300, 300, None)


@pytest.mark.parametrize(("case", "code"), [
    ({"tombstoned": True}, "transaction_rolled_back"),
    ({"player": None}, "unknown_player"),
    ({"request": req(session_token=None)}, "invalid_session"),
    ({"session": None}, "invalid_session"),
    ({"session": Session("tok", "bob", NOW + timedelta(hours=1))}, "invalid_session"),
    ({"session": Session("tok", "alice", NOW)}, "session_expired"),
    ({"session": Session("tok", "alice", NOW + timedelta(hours=1), expired=True)},
     "session_expired"),
    ({"player": Player("alice", "EUR", 1_000, blocked=True)}, "player_blocked"),
    ({"request": req(currency="IDR")}, "wrong_currency"),
    ({"request": req(amount=1_001)}, "insufficient_funds"),
])
def test_each_debit_refusal_is_named(case, code):
    decision = debit(**case)
    assert decision.error_code == code and decision.http_status == ERROR_CODES[code]
    assert decision.delta == 0 and decision.message


def test_a_debit_of_the_whole_balance_is_accepted():
    assert debit(req(amount=1_000)).delta == -1_000


def test_the_tombstone_is_checked_before_anything_else():
    """A debit croupier gave up on and rolled back is refused for that, whatever else."""
    assert debit(player=None, session=None, tombstoned=True).error_code == \
        "transaction_rolled_back"


def test_a_credit_rolled_back_before_it_arrived_is_refused():
    decision = decide(req("credit", 600), player=ALICE, tombstoned=True)
    assert decision.error_code == "transaction_rolled_back" and decision.delta == 0


def test_a_credit_checks_no_session_and_no_block():
    blocked = Player("alice", "EUR", 0, blocked=True)
    decision = decide(req("credit", 0), player=blocked, reference=None, tombstoned=False)
    assert decision.accepted and decision.delta == 0  # a lost bet's closing 0 credit


@pytest.mark.parametrize(("reference", "tombstoned", "code"), [
    (None, False, "transaction_not_found"),
    (None, True, "transaction_not_found"),
    (Recorded("debit:b1", "debit", 300, "EUR", "rolled_back"), False, "transaction_not_found"),
])
def test_a_credit_of_a_debit_not_standing_is_refused(reference, tombstoned, code):
    decision = decide(req("credit", 600, reference_transaction_id="debit:b1"),
                      player=ALICE, reference=reference, reference_tombstoned=tombstoned)
    assert decision.error_code == code and "debit:b1" in (decision.message or "")


def test_a_credit_of_a_standing_debit_pays():
    decision = decide(req("credit", 600, reference_transaction_id="debit:b1"),
                             player=ALICE, reference=Recorded("debit:b1", "debit", 300, "EUR",
                                                              "applied"), tombstoned=False)
    assert (decision.delta, decision.amount) == (600, 600)


def test_credit_player_checks():
    assert decide(req("credit"), player=None, reference=None,
                         tombstoned=False).error_code == "unknown_player"
    assert decide(req("credit", currency="JPY"), player=ALICE, reference=None,
                         tombstoned=False).error_code == "wrong_currency"


def rollback(reference, amount=300, unknown="not_found", **kw):
    return decide(req("rollback", amount, reference_transaction_id="debit:b1", **kw),
                           player=ALICE, reference=reference, rollback_unknown=unknown)


def test_a_rollback_gives_a_debit_back_and_takes_a_credit_back():
    back = rollback(Recorded("debit:b1", "debit", 300, "EUR", "applied"))
    assert (back.delta, back.amount, back.undoes) == (300, 300, "debit:b1")
    taken = rollback(Recorded("debit:b1", "credit", 300, "EUR", "applied"))
    assert (taken.delta, taken.undoes) == (-300, "debit:b1")


def test_a_rollback_of_an_unknown_transaction_leaves_a_tombstone_either_way():
    found = rollback(None, unknown="success")
    assert found.accepted and found.tombstone and (found.delta, found.amount) == (0, 0)
    missing = rollback(None, unknown="not_found")
    assert missing.error_code == "transaction_not_found" and missing.tombstone
    assert missing.http_status == 404


@pytest.mark.parametrize(("reference", "amount", "code"), [
    (Recorded("debit:b1", "debit", 300, "EUR", "rolled_back"), 300, "transaction_rolled_back"),
    (Recorded("debit:b1", "rollback", 300, "EUR", "applied"), 300, "bad_request"),
    (Recorded("debit:b1", "debit", 300, "EUR", "applied"), 299, "transaction_conflict"),
])
def test_rollback_refusals(reference, amount, code):
    decision = rollback(reference, amount)
    assert decision.error_code == code and not decision.tombstone


def test_a_rollback_needs_its_reference():
    decision = decide(req("rollback"), player=ALICE, reference=None,
                               rollback_unknown="success")
    assert decision.error_code == "bad_request"


def test_parse_keys():
    assert parse_keys(["k1=a", "k2=b"]) == {"k1": b"a", "k2": b"b"}
    assert parse_keys(["k1=a,k2=b=c"]) == {"k1": b"a", "k2": b"b=c"}
    for bad in (["k1"], ["=x"], ["k1="], ["k1=a", "k1=b"], []):
        with pytest.raises(ValueError):
            parse_keys(bad)


def test_the_fingerprint_is_the_content():
    assert fingerprint(req()) == fingerprint(req())
    assert fingerprint(req()) != fingerprint(req(amount=301))


def test_the_dice_are_reproducible_and_respect_kinds():
    faults = Faults(error_rate=0.3, late_rate=0.3, drop_rate=0.3, duplicate_rate=0.3, seed=7)
    first, second = Dice(faults), Dice(faults)
    rolls = [first.roll("debit") for _ in range(200)]
    assert rolls == [second.roll("debit") for _ in range(200)]
    assert 20 < sum(r.error for r in rolls) < 100
    only_credits = Dice(faults.model_copy(update={"kinds": ("credit",)}))
    assert not any(r.error or r.late or r.drop or r.duplicate
                   for r in (only_credits.roll("debit") for _ in range(50)))


def test_no_faults_by_default():
    dice = Dice(Faults())
    assert all(r == type(r)() for r in (dice.roll("debit") for _ in range(100)))
