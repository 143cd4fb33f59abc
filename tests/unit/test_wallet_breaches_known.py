"""Every invariant breach the wallet's handlers can report is one the metrics know: an
unknown name raised in the batch's flush and crashed the accounts agent (found by the
hostile corpus: a `settlement_reversed` for a bet nobody placed, on `bets.settled`)."""

from __future__ import annotations

import re
from pathlib import Path

from services.infra import metrics

ROOT = Path(__file__).resolve().parents[2]


def test_every_breach_the_wallet_reports_is_a_known_invariant():
    sources = [ROOT / "services" / "wallet" / "handlers.py", ROOT / "services" / "wallet" / "app.py"]
    named = {m for path in sources for m in re.findall(r'breach="([a-z_]+)"', path.read_text())}
    assert "reversal_of_unsettled_bet" in named
    assert named <= set(metrics.WALLET_INVARIANTS)
    for name in named:
        metrics.breach(name)  # raises on an unknown name
