"""What an app holds open, closed with it.

An app over a database holds connections (the versions' work connection, the client caches'
and the closure tables' sessions) and, over PostgreSQL, the thread that listens for other
instances' writes with a connection of its own. ``Closing.lifespan`` closes them when the
app shuts down (uvicorn's lifespan; ``ServerHandle.stop`` for a server in a thread), in a
worker thread, since a write in flight finishes first. Each part opens again on its next
use, so an app can be started again after a shutdown.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool

log = logging.getLogger("workbench.server")


class Closable(Protocol):
    """Anything with a ``close()``."""

    def close(self) -> None: ...


class Closing:
    """The parts of an app to close when it shuts down, in order."""

    def __init__(self, *parts: Closable | None) -> None:
        self.parts = [part for part in parts if part is not None]

    def close(self) -> None:
        """Close every part; one that fails is logged and the others are closed still."""
        for part in self.parts:
            try:
                part.close()
            except Exception:  # (closing must go on: each part holds its own connection)
                log.exception("Closing %s failed", type(part).__name__)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """The app's lifespan: nothing to open at startup, everything closed at shutdown."""
        try:
            yield
        finally:
            await run_in_threadpool(self.close)
