"""The work budget's processor-time limit counts from a recent reading of the thread's time."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from workbench.terminology.budget import CPU_READING_AGE, Budget, WouldBlock, cpu_reading


def burn(seconds: float) -> None:
    """Use ``seconds`` of this thread's processor time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_reading_is_reused_only_while_it_is_recent() -> None:
    now = time.monotonic()
    wall, cpu = cpu_reading(now)
    assert now - CPU_READING_AGE <= wall <= now
    assert cpu_reading(wall) == (wall, cpu)  # reused: no new system call
    later = wall + 2 * CPU_READING_AGE
    assert cpu_reading(later)[0] == later  # read again
    assert cpu_reading(later)[1] >= cpu


def test_each_thread_has_its_own_reading() -> None:
    now = time.monotonic()
    mine = cpu_reading(now)
    theirs: list[tuple[float, float]] = []
    worker = threading.Thread(target=lambda: theirs.append(cpu_reading(now)))
    worker.start()
    worker.join()
    assert theirs[0][1] < mine[1]  # a new thread's processor time, not this one's
    assert cpu_reading(now) == mine


def test_processor_time_before_the_budget_is_not_counted() -> None:
    """A thread that computed for a while before the budget starts gets its whole allowance
    (up to the reading's age): the budget does not count from a stale reading."""
    cpu_reading(time.monotonic())
    burn(0.05)
    trial = Budget(10**9, inline=True, cpu_seconds=0.03)
    burn(0.01)
    trial.tick()  # 10 ms of 30: still within
    burn(0.03)
    with pytest.raises(WouldBlock, match="processor time"):
        trial.tick()


def test_waiting_is_not_processor_time() -> None:
    trial = Budget(10**9, inline=True, cpu_seconds=0.02)
    time.sleep(0.05)
    trial.tick()
    assert not trial.exceeded


@pytest.mark.skipif(sys.platform != "linux", reason="the server forks children on Linux only")
def test_a_forked_child_counts_from_its_own_reading() -> None:
    """A forked child's thread starts with no processor time: a budget made there must not
    count from the parent's reading (its limit would never be reached)."""
    burn(0.01)
    now = time.monotonic()
    parent = cpu_reading(now)
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        child = cpu_reading(now)
        fresh = child != parent and child[1] <= time.thread_time()
        os.write(writable, b"1" if fresh else b"0")
        os._exit(0)
    os.close(writable)
    answer = os.read(readable, 1)
    os.close(readable)
    os.waitpid(pid, 0)
    assert answer == b"1"
