"""Client caches: the ``tx-resource``s and inline resources a client sent, kept per cache id.

The HL7 validator starts a cache (``$cache-control?mode=start``), then sends each
CodeSystem or ValueSet it needs once, inline, with its cache id (the ``X-Cache-Id``
header, or the older ``cache-id`` parameter); later requests of that cache name them by
url (and version) alone. ``ClientCaches`` holds these caches: each one a set of resources
keyed by (url, version), isolated from the others and from requests without an id, and an
engine view over them (``Terminology.with_resources``), built once per content and reused,
so that a call naming a cached code system costs about what a call on stored content does.

Bounded (``CacheLimits``): a cache unused for ``idle_seconds`` is gone, at most ``caches``
of them and ``bytes`` of content (the resources' JSON, times ``MEMORY_FACTOR`` for what
their parsed form and index take) are held, the least recently used going first. Any use of
a cache (``get``, ``check``) keeps it alive.

A cache that is gone leaves a record of how it ended (``Ended``: closed, expired, cleared),
so that a request naming it is told why (``cache_ends.gone_error``, a message id for each);
``check`` answers what ``$cache-control?mode=check`` reports (``CacheState``).

With a ``backing`` (``SharedCaches``: the server's database, shared by its worker
processes and by the instances of a fleet), every cache is also kept there, so that a cache
started through one process works through every other: a process that does not know an id,
or whose copy has another stamp than the backing's, reads it from there. Ending a cache
removes it from the backing.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from workbench.errors import CacheIdUnknownError, InvalidRequestError
from workbench.terminology.cache_backing import ENDS_KEPT, Ended, SharedCaches
from workbench.terminology.cache_ends import gone_error

if TYPE_CHECKING:
    from workbench.terminology.engine import Terminology

#: What the engine holds of a resource, per byte of its JSON: the parsed dicts, the view's
#: copy and its index (measured by benchmarks/bench_client_caches.py: about 18 for a code
#: system of 1,000 concepts, with room for the allocator).
MEMORY_FACTOR = 20
#: The form of a cache id (a FHIR id, as the validator's UUIDs are).
CACHE_ID = re.compile(r"[A-Za-z0-9\-.]{1,64}")
#: How often a process marks a shared cache as used (seconds), and sweeps the backing.
TOUCH_EVERY = 10.0
Key = tuple[str, str | None]


@dataclass(frozen=True)
class CacheLimits:
    """How long an unused cache lives, how many are held and how much content."""

    idle_seconds: float = 14_400.0  # 4 hours: an IG build may leave its cache unused for long
    caches: int = 1000
    bytes: int = 512_000_000


@dataclass
class ClientCache:
    """One client's cache: resources by (url, version), and the engine view over them."""

    id: str
    resources: dict[Key, dict[str, Any]] = field(default_factory=dict)
    size: int = 0
    used: float = field(default_factory=time.monotonic)
    content: int = 0  # bumped on every change of the resources
    stamp: str = ""  # the backing's stamp when this copy was read or written
    touched: float = 0.0
    sealed: bool = False  # takes no resources after those sent with start
    view: tuple[tuple[int, int, int], Terminology] | None = None

    def names(self) -> list[str]:
        """``url|version`` of every resource held, sorted."""
        return sorted(url if v is None else f"{url}|{v}" for url, v in self.resources)


@dataclass(frozen=True)
class CacheState:
    """What ``$cache-control?mode=check`` reports of a cache: ``valid`` (held), with its
    ``sealed`` flag, ``names`` (``url|version`` of its resources), ``idle`` (seconds
    unused before this check) and the server's ``timeout``; or, not valid, ``gone`` (why,
    the error a request naming it gets)."""

    id: str
    valid: bool
    timeout: float
    sealed: bool = False
    names: tuple[str, ...] = ()
    idle: float = 0.0
    gone: CacheIdUnknownError | None = None


def check_id(cache_id: str) -> str:
    """The id itself, or InvalidRequestError when it is no cache id."""
    if not isinstance(cache_id, str) or not CACHE_ID.fullmatch(cache_id):
        raise InvalidRequestError(
            f"{str(cache_id)[:80]!r} is not a cache id (1 to 64 letters, digits, '-' or '.')"
        )
    return cache_id


def _key_text(key: Key) -> str:
    return key[0] if key[1] is None else f"{key[0]}|{key[1]}"


def cacheable(resources: Iterable[Any]) -> list[tuple[Key, dict[str, Any]]]:
    """The CodeSystems and ValueSets with a url among ``resources``, keyed (others are left
    to the engine, which refuses them with a clear error)."""
    out = []
    for r in resources:
        if (
            isinstance(r, Mapping)
            and r.get("resourceType") in ("CodeSystem", "ValueSet")
            and isinstance(r.get("url"), str)
            and r["url"]
        ):
            version = r.get("version")
            out.append(((r["url"], version if isinstance(version, str) else None), dict(r)))
    return out


class ClientCaches:
    """The client caches of one server process (thread-safe; see the module docstring)."""

    def __init__(
        self, limits: CacheLimits | None = None, backing: SharedCaches | None = None
    ) -> None:
        self.limits = limits or CacheLimits()
        self.backing = backing
        self._lock = threading.RLock()
        self._caches: OrderedDict[str, ClientCache] = OrderedDict()
        self._ends: OrderedDict[str, Ended] = OrderedDict()
        self._swept = 0.0

    def __len__(self) -> int:
        with self._lock:
            self._expire(time.monotonic())
            return len(self._caches)

    @property
    def held(self) -> int:
        """The bytes of content held (the estimate the ``bytes`` limit bounds)."""
        with self._lock:
            return sum(c.size for c in self._caches.values())

    # --- the $cache-control modes -------------------------------------------------------

    def start(
        self,
        cache_id: str | None = None,
        *,
        resources: Iterable[Any] = (),
        sealed: bool = False,
    ) -> ClientCache:
        """A new cache (with a fresh id unless ``cache_id`` is given) holding the
        CodeSystems and ValueSets of ``resources``; a ``sealed`` one takes no more."""
        cache = ClientCache(check_id(cache_id) if cache_id else uuid.uuid4().hex)
        with self._lock:
            self._ends.pop(cache.id, None)
            self._store(cache)
            if self.backing is not None:
                cache.touched = time.time()
                cache.stamp = self.backing.start(cache.id, sealed, cache.touched)
                self._sweep(force=False)
            self.keep(cache, resources)
            cache.sealed = sealed
        return cache

    def get(self, cache_id: str, *, create: bool = False) -> ClientCache:
        """The cache ``cache_id``, marked as used; CacheIdUnknownError, saying why, when
        there is none (unless ``create``: the older ``cache-id`` parameter makes it on first
        sight)."""
        return self._use(cache_id, create)[0]

    def check(self, cache_id: str) -> CacheState:
        """What ``$cache-control?mode=check`` reports of the cache (a check is a use: it
        keeps the cache alive); InvalidRequestError when ``cache_id`` is no cache id."""
        timeout = self.limits.idle_seconds
        try:
            cache, idle = self._use(cache_id, False)
        except CacheIdUnknownError as gone:
            return CacheState(cache_id, False, timeout, gone=gone)
        return CacheState(cache_id, True, timeout, cache.sealed, tuple(cache.names()), idle)

    def end(self, cache_id: str) -> None:
        """Drop the cache, recorded as closed (CacheIdUnknownError when there is none)."""
        self.get(cache_id)
        with self._lock:
            self._drop(cache_id, "closed")

    def _use(self, cache_id: str, create: bool) -> tuple[ClientCache, float]:
        """The cache, marked as used, and the seconds it was unused before."""
        check_id(cache_id)
        with self._lock:
            now = time.monotonic()
            self._expire(now)
            cache = self._caches.get(cache_id)
            if self.backing is not None:
                cache = self._shared(cache_id, cache)
            if cache is None:
                if create:
                    return self.start(cache_id), 0.0
                raise self._gone(cache_id)
            idle = max(0.0, now - cache.used)
            cache.used = now
            self._caches.move_to_end(cache_id)
            self._touch(cache)
            return cache, idle

    def _gone(self, cache_id: str) -> CacheIdUnknownError:
        """The error of a request naming a cache that is not held: why it is gone."""
        ended = self.backing.ended(cache_id) if self.backing is not None else None
        return gone_error(cache_id, ended or self._ends.get(cache_id), self.limits)

    # --- content -----------------------------------------------------------------------

    def keep(self, cache: ClientCache, resources: Iterable[Any]) -> None:
        """Add (or replace) the CodeSystems and ValueSets of ``resources`` in ``cache``."""
        found = cacheable(resources)
        if not found:
            return
        with self._lock:
            for key, resource in found:
                raw = orjson.dumps(resource)
                old = cache.resources.get(key)
                if old == resource:
                    continue
                if old is not None:
                    cache.size -= len(orjson.dumps(old)) * MEMORY_FACTOR
                cache.resources[key] = resource
                cache.size += len(raw) * MEMORY_FACTOR
                cache.content += 1
                if self.backing is not None:
                    before, after = self.backing.put(cache.id, _key_text(key), raw, time.time())
                    # another process put in between: this copy lacks it, read it again
                    cache.stamp = after if before == cache.stamp else ""
            if cache.id in self._caches:
                self._bound(keep=cache.id)

    def view(self, cache: ClientCache, base: Terminology) -> Terminology:
        """The engine over ``base`` that sees the cache's resources first, built once per
        content of the cache and of ``base``'s stored resources."""
        stamp = (id(base), base.registry.generation, cache.content)
        held = cache.view
        if held is not None and held[0] == stamp:
            return held[1]
        built = base.with_resources(list(cache.resources.values()))
        cache.view = (stamp, built)
        return built

    # --- bounds ------------------------------------------------------------------------

    def _store(self, cache: ClientCache) -> None:
        self._expire(time.monotonic())
        self._caches[cache.id] = cache
        self._caches.move_to_end(cache.id)
        self._bound(keep=cache.id)

    def _expire(self, now: float) -> None:
        idle = self.limits.idle_seconds
        while self._caches:
            oldest = next(iter(self._caches.values()))
            if now - oldest.used <= idle:
                break
            if self.backing is not None:  # unused here, maybe not elsewhere: see _shared
                self._caches.pop(oldest.id)
            else:
                self._drop(oldest.id, "expired", ("cache_idle_seconds", idle))

    def _bound(self, keep: str) -> None:
        """Drop the least recently used caches (never ``keep``) past the limits."""
        limits = self.limits
        by_bytes = ("cache_bytes", float(limits.bytes))
        total = sum(c.size for c in self._caches.values())
        for cache_id in list(self._caches):
            if len(self._caches) <= limits.caches and total <= limits.bytes:
                break
            if cache_id == keep:
                continue
            total -= self._caches[cache_id].size
            over = len(self._caches) > limits.caches
            self._drop(cache_id, "cleared", ("caches", limits.caches) if over else by_bytes)
        mine = self._caches.get(keep)
        if mine is not None and mine.size > limits.bytes:
            self._drop(keep, "cleared", by_bytes)
            raise InvalidRequestError(
                f"The resources sent to cache {keep!r} take more than the {limits.bytes:,} "
                "bytes the server holds for caches (limit cache_bytes)",
                code="too-costly",
            )

    def _drop(
        self,
        cache_id: str,
        reason: str,
        limit: tuple[str, float] = ("", 0.0),
        unused: float | None = None,
    ) -> None:
        """Drop a cache, recording how it ended: ``reason``, the ``limit`` it ended by (its
        name and value), and for how long it was ``unused`` (by default, here)."""
        cache = self._caches.pop(cache_id, None)
        now = time.time()
        if unused is None:
            unused = time.monotonic() - cache.used if cache is not None else 0.0
        ended = Ended(reason, now, now - unused, *limit)
        self._ends[cache_id] = ended
        self._ends.move_to_end(cache_id)
        while len(self._ends) > ENDS_KEPT:
            self._ends.popitem(last=False)
        if self.backing is not None:
            self.backing.drop(cache_id, ended)

    # --- the backing -----------------------------------------------------------------

    def _shared(self, cache_id: str, cache: ClientCache | None) -> ClientCache | None:
        """The cache as the backing has it: None when it is gone, this copy when it is
        current, else read again (another process added to it)."""
        assert self.backing is not None
        mark = self.backing.mark(cache_id)
        if mark is None:
            if cache is not None:
                self._caches.pop(cache_id, None)
            return None
        idle = self.limits.idle_seconds
        unused = time.time() - mark.used  # through every process
        if unused > idle and (cache is None or time.monotonic() - cache.used > TOUCH_EVERY):
            self._drop(cache_id, "expired", ("cache_idle_seconds", idle), unused)
            return None
        if cache is not None and cache.stamp == mark.stamp:
            cache.used = max(cache.used, time.monotonic() - unused)  # used elsewhere since
            return cache
        return self._read(cache_id)

    def _read(self, cache_id: str) -> ClientCache | None:
        assert self.backing is not None
        stored = self.backing.read(cache_id)
        if stored is None:
            self._caches.pop(cache_id, None)
            return None
        # touched when the backing says: a use now marks it there unless that was recent
        cache = ClientCache(cache_id, stamp=stored.mark.stamp, touched=stored.mark.used)
        cache.used = time.monotonic() - max(0.0, time.time() - stored.mark.used)
        cache.sealed = stored.sealed
        for raw in stored.resources:
            for key, kept in cacheable([orjson.loads(raw)]):
                cache.resources[key] = kept
                cache.size += len(raw) * MEMORY_FACTOR
        cache.content = len(cache.resources)
        self._caches[cache_id] = cache
        self._bound(keep=cache_id)
        return cache if cache_id in self._caches else None

    def _touch(self, cache: ClientCache) -> None:
        """Mark a shared cache as used in the backing, now and then."""
        if self.backing is None or time.time() - cache.touched < TOUCH_EVERY:
            return
        cache.touched = time.time()
        self.backing.touch(cache.id, cache.touched)
        self._sweep(force=False)

    def _sweep(self, *, force: bool) -> None:
        """Remove the shared caches unused for too long, and the least recently used past
        the ``caches`` limit (at most once every ``TOUCH_EVERY`` seconds unless forced)."""
        assert self.backing is not None
        now = time.time()
        if not force and now - self._swept < TOUCH_EVERY:
            return
        self._swept = now
        self.backing.sweep(self.limits.idle_seconds, self.limits.caches, now)
