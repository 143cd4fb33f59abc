"""`croupier kafka up|down|status`: the local cluster (one node or more, `CROUPIER_KAFKA_BROKERS`),
or a check of an external one."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer
from rich.console import Console

from services.infra.local_broker import (
    BrokerError,
    admin_ready,
    cluster_from_settings,
    jars_dir,
)
from services.infra.settings import get_settings

console = Console()
kafka_app = typer.Typer(help="Start, stop and inspect the Kafka cluster.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(kafka_app, name="kafka")


@kafka_app.command("up")
def up() -> None:
    """Start the local nodes that are down (fetching the jars once per machine) and wait until
    every node answers. Safe to run again: it is how a killed node is brought back."""
    settings = get_settings()
    if settings.uses_external_kafka:
        _check_external(settings.bootstrap_servers)
        return
    cluster = cluster_from_settings(settings)
    try:
        spawned, downloaded = cluster.up()
    except BrokerError as exc:
        console.print(f"[red]kafka up failed:[/] {exc}")
        raise typer.Exit(1) from exc
    jars = jars_dir(settings.cache_dir)
    console.print(f"jars: {'downloaded to' if downloaded else 'cached at'} {jars}")
    for node, pid, started in spawned:
        console.print(f"node {node.node_id}: {'started' if started else 'running'} at "
                      f"{node.bootstrap} (pid {pid}, data {node.data_dir})")
    console.print(f"[green]kafka ready[/] at {cluster.bootstrap} ({len(spawned)} node(s), "
                  f"replication {settings.replication_factor})")


@kafka_app.command("down")
def down() -> None:
    """Stop every local node cleanly."""
    settings = get_settings()
    if settings.uses_external_kafka:
        console.print("KAFKA_BOOTSTRAP_SERVERS is set: the external cluster is not ours to stop")
        return
    stopped = cluster_from_settings(settings).down()
    console.print(f"kafka stopped (node(s) {', '.join(map(str, stopped))})" if stopped
                  else "kafka was not running")


@kafka_app.command("status")
def status(as_json: bool = typer.Option(False, "--json", help=(
        'Print {"nodes": [{"id", "pid", "port", "up"}, ...]}; `id` is the node.id that '
        "partition metadata names as leader."))) -> None:
    """Say whether each node runs and answers an admin client; exit 1 unless all do."""
    settings = get_settings()
    if settings.uses_external_kafka:
        _check_external(settings.bootstrap_servers)
        return
    nodes = cluster_from_settings(settings).status()
    if as_json:
        print(json.dumps({"nodes": [asdict(n) for n in nodes]}))
    else:
        for n in nodes:
            state = "[green]ready[/]" if n.up else (
                "[yellow]running but not answering[/]" if n.pid else "[red]not running[/]")
            console.print(f"kafka node {n.id}: {state} at 127.0.0.1:{n.port}"
                          + (f" (pid {n.pid})" if n.pid else ""))
    if not all(n.up for n in nodes):
        raise typer.Exit(1)


def _check_external(bootstrap: str) -> None:
    topics = admin_ready(bootstrap)
    if topics is None:
        console.print(f"external kafka at {bootstrap}: [red]not reachable[/]")
        raise typer.Exit(1)
    console.print(f"external kafka at {bootstrap}: [green]ready[/], {len(topics)} topics "
                  "(KAFKA_BOOTSTRAP_SERVERS is set, no local broker is started)")
