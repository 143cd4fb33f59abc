"""bet-settlement's Faust app: one agent over bets.placed, table.events and round.results
(all keyed by table id, so co-partitioned), on the kernel
(`services.infra.kernel.run_own_log`).

State: the fold of its own log, `settlement.log` (`settlement_fold`): partition p of the log
holds the entries of the records of partition p of its three inputs. Each entry carries
what its record changed, absolute values (rounds' headers, bet entries, spot totals, the
table's chain watch and waiting rounds) and what it publishes. A worker assigned a
partition folds its log partition first and resumes each input after the last record its
log applied; the outputs of entries not known to be published are published again. No
Faust table: nothing is kept that the log does not say (docs/decisions/settlement-log.md).

This module is the worker's loop and health page, functions of the `BetSettlement` that
`services.bet_settlement.bootstrap` builds when the worker starts (the own log,
the decisions); importing it builds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faust import web

from services.infra.faust_app import bound, bound_view
from services.infra.kernel import run_own_log
from services.infra.observability import health_problems
from shared.topics import BETS_PLACED_TOPIC, ROUND_RESULTS_TOPIC, TABLE_EVENTS_TOPIC

if TYPE_CHECKING:
    from services.bet_settlement.bootstrap import BetSettlement

INPUTS = (BETS_PLACED_TOPIC, TABLE_EVENTS_TOPIC, ROUND_RESULTS_TOPIC)  # co-partitioned: by table


def register(service: BetSettlement) -> None:
    """The worker's loop and page on its app (the bootstrap calls it)."""
    service.app.task(bound(settlement_agent, service))
    service.app.page("/health")(bound_view(HealthView, service))


async def settlement_agent(s: BetSettlement) -> None:  # a task (register registers it)
    await run_own_log(s.app, INPUTS, s.own, s.records.decide, s.records.answer)


class HealthView(web.View):  # GET /health (register binds it to the service)
    service: BetSettlement

    async def get(self, request: web.Request) -> web.Response:
        problems = health_problems(self.service.app)
        return self.json({"status": "ok" if not problems else "unavailable",
                          "problems": problems}, status=503 if problems else 200)
