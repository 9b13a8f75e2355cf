"""Bounded work and a free event loop for operations.

Every operation runs under a work budget (``workbench.terminology.budget``). It is first tried
on the event loop with a small budget (``inline_steps``): a membership check against a cached
value set, a lookup in an indexed code system, finish well inside it and are answered at
once. A call that needs more (a first compile, a large import chain, an index to build, an
expansion) stops at that budget before doing the expensive part and runs again in a worker
thread with the full budget (``steps``) and a deadline (``seconds``); beyond either it is a 422
``too-costly`` OperationOutcome. Operations are pure (their only side effects are caches of
finished work), so the trial costs at most ``inline_steps`` steps. ``blocking`` operations go
to a worker at once. Meanwhile the event loop keeps answering other requests.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from workbench.errors import TooCostlyError
from workbench.terminology import budget

T = TypeVar("T")
# A worker that overruns its deadline stops at its next step; the answer is not held for
# longer than this after the deadline in any case.
GRACE = 2.0


@dataclass(frozen=True)
class Limits:
    """The work limits of one request (see the module docstring)."""

    steps: int = 5_000_000
    seconds: float = 30.0
    inline_steps: int = 20_000
    workers: int = 4


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


class Offloader:
    """Runs operation calls under ``limits``: inline when cheap, else in a worker thread."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    async def run(self, job: Callable[[], T], *, blocking: bool = False) -> T:
        """Run ``job`` (a pure call) and return its result; raise TooCostlyError beyond the
        limits."""
        limits = self.limits
        if not blocking:
            try:
                return budget.run_limited(budget.Budget(limits.inline_steps, inline=True), job)
            except budget.WouldBlock:
                pass
        queued = time.monotonic()

        def guarded() -> T:
            # the time spent waiting for a worker counts
            with budget.limited(budget.Budget(limits.steps, limits.seconds, since=queued)):
                return job()

        future = asyncio.get_running_loop().run_in_executor(_pool(limits.workers), guarded)
        future.add_done_callback(_retrieve)
        try:
            return await asyncio.wait_for(asyncio.shield(future), limits.seconds + GRACE)
        except asyncio.TimeoutError:
            raise TooCostlyError(
                f"The request needs more than {limits.seconds:g} seconds; it was stopped"
            ) from None
