"""``$closure``: closure tables kept by name, and what a call adds to one.

A closure table (R4 terminology service, "Maintaining a Closure Table") is a set of
concepts a client has sent under a name, and every subsumption between two of them (of one
code system) that the server has told the client about. The client initialises a name (a
call without concepts), then sends concepts; each call answers the relationships that are
new, and the table's version after it. ``version`` replays every relationship added after
that version (a client that lost an answer resynchronises).

The tables live where the server keeps its state (``ClosureTables``: the contract; the
server implements it over its database, ``server/database/closures.py``; ``MemoryClosures``
here serves a process without a database). Every change is one transaction in which the
store hands the table's members to the ``Planner`` the engine made and writes what it
returns, so that two processes of a fleet adding to one table never miss a pair.

An entry is read as R4's ConceptMap reads it: ``source`` is the narrower concept, ``target``
the broader, and the equivalence ``subsumes`` (the target subsumes the source).
"""

from __future__ import annotations

import abc
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from workbench.errors import (
    InvalidRequestError,
    NotSupportedError,
    UnknownCodeError,
    WorkbenchError,
)
from workbench.terminology.provider import CodeSystemProvider, HierarchyMembers

#: The R4 ConceptMap equivalence of every entry: the target subsumes the source.
SUBSUMES = "subsumes"
#: How long a closure name may be (a name is an identifier the client chooses).
NAME_LIMIT = 256


class Entry(NamedTuple):
    """One relationship of a closure table: ``source`` (narrower) is subsumed by
    ``target`` (broader), both codes of ``system``."""

    system: str
    source: str
    target: str


class Members:
    """The members of a closure table (the codes of each code system), and, once a planner
    has asked, each code system's ``HierarchyMembers`` (``related``: the provider's index
    of them, built from the members, then kept up as members are added), so that a new
    concept's ancestors and descendants among the members are a look-up, not a walk of
    the hierarchy. A store keeps it between calls while the table is unchanged by others."""

    def __init__(self, rows: Iterable[tuple[str, str]] = ()) -> None:
        self.codes: dict[str, set[str]] = {}
        self._related: dict[str, HierarchyMembers] = {}
        for system, code in rows:
            self.codes.setdefault(system, set()).add(code)

    def __len__(self) -> int:
        return sum(len(codes) for codes in self.codes.values())

    def add(self, cs: CodeSystemProvider, code: str) -> tuple[list[str], list[str]]:
        """Add a member of ``cs``'s system (not one yet): its ancestors and its descendants
        among the members before it."""
        index = self._related.get(cs.url)
        if index is None:
            index = cs.hierarchy_members(self.codes.get(cs.url, ()))
            self._related[cs.url] = index
        self.codes.setdefault(cs.url, set()).add(code)
        return index.add(code)


@dataclass(frozen=True)
class Added:
    """What one call adds to a table: the new concepts ``(system, code)`` and the new
    relationships between them and the table's members (and among themselves)."""

    concepts: list[tuple[str, str]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)


#: Given the table's members, what a call adds (run inside the store's transaction).
Planner = Callable[[Members], Added]


class ClosureNotFoundError(WorkbenchError):
    """A closure name that was never initialised (or whose table is gone)."""

    code = "not-found"
    status = 404
    msg_id = "WB-CLOSURE-404"


class ClosureVersionError(InvalidRequestError):
    """A ``version`` to replay from that is not one the table has had."""

    msg_id = "WB-CLOSURE-VERSION"


class ClosureTables(abc.ABC):
    """The closure tables of a server (the whole contract of a store).

    Every method is one transaction; a store that fails raises ``StorageError``.
    """

    #: Whether the tables live in a database (then a call never runs on the event loop).
    in_database = False

    @abc.abstractmethod
    def initialise(self, name: str, now: float) -> int:
        """Make the table ``name`` empty (dropping one of that name); its version (0)."""

    @abc.abstractmethod
    def add(self, name: str, planner: Planner, now: float) -> tuple[int, list[Entry]] | None:
        """Run ``planner`` on the table's members and record what it adds, at the next
        version when it adds concepts; the table's version after and the new entries.
        None when the table does not exist."""

    @abc.abstractmethod
    def since(self, name: str, version: int, now: float) -> tuple[int, list[Entry]] | None:
        """The table's version and every entry added after ``version`` (none when
        ``version`` is not before it); None when the table does not exist."""

    def close(self) -> None:  # noqa: B027 (nothing to release, unless a database holds them)
        """Release the connections (a later call opens them again); none in memory."""


@dataclass
class _Table:
    version: int = 0
    members: Members = field(default_factory=Members)
    entries: list[tuple[int, Entry]] = field(default_factory=list)


class MemoryClosures(ClosureTables):
    """The closure tables of one process, in memory (a server without a database)."""

    def __init__(self) -> None:
        self._tables: dict[str, _Table] = {}
        self._lock = threading.Lock()

    def initialise(self, name: str, now: float) -> int:
        """Make the table empty."""
        with self._lock:
            self._tables[name] = _Table()
        return 0

    def add(self, name: str, planner: Planner, now: float) -> tuple[int, list[Entry]] | None:
        """Plan and record, under the lock."""
        with self._lock:
            table = self._tables.get(name)
            if table is None:
                return None
            added = planner(table.members)
            if added.concepts:
                table.version += 1
                table.entries += [(table.version, e) for e in added.entries]
            return table.version, list(added.entries)

    def since(self, name: str, version: int, now: float) -> tuple[int, list[Entry]] | None:
        """The entries after ``version``."""
        with self._lock:
            table = self._tables.get(name)
            if table is None:
                return None
            return table.version, [e for v, e in table.entries if v > version]


def check_name(name: Any) -> str:
    """The closure name of the inputs, or InvalidRequestError."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidRequestError("$closure needs a 'name': the closure table it works on")
    if len(name) > NAME_LIMIT or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidRequestError(
            f"The closure name must be at most {NAME_LIMIT} characters, without control characters"
        )
    return name


def check_version(raw: Any, name: str, current: int | None = None) -> int:
    """The ``version`` to replay from, as the table's versions count (0, 1, 2…); a version
    after ``current`` (the table's) is ClosureVersionError."""
    text = str(raw).strip()
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise ClosureVersionError(
            f"The closure version {text[:40]!r} is not a version of closure '{name}' "
            "(they are whole numbers: 0 at its initialisation, then one more per change)"
        )
    version = int(text)
    if current is not None and version > current:
        raise ClosureVersionError(
            f"The closure '{name}' is at version {current}: there is no version {version} to "
            "replay from (a version in the future)"
        )
    return version


def unknown_closure(name: str) -> ClosureNotFoundError:
    """The error of a closure name never initialised."""
    return ClosureNotFoundError(
        f"The closure '{name}' is not known: initialise it first with a $closure call that "
        "names it and sends no concept"
    )


def resolve(
    codings: Iterable[Mapping[str, Any]], find: Callable[[str, str | None], CodeSystemProvider]
) -> list[tuple[CodeSystemProvider, str]]:
    """The provider and the code system's own spelling of each coding; an error for a
    coding without system or code, a system not loaded (``find`` raises), a system without
    a hierarchy, an unknown code: the first coding's in the order sent. The codes of each
    code system are checked at once (``known_codes``)."""
    found: list[tuple[CodeSystemProvider, str, str]] = []
    failed: Exception | None = None
    for coding in codings:
        try:
            found.append(_provider_of(coding, find))
        except Exception as error:  # (raised once the codings before it are checked)
            failed = error
            break
    providers = {id(cs): cs for cs, _, _ in found}
    known = {
        key: iter(cs.known_codes([code for other, code, _ in found if other is cs]))
        for key, cs in providers.items()
    }
    out = []
    for cs, code, system in found:
        spelt = next(known[id(cs)])
        if spelt is None:
            raise UnknownCodeError(f"Unknown code '{code}' in the CodeSystem '{system}'")
        out.append((cs, spelt))
    if failed is not None:
        raise failed
    return out


def _provider_of(
    coding: Mapping[str, Any], find: Callable[[str, str | None], CodeSystemProvider]
) -> tuple[CodeSystemProvider, str, str]:
    """The provider of a coding, its code and its system as sent (errors as ``resolve``)."""
    system, code = coding.get("system"), coding.get("code")
    if not isinstance(system, str) or not system or not isinstance(code, str) or not code:
        raise InvalidRequestError("Each $closure 'concept' needs a system and a code")
    version = coding.get("version")
    cs = find(system, version if isinstance(version, str) else None)
    if not cs.hierarchical:
        raise NotSupportedError(
            f"The code system {system} has no hierarchy (no subsumption), so its "
            f"concepts cannot be in a closure table (concept '{code}')",
            msg_id="WB-CLOSURE-HIERARCHY",
        )
    return cs, code, system


def planner(concepts: list[tuple[CodeSystemProvider, str]]) -> Planner:
    """What adding ``concepts`` does to a table: each concept not yet a member, with its
    ancestors and descendants among the members (and those added before it). The planner
    adds them to ``members`` as it goes (a store drops its copy when the call fails)."""

    def plan(members: Members) -> Added:
        added = Added()
        for cs, code in concepts:
            system = cs.url
            if code in members.codes.get(system, ()):
                continue
            ups, downs = members.add(cs, code)
            added.entries.extend(Entry(system, code, up) for up in ups)
            added.entries.extend(Entry(system, down, code) for down in downs)
            added.concepts.append((system, code))
        return added

    return plan


def conceptmap(name: str, version: int, entries: Iterable[Entry], now: str) -> dict[str, Any]:
    """The ConceptMap of a ``$closure`` answer: ``entries`` grouped by system and source."""
    groups: dict[str, dict[str, list[str]]] = {}
    for e in entries:
        groups.setdefault(e.system, {}).setdefault(e.source, []).append(e.target)
    found: dict[str, Any] = {
        "resourceType": "ConceptMap",
        "id": str(uuid.uuid4()),
        "version": str(version),
        "name": f"Updates for Closure Table {name}",
        "status": "active",
        "experimental": True,
        "date": now,
    }
    if groups:  # (FHIR has no empty arrays)
        found["group"] = [
            {
                "source": system,
                "target": system,
                "element": [
                    {"code": source, "target": [{"code": t, "equivalence": SUBSUMES} for t in ts]}
                    for source, ts in sources.items()
                ],
            }
            for system, sources in groups.items()
        ]
    return found
