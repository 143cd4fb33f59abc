"""Is this input authentic and timely? Checked before the table's rules are consulted.

Pure: the signing keys come from a function handed in and `now` from the caller's
clock. An input is signed by its table's device or supervisor key (HMAC-SHA256
over its canonical body, which includes `sent_at`), so a forged, re-targeted or
replayed-late input is refused here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.dealer_event.refusals import Refused
from shared.events.inputs import SUPERVISOR_ONLY, InputBase

KeyFor = Callable[[str, str], bytes]  # (table id, role) -> key


@dataclass(frozen=True)
class AdmissionPolicy:
    key_for: KeyFor
    max_age: timedelta = timedelta(seconds=30)
    max_ahead: timedelta = timedelta(seconds=5)


def authenticate(inp: InputBase, policy: AdmissionPolicy) -> None:
    """Signature and role: returns when the input is what its signer says it is, raises
    Refused otherwise."""
    if not inp.signature:
        raise Refused("unsigned", f"input {inp.input_id} carries no signature; every input "
                                  "must be signed by the table's device or supervisor key")
    if not inp.signature_valid(policy.key_for(inp.table_id, inp.role)):
        raise Refused("bad_signature", f"input {inp.input_id}: the signature does not match "
                                       f"the {inp.role} key of table {inp.table_id} (forged, "
                                       "altered or signed for another table)")
    command = getattr(inp, "command", "")
    if command in SUPERVISOR_ONLY and inp.role != "supervisor":
        raise Refused("role_not_allowed", f"{command} is a supervisor's decision; "
                                          f"{inp.signer} signed as {inp.role}")


def check_freshness(inp: InputBase, now: datetime, policy: AdmissionPolicy) -> None:
    """Sent within the policy's window around `now`, or Refused."""
    age = now - inp.sent_at
    if age > policy.max_age:
        raise Refused("stale_input", f"input {inp.input_id} was sent {age.total_seconds():.1f}"
                                     f" s ago; inputs older than "
                                     f"{policy.max_age.total_seconds():.0f} s are refused")
    if -age > policy.max_ahead:
        raise Refused("input_from_future", f"input {inp.input_id} is dated "
                                           f"{-age.total_seconds():.1f} s in the future; "
                                           "check the device clock")
