"""`croupier operator-wallet serve` refuses a bad setting with a named reason (exit 2)
before it opens anything."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from services.cli import operator_wallet_cmd

app = typer.Typer()
operator_wallet_cmd.register(app)


@pytest.mark.parametrize(("args", "why"), [
    (["--rollback-unknown", "maybe"], "success or not_found"),
    (["--key", "k1"], "KEY_ID=SECRET"),
    (["--key", "k1=a", "--key", "k1=b"], "given twice"),
    (["--faults", '{"drop_rate": 2}'], "drop_rate"),
    (["--error-rate", "1.5"], "error_rate"),
])
def test_a_bad_setting_is_refused(tmp_path, args, why):
    result = CliRunner().invoke(app, ["operator-wallet", "serve", "--db",
                                      str(tmp_path / "w.sqlite"), *args])
    assert result.exit_code == 2, result.output
    assert why in result.output
    assert not (tmp_path / "w.sqlite").exists()
