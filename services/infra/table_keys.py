"""Per-table signing keys for dealer inputs, derived from one master secret in settings.

key = HMAC-SHA256(master, "<table id>:<role>"), so each table's device and its
supervisor hold different keys and no key is ever written into code or logs.
"""

from __future__ import annotations

import hashlib
import hmac


def table_key(master_secret: str, table_id: str, role: str) -> bytes:
    return hmac.new(master_secret.encode(), f"{table_id}:{role}".encode(), hashlib.sha256).digest()
