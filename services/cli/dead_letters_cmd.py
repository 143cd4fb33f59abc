"""`croupier dead-letters list|show|redrive`: the records a service could not apply.

`list` reads `dead.letters` (every service writes there instead of stopping on a record);
`show` prints one in full; `redrive` puts a dead letter's original record back on its
topic, once the cause is fixed (a deployed fix, a corrected profile): the consumer reads
it again like any other record, and consumers are idempotent, so a record that was in
fact applied is not applied twice."""

from __future__ import annotations

import base64
import json

import typer
from kafka import KafkaProducer
from rich.console import Console
from rich.table import Table

from croupier.services.cli.cli_errors import fail
from croupier.services.infra.kafka_security import ADMIN, kafka_python_options
from croupier.services.infra.log_reader import LogReadError, read_to_end
from croupier.services.infra.settings import get_settings
from croupier.shared.events.dead_letters import DeadLetter

console = Console()
dead_letters_app = typer.Typer(help="Records a service could not apply: read, re-drive.",
                               no_args_is_help=True)
TOPIC = "dead.letters"


def register(app: typer.Typer) -> None:
    app.add_typer(dead_letters_app, name="dead-letters")


def read_dead_letters(bootstrap: str) -> dict[str, DeadLetter]:
    """Every dead letter still in the log, by id (a record dead-lettered twice, say after a
    crash, is one dead letter)."""
    letters: dict[str, DeadLetter] = {}
    try:
        for record in read_to_end(bootstrap, TOPIC):
            letter = DeadLetter.model_validate_json(record.value)
            letters[letter.dead_letter_id] = letter
    except LogReadError as exc:
        fail(str(exc))
    return letters


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
def redrive(dead_letter_id: str = typer.Argument(..., help="As `list` prints it.")) -> None:
    """Put the dead letter's original record (key and value) back on its topic."""
    letter = _one(dead_letter_id)
    if letter.value_b64 is None:
        fail(f"{dead_letter_id}: its value was {letter.value_size} bytes, kept only as its "
             f"digest {letter.value_sha256}; it cannot be re-driven from here")
    key = None if letter.key_b64 is None else base64.b64decode(letter.key_b64)
    # the record goes back on the topic its owner writes: only admin may do that
    producer = KafkaProducer(bootstrap_servers=get_settings().bootstrap_servers, acks="all",
                             **kafka_python_options(ADMIN))
    try:
        sent = producer.send(letter.topic, key=key, value=base64.b64decode(letter.value_b64))
        where = sent.get(timeout=30)
    finally:
        producer.close()
    typer.echo(f"re-drove {dead_letter_id} to {letter.topic}[{where.partition}]@{where.offset}")


def _one(dead_letter_id: str) -> DeadLetter:
    letter = read_dead_letters(get_settings().bootstrap_servers).get(dead_letter_id)
    if letter is None:
        fail(f"no dead letter {dead_letter_id!r} in {TOPIC}")
    return letter
