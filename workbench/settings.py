"""A process-wide setting with a default, changed for the whole process or for a block
(the grammar limits, the unpack limits).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Size:
...     bytes: int = 10
>>> SIZE = Setting(Size())
>>> with SIZE.in_force(Size(99)):
...     SIZE.get().bytes
99
>>> SIZE.get().bytes
10
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class Setting(Generic[T]):
    """One value in force for the whole process; ``set`` and ``in_force`` refuse a value of
    another type than the default's."""

    def __init__(self, default: T) -> None:
        self._value = default
        self._type = type(default)
        self._lock = threading.Lock()

    def get(self) -> T:
        """The value in force."""
        return self._value

    def set(self, value: T) -> T:
        """Put ``value`` in force for the whole process; return the one it replaces."""
        if not isinstance(value, self._type):
            raise TypeError(f"configure wants a {self._type.__name__}, not {type(value).__name__}")
        with self._lock:
            previous, self._value = self._value, value
        return previous

    @contextmanager
    def in_force(self, value: T) -> Iterator[T]:
        """Run the block with ``value`` in force, then put the previous one back."""
        previous = self.set(value)
        try:
            yield value
        finally:
            self.set(previous)
