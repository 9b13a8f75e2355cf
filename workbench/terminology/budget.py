"""A work budget for one request: steps (codes and compile steps touched) and a deadline.

The engine calls ``charge(n)`` where work grows with data (codes scanned, value sets compiled,
code systems indexed, membership checks). Outside ``limited`` it does nothing, so Python users
are never limited. Inside, going over the budget raises TooCostlyError (``too-costly``), or
``WouldBlock`` for a trial run on the server's event loop (``inline=True``), which the server
then repeats in a worker thread with the full budget. Once exceeded, a budget stays exceeded
(``exceeded``), so an error swallowed somewhere cannot turn into a silently partial answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from workbench.errors import TooCostlyError

T = TypeVar("T")


class WouldBlock(Exception):
    """A trial run on the event loop needs more than its small budget (not a WorkbenchError,
    so nothing on the way catches it)."""


class Budget:
    """``steps`` units of work and, optionally, ``seconds`` of time from ``since`` (a
    ``time.monotonic()`` value; default now)."""

    def __init__(
        self,
        steps: int,
        seconds: float | None = None,
        *,
        inline: bool = False,
        since: float | None = None,
    ) -> None:
        self.steps = steps
        self.left = steps
        self.seconds = seconds
        self.deadline: float | None = None
        if seconds is not None:
            self.deadline = (time.monotonic() if since is None else since) + seconds
        self.inline = inline
        self.exceeded = False

    def charge(self, n: int = 1) -> None:
        """Use ``n`` steps; raise when the steps or the time are used up."""
        self.left -= n
        if self.left < 0:
            self._exceed(f"more than {self.steps:,} steps (codes and value sets touched)")
        if self.deadline is not None and time.monotonic() > self.deadline:
            self._exceed(f"more than {self.seconds:g} seconds")

    def check(self) -> None:
        """Raise again if the budget was exceeded (and the error swallowed on the way)."""
        if self.exceeded:
            self._exceed("more than its budget")

    def _exceed(self, what: str) -> None:
        self.exceeded = True
        if self.inline:
            raise WouldBlock(what)
        raise TooCostlyError(
            f"The request needs {what}; it was stopped. Narrow it down (a smaller value set, "
            "paging with count and offset, a more specific filter)"
        )


_CURRENT: ContextVar[Budget | None] = ContextVar("workbench_budget", default=None)


def charge(n: int = 1) -> None:
    """Charge ``n`` steps to the current request's budget (nothing outside ``limited``)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.charge(n)


def current() -> Budget | None:
    """The budget in force, if any."""
    return _CURRENT.get()


@contextmanager
def limited(budget: Budget) -> Iterator[Budget]:
    """Run the block under ``budget``; on the way out re-raise a swallowed overrun."""
    token = _CURRENT.set(budget)
    try:
        yield budget
        budget.check()
    finally:
        _CURRENT.reset(token)


def run_limited(budget: Budget, call: Callable[[], T]) -> T:
    """``call()`` under ``budget``: ``limited`` without a generator (the server's hot path)."""
    token = _CURRENT.set(budget)
    try:
        found = call()
        if budget.exceeded:
            budget.check()
        return found
    finally:
        _CURRENT.reset(token)
