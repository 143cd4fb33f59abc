"""`croupier topics apply|check|describe`: the topic catalogue against the live cluster."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from services.infra import topic_admin
from services.infra.settings import get_settings
from shared.topics import RetentionTooShortError

console = Console()
topics_app = typer.Typer(help="Create and inspect the platform's topics.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(topics_app, name="topics")


def _catalogue(retention_ms: int | None):
    try:
        return topic_admin.catalogue_of(get_settings(), retention_ms)
    except RetentionTooShortError as exc:
        console.print(f"[red]refused:[/] {exc}")
        raise typer.Exit(2) from exc


@topics_app.command("apply")
def apply(
    retention_ms: int = typer.Option(None, help="Override CROUPIER_RETENTION_MS (min 24 h)."),
) -> None:
    """Create missing topics and align partitions and configs, and apply the platform's
    ACLs on a secured cluster (as the admin principal). Safe to run again."""
    catalogue = _catalogue(retention_ms)
    settings = get_settings()
    admin = topic_admin.admin_client(settings.bootstrap_servers)
    try:
        report = topic_admin.apply(admin, catalogue, acls_for=settings.instance)
    except topic_admin.ReplicationRefused as exc:
        console.print(f"[red]refused:[/] {exc}")
        raise typer.Exit(2) from exc
    except topic_admin.TopicsNotServed as exc:
        console.print(f"[red]not served yet:[/] {exc}")
        raise typer.Exit(1) from exc
    finally:
        admin.close()
    for name in report.created:
        console.print(f"created {name}")
    for name, changes in report.configs_changed.items():
        for key, (old_value, new_value) in changes.items():
            console.print(f"{name}: {key} {old_value} -> {new_value}")
    for line in report.drift:
        console.print(f"[red]drift:[/] {line}")
    if not report.changed and not report.drift:
        console.print(f"all {len(catalogue)} topics already match the catalogue")
    if report.acls:
        console.print(f"ACLs of instance {settings.instance!r} applied ({report.acls} entries)")
    if report.drift:
        raise typer.Exit(1)


@topics_app.command("check")
def check() -> None:
    """List each difference between the catalogue and the cluster (partitions, replication,
    configs); exit 1 when there is one. Changes nothing."""
    catalogue = _catalogue(None)
    admin = topic_admin.admin_client(get_settings().bootstrap_servers)
    try:
        lines = topic_admin.check(admin, catalogue)
    finally:
        admin.close()
    for line in lines:
        console.print(f"[red]differs:[/] {line}", soft_wrap=True)
    if lines:
        console.print(f"{len(lines)} difference(s) between the catalogue and the cluster")
        raise typer.Exit(1)
    console.print(f"no drift: all {len(catalogue)} topics match the catalogue "
                  f"(replication {catalogue[0].replication})")


@topics_app.command("describe")
def describe() -> None:
    """Show every catalogue topic as it is live, flagging what differs from the catalogue."""
    catalogue = _catalogue(None)
    admin = topic_admin.admin_client(get_settings().bootstrap_servers)
    try:
        live = topic_admin.describe(admin, [t.name for t in catalogue])
    finally:
        admin.close()
    table = Table("topic", "key", "partitions", "replicas", "retention.ms", "segment.ms",
                  "cleanup", "state")
    for spec in catalogue:
        state = live.get(spec.name)
        if state is None:
            table.add_row(spec.name, spec.key, "-", "-", "-", "-", "-", "[red]missing[/]")
            continue
        differs = bool(topic_admin.differences((spec,), {spec.name: state}))
        table.add_row(spec.name, spec.key, str(state.partitions), str(state.replication),
                      state.configs.get("retention.ms", "?"), state.configs.get("segment.ms", "?"),
                      state.configs.get("cleanup.policy", "?"),
                      "[yellow]differs[/]" if differs else "[green]ok[/]")
    console.print(table)
