"""Support for the live table tests: services as processes, reading topics back, a hand driver."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx

from services.infra import topic_admin
from services.infra.log_reader import read_to_end
from services.infra.processes import ServiceProcess
from services.infra.settings import Settings
from services.infra.table_keys import table_key
from services.table_simulator.inputs import InputFactory
from shared.events.rejections import InputRefused
from shared.events.results import RoundResultPublished
from shared.events.table import parse_table_event
from shared.topics import topic_catalogue
from tests.conftest import free_port, instance_for


def port_setting(service: str) -> str:
    return f"CROUPIER_{service.upper().replace('-', '_')}_PORT"


@contextmanager
def running_services(bootstrap: str, home: Path, names: list[str], **env: str
                     ) -> Iterator[dict[str, ServiceProcess]]:
    """The topics applied and the named services started as processes (each on a free
    port, state under `home`), ready; stopped on exit. `env`: extra settings."""
    admin = topic_admin.admin_client(bootstrap)
    topic_admin.apply(admin, topic_catalogue())
    admin.close()
    ports = {name: free_port() for name in names}
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "CROUPIER_HOME": str(home),
           "CROUPIER_INSTANCE": instance_for(home), **env,
           **{port_setting(name): str(port) for name, port in ports.items()}}
    procs = {name: ServiceProcess(name, port, home / "logs" / f"{name}.log", env)
             for name, port in ports.items()}
    try:
        for proc in procs.values():
            proc.start()
        for proc in procs.values():
            proc.wait_ready(90)
        yield procs
    finally:
        for proc in procs.values():
            proc.stop()


def table_events(bootstrap: str, tables: set[str]) -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for record in read_to_end(bootstrap, "table.events"):
        if record.key.decode() in tables:
            event = parse_table_event(record.value)
            out[event.table_id].append(event)
    return out


def rejections(bootstrap: str, tables: set[str]) -> list[InputRefused]:
    return [InputRefused.model_validate_json(r.value)
            for r in read_to_end(bootstrap, "dealer.rejections") if r.key.decode() in tables]


def results(bootstrap: str, tables: set[str]) -> list[RoundResultPublished]:
    return [RoundResultPublished.model_validate_json(r.value)
            for r in read_to_end(bootstrap, "round.results") if r.key.decode() in tables]


def wait_for_results(bootstrap: str, tables: set[str], want: int, timeout_s: float = 60.0
                     ) -> list[RoundResultPublished]:
    deadline = time.monotonic() + timeout_s
    while True:
        got = results(bootstrap, tables)
        if len({r.result_id for r in got}) >= want or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def factory(table_id: str) -> InputFactory:
    secret = Settings().table_signing_secret
    return InputFactory(table_id, lambda t, r: table_key(secret, t, r),
                        lambda: datetime.now(UTC), run_tag="live")


class HandDriver:
    """Sends inputs one by one over HTTP and keeps the answers."""

    def __init__(self, base_url: str, table_id: str) -> None:
        self.url = base_url
        self.make = factory(table_id)
        self.table_id = table_id

    def post(self, body: bytes) -> tuple[int, dict]:
        response = httpx.post(f"{self.url}/inputs", content=body, timeout=30)
        return response.status_code, response.json()

    def send(self, inp) -> dict:
        return self.post(inp.model_dump_json().encode())[1]

    def ok(self, command_type, **fields) -> dict:
        report = self.send(self.make.make(command_type, **fields))
        assert report["status"] == "accepted", report
        return report

    def code(self, command_type, **fields) -> str:
        report = self.send(self.make.make(command_type, **fields))
        assert report["status"] == "refused", report
        return report["reason_code"]
