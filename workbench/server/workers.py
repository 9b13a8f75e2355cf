"""Serve with one process per core: ``server.py --workers N``.

The server process loads everything first (value sets, packages, release stores, whose column
files are memory maps) and builds the app, then binds the port and forks N workers. Each
worker runs uvicorn on the shared listening socket, so the kernel spreads connections over
them; what was loaded is shared copy-on-write (``gc.freeze`` keeps the collector from
touching it) and the release stores' maps are the same pages in every worker. Writes go
through the data folder's database (``database/sqlite.py``, ``sync.py``), so that every
worker sees a write before it is acknowledged and ``If-Match`` holds across workers.

The first process only supervises: SIGTERM or SIGINT is passed on to the workers, which answer
the requests in flight and exit; a worker that dies is replaced, unless it died right after
it started (then the server stops with an error rather than fork in a loop).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import time
import traceback
from types import FrameType

import uvicorn

log = logging.getLogger("workbench.server")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A worker that dies sooner than this after it started is not replaced: something is wrong.
MIN_LIFETIME = 5.0
POLL_SECONDS = 0.1


def worker_count(text: str) -> int:
    """``--workers``: a whole number from 1, or ``auto`` (the cores this process may use)."""
    if text.strip().lower() == "auto":
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not Linux
            return max(1, os.cpu_count() or 1)
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(f"--workers takes a whole number from 1, or auto, not {text!r}")
    return int(text)


def serve_until_stopped(
    config: uvicorn.Config, sockets: list[socket.socket] | None = None
) -> str | None:
    """Serve in this (main) thread until SIGTERM or SIGINT; requests in flight are answered
    first. Return the name of the signal that stopped the server, if one did.

    uvicorn raises the signal again once it has shut down (so the process would die of
    it, exit status 143 or 130); the handlers installed here take that second delivery,
    so the process can exit 0, and a stop asked before uvicorn listens is not lost.
    """
    server = uvicorn.Server(config)
    received: list[int] = []

    def stop(sig: int, frame: FrameType | None) -> None:
        received.append(sig)
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        server.run(sockets=sockets)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return signal.Signals(received[0]).name if received else None


class WorkersFailed(RuntimeError):
    """A worker died right after it started."""


class Supervisor:
    """Forks ``count`` workers serving ``config`` on ``sock`` and keeps them running."""

    def __init__(self, config: uvicorn.Config, sock: socket.socket, count: int) -> None:
        self.config = config
        self.sock = sock
        self.count = count
        self.children: dict[int, float] = {}  # pid -> when it started
        self.received: list[int] = []
        self.failure: str | None = None

    def spawn(self) -> None:
        """Fork one worker."""
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the worker (coverage does not follow it)
            status = 0
            try:
                for sig in STOP_SIGNALS:  # not the supervisor's, until uvicorn's are in place
                    signal.signal(sig, signal.SIG_DFL)
                serve_until_stopped(self.config, [self.sock])
            except BaseException:
                traceback.print_exc()
                status = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)  # not the supervisor's exit handlers
        self.children[pid] = time.monotonic()

    def signal_all(self, sig: int) -> None:
        """Send ``sig`` to every worker still running."""
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def reaped(self, pid: int, status: int) -> None:
        """A worker ended: replace it, unless stopping or it failed at once."""
        started = self.children.pop(pid, time.monotonic())
        if self.received or self.failure:
            return
        code = os.waitstatus_to_exitcode(status)
        if time.monotonic() - started < MIN_LIFETIME:
            self.failure = f"worker {pid} ended {code} right after it started"
            self.signal_all(signal.SIGTERM)
            return
        log.warning("worker %d ended (%d); starting another", pid, code)
        self.spawn()

    def run(self) -> str | None:
        """Serve until a stop signal; return its name (raise WorkersFailed on a failure)."""

        def stop(sig: int, frame: FrameType | None) -> None:
            self.received.append(sig)

        previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
        deadline: float | None = None
        try:
            for _ in range(self.count):
                self.spawn()
            while self.children:
                if self.received and deadline is None:
                    self.signal_all(signal.SIGTERM)
                    grace = (self.config.timeout_graceful_shutdown or 30) + 5
                    deadline = time.monotonic() + grace
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid:
                    self.reaped(pid, status)
                    continue
                if deadline is not None and time.monotonic() > deadline:
                    self.signal_all(signal.SIGKILL)
                time.sleep(POLL_SECONDS)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.sock.close()
        if self.failure:
            raise WorkersFailed(self.failure)
        return signal.Signals(self.received[0]).name if self.received else None


def serve_workers(config: uvicorn.Config, count: int) -> str | None:
    """Serve ``config``'s app from ``count`` forked workers on one port until SIGTERM or
    SIGINT; return the signal's name. One worker is ``serve_until_stopped`` itself."""
    if count <= 1:
        return serve_until_stopped(config)
    # the supervisor serves nothing: what the app opened while it was built (the database's
    # connections, PostgreSQL's listening thread) is closed before forking; each worker
    # opens its own on first use
    closing = getattr(getattr(config.app, "state", None), "closing", None)
    if closing is not None:
        closing.close()
    sock = config.bind_socket()
    return Supervisor(config, sock, count).run()
