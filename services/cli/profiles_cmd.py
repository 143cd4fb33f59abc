"""`croupier profiles release | check`: freeze a profile's version so old rounds keep their rules.

The current profiles are `shared/profiles/<name>.json`, each with a `version`. Releasing
copies one, unchanged, to `shared/profiles/released/<name>/v<N>.json` and records the
SHA-256 of its canonical JSON in `shared/profiles/released/lock.json`. A released version is
never written again: a profile whose content differs from its released version must bump
`version` first. `check` (also a unit test) says whether the files still agree with the lock.
See docs/decisions/pinned-rules.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import typer

from shared.profile import LEGACY_VERSION, ProfileError, parse_profile, profile_digest

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "profiles"
LOCK = Path("released") / "lock.json"


class ReleaseError(Exception):
    """A release that would rewrite history; nothing was written."""


@dataclass(frozen=True)
class Current:
    name: str
    version: int
    digest: str
    text: str


def read_lock(folder: Path) -> dict[str, dict[str, str]]:
    path = folder / LOCK
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def _currents(folder: Path, names: list[str] | None) -> list[Current]:
    known = sorted(p.name[:-5] for p in folder.glob("*.json"))
    unknown = sorted(set(names or []) - set(known))
    if unknown:
        raise ReleaseError(f"unknown profile(s) {', '.join(unknown)}; known: {', '.join(known)}")
    out = []
    for name in names or known:
        text = (folder / f"{name}.json").read_text("utf-8")
        data = json.loads(text)
        try:
            parse_profile(data)
        except ProfileError as exc:
            raise ReleaseError(f"{name}.json is not a valid profile: {exc}") from exc
        out.append(Current(name, data.get("version", LEGACY_VERSION), profile_digest(data), text))
    return out


def _conflict(cur: Current, released: dict[str, str]) -> str | None:
    """Why `cur` may not stand as it is next to its released versions (None: it may)."""
    digest = released.get(str(cur.version))
    if digest is not None and digest != cur.digest:
        return (f"{cur.name} v{cur.version} is released with digest {digest[:12]}, and "
                f"{cur.name}.json now differs (digest {cur.digest[:12]}): a released version is "
                f"never changed; set \"version\": {max(map(int, released)) + 1} in "
                f"{cur.name}.json and release that")
    newest = max(map(int, released), default=0)
    if digest is None and cur.version < newest:
        return (f"{cur.name}.json says version {cur.version}, but v{newest} is already "
                f"released: versions only go up; set \"version\": {newest + 1}")
    return None


def release(folder: Path = DEFAULT_DIR, names: list[str] | None = None) -> list[str]:
    """Snapshot each current profile (all, or `names`) as its version. A version already
    released with the same content is left alone; one released with other content refuses the
    whole release (ReleaseError), so nothing is half written."""
    lock = read_lock(folder)
    currents = _currents(folder, names)
    problems = [p for cur in currents if (p := _conflict(cur, lock.get(cur.name, {})))]
    if problems:
        raise ReleaseError("; ".join(problems))
    messages = []
    for cur in currents:
        if str(cur.version) in lock.get(cur.name, {}):
            messages.append(f"{cur.name} v{cur.version}: already released, unchanged")
            continue
        target = folder / "released" / cur.name / f"v{cur.version}.json"
        if target.exists():
            raise ReleaseError(f"{target} exists but is not in {LOCK}: remove it or lock it by hand")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(cur.text, "utf-8")
        os.chmod(target, 0o444)  # a released version is read-only
        lock.setdefault(cur.name, {})[str(cur.version)] = cur.digest
        messages.append(f"{cur.name} v{cur.version}: released, digest {cur.digest}")
    ordered = {name: dict(sorted(v.items(), key=lambda kv: int(kv[0])))
               for name, v in sorted(lock.items())}
    (folder / LOCK).parent.mkdir(parents=True, exist_ok=True)
    (folder / LOCK).write_text(json.dumps(ordered, indent=2) + "\n", "utf-8")
    return messages


def check(folder: Path = DEFAULT_DIR) -> list[str]:
    """Everything that breaks the promise "a released version never changes"."""
    return check_released(folder) + check_current(folder)


def check_released(folder: Path = DEFAULT_DIR) -> list[str]:
    """A released file missing, changed (its digest differs from the lock), unlocked or no
    longer loadable."""
    lock = read_lock(folder)
    problems = []
    for name, versions in sorted(lock.items()):
        for version, digest in sorted(versions.items(), key=lambda kv: int(kv[0])):
            path = folder / "released" / name / f"v{version}.json"
            if not path.exists():
                problems.append(f"{name} v{version}: released, but {path} is missing")
                continue
            data = json.loads(path.read_text("utf-8"))
            if profile_digest(data) != digest:
                problems.append(f"{name} v{version}: {path} changed: digest "
                                f"{profile_digest(data)}, locked {digest}")
            if (data.get("name"), data.get("version", LEGACY_VERSION)) != (name, int(version)):
                problems.append(f"{name} v{version}: {path} names itself {data.get('name')} "
                                f"v{data.get('version', LEGACY_VERSION)}")
            try:
                parse_profile(data)
            except ProfileError as exc:
                problems.append(f"{name} v{version}: no longer loads (a new profile field "
                                f"needs a default): {exc}")
    for path in sorted((folder / "released").glob("*/v*.json")):
        name, version = path.parent.name, path.stem[1:]
        if version not in lock.get(name, {}):
            problems.append(f"{path}: not in {LOCK}")
    return problems


def check_current(folder: Path = DEFAULT_DIR) -> list[str]:
    """A current profile that differs from its released version or went back in version."""
    lock = read_lock(folder)
    try:
        currents = _currents(folder, None)
    except ReleaseError as exc:
        return [str(exc)]
    return [p for cur in currents if (p := _conflict(cur, lock.get(cur.name, {})))]


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Profile versions: release (freeze) and check.", no_args_is_help=True)
    group.command("release")(release_cmd)
    group.command("check")(check_cmd)
    app.add_typer(group, name="profiles")


def release_cmd(
    names: list[str] = typer.Argument(None, help="Profiles to release (default: all)."),
    folder: Path = typer.Option(DEFAULT_DIR, "--dir", help="The profiles folder."),
) -> None:
    """Freeze each current profile as its version (refused if that version was released with
    other content: bump `version`)."""
    try:
        for line in release(folder, names or None):
            typer.echo(line)
    except ReleaseError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def check_cmd(folder: Path = typer.Option(DEFAULT_DIR, "--dir", help="The profiles folder.")
              ) -> None:
    """Exit 1 if a released version changed or a current profile differs from its release."""
    problems = check(folder)
    for line in problems:
        typer.echo(f"problem: {line}")
    if problems:
        raise typer.Exit(1)
    lock = read_lock(folder)
    typer.echo(f"{sum(map(len, lock.values()))} released version(s) of {len(lock)} profile(s) "
               "match the lock; every current profile is released or a new version")
