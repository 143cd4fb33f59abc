"""`croupier schemas [--check]`: JSON Schema of every event, written to `schemas/`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from services.wallet.outbound_api import outbound_openapi
from shared.events.registry import schema_files

OUTBOUND_API = "openapi/operator-wallet.json"  # seamless mode: what an operator implements


def generated_files() -> dict[str, str]:
    """Every file `schemas/` holds: each event's JSON Schema, and the seamless wallet's
    outbound API (OpenAPI)."""
    return {**schema_files(),
            OUTBOUND_API: json.dumps(outbound_openapi(), indent=2, sort_keys=True) + "\n"}

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "schemas"


def register(app: typer.Typer) -> None:
    app.command("schemas")(schemas)


def drift(target: Path) -> list[str]:
    """Files that are missing, stale or no longer generated."""
    wanted = generated_files()
    problems = [f"{name}: {'stale' if (target / name).exists() else 'missing'}"
                for name, text in wanted.items()
                if not (target / name).exists() or (target / name).read_text() != text]
    present = {str(p.relative_to(target)) for p in target.rglob("*.json")} if target.exists() else set()
    problems += [f"{name}: no longer generated" for name in sorted(present - set(wanted))]
    return problems


def schemas(
    out: Path = typer.Option(DEFAULT_DIR, help="Directory to write to."),
    check: bool = typer.Option(False, help="Only compare; exit 1 if the files drifted."),
) -> None:
    """Write (or check) the JSON Schema of every event type, one file per type per topic."""
    if check:
        problems = drift(out)
        for line in problems:
            typer.echo(f"drift: {line}")
        if problems:
            typer.echo("run `make schemas` and commit the result")
            raise typer.Exit(1)
        typer.echo(f"schemas in {out} match the models")
        return
    for path in out.rglob("*.json") if out.exists() else []:
        path.unlink()
    for name, text in generated_files().items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    typer.echo(f"wrote {len(generated_files())} files to {out}")
