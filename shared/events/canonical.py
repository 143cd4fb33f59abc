"""Canonical JSON and SHA-256: the one encoding that hashes and signatures are computed over.

Sorted keys, no whitespace, UTF-8, datetimes as ISO-8601 UTC with microseconds
(pydantic's JSON mode): the same model always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from pydantic import BaseModel

GENESIS_HASH = "0" * 64


# json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False), its encoder built
# once (json.dumps builds one per call when given options)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_bytes(payload: BaseModel | dict[str, Any], exclude: set[str] | None = None) -> bytes:
    data = payload.model_dump(mode="json", exclude=exclude) if isinstance(payload, BaseModel) \
        else {k: v for k, v in payload.items() if not exclude or k not in exclude}
    return _CANONICAL.encode(data).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hmac_hex(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 of `data` under `key`, in hex (the one-shot `hmac.digest`: OpenSSL's,
    without building an HMAC object)."""
    return hmac.digest(key, data, "sha256").hex()


def same_digest(a: str, b: str) -> bool:
    """Constant-time comparison, so a forged signature learns nothing from timing."""
    return hmac.compare_digest(a.encode(), b.encode())
