"""``X-Request-Id``: every response carries one, so that one request can be found in the
logs. A client's id is echoed when it is one (1 to 200 visible ASCII characters);
otherwise, a longer one or one with control characters or spaces included, a new one is
made (32 hex digits) and the client's is not echoed. The id is the request's in every log
line written while it is served (``RequestIdFilter`` adds ``request_id`` to the records).

>>> request_id({"headers": [(b"x-request-id", b"abc-1")]})
b'abc-1'
>>> len(request_id({"headers": [(b"x-request-id", b"a b")]}))
32
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from starlette.types import Message, Send

HEADER = b"x-request-id"
#: The longest client id echoed.
MAX_LENGTH = 200
_VALID = re.compile(rb"[\x21-\x7e]{1,%d}" % MAX_LENGTH)
#: The id of the request being served (``-`` outside one).
CURRENT: ContextVar[str] = ContextVar("request_id", default="-")


_COUNTER = itertools.count()
_PREFIX: list[bytes] = []  # 16 random hex digits, made in this process


def _forget_prefix() -> None:
    _PREFIX.clear()


# a forked worker makes its own (reading the process id at each request is a system call)
os.register_at_fork(after_in_child=_forget_prefix)


def new_id() -> bytes:
    """A new request id: 32 hex digits, 16 random per process (made again in a forked
    worker) then a counter: unique without the cost of a random UUID per request."""
    if not _PREFIX:
        _PREFIX.append(os.urandom(8).hex().encode("ascii"))
    return _PREFIX[0] + b"%016x" % next(_COUNTER)


def request_id(scope: Mapping[str, Any]) -> bytes:
    """The request's id: the client's ``X-Request-Id`` when it is a valid one, else new."""
    for name, value in scope.get("headers") or ():
        if name == HEADER:
            return value if _VALID.fullmatch(value) else new_id()
    return new_id()


def stamped(send: Send, rid: bytes) -> Send:
    """``send`` with the id added to the response's headers."""

    async def send_with_id(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers") or () if h[0].lower() != HEADER]
            message = {**message, "headers": [*headers, (HEADER, rid)]}
        await send(message)

    return send_with_id


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (the request being served, ``-`` outside one) to log records."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always keeps the record, with its request's id."""
        record.request_id = CURRENT.get()
        return True
