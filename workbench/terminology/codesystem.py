"""An index over one CodeSystem: concepts by code, the is-a hierarchy, properties.

The hierarchy comes from nested ``concept`` arrays and from the ``parent``, ``child`` and
``subsumedBy`` properties (matched by code or by their concept-properties URI). A concept is
*abstract* when its ``notSelectable`` (or ``abstract``) property is true, and *inactive* when its
``inactive`` property is true or its ``status`` is ``retired`` or ``inactive``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from workbench import collector, forksafe
from workbench.errors import InvalidResourceError
from workbench.resources import Resource, canonical_of
from workbench.terminology.concepts import (
    CONCEPT_PROPERTIES,
    STANDARDS_STATUS,
    Concept,
    as_string,
    property_value,
    typed_property_value,
)
from workbench.terminology.provider import CodeSystemProvider

__all__ = [
    "CONCEPT_PROPERTIES",
    "CodeSystemIndex",
    "Concept",
    "as_string",
    "property_value",
    "typed_property_value",
]

_HIERARCHY_PROPS = {"parent", "child", "subsumedBy"}
_INACTIVE_STATUSES = {"retired", "inactive"}


class CodeSystemIndex(CodeSystemProvider):
    """Concepts of one CodeSystem by code, with memoised ancestors and descendants.

    >>> cs = CodeSystemIndex({"resourceType": "CodeSystem", "url": "http://x", "content":
    ...     "complete", "concept": [{"code": "a", "concept": [{"code": "b"}]}]})
    >>> sorted(cs.descendants("a")), sorted(cs.ancestors("b"))
    (['b'], ['a'])
    """

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self.url: str = str(resource.get("url", ""))
        self.version: str | None = resource.get("version")
        self.content: str = str(resource.get("content", "complete"))
        self.case_sensitive: bool = bool(resource.get("caseSensitive", True))
        self.hierarchy_meaning: str = str(resource.get("hierarchyMeaning", "is-a"))
        self.property_types: dict[str, str] = {}
        self._role: dict[str, str] = {}
        for prop in resource.get("property", ()) or ():
            code = str(prop.get("code", ""))
            self.property_types[code] = str(prop.get("type", "string"))
            uri = str(prop.get("uri", ""))
            role = uri[len(CONCEPT_PROPERTIES) :] if uri.startswith(CONCEPT_PROPERTIES) else code
            self._role[code] = role
        self.concepts: dict[str, Concept] = {}
        # code -> (supplement canonical, designation) for what supplements added
        self._from_supplements: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self._folded: dict[str, str] | None = None
        self._ancestors: dict[str, frozenset[str]] = {}
        self._descendants: dict[str, frozenset[str]] = {}
        self._lock = forksafe.lock()
        with collector.paused():  # a container or more per concept, and no cycles
            self._build(resource.get("concept", ()) or ())

    # --- building ---------------------------------------------------------------------

    def _build(self, top: Sequence[dict[str, Any]]) -> None:
        stack: list[tuple[dict[str, Any], str | None]] = [(c, None) for c in reversed(top)]
        links: list[tuple[str, str]] = []
        while stack:
            raw, parent = stack.pop()
            code = str(raw.get("code", ""))
            concept = self.concepts.get(code)
            if concept is None:
                concept = Concept(
                    code=code,
                    display=raw.get("display"),
                    definition=raw.get("definition"),
                    order=len(self.concepts),
                    designations=list(raw.get("designation", ()) or ()),
                )
                self.concepts[code] = concept
                self._read_properties(concept, raw.get("property", ()) or (), links)
                if concept.status is None and _deprecated(raw):
                    concept.status = "deprecated"
            if parent is not None:
                links.append((parent, code))
            stack.extend((child, code) for child in reversed(raw.get("concept", ()) or ()))
        for parent, child in links:
            self._link(parent, child)

    def _read_properties(
        self, concept: Concept, props: Iterable[dict[str, Any]], links: list[tuple[str, str]]
    ) -> None:
        for prop in props:
            name = str(prop.get("code", ""))
            key, value = typed_property_value(prop)
            concept.properties.setdefault(name, []).append(value)
            concept.value_keys.setdefault(name, key)
            role = self._role.get(name, name)
            if role in ("parent", "subsumedBy"):
                links.append((as_string(value), concept.code))
            elif role == "child":
                links.append((concept.code, as_string(value)))
            elif role in ("notSelectable", "abstract"):
                concept.abstract = concept.abstract or _truthy(value)
            elif role == "inactive":
                concept.inactive = concept.inactive or _truthy(value)
            elif role == "status":
                concept.status = as_string(value)
                if concept.status in _INACTIVE_STATUSES:
                    concept.inactive = True

    def _link(self, parent: str, child: str) -> None:
        p, c = self.concepts.get(parent), self.concepts.get(child)
        if p is None or c is None or parent == child:
            return
        if child not in p.children:
            p.children.append(child)
        if parent not in c.parents:
            c.parents.append(parent)

    def add_supplement(self, supplement: Resource) -> None:
        """Add a supplement's designations and properties to the concepts it names (codes
        this code system does not have are ignored)."""
        for prop in supplement.get("property", ()) or ():
            code = str(prop.get("code", ""))
            self.property_types.setdefault(code, str(prop.get("type", "string")))
            self._role.setdefault(code, code)
        canonical = canonical_of(supplement)
        stack = list(supplement.get("concept", ()) or ())
        while stack:
            raw = stack.pop()
            stack.extend(raw.get("concept", ()) or ())
            concept = self.concepts.get(str(raw.get("code", "")))
            if concept is None:
                continue
            added = list(raw.get("designation", ()) or ())
            concept.designations.extend(added)
            self._from_supplements.setdefault(concept.code, []).extend(
                (canonical, d) for d in added
            )
            for prop in raw.get("property", ()) or ():
                name = str(prop.get("code", ""))
                key, value = typed_property_value(prop)
                concept.properties.setdefault(name, []).append(value)
                concept.value_keys.setdefault(name, key)

    # --- pickling (Dask ships indexes to its workers) ------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        header = {k: v for k, v in self.resource.items() if k != "concept"}
        state.update(resource=header, _lock=None, _ancestors={}, _descendants={}, _folded=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = forksafe.lock()

    # --- queries ----------------------------------------------------------------------

    def supplement_designations(self, code: str) -> Sequence[tuple[str, Mapping[str, Any]]]:
        """The designations supplements added to a concept, with each supplement's
        canonical."""
        return self._from_supplements.get(code, ())

    def role_of(self, property_code: str) -> str:
        """Return the concept-properties role of a property code (``parent``, ``status``…)."""
        return self._role.get(property_code, property_code)

    def has_property(self, name: str) -> bool:
        """True when the code system declares ``name`` or a property with that role."""
        return name in self.property_types or name in self._role.values()

    def property_codes_for(self, role: str) -> list[str]:
        """Return the property codes that play ``role`` (itself, or via its URI)."""
        codes = [code for code, r in self._role.items() if r == role]
        return codes or [role]

    def get(self, code: str) -> Concept | None:
        """Return the concept for ``code`` (case-insensitively when the system says so)."""
        concept = self.concepts.get(code)
        if concept is None and not self.case_sensitive:
            if self._folded is None:
                self._folded = {c.casefold(): c for c in self.concepts}
            real = self._folded.get(code.casefold())
            concept = self.concepts.get(real) if real is not None else None
        return concept

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.get(code) is not None

    def __iter__(self) -> Iterator[Concept]:
        return iter(self.concepts.values())

    def __len__(self) -> int:
        return len(self.concepts)

    def ancestors(self, code: str) -> frozenset[str]:
        """Return every ancestor of ``code`` (not the code itself); memoised."""
        found = self._ancestors.get(code)
        if found is None:
            found = self._closure(code, _parents_of)
            with self._lock:
                self._ancestors[code] = found
        return found

    def descendants(self, code: str) -> frozenset[str]:
        """Return every descendant of ``code`` (not the code itself); memoised."""
        found = self._descendants.get(code)
        if found is None:
            found = self._closure(code, _children_of)
            with self._lock:
                self._descendants[code] = found
        return found

    def _closure(self, code: str, step: Callable[[Concept], list[str]]) -> frozenset[str]:
        """Every code reached from ``code`` by ``step`` (its parents, or its children)."""
        start = self.concepts.get(code)
        if start is None:
            return frozenset()
        seen: set[str] = set()
        todo = list(step(start))
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            concept = self.concepts.get(current)
            if concept is not None:
                todo.extend(step(concept))
        seen.discard(code)
        return frozenset(seen)

    def subsumes(self, code_a: str, code_b: str) -> str:
        """Return the $subsumes outcome of A against B.

        Raises InvalidResourceError when A and B sit on a cycle of the hierarchy (each
        would subsume the other), which a well-formed code system never has.
        """
        if code_a == code_b:
            return "equivalent"
        a_above = code_a in self.ancestors(code_b)
        b_above = code_b in self.ancestors(code_a)
        if a_above and b_above:
            raise InvalidResourceError(
                f"CodeSystem {self.url}: the hierarchy has a cycle through {code_a!r} and "
                f"{code_b!r}, so neither subsumes the other"
            )
        if a_above:
            return "subsumes"
        if b_above:
            return "subsumed-by"
        return "not-subsumed"

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """Return the concepts for ``codes`` in the code system's own order."""
        found = [self.concepts[c] for c in codes if c in self.concepts]
        found.sort(key=lambda c: c.order)
        return found


def _parents_of(concept: Concept) -> list[str]:
    """The step up the hierarchy."""
    return concept.parents


def _children_of(concept: Concept) -> list[str]:
    """The step down the hierarchy."""
    return concept.children


def _deprecated(raw: Mapping[str, Any]) -> bool:
    """A concept marked deprecated by the standards-status extension (valid, to review)."""
    return any(
        isinstance(e, Mapping)
        and e.get("url") == STANDARDS_STATUS
        and e.get("valueCode") == "deprecated"
        for e in raw.get("extension", ()) or ()
    )


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")
