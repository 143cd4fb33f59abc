"""Run simulated tables from settings: the entry point for the CLI, the demo and tests."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from services.infra.clock import SystemClock
from services.infra.settings import Settings, get_settings
from services.infra.table_keys import table_key
from services.simulators.tables.driver import BettingHook, SimConfig, SimSummary, TableSimulator
from services.simulators.tables.inputs import InputFactory
from services.simulators.tables.transport import HttpTransport, KafkaTransport, Transport


def make_simulator(config: SimConfig, transport: Transport, settings: Settings | None = None,
                   on_betting_open: BettingHook | None = None,
                   run_tag: str | None = None) -> TableSimulator:
    settings = settings or get_settings()
    if config.betting_window is None and settings.betting_window_seconds:
        config = replace(config, betting_window=settings.betting_window_seconds)

    def key_for(table_id: str, role: str) -> bytes:
        return table_key(settings.table_signing_secret, table_id, role)

    factory = InputFactory(config.table_id, key_for, SystemClock().now, run_tag=run_tag)
    return TableSimulator(config, transport, factory, on_betting_open)


async def run_tables(configs: list[SimConfig], *, url: str | None = None,
                     via_kafka: bool = False, settings: Settings | None = None,
                     on_betting_open: BettingHook | None = None) -> list[SimSummary]:
    """Drive several tables at once (each its own simulator, shared transport)."""
    settings = settings or get_settings()
    if via_kafka:
        transport: Transport = KafkaTransport(settings.bootstrap_servers)
    else:
        transport = HttpTransport(url or f"http://127.0.0.1:{settings.dealer_event_port}")
    try:
        sims = [make_simulator(c, transport, settings, on_betting_open) for c in configs]
        return list(await asyncio.gather(*(sim.run() for sim in sims)))
    finally:
        await transport.close()
