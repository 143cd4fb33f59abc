"""Dealer inputs are signed with the table's key for the sender's role."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from services.infra.table_keys import table_key
from shared.events.inputs import DEALER_INPUT, ScanCard, VoidRound, make_input

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DEVICE = table_key("secret", "T1", "device")


def _scan(**over):
    fields = dict(input_id="i-1", table_id="T1", role="device", signer="scanner-1",
                  round_id="R1", card="10H")
    fields.update(over)
    return make_input(ScanCard, key=DEVICE, sent_at=NOW, **fields)


def test_a_signed_input_verifies_after_a_json_round_trip():
    sent = _scan()
    received = DEALER_INPUT.validate_json(sent.model_dump_json())
    assert received.card.rank == "T" and received.signature_valid(DEVICE)


def test_keys_differ_per_table_and_role():
    assert len({table_key("secret", t, r) for t in ("T1", "T2") for r in ("device", "supervisor")}) == 4
    assert not _scan().signature_valid(table_key("secret", "T2", "device"))
    assert not _scan().signature_valid(table_key("secret", "T1", "supervisor"))


def test_any_change_to_a_signed_input_invalidates_it():
    sent = _scan()
    for field, value in [("card", "QS"), ("round_id", "R2"), ("sent_at", NOW.replace(second=1))]:
        forged = DEALER_INPUT.validate_python({**sent.model_dump(mode="json"), field: value})
        assert not forged.signature_valid(DEVICE), field


def test_unsigned_input_never_verifies():
    unsigned = ScanCard(input_id="i", table_id="T1", role="device", signer="s", sent_at=NOW,
                        round_id="R1", card="AS")
    assert not unsigned.signature_valid(DEVICE)


def test_malformed_inputs_name_the_problem():
    with pytest.raises(ValidationError, match="card"):
        DEALER_INPUT.validate_python({"command": "scan_card", "input_id": "i", "table_id": "T1",
                                      "role": "device", "signer": "s", "sent_at": NOW.isoformat(),
                                      "round_id": "R1", "card": "1X"})
    with pytest.raises(ValidationError, match="reason_code"):
        VoidRound(input_id="i", table_id="T1", role="supervisor", signer="s", sent_at=NOW,
                  round_id="R1", reason_code="bored", reason_text="x")
