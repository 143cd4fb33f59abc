"""`croupier complaint file`: file a player's complaint (RULES §6), as `POST /complaints` and
the console's form do (`services.operator.complaint_filing`): stamped with this
process's clock, its 24-hour window judged, recorded on `operator.actions`; its report then
opens with `croupier replay --complaint ID`."""

from __future__ import annotations

import json

import typer

from services.cli.cli_errors import fail
from services.infra.settings import get_settings

complaint_app = typer.Typer(help="A player's complaint: file it on the platform's clock.",
                            no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(complaint_app, name="complaint")


@complaint_app.command("file")
def file(
    player: str = typer.Option(..., help="The complaining player's id."),
    played_at: str = typer.Option(..., help="When they played (ISO 8601, UTC without a zone)."),
    dealer: str = typer.Option(..., help="The dealer the player names."),
    table: str = typer.Option(..., help="Table id."),
    round_id: str = typer.Option(..., "--round", help="Round id."),
    override: str = typer.Option(None, help=(
        "File a complaint made after the 24 h window anyway, with this reason: only where "
        "CROUPIER_LATE_COMPLAINT_OVERRIDE is set (seed 002 refuses late complaints); the "
        "override is recorded on operator.actions beside the complaint.")),
    as_json: bool = typer.Option(False, "--json", help="Print the operator API's answer: "
                                 "complaint_id, filed_at, within_window, report_url."),
) -> None:
    """File a complaint now: the platform's clock is its time of filing (no option sets it)."""
    from services.operator.actions import ActionNotRecorded
    from services.operator.complaint_filing import file_complaint
    from services.operator.complaints import ComplaintError
    from services.operator.round_reader import RoundNotFoundError

    settings = get_settings()
    body = {"player_id": player, "played_at": played_at, "dealer": dealer, "table_id": table,
            "round_id": round_id}
    if override is not None:
        body["override"] = override
    try:
        filed = file_complaint(settings.bootstrap_servers, body, settings)
    except (ComplaintError, RoundNotFoundError, ActionNotRecorded, ValueError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(filed.answer()))
        return
    record, (partition, offset) = filed.record, filed.where
    window = "within the 24-hour window" if record.within_window else \
        f"outside the 24-hour window, overridden: {record.override}"
    typer.echo(f"complaint {record.complaint_id} filed {record.filed_at.isoformat()} "
               f"(the platform's clock): {window}")
    typer.echo(f"recorded on operator.actions[{partition}]@{offset}"
               + (f", its override at operator.actions[{filed.override_where[0]}]@"
                  f"{filed.override_where[1]}" if filed.override_where else ""))
    typer.echo(f"report: croupier replay --complaint {record.complaint_id} "
               f"(operator API: GET {filed.answer()['report_url']})")
