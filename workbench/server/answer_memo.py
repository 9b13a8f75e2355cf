"""Answers remembered: the body of an operation's answer to a GET, given again to the same
request while the content it was drawn from is unchanged.

A terminology client asks the same questions again and again: a pipeline that checks a
column row by row through ``$validate-code``, a FHIR server validating every resource it
stores, several IG builds against one server. The answer to a GET of a read-only operation
(``Operation.memo``: ``$validate-code``, ``$lookup``, ``$subsumes``, ``$translate``) depends
on the request and on the loaded content alone, so the server keeps the bodies of recent
answers and gives a body again, byte for byte, to a request that is the same:

* the same operation at the same type-level path, by GET (or HEAD);
* the same query string, byte for byte (``_pretty`` and ``_format`` included);
* the same ``Accept-Language``, ``X-TOO-COSTLY-THRESHOLD`` and ``Prefer`` headers;
* the same content: the engine's ``revision`` (the registry's generation, bumped by every
  write, this process's or another's once the request chain has read it, and the releases
  loaded) is what it was when the answer was made.

Never remembered: an answer in a client cache (``X-Cache-Id`` or ``cache-id``), one with
``diagnostics`` (it says how long it took), errors, POSTs (their bodies may carry
``tx-resource``), instance-level calls, and bodies over ``MAX_BODY``. The answer itself is
always the one answer path's (``routes.OperationRoutes``): the memo only replays it. It holds
at most ``Limits.memo_bytes`` of bodies and keys (the oldest go first); ``memo_bytes=0``
(``server.py --limit memo_bytes=0``) turns it off.

Every call is made on the event loop (the lookup before an answer is made, the store after),
so the memo needs no lock.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from workbench.operations.caching import CACHE_ID

#: The largest body remembered (an answer to one code is a few hundred bytes).
MAX_BODY = 64 * 1024
#: What a remembered entry costs beside its body and query (the key's tuple, the dict slot).
ENTRY_OVERHEAD = 200
#: Inputs whose answers are never remembered: a client cache's, and diagnostics (timings).
NOT_REMEMBERED = frozenset({CACHE_ID, "diagnostics"})

Key = tuple[Hashable, ...]


class AnswerMemo:
    """The bodies of recent answers (see the module docstring), ``capacity`` bytes at most.

    >>> memo = AnswerMemo(10_000)
    >>> memo.get(("v", b"code=a"), 1) is None
    True
    >>> memo.put(("v", b"code=a"), b"{}", 1, {"code": "a"})
    >>> memo.get(("v", b"code=a"), 1), memo.get(("v", b"code=a"), 2)
    (b'{}', None)
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.held = 0  # bytes of bodies and keys
        self.revision: Hashable = None
        self._bodies: dict[Key, bytes] = {}

    def get(self, key: Key, revision: Hashable) -> bytes | None:
        """The body remembered for ``key`` under the content's current ``revision``, else
        None (a new revision forgets every body made under another)."""
        if revision != self.revision:
            self._bodies.clear()
            self.held = 0
            self.revision = revision
            return None
        return self._bodies.get(key)

    def put(self, key: Key, body: bytes, revision: Hashable, inputs: Mapping[str, Any]) -> None:
        """Remember ``body``, the answer to ``key`` made from the content of ``revision``
        (read before the answer was made: when a write came meanwhile, it is dropped),
        unless its ``inputs`` name a client cache or ask for diagnostics."""
        if revision != self.revision or len(body) > MAX_BODY or key in self._bodies:
            return
        if not NOT_REMEMBERED.isdisjoint(inputs):
            return
        cost = _cost(key, body)
        bodies = self._bodies
        while bodies and self.held + cost > self.capacity:
            oldest = next(iter(bodies))
            self.held -= _cost(oldest, bodies.pop(oldest))
        if cost <= self.capacity:
            bodies[key] = body
            self.held += cost

    def __len__(self) -> int:
        return len(self._bodies)


def _cost(key: Key, body: bytes) -> int:
    """The bytes an entry holds: its body, the byte strings of its key, the overhead."""
    return len(body) + sum(len(k) for k in key if isinstance(k, (bytes, str))) + ENTRY_OVERHEAD
