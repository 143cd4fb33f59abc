"""The platform's services, in one table: each one's name, the module that runs it and the
setting that holds its HTTP port.

Everything that needs the list reads it here: the ports (`services.infra.faust_app`), the
processes the demo and the tests start (`services.infra.processes`), the settings passed
down to them, the Kafka principals (`services.infra.kafka_security`), and the tests that
check docker-compose.yml and the Dockerfile against the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.infra.settings import Settings


@dataclass(frozen=True)
class Service:
    name: str  # also its Kafka principal, its metrics label and its app id's suffix
    module: str  # `python -m <module> worker -l info`
    port_setting: str  # the Settings field holding its (first worker's) HTTP port

    def port(self, settings: Settings) -> int:
        return int(getattr(settings, self.port_setting))

    @property
    def command(self) -> list[str]:
        """The worker's command line, after the Python interpreter."""
        return ["-m", self.module, "worker", "-l", "info"]


SERVICES: tuple[Service, ...] = (
    Service("dealer-event", "services.dealer_event", "dealer_event_port"),
    Service("game-evaluation", "services.game_evaluation", "game_evaluation_port"),
    Service("bet-settlement", "services.bet_settlement", "bet_settlement_port"),
    Service("wallet", "services.wallet", "wallet_port"),
)
SERVICE_NAMES: tuple[str, ...] = tuple(s.name for s in SERVICES)
_BY_NAME = {s.name: s for s in SERVICES}


def service(name: str) -> Service:
    """The service called `name` (KeyError for any other name)."""
    return _BY_NAME[name]
