"""Read your writes from every process serving one database.

``server.py --workers N`` runs N processes over one data folder (and two servers may be given
the same ``--data``). Each holds the resources in its own memory, so a write one of them
acknowledges must reach the others before any of them answers again. ``WriteSync`` asks the
store before every request whether another process committed (``ResourceStore.behind``:
SQLite's ``PRAGMA data_version``, a microsecond or two) and, when one did, applies the
versions committed since (``ResourceStore.catch_up``) in a worker thread, before the request
goes on: the third rule of the request chain (``chain.RequestChain``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool

if TYPE_CHECKING:
    from workbench.server.store import ResourceStore


class WriteSync:
    """Bring this process up to date with the database before a request."""

    def __init__(self, store: ResourceStore) -> None:
        self.store = store

    async def sync(self) -> None:
        """Apply the writes of other processes that this one has not seen yet."""
        if self.store.behind():
            # reading and indexing a large resource takes a while: not on the event loop
            await run_in_threadpool(self.store.catch_up)
