"""`croupier operator-api`: serve replay reports over HTTP to operators."""

from __future__ import annotations

import typer

from services.infra.settings import get_settings


def register(app: typer.Typer) -> None:
    app.command("operator-api")(operator_api)


def operator_api(port: int = typer.Option(None, help="Default: CROUPIER_OPERATOR_API_PORT.")) -> None:
    """Serve GET /rounds/{table}/{round}/report?at=...&format=text|json|html (operator token)."""
    from aiohttp import web

    from services.operator.http_api import make_app

    settings = get_settings()
    settings.require_production_secrets("operator-api")
    web.run_app(make_app(settings), host=settings.web_bind,
                port=port or settings.operator_api_port, print=typer.echo)
