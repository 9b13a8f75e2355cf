"""What a request naming a client cache that is gone is told: why it is gone, in words with
the times that make it checkable, and by a message id of its own.

A cache id the server does not hold is always 404 ``not-found`` with the tx-issue-type
``cache-id-unknown`` (what clients such as the HL7 validator act on: start a new cache);
the message id and the text say which of four things happened:

==========  ========================  ===================================================
reason      message id                what happened
==========  ========================  ===================================================
closed      ``WB-CACHE-404-CLOSED``   its client ended it (``$cache-control?mode=end``)
expired     ``WB-CACHE-404-EXPIRED``  unused for longer than the idle timeout
cleared     ``WB-CACHE-404-CLEARED``  dropped to keep within the server's limits
(none)      ``WB-CACHE-404``          never known here (or ended before the last
                                      ``ENDS_KEPT`` ends the server remembers)
==========  ========================  ===================================================

Also the durations of the idle-timeout option: ``parse_duration`` reads ``4h``, ``90m``,
``14400``; ``duration_text`` writes ``4 hours``, ``2 hours 5 minutes``.
"""

from __future__ import annotations

import math
import re
import time
from typing import Protocol

from workbench.errors import CacheIdUnknownError
from workbench.terminology.cache_backing import ENDS_KEPT, Ended

#: The message id of each way a cache ends (None: no record of the cache).
MESSAGE_IDS: dict[str | None, str] = {
    "closed": "WB-CACHE-404-CLOSED",
    "expired": "WB-CACHE-404-EXPIRED",
    "cleared": "WB-CACHE-404-CLEARED",
    None: "WB-CACHE-404",
}
#: Where the idle timeout is set (named in the messages and the capability statement).
IDLE_OPTION = "server option --cache-idle"
_START = "Start a new cache with $cache-control?mode=start"
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", re.IGNORECASE)


class Bounds(Protocol):
    """The limits of the client caches (``client_caches.CacheLimits``)."""

    @property
    def idle_seconds(self) -> float:
        """How long an unused cache lives."""

    @property
    def caches(self) -> int:
        """How many caches are held."""

    @property
    def bytes(self) -> int:
        """How much content they hold."""


def parse_duration(text: str | float) -> float:
    """Seconds of ``text``: a number of seconds, or a text ending in ``s``, ``m``, ``h`` or
    ``d`` (``4h``, ``90m``, ``1.5d``); ValueError unless it is positive."""
    found = _DURATION.fullmatch(str(text))
    seconds = float(found[1]) * _UNITS[found[2].lower()] if found else 0.0
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"{text!r} is not a duration (e.g. 14400, 90m, 4h, 1d)")
    return seconds


def duration_text(seconds: float) -> str:
    """A duration for a person: ``45 seconds``, ``31 minutes``, ``2 hours 5 minutes``."""

    def unit(n: int, name: str) -> str:
        return f"{n} {name}{'' if n == 1 else 's'}"

    whole = max(0, round(seconds))
    if whole < 90:
        return unit(whole, "second")
    minutes = round(whole / 60)
    if minutes < 90:
        return unit(minutes, "minute")
    hours, rest = divmod(minutes, 60)
    if hours >= 48 and rest == 0 and hours % 24 == 0:
        return unit(hours // 24, "day")
    return unit(hours, "hour") + (f" {unit(rest, 'minute')}" if rest else "")


def gone_error(
    cache_id: str, ended: Ended | None, limits: Bounds, now: float | None = None
) -> CacheIdUnknownError:
    """The error of a request naming ``cache_id``, which the server does not hold:
    ``ended`` how it ended (None: no record of it), ``limits`` the server's bounds."""
    now = time.time() if now is None else now
    if ended is None:
        text = (
            f"Cache {cache_id!r} is not known to this server: it was never started here (a "
            "cache id works only on the server that started it, or the servers sharing its "
            "database; a server without a data folder forgets its caches when it restarts), "
            f"or it ended before the last {ENDS_KEPT:,} caches that ended. {_START}"
        )
        return CacheIdUnknownError(text, msg_id=MESSAGE_IDS[None])
    ago = duration_text(now - ended.at)
    used = duration_text(now - ended.used)
    if ended.reason == "closed":
        text = (
            f"Cache {cache_id!r} was closed by its client ($cache-control?mode=end) {ago} "
            f"ago. {_START}"
        )
    elif ended.reason == "expired":
        timeout = ended.limit or limits.idle_seconds
        text = (
            f"Cache {cache_id!r} expired {ago} ago: it was last used {used} ago, and this "
            f"server drops a cache unused for {duration_text(timeout)} (its idle timeout, "
            f"{IDLE_OPTION}). Any request naming a cache, $cache-control?mode=check "
            f"included, keeps it alive. {_START}"
        )
    else:
        text = (
            f"Cache {cache_id!r} was cleared {ago} ago to keep within this server's "
            f"limits ({_limit(ended, limits)}); it was last used {used} ago. {_START}"
        )
    return CacheIdUnknownError(text, msg_id=MESSAGE_IDS.get(ended.reason, MESSAGE_IDS[None]))


def _limit(ended: Ended, limits: Bounds) -> str:
    """The limit a cache was cleared for, in words."""
    if ended.limit_name == "cache_bytes":
        held = int(ended.limit or limits.bytes)
        return (
            f"the caches' content takes at most {held:,} bytes, limit cache_bytes: the least "
            "recently used caches go first, and a cache whose own content takes more is refused"
        )
    held = int(ended.limit or limits.caches)
    return (
        f"at most {held:,} caches are held at once, limit caches: the least recently used go first"
    )
