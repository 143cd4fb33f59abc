"""The `croupier` command: one entry point, one module per group of subcommands.

A run imports only the module of the command it names (`main`): importing all of them
(DuckDB and Arrow for the archive, the operator's reconciliation, the simulators) cost
every run about a second of CPU before it did anything, and the test suite and operators'
scripts run the command hundreds of times. Help, no command or an unknown one get them all.
"""

from __future__ import annotations

import importlib
import sys
from functools import cache
from typing import Any

import typer

# every top-level command and group, and the module that registers it (a test checks each
# module registers exactly its names)
COMMANDS: dict[str, str] = {
    "kafka": "kafka_cmd",
    "topics": "topics_cmd",
    "evaluate": "evaluate_cmd",
    "rtp": "rtp_cmd",
    "schemas": "schemas_cmd",
    "replay": "replay_cmd",
    "complaint": "complaint_cmd",
    "simulate-table": "simulate_table_cmd",
    "sign-input": "simulate_table_cmd",
    "simulate-players": "simulate_players_cmd",
    "demo": "demo_cmd",
    "rebuild": "rebuild_cmd",
    "reconcile": "reconcile_cmd",
    "operator-api": "operator_api_cmd",
    "operator-wallet": "operator_wallet_cmd",
    "profiles": "profiles_cmd",
    "dead-letters": "dead_letters_cmd",
    "archive": "archive_cmd",
    "recall": "records_cmd",
    "statement": "records_cmd",
    "events": "records_cmd",
    "realised-rtp": "records_cmd",
    "stats": "stats_cmd",
    "risk": "risk_cmd",
}
MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


def _root() -> None:
    """Makes the app a group even with one module's commands in it (Typer runs a lone
    command without its name)."""


def build(modules: tuple[str, ...] = MODULES) -> typer.Typer:
    """The command with the given modules' commands registered."""
    app = typer.Typer(
        name="croupier",
        help="Settlement platform for live-dealer baccarat and Triple Face tables.",
        no_args_is_help=True,
        add_completion=False,
    )
    app.callback()(_root)
    for name in modules:
        importlib.import_module(f"services.cli.{name}").register(app)
    return app


@cache
def _full() -> typer.Typer:
    return build()


def __getattr__(name: str) -> Any:
    """`app`: every command (the tests' runner, help); built on first use."""
    if name == "app":
        return _full()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    """The `croupier` script and `python -m services.cli`."""
    args = sys.argv[1:] if argv is None else argv
    module = COMMANDS.get(args[0]) if args else None
    build((module,) if module else MODULES)(args=args, prog_name="croupier")
