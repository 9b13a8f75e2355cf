"""Reading ahead: a thread takes the next items of an iterator (Arrow batches, read and cast)
while the caller works on the one it has, holding at most ``depth`` of them.

Arrow's scanner decodes on its own threads, but only as fast as it is asked: asked from the
thread that also looks each batch up, it waited for each look-up (10,000,000 rows in
batches of 1,000,000: the loop took 0.80-2.7 s, with a thread asking ahead 0.61-2.2 s,
alternated runs on the shared 2-core machine).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

#: How long the taking thread waits for room before it checks whether the caller stopped.
POLL_SECONDS = 0.1


def ahead(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """``items`` in order, taken by a thread of their own at most ``depth`` ahead; what
    taking them raises is raised here, in order. Stopping early (``close``, an error in the
    caller) stops the thread at its next item.

    >>> list(ahead(iter(range(5))))
    [0, 1, 2, 3, 4]
    """
    held: queue.Queue[tuple[bool, object]] = queue.Queue(depth)
    stop = threading.Event()

    def put(entry: tuple[bool, object]) -> bool:
        while not stop.is_set():
            try:
                held.put(entry, timeout=POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def take() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
        except BaseException as exc:  # handed to the caller, who raises it
            put((False, exc))
            return
        put((False, None))

    threading.Thread(target=take, name="workbench-read-ahead", daemon=True).start()
    try:
        while True:
            more, value = held.get()
            if more:
                yield value  # type: ignore[misc]
            elif isinstance(value, BaseException):
                raise value
            else:
                return
    finally:
        stop.set()
