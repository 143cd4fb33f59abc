"""Where the archive's files live: a local directory (`file:///path`, the embedded default) or
an S3-compatible object store (`s3://bucket/prefix?endpoint=host:port&scheme=http`).

A store holds write-once objects under names like `table.events/p0003/<offset>.parquet`.
`put` makes an object appear whole or not at all: on a directory it writes a temporary
file, fsyncs it and links it into place (a link never replaces an existing manifest); on S3
a PUT is atomic by itself. The archiver writes a segment's file first and its manifest
last, so a kill leaves either nothing, a file without a manifest (rewritten on restart), or
both.

S3 credentials are the settings `CROUPIER_ARCHIVE_S3_ACCESS_KEY` / `CROUPIER_ARCHIVE_S3_SECRET_KEY`
(unset: the AWS SDK's usual variables and files).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlparse

from pyarrow import fs as pafs


class ArchiveStoreError(RuntimeError):
    """The archive's URL is wrong, or its store refused or lost an object."""


class ObjectExistsError(ArchiveStoreError):
    """A write-once object (a manifest) is already there: another archiver wrote it."""


class ArchiveStore(Protocol):
    @property
    def url(self) -> str: ...

    def names(self, prefix: str) -> list[str]:
        """Names of the objects directly under `prefix/` (names only, sorted)."""
        ...

    def folders(self, prefix: str) -> list[str]:
        """Names of the folders directly under `prefix` ('' for the root), sorted."""
        ...

    def get(self, name: str) -> bytes: ...

    def exists(self, name: str) -> bool: ...

    def put(self, name: str, data: bytes, *, once: bool = False) -> None:
        """Write `name` whole; `once`: refuse (ObjectExistsError) if it already exists."""
        ...

    def delete(self, name: str) -> None: ...

    def arrow(self) -> tuple[pafs.FileSystem, str]:
        """(a pyarrow file system, the root path in it): for Parquet engines."""
        ...


@dataclass
class DirectoryStore:
    root: Path

    @property
    def url(self) -> str:
        return self.root.resolve().as_uri()

    def _path(self, name: str) -> Path:
        if name.startswith("/") or ".." in name.split("/"):
            raise ArchiveStoreError(f"bad object name {name!r}")
        return self.root / name

    def names(self, prefix: str) -> list[str]:
        folder = self._path(prefix)
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if p.is_file() and
                      not p.name.startswith("."))

    def folders(self, prefix: str) -> list[str]:
        folder = self._path(prefix) if prefix else self.root
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if p.is_dir())

    def get(self, name: str) -> bytes:
        try:
            return self._path(name).read_bytes()
        except FileNotFoundError as exc:
            raise ArchiveStoreError(f"{name} is missing from {self.url}") from exc

    def exists(self, name: str) -> bool:
        return self._path(name).is_file()

    def put(self, name: str, data: bytes, *, once: bool = False) -> None:
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            if once:
                try:
                    os.link(tmp, path)
                except FileExistsError as exc:
                    raise ObjectExistsError(f"{name} already exists in {self.url}") from exc
                os.unlink(tmp)
            else:
                os.replace(tmp, path)
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def delete(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def arrow(self) -> tuple[pafs.FileSystem, str]:
        return pafs.LocalFileSystem(), str(self.root.resolve())


# The AWS SDK inside pyarrow sends and checks CRC checksums by default since 2025; S3-compatible
# servers (s3proxy, older MinIO) answer those with XAmzContentSHA256Mismatch. "when_required"
# is what AWS S3 accepts too.
_S3_SDK_DEFAULTS = {"AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
                    "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required"}


@dataclass
class S3Store:
    bucket: str
    prefix: str
    endpoint: str | None = None
    scheme: str = "https"
    region: str = "us-east-1"
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name, value in _S3_SDK_DEFAULTS.items():
            os.environ.setdefault(name, value)
        self.fs = pafs.S3FileSystem(
            access_key=self.access_key, secret_key=self.secret_key,
            endpoint_override=self.endpoint,
            scheme=self.scheme, region=self.region, allow_bucket_creation=True,
            connect_timeout=5, request_timeout=30)
        try:
            self.fs.create_dir(self.bucket)
        except OSError as exc:
            raise ArchiveStoreError(f"cannot reach bucket {self.bucket} at "
                                    f"{self.endpoint or 'AWS'}: {exc}") from exc

    @property
    def url(self) -> str:
        where = f"?endpoint={self.endpoint}&scheme={self.scheme}" if self.endpoint else ""
        return f"s3://{self.bucket}/{self.prefix}{where}"

    def _key(self, name: str) -> str:
        return "/".join(p for p in (self.bucket, self.prefix.strip("/"), name) if p)

    def _infos(self, prefix: str) -> list[pafs.FileInfo]:
        try:
            return self.fs.get_file_info(pafs.FileSelector(self._key(prefix), allow_not_found=True))
        except OSError as exc:
            raise ArchiveStoreError(f"listing {prefix} in {self.url}: {exc}") from exc

    def names(self, prefix: str) -> list[str]:
        # a filesystem-backed server may also list a folder as a file: keep names with a dot
        return sorted(i.base_name for i in self._infos(prefix)
                      if i.type == pafs.FileType.File and "." in i.base_name)

    def folders(self, prefix: str) -> list[str]:
        return sorted({i.base_name for i in self._infos(prefix)
                       if i.type == pafs.FileType.Directory})

    def get(self, name: str) -> bytes:
        try:
            with self.fs.open_input_stream(self._key(name)) as stream:
                data: bytes = stream.read()
                return data
        except FileNotFoundError as exc:
            raise ArchiveStoreError(f"{name} is missing from {self.url}") from exc
        except OSError as exc:
            raise ArchiveStoreError(f"reading {name} from {self.url}: {exc}") from exc

    def exists(self, name: str) -> bool:
        return bool(self.fs.get_file_info(self._key(name)).type == pafs.FileType.File)

    def put(self, name: str, data: bytes, *, once: bool = False) -> None:
        # S3 has no portable create-if-absent through this client: `once` checks first (one
        # archiver per archive is the rule; the check catches a second one soon after)
        if once and self.exists(name):
            raise ObjectExistsError(f"{name} already exists in {self.url}")
        try:
            with self.fs.open_output_stream(self._key(name)) as out:
                out.write(data)
        except OSError as exc:
            raise ArchiveStoreError(f"writing {name} to {self.url}: {exc}") from exc

    def delete(self, name: str) -> None:
        try:
            self.fs.delete_file(self._key(name))
        except FileNotFoundError:
            pass

    def arrow(self) -> tuple[pafs.FileSystem, str]:
        return self.fs, self._key("")


def archive_from_settings(settings: Any = None) -> ArchiveStore:
    """The archive the settings name (`CROUPIER_ARCHIVE_URL`, else `<home>/archive`)."""
    from services.infra.settings import Settings

    settings = settings or Settings()
    return open_store(settings.archive_location, settings)


def open_store(url: str, settings: Any = None) -> ArchiveStore:
    """The store a `CROUPIER_ARCHIVE_URL` names; S3 credentials from `settings` (default:
    the environment's, read now)."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ArchiveStoreError(f"archive URL {url!r}: a file URL names a local path "
                                    "(file:///abs/path)")
        return DirectoryStore(Path(unquote(parsed.path)))  # made when first written
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ArchiveStoreError(f"archive URL {url!r} names no bucket (s3://bucket/prefix)")
        query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        unknown = set(query) - {"endpoint", "scheme", "region"}
        if unknown:
            raise ArchiveStoreError(f"archive URL {url!r}: unknown parameter(s) "
                                    f"{sorted(unknown)}; known: endpoint, scheme, region")
        if settings is None:
            from services.infra.settings import Settings
            settings = Settings()
        return S3Store(parsed.netloc, parsed.path.strip("/"), query.get("endpoint"),
                       query.get("scheme", "https"), query.get("region", "us-east-1"),
                       settings.archive_s3_access_key, settings.archive_s3_secret_key)
    raise ArchiveStoreError(f"archive URL {url!r}: use file:///path or s3://bucket/prefix")
