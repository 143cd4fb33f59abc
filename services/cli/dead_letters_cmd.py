"""`croupier dead-letters list|show|redrive`: the records a service could not apply.

`list` reads `dead.letters` (every service writes there instead of stopping on a record);
`show` prints one in full; `redrive` puts a dead letter's original record back on its
topic, once the cause is fixed (a deployed fix, a corrected profile): the consumer reads
it again like any other record, and consumers are idempotent, so a record that was in
fact applied is not applied twice. The re-drive is recorded on `dead.letters` (who, where the
record landed): `croupier events` lists it."""

from __future__ import annotations

import base64
import getpass
import json

import typer
from rich.console import Console
from rich.table import Table

from services.cli.cli_errors import fail
from services.infra.log_reader import LogReadError
from services.infra.settings import get_settings
from services.operator import dead_letter_ops
from shared.events.dead_letters import DeadLetter

console = Console()
dead_letters_app = typer.Typer(help="Records a service could not apply: read, re-drive.",
                               no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(dead_letters_app, name="dead-letters")


def read_dead_letters(bootstrap: str) -> dict[str, DeadLetter]:
    """Every dead letter still in the log, by id (a record dead-lettered twice, say after a
    crash, is one dead letter)."""
    try:
        return dead_letter_ops.read_dead_letters(bootstrap).letters
    except LogReadError as exc:
        fail(str(exc))


@dead_letters_app.command("list")
def list_letters(
    service: str = typer.Option(None, help="Only this service's dead letters."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
) -> None:
    """Every dead letter: which service gave up on which record, and why."""
    letters = [letter for letter in read_dead_letters(get_settings().bootstrap_servers).values()
               if service is None or letter.service == service]
    if as_json:
        for letter in letters:
            typer.echo(letter.model_dump_json())
        return
    table = Table("id", "at", "error", "bytes", "re-drivable", title=f"{len(letters)} dead letter(s)")
    for letter in letters:
        table.add_row(letter.dead_letter_id, letter.occurred_at.isoformat(timespec="seconds"),
                      f"{letter.error_type}: {letter.error[:80]}", str(letter.value_size),
                      "yes" if letter.value_b64 is not None else "no (digest only)")
    Console(width=max(console.width, 160)).print(table)


@dead_letters_app.command("show")
def show(dead_letter_id: str = typer.Argument(..., help="As `list` prints it.")) -> None:
    """One dead letter in full (JSON), its value decoded when it is text."""
    letter = _one(dead_letter_id)
    body = json.loads(letter.model_dump_json())
    if letter.value_b64 is not None:
        body["value_text"] = base64.b64decode(letter.value_b64).decode("utf-8", "replace")
    typer.echo(json.dumps(body, indent=2))


@dead_letters_app.command("redrive")
def redrive(dead_letter_id: str = typer.Argument(..., help="As `list` prints it."),
            reason: str = typer.Option("", help="Why (the fix deployed): kept with the re-drive.")
            ) -> None:
    """Put the dead letter's original record (key and value) back on its topic."""
    letter = _one(dead_letter_id)
    try:
        done = dead_letter_ops.redrive(get_settings().bootstrap_servers, letter,
                                       by=f"cli:{getpass.getuser()}", reason=reason)
    except dead_letter_ops.RedriveError as exc:
        fail(str(exc))
    typer.echo(f"re-drove {dead_letter_id} to {done.topic}[{done.partition}]@{done.offset}")


def _one(dead_letter_id: str) -> DeadLetter:
    letter = read_dead_letters(get_settings().bootstrap_servers).get(dead_letter_id)
    if letter is None:
        fail(f"no dead letter {dead_letter_id!r} in dead.letters")
    return letter
