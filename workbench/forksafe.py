"""Locks that a forked child process can still take.

The server may run a long operation in a child forked from its own process (see
``workbench.server.forked``). Only the forking thread lives on in the child; a lock another
thread held at that moment would stay held there forever. The engine's locks guard caches
(a dict entry written under the lock), so the child gets them back fresh, unlocked: the data
they guard is whole, because the fork happened between two Python steps.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

_LOCKS: weakref.WeakSet[Any] = weakref.WeakSet()


def lock() -> threading.Lock:
    """A ``threading.Lock`` that is released again in a forked child."""
    made = threading.Lock()
    _LOCKS.add(made)
    return made


def rlock() -> threading.RLock:
    """A ``threading.RLock`` that is released again in a forked child."""
    made = threading.RLock()
    _LOCKS.add(made)
    return made


def _after_fork_in_child() -> None:
    for made in list(_LOCKS):
        made._at_fork_reinit()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
