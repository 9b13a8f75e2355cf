"""Bounded work and a free event loop for operations.

Every operation runs under a work budget (``workbench.terminology.budget``), in up to three
places, each tried only when the one before would take too long:

1. **Inline**, on the event loop, with a small budget (``inline_steps``, and
   ``inline_seconds`` of processor time, so that a busy machine does not push work out):
   a membership check against a cached value set, a lookup in an indexed code system finish
   well inside it and are answered at once. ``blocking`` operations skip this.
2. **A worker thread**, with the full budget (``steps``, ``seconds``). Work the engine keeps
   (compiling a value set, indexing a code system) is done here, so that it lasts. When
   ``processes`` is on, other work (a scan whose result is not kept) gets only an allowance
   here (``inline_steps``, and ``scan_seconds`` of processor time).
3. **A forked child process** (``workbench.server.forked``), with the full budget, for the
   long scan: it starts with everything the thread built, and it cannot hold the server's
   interpreter lock, so cheap requests keep their latency while it runs.

Beyond the budget, or ``seconds`` after the request's input was received (``since``), it
is a 422 ``too-costly`` OperationOutcome (a child still running then is killed); the answer
comes at most ``GRACE`` (5%, at most 2 s) after the deadline. Operations are pure (their only side
effects are caches of finished work), so a retry in the next place only repeats what was
small.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from workbench.errors import TooCostlyError
from workbench.server import forked
from workbench.terminology import budget
from workbench.terminology.client_caches import CacheLimits

T = TypeVar("T")
# A worker that overruns its deadline stops at its next step; the answer is not held for
# longer than this share of the deadline (at most MAX_GRACE seconds) after it in any case.
GRACE = 0.05
MAX_GRACE = 2.0


#: The limits that may be 0 (and no less): the answer memo's size (0 turns it off). A child's
#: niceness may be any whole number; every other limit is positive.
MAY_BE_ZERO = frozenset({"memo_bytes"})


@dataclass(frozen=True)
class Limits:
    """The work limits of one request (see the module docstring). ``processes`` None means
    on where forking is safe (Linux). ``child_nice``: how much lower a child's scheduling
    priority is, so that when the processors are busy the server's cheap requests come
    before a long scan.

    Inline resources (``tx-resource``): at most ``tx_resources`` of them in one request, of at
    most ``tx_resource_bytes`` (their JSON) together. A POSTed body larger than
    ``loop_body_bytes`` is decoded and checked where the operation runs (a worker thread or a
    child), never on the event loop.

    Client caches (``$cache-control``, ``X-Cache-Id``): one unused for ``cache_idle_seconds``
    is dropped, at most ``caches`` of them holding at most ``cache_bytes`` together (the
    least recently used go first; see ``workbench.terminology.client_caches``).

    Answers remembered (``answer_memo``): the bodies of recent answers to GETs of read-only
    operations, given again to the same request while the content is unchanged, at most
    ``memo_bytes`` of them (0 turns the memo off)."""

    steps: int = 5_000_000
    seconds: float = 30.0
    inline_steps: int = 20_000
    inline_seconds: float = 0.02
    scan_seconds: float = 0.02
    workers: int = 4
    processes: bool | None = field(default=None)
    child_nice: int = 10
    tx_resources: int = 1_000
    tx_resource_bytes: int = 5_000_000
    loop_body_bytes: int = 65_536
    cache_idle_seconds: float = CacheLimits.idle_seconds  # 4 hours
    caches: int = 1000
    cache_bytes: int = 512_000_000
    memo_bytes: int = 32_000_000

    @classmethod
    def from_options(cls, options: Iterable[str]) -> Limits:
        """Limits from ``NAME=VALUE`` texts (``server.py --limit``), e.g. ``seconds=10``,
        ``tx_resources=200``; raise ValueError naming a bad one."""
        known = {f.name: f.type for f in fields(cls) if f.name != "processes"}
        changes: dict[str, Any] = {}
        for option in options:
            name, sep, text = option.partition("=")
            name = name.strip()
            if not sep or name not in known:
                raise ValueError(
                    f"--limit {option!r}: give NAME=VALUE, NAME one of {', '.join(known)}"
                )
            try:
                number = float(text) if "float" in str(known[name]) else int(text)
            except ValueError:
                raise ValueError(f"--limit {option!r}: {text!r} is not a number") from None
            if name in MAY_BE_ZERO and number < 0:
                raise ValueError(f"--limit {option!r}: the value must be 0 or more")
            if number <= 0 and name != "child_nice" and name not in MAY_BE_ZERO:
                raise ValueError(f"--limit {option!r}: the value must be positive")
            changes[name] = number
        return replace(cls(), **changes)

    def cache_limits(self) -> CacheLimits:
        """The bounds of the client caches."""
        return CacheLimits(self.cache_idle_seconds, self.caches, self.cache_bytes)

    def grace(self) -> float:
        """How long after the deadline an answer may come at most."""
        return min(MAX_GRACE, self.seconds * GRACE)

    def use_processes(self) -> bool:
        """Whether long scans go to a child process."""
        return forked.available() if self.processes is None else self.processes


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    """One pool for the process (servers in tests and notebooks come and go)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="workbench-op")
        return _POOL


def _retrieve(future: asyncio.Future[Any]) -> None:
    """A worker that finished after its caller gave up: its outcome is dropped quietly."""
    if not future.cancelled():
        future.exception()


class _Child:
    """The pid of the child a request runs in while it runs (to kill it on a timeout)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.lock = threading.Lock()

    def running(self, pid: int | None) -> None:
        with self.lock:
            self.pid = pid

    def kill(self) -> None:
        with self.lock, contextlib.suppress(ProcessLookupError):
            if self.pid is not None:
                os.kill(self.pid, signal.SIGKILL)


class Offloader:
    """Runs operation calls under ``limits``: inline when cheap, else in a worker thread,
    and a long scan in a forked child."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.processes = self.limits.use_processes()

    async def run(
        self,
        job: Callable[[], T],
        *,
        blocking: bool = False,
        since: float | None = None,
        scan: bool = False,
    ) -> T:
        """Run ``job`` (a pure call) and return its result; raise TooCostlyError beyond the
        limits. The deadline counts from ``since`` (a ``time.monotonic()`` value; default
        now). ``scan``: the job is large and keeps nothing (decoding a large body), so it
        goes straight to a child process when processes are used (its objects are made and
        freed there, never holding the server's interpreter lock)."""
        building = not scan  # whether the thread should try first (builds last there)
        if not blocking and not scan:
            tried = self.trial(job)
            if not isinstance(tried, budget.WouldBlock):
                return tried
            building = tried.building
        return await self.elsewhere(job, since=since, building=building)

    def trial(self, job: Callable[[], T]) -> T | budget.WouldBlock:
        """``job`` on the calling thread within the inline allowance: its result, or the
        WouldBlock that stopped it (then ``elsewhere`` runs it)."""
        limits = self.limits
        trial = budget.Budget(limits.inline_steps, inline=True, cpu_seconds=limits.inline_seconds)
        try:
            return budget.run_limited(trial, job)
        except budget.WouldBlock as stopped:
            return stopped

    async def elsewhere(self, job: Callable[[], T], *, since: float | None, building: bool) -> T:
        """``job`` in a worker thread under the full limits (``since``: when the deadline
        starts, default now); with processes, a long scan moves on to a forked child
        (``building``: the thread tries first, since what it builds lasts there)."""
        limits = self.limits
        queued = time.monotonic() if since is None else since
        child = _Child()

        def in_worker() -> T:
            # the time spent waiting for a worker counts
            full = budget.Budget(limits.steps, limits.seconds, since=queued)
            if not self.processes:
                return budget.run_limited(full, job)
            if building:
                allowance = budget.Budget(
                    limits.steps,
                    limits.seconds,
                    since=queued,
                    scan_steps=limits.inline_steps,
                    scan_seconds=limits.scan_seconds,
                )
                try:
                    return budget.run_limited(allowance, job)
                except budget.WouldBlock:
                    pass  # a long scan: on to a child, which starts with what was built
            return forked.run_forked(
                lambda: budget.run_limited(full, job), child.running, nice=limits.child_nice
            )

        future = asyncio.get_running_loop().run_in_executor(_pool(limits.workers), in_worker)
        future.add_done_callback(_retrieve)
        try:
            left = queued + limits.seconds + limits.grace() - time.monotonic()
            return await asyncio.wait_for(asyncio.shield(future), max(left, 0.0))
        except asyncio.TimeoutError:
            child.kill()
            raise TooCostlyError(
                f"The request needs more than {limits.seconds:g} seconds; it was stopped"
            ) from None
