"""`croupier operator-wallet serve`: the reference operator wallet, the other side of the
seamless wallet's API, as a process of its own (`services.simulators.operator_wallet`).

Every option may come from the environment instead (`OPERATOR_WALLET_*`, not `CROUPIER_*`:
these are the operator's settings, not croupier's; the keys are best passed that way, off
the command line). With no key given it holds croupier's development key (`k1`,
`croupier-dev-operator-wallet-secret`), so the demo runs without configuration.
"""

from __future__ import annotations

from pathlib import Path

import typer

from services.cli.cli_errors import fail

operator_wallet_app = typer.Typer(help="The reference operator wallet (seamless mode's other side).",
                                  add_completion=False,
                                  no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(operator_wallet_app, name="operator-wallet")


@operator_wallet_app.callback()
def _group() -> None:
    """The reference operator wallet: its own process and SQLite database."""


@operator_wallet_app.command("serve")
def serve(
    port: int = typer.Option(8110, envvar="OPERATOR_WALLET_PORT", help="HTTP port."),
    host: str = typer.Option("127.0.0.1", envvar="OPERATOR_WALLET_HOST", help="Bind address."),
    db: Path = typer.Option(Path("var/operator-wallet.sqlite"), envvar="OPERATOR_WALLET_DB",
                            help="The SQLite database (created if missing, kept across restarts)."),
    key: list[str] = typer.Option(None, envvar="OPERATOR_WALLET_KEYS", help=(
        "A signing key KEY_ID=SECRET, repeated (or comma-separated) to hold an old and a new "
        "key while keys rotate. Default: k1 = croupier's development secret.")),
    rollback_unknown: str = typer.Option("not_found", envvar="OPERATOR_WALLET_ROLLBACK_UNKNOWN",
                                         help="A rollback of an unknown transaction: "
                                              "success (200) or not_found (404)."),
    admin_token: str = typer.Option(None, envvar="OPERATOR_WALLET_ADMIN_TOKEN",
                                    help="The admin API's bearer token (default: a dev token)."),
    faults: str = typer.Option(None, envvar="OPERATOR_WALLET_FAULTS",
                               help="The faults as JSON (see faults.Faults); the flags below "
                                    "override its fields."),
    latency_ms: int = typer.Option(None, help="Every answer this late."),
    error_rate: float = typer.Option(None, help="Share of calls answered 500 before the write."),
    late_rate: float = typer.Option(None, help="Share of calls answered late_ms after the write."),
    late_ms: int = typer.Option(None, help="How late a late answer is (default 3500)."),
    drop_rate: float = typer.Option(None, help="Share of calls whose connection is dropped "
                                               "after the write."),
    duplicate_rate: float = typer.Option(None, help="Share of calls processed twice at once."),
    seed: int = typer.Option(None, help="Seed of the fault dice (reproducible faults)."),
) -> None:
    """Serve POST /debit|/credit|/rollback, GET /transactions, /admin/..., /health, /metrics."""
    from pydantic import ValidationError

    from services.simulators.operator_wallet.admin import DEV_ADMIN_TOKEN
    from services.simulators.operator_wallet.faults import Faults
    from services.simulators.operator_wallet.rules import parse_keys
    from services.simulators.operator_wallet.server import WalletConfig, serve

    if rollback_unknown not in ("success", "not_found"):
        fail(f"--rollback-unknown is success or not_found, not {rollback_unknown!r}")
    flags = {"latency_ms": latency_ms, "error_rate": error_rate, "late_rate": late_rate,
             "late_ms": late_ms, "drop_rate": drop_rate, "duplicate_rate": duplicate_rate,
             "seed": seed}
    try:
        keys = parse_keys(key) if key else WalletConfig().keys
        base = Faults.model_validate_json(faults) if faults else Faults()
        chosen = Faults.model_validate({**base.model_dump(),
                                        **{k: v for k, v in flags.items() if v is not None}})
    except (ValueError, ValidationError) as exc:
        fail(str(exc))
    serve(db, port, WalletConfig(keys=keys, rollback_unknown=rollback_unknown,  # type: ignore[arg-type]
                                 admin_token=admin_token or DEV_ADMIN_TOKEN, faults=chosen),
          host=host)
