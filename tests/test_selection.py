"""``workbench.use``/``workbench.current`` across threads and asyncio tasks: a choice lives in
a ContextVar, so concurrent choices do not see each other."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

import workbench
import workbench.workbench
from workbench import Workbench, WorkbenchChoiceError


@pytest.fixture
def alone() -> Iterator[None]:
    hidden = dict(workbench.workbench._LIVE)
    workbench.workbench._LIVE.clear()
    yield
    workbench.workbench._LIVE.update(hidden)


def test_threads_choose_independently(alone: None) -> None:
    benches = [Workbench() for _ in range(4)]
    seen: dict[int, list[Workbench]] = {}
    barrier = threading.Barrier(len(benches))

    def work(i: int) -> None:
        with workbench.use(benches[i]):
            barrier.wait()  # every thread has chosen before any reads
            seen[i] = [workbench.current() for _ in range(50)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(benches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(all(found is benches[i] for found in seen[i]) for i in range(len(benches)))
    with pytest.raises(WorkbenchChoiceError):  # nothing leaked into this thread
        workbench.current()


def test_a_thread_does_not_see_the_callers_choice(alone: None) -> None:
    a, _b = Workbench(), Workbench()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            workbench.current()
        except WorkbenchChoiceError as exc:
            errors.append(exc)

    with workbench.use(a):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert len(errors) == 1


def test_asyncio_tasks_choose_independently(alone: None) -> None:
    a, b = Workbench(), Workbench()

    async def pick(wb: Workbench) -> bool:
        with workbench.use(wb):
            await asyncio.sleep(0)
            return workbench.current() is wb

    async def both() -> list[bool]:
        return list(await asyncio.gather(pick(a), pick(b), pick(a)))

    assert asyncio.run(both()) == [True, True, True]


def test_serials_are_distinct_and_shown() -> None:
    a, b = Workbench(), Workbench()
    assert a.serial != b.serial
    assert repr(a).startswith(f"<Workbench #{a.serial}: ")
