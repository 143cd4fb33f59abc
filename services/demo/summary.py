"""The demo's closing summary: what was played, the money, realised against exact RTP,
every invariant, where to look next, and one real round to replay."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime

from pydantic import BaseModel

from services.demo.session import DemoRun
from services.infra.settings import Settings
from services.operator.audit import AuditReport, BetTypeReturn, Books, InvariantCheck, audit
from services.operator.event_reader import read_books
from services.operator.reconcile_sources import run_reconcile


class SampleRound(BaseModel):
    table_id: str
    round_id: str
    at: str
    replay_command: str


class DemoSummary(BaseModel):
    run_id: str
    seconds: float
    tables: dict[str, str]
    rounds: int
    rounds_voided: int
    bets: int
    bets_rejected: int
    bets_settled: int
    bets_voided: int
    stake: int
    payout: int
    refunds: int
    house_result: int
    http_answers: dict[str, int]
    returns: list[BetTypeReturn]
    invariants: list[InvariantCheck]
    invariants_ok: bool
    rebuild_differences: int | None = None
    urls: dict[str, str]
    sample_round: SampleRound | None


def wait_until_settled(bootstrap: str, run: DemoRun, timeout_s: float = 90.0
                       ) -> tuple[Books, Books]:
    """Read the books until every bet of this session has its end (or the time is up).
    Returns (the whole platform's books, this session's)."""
    deadline = time.monotonic() + timeout_s
    while True:
        books, _ = read_books(bootstrap)
        mine = books.only(set(run.config.tables), set(run.players))
        open_bets = [b for b in mine.placed if b not in mine.settled and b not in mine.rejected]
        if not open_bets or time.monotonic() > deadline:
            return books, mine
        time.sleep(1.0)


def sample_round(mine: Books) -> SampleRound | None:
    """A completed round with the most settled bets: the best one to show a replay of."""
    bets_per_round = Counter((s.table_id, s.round_id) for s in mine.settled.values()
                             if s.outcome != "void_refund")
    if not bets_per_round:
        return None
    (table_id, round_id), _ = bets_per_round.most_common(1)[0]
    result = mine.results[(table_id, round_id)]
    at = result.occurred_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return SampleRound(table_id=table_id, round_id=round_id, at=at,
                       replay_command=f"croupier replay --table {table_id} --round {round_id} "
                                      f"--at {at}")


def reconciliation_check(settings: Settings, since: datetime, timeout_s: float = 60.0
                         ) -> InvariantCheck:
    """Seamless mode: croupier's calls against the operator wallet's transactions since
    `since`, until they agree (credits may still be on their way) or the time is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        report = run_reconcile(settings, since, datetime.now(UTC))
        if report.clean or time.monotonic() > deadline:
            return InvariantCheck(
                name="reconciliation with the operator's wallet: no difference",
                ok=report.clean, checked=report.transactions,
                problems=[d.line() for d in report.differences[:20]])
        time.sleep(1.0)


def summarise(run: DemoRun, platform: Books, mine: Books, urls: dict[str, str],
              rebuild_differences: int | None = None,
              more: tuple[InvariantCheck, ...] = ()) -> DemoSummary:
    session: AuditReport = audit(mine, allow_pending=False)
    everything: AuditReport = audit(platform, allow_pending=True)
    checks = [c.model_copy(update={"name": f"this session: {c.name}"}) for c in session.invariants]
    checks += [c.model_copy(update={"name": f"whole log: {c.name}"}) for c in everything.invariants]
    if rebuild_differences is not None:
        checks.append(InvariantCheck(name="rebuild from the log equals the live wallet",
                                     ok=rebuild_differences == 0, checked=len(run.players)))
    checks += more
    return DemoSummary(
        run_id=run.config.run_id, seconds=round(run.seconds, 1),
        tables={run.config.table_id(p): p for p in run.config.profiles},
        rounds=len(mine.results) + sum(t.rounds_voided for t in run.tables.values()),
        rounds_voided=sum(t.rounds_voided for t in run.tables.values()),
        bets=session.bets, bets_rejected=session.rejected, bets_settled=session.settled,
        bets_voided=session.voided, stake=session.stake, payout=session.payout,
        refunds=session.refunds, house_result=session.house_result,
        http_answers=dict(sorted(run.answers.items())), returns=session.returns,
        invariants=checks, invariants_ok=all(c.ok for c in checks),
        rebuild_differences=rebuild_differences, urls=urls, sample_round=sample_round(mine),
    )


def summary_json(summary: DemoSummary) -> dict:
    """The summary as JSON, with the keys other tools rely on at the top level."""
    data = summary.model_dump(mode="json")
    data["sample_round"] = (None if summary.sample_round is None else
                            {"table_id": summary.sample_round.table_id,
                             "round_id": summary.sample_round.round_id,
                             "at": summary.sample_round.at,
                             "replay_command": summary.sample_round.replay_command})
    return data
