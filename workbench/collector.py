"""Building large object graphs without the cyclic garbage collector rescanning them.

Python's cyclic collector runs a pass whenever enough container objects have been
allocated, and its full passes scan every tracked object in the process. Building the
index of a code system of 100,000 concepts allocates about half a million containers: the
collector would run hundreds of times during the build, rescanning the growing index (and
everything else loaded) each time, for nothing, since the index holds no reference cycles.
``paused()`` suspends the collector while such a structure is built.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Suspend the cyclic garbage collector for the block, then restore the state it was
    in (reference counting still frees what the block drops; a cycle made meanwhile is
    collected later). A block inside another, or in another thread at the same time, only
    turns the collector back on if it was on when that block began.

    >>> import gc
    >>> with paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
