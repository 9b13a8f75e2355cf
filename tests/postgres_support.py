"""A real PostgreSQL server for the tests (``make postgresql`` installs Debian's package):
``initdb`` into a temporary folder, started on a free port of 127.0.0.1 with its unix socket
in that folder, run as the ``postgres`` user when the tests run as root. One per test
session (``postgres`` in ``test_fleet.py``); ``stop`` and ``start`` stand for a database
lost and back."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from http_support import free_port

BIN_DIRS = [Path("/usr/lib/postgresql/15/bin"), Path("/usr/local/bin")]
INSTALL = "PostgreSQL is missing: 'make postgresql' installs Debian's package"


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, if PostgreSQL is installed."""
    candidates = [*BIN_DIRS, *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)]
    found = [d for d in candidates if (d / "initdb").exists() and (d / "pg_ctl").exists()]
    if found:
        return found[0]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class Postgres:
    """One PostgreSQL server: its folder, port and programs."""

    root: Path
    port: int
    bin: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def run(self, *command: str) -> None:
        """Run a PostgreSQL program (as ``postgres`` when root)."""
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.root / "server.log")
        pg_ctl = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", log]
        self.run(*pg_ctl, "-w", "-t", "30", "start")

    def stop(self) -> None:
        self.run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def create(self, name: str) -> str:
        """A new database; return its URL."""
        where = ["-h", str(self.root), "-p", str(self.port), "-U", "postgres"]
        self.run(str(self.bin / "psql"), *where, "-c", f"CREATE DATABASE {name}")
        return self.url(name)


def started() -> Postgres:
    """Initialise and start a server in a fresh folder (``cleanup`` removes it)."""
    found = binaries()
    if found is None:
        raise RuntimeError(INSTALL)
    root = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    server = Postgres(root, free_port(), found)
    server.run(str(found / "initdb"), "-D", str(server.data), "-A", "trust", "-U", "postgres")
    server.start()
    return server


def cleanup(server: Postgres) -> None:
    """Stop the server (if running) and remove its folder."""
    subprocess.run(
        ["runuser", "-u", "postgres", "--"] * (os.geteuid() == 0)
        + [str(server.bin / "pg_ctl"), "-D", str(server.data), "-m", "immediate", "stop"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    shutil.rmtree(server.root, ignore_errors=True)


@contextmanager
def running() -> Iterator[Postgres]:
    """A server started for the block, stopped and removed after it (the tests' fixtures)."""
    server = started()
    try:
        yield server
    finally:
        cleanup(server)
