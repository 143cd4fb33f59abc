"""How the rule-engine commands fail: one line on stderr naming the problem, exit code 2."""

from __future__ import annotations

from typing import NoReturn

import typer

from shared.profile import AnyProfile, ProfileError, load_profile

EXIT_BAD_INPUT = 2


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def profile_or_fail(name: str, version: int | None = None) -> AnyProfile:
    try:
        return load_profile(name, version)
    except ProfileError as exc:
        fail(str(exc))
