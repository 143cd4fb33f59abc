"""The console's complaint pages (`console`): a complaint's fields -> filed as `POST
/complaints` files it (the platform's clock, on operator.actions), then the round's report,
the player's recall around it, and the reports to download (/console/report)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from urllib.parse import urlencode

from aiohttp import web

from services.operator import complaint_filing
from services.operator.console_pages import PREFIX, Console, page, session_of
from services.operator.replay_service import ReplayRequest, run_replay
from services.operator.report_render import CONTENT_TYPES, render
from services.operator.round_reader import RoundNotFoundError

FIELDS = ("player_id", "played_at", "dealer", "table_id", "round_id", "override")


async def recall_around(console: Console, player_id: str, round_id: str) -> list[dict]:
    found = await console.query(lambda qs: qs.recall(player_id, 30))
    rounds = found["rounds"]
    at = next((i for i, r in enumerate(rounds) if r["round_id"] == round_id), None)
    return rounds if at is None else rounds[max(0, at - 5): at + 6]


async def complaint_form(console: Console, request: web.Request) -> web.Response:
    return page("complaint.html", session_of(request), fields=dict.fromkeys(FIELDS, ""),
                now=datetime.now(UTC))


async def complaint(console: Console, request: web.Request) -> web.Response:
    """Files the complaint as `POST /complaints` does (the platform's clock, recorded on
    operator.actions), then shows its report."""
    form = await request.post()
    fields = {name: str(form.get(name, "")).strip() for name in FIELDS}
    session = session_of(request)
    settings = console.settings

    def refused(status: int, message: str) -> web.Response:
        return page("complaint.html", session, status, fields=fields,
                    now=datetime.now(UTC), error=message)
    body = {name: value for name, value in fields.items() if value}
    try:
        filed = await asyncio.to_thread(complaint_filing.file_complaint,
                                        settings.bootstrap_servers, body, settings)
    except complaint_filing.ANSWERED as exc:
        status, code = complaint_filing.refusal(exc)  # a ComplaintError names itself
        prefix = {"unknown_round": "no such round: ", "bad_request": "complaint refused: "
                  }.get(code, "" if status == 422 else "complaint not filed: ")
        return refused(status, f"{prefix}{exc}")
    record = filed.record
    try:
        report, notes, _ = await asyncio.to_thread(
            run_replay, settings.bootstrap_servers, ReplayRequest.from_complaint(record))
    except RoundNotFoundError as exc:
        return refused(404, f"complaint {record.complaint_id} filed; its round could not "
                            f"be read again: {exc}")
    try:
        recall = await recall_around(console, record.player_id, record.round_id)
        recall_problem = None
    except Exception as exc:  # noqa: BLE001 - the report stands without the recall
        recall, recall_problem = [], f"{type(exc).__name__}: {exc}"
    downloads = {fmt: f"{PREFIX}/report?" + urlencode(
        {"complaint": record.complaint_id, "format": fmt}) for fmt in ("html", "json")}
    return page("complaint_report.html", session, report=report,
                notes=[*report.notes, *notes], fields=fields, complaint=record,
                late=record.filed_at - record.round_opened_at, recall=recall,
                recall_problem=recall_problem, downloads=downloads)


async def report_download(console: Console, request: web.Request) -> web.Response:
    """A filed complaint's report as a file (html or json), its window as recorded when
    it was filed."""
    q = request.query
    fmt = q.get("format", "html")
    settings = console.settings

    def problem(status: int, code: str, message: str) -> web.Response:
        return web.json_response({"error": {"code": code, "message": message}},
                                 status=status)
    if fmt not in ("html", "json"):
        return problem(422, "bad_format", "format must be html or json")
    complaint_id = q.get("complaint", "")
    try:
        record = await asyncio.to_thread(complaint_filing.find_complaint,
                                         settings.bootstrap_servers, complaint_id, settings)
        report, notes, _ = await asyncio.to_thread(
            run_replay, settings.bootstrap_servers, ReplayRequest.from_complaint(record))
    except complaint_filing.ANSWERED as exc:
        return problem(*complaint_filing.refusal(exc), str(exc))
    name = f"replay-{record.table_id}-{record.round_id}.{fmt}"
    return web.Response(text=render(report, fmt, notes), content_type=CONTENT_TYPES[fmt],
                        headers={"Content-Disposition": f'attachment; filename="{name}"',
                                 "X-Croupier-Verdict": report.verdict})
