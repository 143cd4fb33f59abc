"""`croupier archive run|verify`: the archive of every topic, kept beyond Kafka's retention.

`run` is the archiver, a process of its own (the demo and docker-compose start it);
`verify` checks every file against its manifest and every manifest against the one before
it, and names what was changed, removed or reordered (exit 1)."""

from __future__ import annotations

import json
import logging
import os
import sys

import typer

from services.cli.cli_errors import fail
from services.infra.archive_store import ArchiveStoreError, archive_from_settings, open_store
from services.infra.settings import get_settings
from shared.topics import TOPIC_NAMES

archive_app = typer.Typer(help="The archive: every topic, kept beyond Kafka's retention.",
                          no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(archive_app, name="archive")


def _store(url: str | None):
    try:
        return open_store(url, get_settings()) if url else archive_from_settings(get_settings())
    except ArchiveStoreError as exc:
        fail(str(exc))


@archive_app.command("run")
def run(
    url: str = typer.Option(None, help="Archive URL (default CROUPIER_ARCHIVE_URL, else "
                                       "file://<home>/archive)."),
    once: bool = typer.Option(False, help="Archive up to the log's current end, then stop."),
    flush_seconds: float = typer.Option(None, help="Close a segment this long after its first "
                                                   "record (default CROUPIER_ARCHIVE_FLUSH_SECONDS)."),
) -> None:
    """Copy every catalogue topic into the archive, exactly once by offset."""
    from services.archive.archiver import ARCHIVER_HEARTBEAT, Archiver, run_until_signalled

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = get_settings()
    store = _store(url)
    archiver = Archiver(settings.bootstrap_servers, store,
                        flush_seconds=flush_seconds or settings.archive_flush_seconds)
    stats = run_until_signalled(archiver, once=once,
                                heartbeat=settings.home / ARCHIVER_HEARTBEAT)
    typer.echo(f"archived {stats.records} records in {stats.segments} segments "
               f"({stats.bytes} bytes) to {store.url}")


@archive_app.command("verify")
def verify_cmd(
    url: str = typer.Option(None, help="Archive URL (default CROUPIER_ARCHIVE_URL)."),
    topic: list[str] = typer.Option(None, help="Only these topics (default: the catalogue)."),
    against_log: bool = typer.Option(False, "--against-log",
                                     help="Also check the archive reaches each partition's "
                                          "first offset in Kafka (nothing aged out unarchived)."),
    as_json: bool = typer.Option(False, "--json", help="The report as JSON."),
) -> None:
    """Check every archived file and manifest; name what was changed, removed or reordered."""
    from services.archive.verify import verify
    from services.infra.log_reader import log_starts as first_offsets

    store = _store(url)
    topics = topic or list(TOPIC_NAMES)
    unknown = sorted(set(topics) - set(TOPIC_NAMES))
    if unknown:
        fail(f"unknown topic(s) {unknown}; the catalogue has {list(TOPIC_NAMES)}")
    bootstrap = get_settings().bootstrap_servers
    log_starts = (lambda t: first_offsets(bootstrap, t)) if against_log else None
    try:
        report = verify(store, topics, log_starts)
    except ArchiveStoreError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps({
            "url": report.url, "ok": report.ok, "segments": report.segments,
            "records": report.records, "bytes": report.bytes,
            "seconds": round(report.seconds, 3), "problems": report.problems,
            "notes": report.notes}, indent=2))
    else:
        for part in report.partitions:
            typer.echo(f"{part.topic}[{part.partition}]: {part.segments} segments, "
                       f"{part.records} records, offsets {part.start_offset}.."
                       f"{(part.end_offset or 1) - 1}")
        for note in report.notes:
            typer.echo(f"note: {note}")
        for problem in report.problems:
            typer.echo(f"PROBLEM: {problem}")
        verdict = "OK" if report.ok else f"{len(report.problems)} PROBLEM(S)"
        typer.echo(f"{verdict}: {report.segments} segments, {report.records} records, "
                   f"{report.bytes} bytes verified in {report.seconds:.2f} s ({report.url})")
    _exit_now(0 if report.ok else 1)


def _exit_now(code: int) -> None:
    """Leave with `code` once the report is written, skipping the interpreter's teardown:
    seen once in a clean-clone CI run, the native libraries' threads (pyarrow) aborted the
    process while it shut down ("terminate called without an active exception", exit
    -6), turning a verdict into a crash. Everything this command says is flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
