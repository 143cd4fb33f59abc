"""The `croupier` command imports only the module of the command it runs, and the map that
says which module that is matches what every module registers."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import typer

from services.cli.main import COMMANDS, MODULES

CLI_DIR = Path(__file__).resolve().parents[2] / "services" / "cli"


def _registered(module: str) -> set[str]:
    app = typer.Typer()
    importlib.import_module(f"services.cli.{module}").register(app)
    return ({c.name for c in app.registered_commands if c.name}
            | {g.name for g in app.registered_groups if g.name})


def test_every_command_module_is_mapped_with_exactly_the_names_it_registers() -> None:
    on_disk = {p.stem for p in CLI_DIR.glob("*_cmd.py")}
    assert set(MODULES) == on_disk
    for module in MODULES:
        assert _registered(module) == {n for n, m in COMMANDS.items() if m == module}, module


def _imports_after(*args: str) -> tuple[int, set[str]]:
    code = ("import sys\nfrom services.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code or 0\n"
            "else:\n    code = 0\n"
            "print('\\nMODULES', code, ' '.join(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=CLI_DIR.parents[1])
    line = done.stdout.rsplit("MODULES ", 1)[1].split()
    return int(line[0]), set(line[1:])


def test_a_command_runs_with_only_its_own_module_imported() -> None:
    code, modules = _imports_after("rtp", "--profile", "sbo-baccarat")
    assert code == 0
    assert "services.cli.rtp_cmd" in modules
    others = {f"services.cli.{m}" for m in MODULES if m != "rtp_cmd"}
    assert not modules & others
    assert "duckdb" not in modules and "pyarrow" not in modules


def test_help_and_an_unknown_command_see_every_command() -> None:
    code, modules = _imports_after("--help")
    assert code == 0 and {f"services.cli.{m}" for m in MODULES} <= modules
    code, _ = _imports_after("no-such-command")
    assert code == 2
