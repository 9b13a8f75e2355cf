"""Where the server runs an operation: inline, in a worker thread, or in a forked child.

The jobs here are plain calls that charge the request's budget the way the engine does, and
report the process they ran in; the HTTP-level behaviour (cheap requests answered while an
expansion runs, 422 beyond the limits) is in ``test_http_limits.py``.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import CodeSystemNotFoundError, TooCostlyError, WorkbenchError
from workbench.server import forked
from workbench.server.offload import Limits, Offloader
from workbench.terminology import budget

pytestmark = pytest.mark.skipif(not forked.available(), reason="fork is used on Linux only")


def run(limits: Limits, job: Callable[[], Any], *, blocking: bool = False) -> Any:
    return asyncio.run(Offloader(limits).run(job, blocking=blocking))


def where(steps: int = 0, built: int = 0) -> Callable[[], tuple[int, int]]:
    """A job that builds ``built`` steps of kept work, then scans ``steps`` codes; it
    returns (process id, thread id)."""

    def job() -> tuple[int, int]:
        with budget.building():
            budget.charge(built)
        budget.charge(steps)
        return os.getpid(), threading.get_ident()

    return job


LIMITS = Limits(inline_steps=1_000, seconds=10.0)


@pytest.mark.parametrize(
    ("steps", "built", "blocking", "place"),
    [
        (10, 0, False, "inline"),  # cheap: answered on the event loop
        (0, 5_000, False, "thread"),  # kept work: done where it lasts
        (0, 5_000, True, "thread"),
        (5_000, 0, False, "child"),  # a long scan: in a child
        (5_000, 0, True, "child"),
        (5_000, 5_000, False, "child"),  # built in the thread, scanned in a child
    ],
)
def test_each_job_runs_where_it_belongs(steps: int, built: int, blocking: bool, place: str) -> None:
    loop_thread = threading.get_ident()
    pid, thread = run(LIMITS, where(steps, built), blocking=blocking)
    found = "child" if pid != os.getpid() else "inline" if thread == loop_thread else "thread"
    assert found == place


def test_what_the_thread_builds_lasts_and_the_child_starts_with_it() -> None:
    kept: dict[str, int] = {}

    def job() -> tuple[int, int]:
        if "index" not in kept:
            with budget.building():
                budget.charge(5_000)
                kept["index"] = os.getpid()
        budget.charge(5_000)  # then a long scan
        return os.getpid(), kept["index"]

    pid, built_in = run(LIMITS, job)
    assert pid != os.getpid()  # the scan ran in a child...
    assert built_in == os.getpid()  # ...which found the index the server built
    assert kept == {"index": os.getpid()}  # and the server keeps it for the next request


def test_without_processes_everything_stays_in_this_process() -> None:
    pid, _ = run(Limits(inline_steps=1_000, processes=False), where(steps=5_000))
    assert pid == os.getpid()


def test_a_child_cannot_change_the_servers_data() -> None:
    data = {"n": 0}

    def job() -> int:
        budget.charge(5_000)
        data["n"] += 1
        return data["n"]

    assert run(LIMITS, job) == 1
    assert data == {"n": 0}


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (CodeSystemNotFoundError("http://example.org/none", "2"), 404, "not-found"),
        (TooCostlyError("too much"), 422, "too-costly"),
    ],
)
def test_a_childs_error_comes_back_as_raised(error: WorkbenchError, status: int, code: str) -> None:
    def job() -> None:
        budget.charge(5_000)
        raise error

    with pytest.raises(type(error)) as caught:
        run(LIMITS, job)
    assert caught.value.status == status
    assert caught.value.to_outcome() == error.to_outcome()
    assert caught.value.to_outcome()["issue"][0]["code"] == code


def test_an_unexpected_error_carries_the_childs_traceback() -> None:
    def job() -> None:
        budget.charge(5_000)
        raise KeyError("lost")

    with pytest.raises(KeyError) as caught:
        run(LIMITS, job)
    notes = "".join(getattr(caught.value, "__notes__", []))
    assert "In the worker process" in notes and "KeyError: 'lost'" in notes


def test_the_step_budget_holds_in_the_child() -> None:
    def job() -> None:
        budget.charge(5_000)
        for _ in range(100):
            budget.charge(1_000_000)

    with pytest.raises(TooCostlyError, match="steps"):
        run(Limits(inline_steps=1_000, steps=2_000_000), job)


def test_a_child_past_the_deadline_is_killed(tmp_path: Path) -> None:
    noted = tmp_path / "pid"

    def job() -> None:
        budget.charge(5_000)
        noted.write_text(str(os.getpid()))
        while True:  # never checks its budget
            time.sleep(0.01)

    start = time.monotonic()
    with pytest.raises(TooCostlyError, match=r"more than 0\.3 seconds"):
        run(Limits(inline_steps=1_000, seconds=0.3), job)
    assert time.monotonic() - start < 5
    pid = int(noted.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the worker thread reaps it once it is killed
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"child {pid} still runs after the request was stopped")


def test_run_forked_reports_a_child_that_died() -> None:
    with pytest.raises(forked.ChildFailed, match="signal 9"):
        forked.run_forked(lambda: os.kill(os.getpid(), 9))


def test_run_forked_returns_what_the_call_returns() -> None:
    assert forked.run_forked(lambda: {"a": [1, 2.5, "x", None]}) == {"a": [1, 2.5, "x", None]}


def _every_error_class() -> list[type[WorkbenchError]]:
    found: list[type[WorkbenchError]] = []
    todo: list[type[WorkbenchError]] = [WorkbenchError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


@pytest.mark.parametrize("cls", _every_error_class(), ids=lambda c: c.__name__)
def test_every_error_survives_the_trip_back(cls: type[WorkbenchError]) -> None:
    error = cls.__new__(cls)
    WorkbenchError.__init__(error, f"{cls.__name__} text", expression=["Parameters.x"])
    error.extra = ("kept", 1)  # type: ignore[attr-defined]
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert back.to_outcome() == error.to_outcome()
    assert (back.status, back.code, back.text, back.args) == (
        error.status,
        error.code,
        error.text,
        error.args,
    )
    assert back.extra == ("kept", 1)  # type: ignore[attr-defined]


def test_the_inline_trial_counts_processor_time_not_waiting() -> None:
    """A busy machine (the loop waiting for a processor) does not push a cheap call out;
    a call that computes past the inline allowance goes to a child."""

    def waits() -> tuple[int, int]:
        time.sleep(0.05)  # 50 ms of wall time, hardly any processor time
        budget.charge(1)
        return os.getpid(), threading.get_ident()

    def computes() -> tuple[int, int]:
        end = time.thread_time() + 0.05
        while time.thread_time() < end:
            pass
        budget.charge(1)
        return os.getpid(), threading.get_ident()

    limits = Limits(inline_seconds=0.02)
    assert run(limits, waits) == (os.getpid(), threading.get_ident())
    assert run(limits, computes)[0] != os.getpid()


def test_a_child_runs_at_a_lower_priority() -> None:
    """A long scan gives way to the server's cheap requests when the processors are busy."""

    def job() -> int:
        budget.charge(5_000)
        return os.getpriority(os.PRIO_PROCESS, 0)

    assert run(Limits(inline_steps=1_000, child_nice=7), job) == os.getpriority(
        os.PRIO_PROCESS, 0
    ) + min(7, 19 - os.getpriority(os.PRIO_PROCESS, 0))
