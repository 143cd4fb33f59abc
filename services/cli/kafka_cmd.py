"""`croupier kafka up|down|status`: the local single-node broker, or a check of an external one."""

from __future__ import annotations

import typer
from rich.console import Console

from croupier.services.infra.local_broker import BrokerError, admin_ready, broker_from_settings, jars_dir
from croupier.services.infra.settings import get_settings

console = Console()
kafka_app = typer.Typer(help="Start, stop and inspect the Kafka broker.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(kafka_app, name="kafka")


@kafka_app.command("up")
def up() -> None:
    """Start the local broker (fetching its jars once per machine) and wait until it is ready."""
    settings = get_settings()
    if settings.uses_external_kafka:
        _check_external(settings.bootstrap_servers)
        return
    broker = broker_from_settings(settings)
    try:
        pid, downloaded = broker.start()
    except BrokerError as exc:
        console.print(f"[red]kafka up failed:[/] {exc}")
        raise typer.Exit(1) from exc
    jars = jars_dir(settings.cache_dir)
    console.print(f"jars: {'downloaded to' if downloaded else 'cached at'} {jars}")
    console.print(f"[green]kafka ready[/] at {broker.bootstrap} (pid {pid}, data {broker.data_dir})")


@kafka_app.command("down")
def down() -> None:
    """Stop the local broker cleanly."""
    settings = get_settings()
    if settings.uses_external_kafka:
        console.print("KAFKA_BOOTSTRAP_SERVERS is set: the external cluster is not ours to stop")
        return
    stopped = broker_from_settings(settings).stop()
    console.print("kafka stopped" if stopped else "kafka was not running")


@kafka_app.command("status")
def status() -> None:
    """Say whether the broker runs and answers an admin client; exit 1 if it does not."""
    settings = get_settings()
    if settings.uses_external_kafka:
        _check_external(settings.bootstrap_servers)
        return
    state = broker_from_settings(settings).status()
    if not state.running:
        console.print(f"kafka: [red]not running[/] (data {state.data_dir})")
        raise typer.Exit(1)
    if not state.ready:
        console.print(f"kafka: [yellow]running but not answering[/] (pid {state.pid})")
        raise typer.Exit(1)
    console.print(f"kafka: [green]ready[/] at {state.bootstrap} (pid {state.pid}), "
                  f"{len(state.topics)} topics")


def _check_external(bootstrap: str) -> None:
    topics = admin_ready(bootstrap)
    if topics is None:
        console.print(f"external kafka at {bootstrap}: [red]not reachable[/]")
        raise typer.Exit(1)
    console.print(f"external kafka at {bootstrap}: [green]ready[/], {len(topics)} topics "
                  "(KAFKA_BOOTSTRAP_SERVERS is set, no local broker is started)")
