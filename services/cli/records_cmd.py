"""`croupier recall`, `croupier statement`, `croupier events`: what the archive (and the
log's last minutes) say of a player's rounds, their money, and the significant events.

Each reads the archive with DuckDB (`services.archive.queries`) and the live tail
from Kafka (`--no-live-tail`: the archive alone)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer

from services.cli.cli_errors import fail
from services.infra.settings import get_settings


class Format(StrEnum):
    text = "text"
    json = "json"
    csv = "csv"


def register(app: typer.Typer) -> None:
    app.command("recall")(recall)
    app.command("statement")(statement)
    app.command("events")(events)
    app.command("realised-rtp")(realised_rtp)


def _emit(text: str, out: Path | None) -> None:
    if out:
        out.write_text(text)
        typer.echo(f"written to {out}", err=True)
    else:
        typer.echo(text, nl=not text.endswith("\n"))


def _time(text: str | None, what: str):
    from services.operator.replay_service import parse_time

    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError as exc:
        fail(f"{what}: {exc}")


def _answer(run, live_tail: bool):
    """`run(queries)` over the archive (and the live tail); a bad request exits 2."""
    from services.archive.queries import open_queries

    queries = open_queries(get_settings(), live_tail)
    try:
        return run(queries)
    except ValueError as exc:
        fail(str(exc))
    finally:
        queries.close()


def recall(
    player: str = typer.Option(..., help="Player id."),
    limit: int = typer.Option(10, help="How many rounds, newest first (1-100)."),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json."),
    live_tail: bool = typer.Option(True, help="Also read the log past the archive's end."),
    out: Path = typer.Option(None, help="Write to this file instead of stdout."),
) -> None:
    """A player's last rounds: cards, result, bets per category, returns, balance before/after."""
    if fmt == Format.csv:
        fail("recall is text or json (a round has nested cards and bets)")
    found = _answer(lambda q: q.recall(player, limit), live_tail)
    if fmt == Format.json:
        _emit(json.dumps(found, indent=2) + "\n", out)
        return
    lines = [f"player {player}: last {len(found['rounds'])} round(s), newest first"]
    for r in found["rounds"]:
        result = r["result"] or {}
        lines.append(f"- {r['opened_at'] or '?'} {r['table_id']}/{r['round_id']} "
                     f"({r['profile']}, dealer {r['dealer']}) {r['status']}")
        if r["cards"]:
            lines.append(f"    cards {' '.join(r['cards'])}")
            for hand, facts in (result.get("hands") or {}).items():
                facts = facts if isinstance(facts, dict) else {"cards": facts}
                score = facts.get("rank", facts.get("points"))
                lines.append(f"    {hand:<8} {' '.join(facts.get('cards', []))}"
                             + (f"  ({score})" if score is not None else ""))
            winner = result.get("winner", result.get("winners"))
            if winner is not None:
                lines.append(f"    winner {winner if isinstance(winner, str) else json.dumps(winner)}")
        for b in r["bets"]:
            where = f":{b['position']}" if b["position"] is not None else ""
            lines.append(f"    bet {b['bet']}{where} stake {b['stake']} -> {b['outcome']} "
                         f"returned {b['returned']}")
        lines.append(f"    staked {r['staked']}, returned {r['returned']} {r['currency'] or ''}; "
                     f"balance {r['balance_before']} -> {r['balance_after']}")
    _emit("\n".join(lines) + "\n", out)


def statement(
    player: str = typer.Option(..., help="Player id."),
    since: str = typer.Option(..., "--from", help="Start (ISO 8601, included)."),
    until: str = typer.Option(..., "--to", help="End (ISO 8601, excluded)."),
    fmt: Format = typer.Option(Format.csv, "--format", help="csv, json or text."),
    live_tail: bool = typer.Option(True, help="Also read the log past the archive's end."),
    out: Path = typer.Option(None, help="Write to this file instead of stdout."),
) -> None:
    """A player's money movements over a time range, each with its bet, as a file to send."""
    from services.archive.queries import STATEMENT_COLUMNS, to_csv

    start, end = _time(since, "--from"), _time(until, "--to")
    found = _answer(lambda q: q.statement(player, start, end), live_tail)
    if fmt == Format.json:
        _emit(json.dumps(found, indent=2) + "\n", out)
    elif fmt == Format.csv:
        _emit(to_csv(found["movements"], STATEMENT_COLUMNS), out)
    else:
        lines = [f"statement of {player} from {found['from']} to {found['to']}",
                 f"opening balance {found['opening_balance']}"]
        lines += [f"{m['at']}  {m['kind']:<16} {m['amount']:>12}  balance {m['balance_after']:>12}"
                  f"  {m['table_id'] or ''}/{m['round_id'] or ''} {m['bet'] or ''}"
                  for m in found["movements"]]
        lines.append(f"closing balance {found['closing_balance']} (credits {found['credits']}, "
                     f"debits {found['debits']}, {len(found['movements'])} movements)")
        _emit("\n".join(lines) + "\n", out)


def events(
    since: str = typer.Option(None, "--from", help="Start (ISO 8601, included)."),
    until: str = typer.Option(None, "--to", help="End (ISO 8601, excluded)."),
    table: str = typer.Option(None, help="Only this table's events."),
    large_win: int = typer.Option(None, help="A win of at least this many minor units is "
                                             "significant (default 1,000,000)."),
    fmt: Format = typer.Option(Format.text, "--format", help="text, csv or json."),
    live_tail: bool = typer.Option(True, help="Also read the log past the archive's end."),
    out: Path = typer.Option(None, help="Write to this file instead of stdout."),
) -> None:
    """The significant-event log: voids, annulments, corrections, closes, dead letters, ..."""
    from services.archive.queries import EVENT_COLUMNS, LARGE_WIN_DEFAULT, to_csv

    start, end = _time(since, "--from"), _time(until, "--to")
    found = _answer(lambda q: q.events(start, end, large_win if large_win is not None
                                       else LARGE_WIN_DEFAULT, table), live_tail)
    if fmt == Format.json:
        _emit(json.dumps(found, indent=2) + "\n", out)
    elif fmt == Format.csv:
        _emit(to_csv(found, EVENT_COLUMNS), out)
    else:
        lines = [f"{e['at']}  {e['kind']:<28} {e['table_id'] or '-'}/{e['round_id'] or '-'}  "
                 f"by {e['who'] or '-'}: {e['why'] or ''}  [{e['topic']}[{e['partition']}]"
                 f"@{e['offset']}]" for e in found]
        lines.append(f"{len(found)} significant event(s)")
        _emit("\n".join(lines) + "\n", out)


def realised_rtp(
    since: str = typer.Option(None, "--from", help="Start (ISO 8601, included)."),
    until: str = typer.Option(None, "--to", help="End (ISO 8601, excluded)."),
    fmt: Format = typer.Option(Format.text, "--format", help="text, csv or json."),
    live_tail: bool = typer.Option(True, help="Also read the log past the archive's end."),
    out: Path = typer.Option(None, help="Write to this file instead of stdout."),
) -> None:
    """Realised RTP by day, table, profile, dealer and bet, beside the exact RTP (and z)."""
    from services.archive.queries import RTP_COLUMNS, to_csv

    start, end = _time(since, "--from"), _time(until, "--to")
    found = _answer(lambda q: q.realised_rtp(start, end), live_tail)
    if fmt == Format.json:
        _emit(json.dumps(found, indent=2) + "\n", out)
    elif fmt == Format.csv:
        _emit(to_csv(found, RTP_COLUMNS), out)
    else:
        def pct(x: float | None) -> str:
            return "-" if x is None else f"{100 * x:.2f}%"
        lines = [f"{r['day']}  {r['table_id']:<14} {r['profile']} v{r['version']}  "
                 f"{r['dealer']:<8} {r['bet']:<20} {r['bets']:>6} bets  stake {r['stake']:>10}  "
                 f"realised {pct(r['realised_rtp']):>8}  exact {pct(r['exact_rtp']):>8}  "
                 f"z {'-' if r['z'] is None else r['z']}" for r in found]
        _emit("\n".join(lines) + "\n", out)
