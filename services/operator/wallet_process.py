"""The live wallet for a comparison: the running one, or one started just for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from services.infra.processes import ServiceProcess, service_env
from services.infra.settings import Settings


@contextmanager
def running_wallet(settings: Settings, url: str | None = None) -> Iterator[str]:
    url = url or f"http://127.0.0.1:{settings.wallet_port}"
    try:
        if httpx.get(f"{url}/health", timeout=2).status_code == 200:
            yield url
            return
    except httpx.HTTPError:
        pass
    proc = ServiceProcess("wallet", settings.wallet_port,
                          (settings.home / "logs" / "wallet.log").resolve(),
                          service_env(settings)).start()
    try:
        proc.wait_ready(120)
        yield proc.base_url
    finally:
        proc.stop()
