"""Class-data sharing for the local Kafka nodes: the classes a node loads at start-up,
parsed and verified once per machine and mapped by every later JVM.

A Kafka node loads thousands of classes before it answers; without an archive each start
spends several CPU-seconds reading, verifying and compiling them, and the test suite
starts dozens of nodes on two cores (docs/decisions/cluster.md, "Starting a node").

The archive is a cache, never a truth. Each node that starts while there is none trains
one (`-XX:ArchiveClassesAtExit`: the JVM writes it when it exits, about 50 MB); the first
that was ready and then stopped cleanly keeps it, the others' are dropped. It is named by
what it depends on: the Kafka jars (their names, sizes and times) and the JVM that wrote
it. A JVM that cannot use it (another build, other jars) ignores it and
starts the slow way; nothing else reads it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

# written in the node's data directory while it trains: where its JVM writes the archive
TRAINING_NOTE = "class-archive.training"
# a short-lived tool (the storage format) is compiled by the quick compiler only: the
# optimising one would spend more CPU compiling than the tool spends running
QUICK_JIT = "-XX:TieredStopAtLevel=1"
READY = "ready"


def jvm_identity() -> str:
    """The running JVM build as the file system sees it: its libjvm's path, size and
    modification time (a package upgrade replaces the file); the `java` launcher's if
    no libjvm is found beside it."""
    java = shutil.which("java")
    if java is None:
        return "no-java"
    binary = Path(os.path.realpath(java))
    home = binary.parent.parent
    candidates = [home / "lib" / "server" / "libjvm.so", home / "jre" / "lib" / "server" / "libjvm.so"]
    target = next((p for p in candidates if p.exists()), binary)
    stat = target.stat()
    return f"{target}:{stat.st_size}:{stat.st_mtime_ns}"


@dataclass(frozen=True)
class ClassArchive:
    """The archive for the jars in `lib` under the JVM that runs now, kept in `store`
    (beside `lib` unless told: once per machine)."""

    lib: Path
    store: Path | None = None

    @property
    def path(self) -> Path:
        jars = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                      for p in self.lib.glob("*.jar"))
        key = hashlib.sha256(f"{self.lib.resolve()}|{jars}|{jvm_identity()}".encode()
                             ).hexdigest()[:16]
        return (self.store or self.lib.parent) / f"classes-{key}.jsa"

    def use_flags(self) -> list[str]:
        """Map the archive if there is one (a tool that must not train one)."""
        return _mapping(self.path)

    def node_flags(self, data_dir: Path, *, may_train: bool = True) -> list[str]:
        """A node's flags: map the archive, or train one into its data directory when
        there is none yet (noted there with the archive it is for, so whoever stops the
        node can keep it). A JVM with a Java agent may map an archive but must not train
        one (`may_train=False`): JDK 17 then exits at start-up."""
        for stale in data_dir.glob("classes-*.jsa"):  # a node that died while training
            stale.unlink(missing_ok=True)
        note = data_dir / TRAINING_NOTE
        note.unlink(missing_ok=True)
        path = self.path
        if (flags := _mapping(path)) or not may_train:
            return flags
        training = data_dir / f"classes-{uuid.uuid4().hex[:8]}.jsa"
        note.write_text(f"{training}\n{path}\n")
        return [f"-XX:ArchiveClassesAtExit={training}"]

    @staticmethod
    def node_ready(data_dir: Path) -> None:
        """The training node answered: what it loaded by now is a start-up's classes, so
        its archive is worth keeping (a node stopped before it was ready is not)."""
        note = data_dir / TRAINING_NOTE
        if note.exists():
            with open(note, "a") as out:
                out.write(f"{READY}\n")

    @staticmethod
    def keep_training(data_dir: Path, *, clean_exit: bool) -> bool:
        """After the node of `data_dir` exited: keep the archive it trained if it was
        ready and stopped cleanly (a node killed while writing leaves half a file), and
        drop it from the data directory either way. True if this made the archive."""
        note = data_dir / TRAINING_NOTE
        try:
            lines = note.read_text().splitlines()  # a line a path: paths may hold spaces
        except FileNotFoundError:
            return False
        note.unlink(missing_ok=True)
        if len(lines) < 2:  # an empty note, or an older one naming no archive to keep
            for left in lines:
                Path(left).unlink(missing_ok=True)
            return False
        training, target = Path(lines[0]), Path(lines[1])
        kept = False
        if (clean_exit and READY in lines[2:] and training.exists()
                and training.stat().st_size > 0 and not target.exists()):
            # copied beside the archive, then renamed: a reader sees no file or a whole one
            staging = target.with_name(f"{target.name}.{uuid.uuid4().hex[:8]}.partial")
            try:
                shutil.copyfile(training, staging)
                os.replace(staging, target)
                kept = True
            except OSError:  # a full disk, say: the node stopped all the same
                staging.unlink(missing_ok=True)
        training.unlink(missing_ok=True)
        return kept


def _mapping(path: Path) -> list[str]:
    """The flag that maps the archive at `path`, if there is one there."""
    return [f"-XX:SharedArchiveFile={path}"] if path.exists() else []
