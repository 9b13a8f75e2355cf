"""A work budget for one request: steps (codes and compile steps touched) and a deadline.

The engine calls ``charge(n)`` where work grows with data (codes scanned, value sets compiled,
code systems indexed, membership checks), and ``tick()`` now and then inside long scans (a
time check, no steps). Outside ``limited`` both do nothing, so Python users are never limited.
Inside, going over the budget raises TooCostlyError (``too-costly``), or ``WouldBlock`` for a
trial run (``inline=True``), which the server then repeats elsewhere with a larger budget.
Once exceeded, a budget stays exceeded (``exceeded``), so an error swallowed somewhere cannot
turn into a silently partial answer.

Work that the engine keeps (a compiled value set, a code system's index, a text index) runs
inside ``building()``. A budget with a ``scan`` allowance lets such builds run to the full
budget but raises ``WouldBlock`` once the other work (scans whose result is not kept) goes
beyond the allowance: the server builds what lasts in its own process, and moves a long scan
to a child process, where it cannot slow other requests down.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from workbench.errors import TooCostlyError

T = TypeVar("T")


class WouldBlock(Exception):
    """A trial run needs more than its allowance (not a WorkbenchError, so nothing on the
    way catches it). ``building`` says whether it stopped inside work the engine keeps."""

    def __init__(self, what: str, *, building: bool = False) -> None:
        super().__init__(what)
        self.building = building


class _ThreadClock(threading.local):
    """This thread's last reading: when it was taken (``time.monotonic()``) and its
    processor time then."""

    reading: tuple[float, float] = (-math.inf, 0.0)


_CLOCK = _ThreadClock()


def _forget_reading() -> None:
    # a forked child's thread starts its processor time afresh: the parent's reading is
    # not its own
    _CLOCK.reading = (-math.inf, 0.0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_reading)


CPU_READING_AGE = 0.001
"""How old (seconds of wall time) a thread's processor-time reading may be when a budget
counts from it: reading it is a system call, a cost a cheap request would pay every time."""


def cpu_reading(wall: float) -> tuple[float, float]:
    """This thread's processor time and when it was read (``time.monotonic()``), at most
    ``CPU_READING_AGE`` before ``wall`` (now): read again when older. Counting from it
    counts at most that much processor time the thread used before ``wall``, never less
    than it used since."""
    reading = _CLOCK.reading
    if wall - reading[0] > CPU_READING_AGE:
        reading = _CLOCK.reading = (wall, time.thread_time())
    return reading


class Budget:
    """``steps`` units of work and, optionally, ``seconds`` of time from ``since`` (a
    ``time.monotonic()`` value; default now).

    ``inline``: going over raises WouldBlock instead of TooCostlyError; ``cpu_seconds``
    limits the processor time of the calling thread as well (the time it waited for the
    processor does not count). ``scan_steps`` and ``scan_seconds`` (processor time, from now):
    an allowance for work outside ``building()``; beyond it, WouldBlock. Processor time
    counts from the thread's last reading (``cpu_reading``), so a limit may stop the work up
    to ``CPU_READING_AGE`` early, never late.
    """

    __slots__ = (
        "builds",
        "cpu_deadline",
        "cpu_floor",
        "cpu_seconds",
        "deadline",
        "exceeded",
        "inline",
        "left",
        "scan_deadline",
        "scan_left",
        "seconds",
        "steps",
        "timed",
    )

    def __init__(
        self,
        steps: int,
        seconds: float | None = None,
        *,
        inline: bool = False,
        since: float | None = None,
        cpu_seconds: float | None = None,
        scan_steps: int | None = None,
        scan_seconds: float | None = None,
    ) -> None:
        self.steps = steps
        self.left = steps
        self.seconds = seconds
        self.deadline: float | None = None
        if seconds is not None:
            self.deadline = (time.monotonic() if since is None else since) + seconds
        self.inline = inline
        self.exceeded = False
        self.builds = 0
        self.cpu_seconds = cpu_seconds
        self.scan_left = scan_steps
        self.cpu_deadline: float | None = None
        self.scan_deadline: float | None = None
        # A thread uses no more processor time than the time that passes: until the clock
        # reaches ``cpu_floor`` neither processor deadline can have passed, and ``tick``
        # need not ask for the thread's time (a system call, unlike the clock).
        self.cpu_floor = math.inf
        if cpu_seconds is not None or scan_seconds is not None:
            wall, cpu = cpu_reading(time.monotonic())
            if cpu_seconds is not None:
                self.cpu_deadline = cpu + cpu_seconds
                self.cpu_floor = wall + cpu_seconds
            if scan_seconds is not None:
                self.scan_deadline = cpu + scan_seconds
                self.cpu_floor = min(self.cpu_floor, wall + scan_seconds)
        self.timed = (self.deadline, self.cpu_deadline, self.scan_deadline) != (None, None, None)

    def charge(self, n: int = 1) -> None:
        """Use ``n`` steps; raise when the steps or the time are used up."""
        self.left -= n
        if self.left < 0:
            self._exceed(f"more than {self.steps:,} steps (codes and value sets touched)")
        if self.scan_left is not None and not self.builds:
            self.scan_left -= n
            if self.scan_left < 0:
                raise WouldBlock("a long scan")
        if self.timed:
            self.tick()

    def tick(self) -> None:
        """Check the time (a long scan calls this every so many codes)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            self._exceed(f"more than {self.seconds:g} seconds")
        if self.cpu_floor < time.monotonic():
            used = time.thread_time()
            if self.cpu_deadline is not None and used > self.cpu_deadline:
                self._exceed(f"more than {self.cpu_seconds:g} seconds of processor time")
            if self.scan_deadline is not None and not self.builds and used > self.scan_deadline:
                raise WouldBlock("a long scan")

    def check(self) -> None:
        """Raise again if the budget was exceeded (and the error swallowed on the way)."""
        if self.exceeded:
            self._exceed("more than its budget")

    def _exceed(self, what: str) -> None:
        self.exceeded = True
        if self.inline:
            raise WouldBlock(what, building=self.builds > 0)
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


def tick() -> None:
    """Check the current request's time limits (nothing outside ``limited``)."""
    budget = _CURRENT.get()
    if budget is not None and budget.timed:
        budget.tick()


def current() -> Budget | None:
    """The budget in force, if any."""
    return _CURRENT.get()


@contextmanager
def building() -> Iterator[None]:
    """Mark the block as work the engine keeps (see the module docstring)."""
    budget = _CURRENT.get()
    if budget is None:
        yield
        return
    budget.builds += 1
    try:
        yield
    finally:
        budget.builds -= 1


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
