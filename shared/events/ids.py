"""The one id pattern: players, bets, requests, tables, rounds, shoes and inputs.

An id is ASCII letters, digits and `.`, `_`, `-`, `:`, and holds at least one character
that is not `.`: so never `.` or `..` (which a URL or a path would read as "here" or
"up"), never `/` (the separator of bet-settlement's keys `<table>:<round>/b/<bet>` and
of the wallet's `<player>/<table>/<round>/...`), never whitespace or a control
character. Table and player ids also have no `:` (bet-settlement keys a round
`<table>:<round>` and the wallet keys an item `<player>:<tx id>`, so the first `:` ends
them). One pattern, two alphabets, a length per kind; `id_problem` says why a string is
not an id in plain words (for a named 4xx, or a line in a rebuild report).

The pattern avoids look-arounds so pydantic-core's Rust engine and any JSON Schema
validator read it the same way.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

_WITH_COLON = "A-Za-z0-9._:-"
_NO_COLON = "A-Za-z0-9._-"


def _pattern(chars: str) -> str:
    """`chars`, at least one of them not a dot."""
    not_dot = chars.replace(".", "")
    return rf"^[{chars}]*[{not_dot}][{chars}]*$"


ID_PATTERN = _pattern(_WITH_COLON)  # bets, rounds, shoes, requests, inputs
NAME_PATTERN = _pattern(_NO_COLON)  # tables and players: no `:`

BetId = Annotated[str, Field(min_length=1, max_length=128, pattern=ID_PATTERN)]
RequestId = Annotated[str, Field(min_length=1, max_length=128, pattern=ID_PATTERN)]
InputId = Annotated[str, Field(min_length=1, max_length=128, pattern=ID_PATTERN)]
RoundId = Annotated[str, Field(min_length=1, max_length=96, pattern=ID_PATTERN)]
ShoeId = Annotated[str, Field(min_length=1, max_length=96, pattern=ID_PATTERN)]
TableId = Annotated[str, Field(min_length=1, max_length=64, pattern=NAME_PATTERN)]
PlayerId = Annotated[str, Field(min_length=1, max_length=64, pattern=NAME_PATTERN)]

_LIMITS = {"bet": (128, ID_PATTERN), "request": (128, ID_PATTERN),
           "input": (128, ID_PATTERN), "round": (96, ID_PATTERN), "shoe": (96, ID_PATTERN),
           "table": (64, NAME_PATTERN), "player": (64, NAME_PATTERN)}


def id_problem(value: object, kind: str = "player") -> str | None:
    """None if `value` is a valid id of this kind, else why not."""
    max_length, pattern = _LIMITS[kind]
    if not isinstance(value, str) or not value:
        return f"a {kind} id is a non-empty string"
    if len(value) > max_length:
        return f"a {kind} id has at most {max_length} characters"
    if re.fullmatch(pattern[1:-1], value) is None:
        allowed = "letters, digits, '.', '_', '-'" + ("" if pattern == NAME_PATTERN else ", ':'")
        return (f"{value!r} is not a {kind} id: {allowed}, not only dots "
                "(no '/', whitespace or control characters)")
    return None
