"""Each service's app is built by its composition root, `bootstrap(settings)`, when its
worker starts, never when its module is imported (issue 13): importing builds no Faust
app, creates no directory and computes no RTP; building registers the same agents, tables
and routes as the worker runs, and leaves nothing it built in a module global."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from services.infra.service_table import SERVICES

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, json, os, sys
import faust
from services.infra import metrics
home = os.environ["CROUPIER_HOME"]
out = {}

def holds_an_app(module):
    names = [".app", ".bootstrap"]
    if module in ("services.wallet", "services.dealer_event"):
        names.append(".views")
    return any(isinstance(value, faust.App) for name in names
               for value in vars(importlib.import_module(module + name)).values())

for module in sys.argv[1:]:
    out[module] = {"built_at_import": holds_an_app(module)}
out["home_at_import"] = os.path.exists(home)
out["rtp_at_import"] = bool(metrics.EXACT_RTP._metrics)
for module in sys.argv[1:]:
    app = importlib.import_module(module + ".bootstrap").bootstrap().app
    out[module].update(agents=sorted(app.agents), tables=sorted(app.tables),
                       tasks=sorted(f"{t.__module__}.{t.__qualname__}" for t in app._app_tasks),
                       routes=sorted(app.web.views),
                       global_after_build=holds_an_app(module))
out["rtp_after_build"] = bool(metrics.EXACT_RTP._metrics)
print(json.dumps(out))
"""


def test_importing_a_service_builds_nothing_and_bootstrap_wires_it(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_")}
    done = subprocess.run([sys.executable, "-c", PROBE, *(s.module for s in SERVICES)],
                          env={**env, "CROUPIER_HOME": str(home)}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout.splitlines()[-1])
    assert not seen["home_at_import"] and not seen["rtp_at_import"]
    assert not any(seen[s.module]["built_at_import"] for s in SERVICES)
    # the bootstrap returns what it built: no module global holds it afterwards
    assert not any(seen[s.module]["global_after_build"] for s in SERVICES)
    assert seen["rtp_after_build"]
    assert sorted(p.name for p in home.iterdir()) == sorted(s.name for s in SERVICES)
    wallet = seen["services.wallet"]
    # the kernel's loops are tasks on their own consumer (services/infra/consumer.py)
    assert wallet["agents"] == []
    assert "services.wallet.app.accounts_agent" in wallet["tasks"]
    assert wallet["tables"] == []  # its state is the fold of wallet.ledger
    assert {"/health", "/metrics", "/players/{player_id}/bets"} <= set(wallet["routes"])
    dealer = seen["services.dealer_event"]
    assert dealer["agents"] == []
    assert "services.dealer_event.app.dealer_inputs" in dealer["tasks"]
    assert seen["services.dealer_event"]["routes"] == ["/health", "/inputs", "/metrics",
                                                       "/tables/{table_id}"]
    settlement = seen["services.bet_settlement"]
    assert settlement["tables"] == []  # its state is the fold of settlement.log
    assert settlement["agents"] == []
    assert "services.bet_settlement.app.settlement_agent" in settlement["tasks"]
    evaluation = seen["services.game_evaluation"]
    assert evaluation["agents"] == []
    assert "services.game_evaluation.app.evaluate" in evaluation["tasks"]
