"""Run one call in a child process forked from the server, and get its answer back.

A long scan (an expansion over a large code system, a regex over every code) holds the
interpreter lock for as long as it runs, and every other request then waits for the lock, in
bursts of milliseconds. In a forked child it has a lock of its own: the child starts with the
server's memory as it is at that moment (every loaded resource, every cache, shared
copy-on-write), runs the call, sends the pickled result or exception through a pipe and exits.
Nothing the child does reaches the server's data: operations are pure.

In the child, before the call: the server's sockets and pipes are closed (a client connection
the server closes must not stay open in the child, nor another child's answer pipe), SIGINT
and SIGTERM do what they do by default, standard output and error go to /dev/null (a
child of a Jupyter kernel must not write to the kernel's streams), and its scheduling
priority is lowered by ``nice``. The call's exception
comes back as it was raised (a WorkbenchError keeps its status and issue code); an
unexpected one carries the child's traceback as a note.

The children form a bounded pool: at most ``max_children()`` run at once in one server
process (by default as many as it has cores; more would only share the same processors), and
a call waits for a free slot in its worker thread. The caller's limits still hold while it
waits: the work budget's deadline counts from when the request was queued, so a call that
waited too long stops at its first step, and the server answers 422 ``too-costly`` at the
deadline in any case.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import stat
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from workbench.errors import WorkbenchError

T = TypeVar("T")


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


_SLOTS = threading.BoundedSemaphore(_cores())
_SLOT_COUNT = _cores()


def max_children() -> int:
    """How many children may run at once in this process."""
    return _SLOT_COUNT


def set_max_children(count: int) -> None:
    """Change how many children may run at once (before serving; at least 1)."""
    global _SLOTS, _SLOT_COUNT
    _SLOT_COUNT = max(1, count)
    _SLOTS = threading.BoundedSemaphore(_SLOT_COUNT)


def available() -> bool:
    """Whether calls can run in forked children here (Linux; elsewhere fork is unsafe or
    missing, and calls run in threads)."""
    return sys.platform == "linux" and hasattr(os, "fork")


class ChildFailed(WorkbenchError):
    """The child process ended without an answer (killed, or out of memory)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="exception", status=500, msg_id="WB-HTTP-500")


def run_forked(
    call: Callable[[], T],
    running: Callable[[int | None], None] | None = None,
    *,
    nice: int = 0,
) -> T:
    """Run ``call()`` in a forked child; return its result or raise its exception.

    Blocks until the child answers, so run it in a worker thread. ``running`` receives the
    child's pid as soon as it exists, and None once it has answered, before it is reaped (so
    a kill on a timeout never reaches a reused pid). ``nice`` lowers the child's scheduling
    priority by that much (``os.nice``). Waits for a free slot first (``max_children``).
    """
    with _SLOTS:
        return _fork_and_wait(call, running, nice)


def _fork_and_wait(
    call: Callable[[], T], running: Callable[[int | None], None] | None, nice: int
) -> T:
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns that forking a threaded process may deadlock the child; the
        # child here only runs engine code, whose locks come back fresh (forksafe).
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
        _child(call, read_end, write_end, nice)
    os.close(write_end)
    if running is not None:
        running(pid)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
    finally:
        if running is not None:
            running(None)
        _, status = os.waitpid(pid, 0)
    if not data:
        how = (
            f"was stopped by signal {os.WTERMSIG(status)}"
            if os.WIFSIGNALED(status)
            else f"exited with status {os.waitstatus_to_exitcode(status)}"
        )
        raise ChildFailed(f"The worker process for this request {how} without an answer")
    kind, value = pickle.loads(data)
    if kind == "error":
        raise value
    result: T = value
    return result


def _child(  # pragma: no cover - runs in the child
    call: Callable[[], Any], read_end: int, write_end: int, nice: int
) -> None:
    status = 0
    try:
        os.close(read_end)
        _detach(keep=write_end)
        if nice:
            with contextlib.suppress(OSError):
                os.nice(nice)
        try:
            payload: tuple[str, Any] = ("ok", call())
        except BaseException as exc:
            if not isinstance(exc, WorkbenchError):
                exc.add_note("In the worker process:\n" + traceback.format_exc())
            payload = ("error", exc)
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            data = pickle.dumps(("error", ChildFailed(f"The answer could not be sent: {exc}")))
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view) :]
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def _detach(keep: int) -> None:  # pragma: no cover - runs in the child
    """Let go of what belongs to the server (see the module docstring)."""
    for number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(number, signal.SIG_DFL)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2 and fd != keep:
                with contextlib.suppress(OSError):
                    mode = os.fstat(fd).st_mode
                    if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
                        os.close(fd)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives until _exit
