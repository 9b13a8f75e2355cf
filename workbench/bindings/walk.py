"""Walking resources along their compiled bindings (``plan.Node``), collecting one row per
bound coded value: a ``code``, a Coding, each coding of a CodeableConcept, a Quantity's
code, and a row for a bound value of the wrong JSON type.

Only the keys under which something is bound are visited, except in a resource that has
extensions (its JSON text says so), which is walked whole so each extension is found and
read with its own definition, by ``url``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.bindings.plan import Node, Plans, Rule, Slice, Slot
from workbench.bindings.structures import BASE

_EXTENSIONS = ("extension", "modifierExtension")
#: A location as it is walked: the resource's own text, or (parent, label, index) with
#: index -1 for an element that does not repeat; made text only for a row (``location``).
Loc = Any
_JSON = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
         int: "a number", float: "a number", type(None): "null"}  # fmt: skip

#: The fields of a row, in order (see ``Walk.rows``).
FIELDS = (
    "resource_type", "id", "location", "element", "profile", "strength", "valueset",
    "max_valueset", "system", "code", "display", "version", "concept", "text", "problem",
)  # fmt: skip


@dataclass
class Walk:
    """What walking a batch of resources found: ``rows`` (tuples of ``FIELDS``; ``concept``
    groups the codings of one CodeableConcept; -1 for a plain code, -2 for a Coding or a
    Quantity of its own; ``text`` whether
    that concept has text; ``problem`` names a value of the wrong JSON type), the resource
    types without a definition and the declared profiles not loaded (counted)."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    unknown_types: Counter[str] = field(default_factory=Counter)
    missing_profiles: Counter[str] = field(default_factory=Counter)
    wrong_profiles: Counter[str] = field(default_factory=Counter)
    resources: int = 0
    concepts: int = 0


@dataclass
class _Resource:
    """The resource being walked: its type, id, the walk it adds to, what is seen."""

    type: str
    id: Any
    walk: Walk
    full: bool
    seen: set[tuple[Any, str | None, str]] = field(default_factory=set)


class Walker:
    """Walks resources with ``plans``; ``profiles`` is ``"declared"`` (each resource's
    ``meta.profile``), a list of profile urls applied to the resources of their type, or
    None (the base definitions only)."""

    def __init__(self, plans: Plans, profiles: str | Sequence[str] | None = "declared") -> None:
        self.plans = plans
        self.declared = profiles == "declared"
        self.given = () if profiles is None or isinstance(profiles, str) else tuple(profiles)
        self._generic = plans.root(BASE + "Extension")

    def resource(self, resource: dict[str, Any], walk: Walk, *, full: bool = True) -> None:
        """Add the rows of one resource (``full``: walk it whole, for its extensions)."""
        walk.resources += 1
        kind = resource.get("resourceType")
        rid = resource.get("id")
        here = _Resource(str(kind), rid if rid is None or isinstance(rid, str) else str(rid),
                         walk, full)  # fmt: skip
        self._walk(resource, here, str(kind))
        contained = resource.get("contained")
        if isinstance(contained, list):
            for i, inner in enumerate(contained):
                if isinstance(inner, dict):
                    self._walk(inner, here, f"{kind}.contained[{i}]")

    def _walk(self, resource: dict[str, Any], here: _Resource, loc: str) -> None:
        kind = resource.get("resourceType")
        base = self.plans.root(BASE + kind) if isinstance(kind, str) else None
        if base is None:
            here.walk.unknown_types[str(kind)] += 1
            return
        self._node(base, resource, loc, here)
        for url in self._profiles(resource):
            root = self.plans.root(url)
            sd = self.plans.structures.get(url)
            if root is None or sd is None:
                here.walk.missing_profiles[url] += 1
            elif sd.type != kind:
                here.walk.wrong_profiles[f"{url} (a {sd.type} profile on a {kind})"] += 1
            else:
                self._node(root, resource, loc, here)

    def _profiles(self, resource: dict[str, Any]) -> tuple[str, ...]:
        if not self.declared:
            kind = resource.get("resourceType")
            return tuple(
                u for u in self.given if (sd := self.plans.structures.get(u)) is None
                or sd.type == kind
            )  # fmt: skip
        meta = resource.get("meta")
        declared = meta.get("profile") if type(meta) is dict else None
        if type(declared) is not list:
            return ()
        return tuple(p for p in declared if isinstance(p, str))

    def _node(self, node: Node, value: dict[str, Any], loc: Loc, here: _Resource) -> None:
        """Visit the keys of ``value`` that ``node`` has slots for: every key when walking
        whole (extensions too), else the keys under which something is bound."""
        if here.full:
            for key, item in value.items():
                if key in _EXTENSIONS:
                    if type(item) is list:
                        self._extensions(item, (loc, key, -1), here)
                    continue
                slot = node.slots.get(key)
                if slot is not None:
                    self._item(slot, item, loc, here)
                elif key[:1] == "_":  # a primitive's own extensions (``_status``)
                    self._primitive(item, (loc, key[1:], -1), here)
            return
        for key, slot, label, into in node.live_slots:
            item = value.get(key)
            if item is None:
                continue
            if into is None:
                self._item(slot, item, loc, here)
            elif type(item) is list:  # only walked into: no call for what it is not
                for i, one in enumerate(item):
                    if type(one) is dict and into.live:
                        self._node(into, one, (loc, label, i), here)
            elif type(item) is dict and into.live:
                self._node(into, item, (loc, label, -1), here)

    def _item(self, slot: Slot, item: Any, loc: Loc, here: _Resource) -> None:
        if type(item) is list:
            for i, one in enumerate(item):
                self._value(slot, one, (loc, slot.label, i), here)
        else:
            self._value(slot, item, (loc, slot.label, -1), here)

    def _primitive(self, item: Any, loc: Loc, here: _Resource) -> None:
        """The extensions of a primitive (``"_status": {"extension": [...]}``, or one per
        item of a repeating primitive, ``null`` where an item has none)."""
        parent, label, _ = loc
        items = item if type(item) is list else [item]
        for i, one in enumerate(items):
            if type(one) is dict and type(one.get("extension")) is list:
                at = (parent, label, i) if type(item) is list else loc
                self._extensions(one["extension"], (at, "extension", -1), here)

    def _extensions(self, items: list[Any], loc: Loc, here: _Resource) -> None:
        parent, key, _ = loc
        for i, ext in enumerate(items):
            if type(ext) is not dict:
                continue
            url = ext.get("url")
            node = self.plans.root(url) if isinstance(url, str) else None
            node = node or self._generic
            if node is not None:
                self._node(node, ext, (parent, key, i), here)

    def _value(self, slot: Slot, value: Any, loc: Loc, here: _Resource) -> None:
        for rule in slot.rules:
            self._emit(rule, slot.type, value, loc, here)
        for sliced in slot.slices:
            if _passes(sliced, value):
                for rule in sliced.rules:
                    self._emit(rule, slot.type, value, loc, here)
                if sliced.node is not None and type(value) is dict:
                    self._node(sliced.node, value, loc, here)
        node = slot.node
        if node is not None and type(value) is dict and (node.live or here.full):
            self._node(node, value, loc, here)

    def _emit(self, rule: Rule, kind: str, value: Any, loc: Loc, here: _Resource) -> None:
        seen = here.seen
        before = len(seen)
        seen.add((loc, rule.valueset, rule.strength))  # (hashed once: added, or there)
        if len(seen) == before:
            return None
        if kind == "CodeableConcept":
            self._concept(rule, value, loc, here)
        elif kind in ("Coding", "Quantity"):
            if type(value) is not dict:
                return _wrong(rule, loc, value, f"a {kind} (a JSON object)", here)
            if kind == "Quantity" and value.get("code") is None and value.get("system") is None:
                return None
            display = value.get("display") if kind == "Coding" else None
            _row(rule, loc, value.get("system"), value.get("code"), display,
                 value.get("version"), -2, False, here)  # fmt: skip
        elif type(value) is str:
            _row(rule, loc, None, value, None, None, -1, False, here)
        else:
            _wrong(rule, loc, value, f"a {kind} (a JSON string)", here)
        return None

    def _concept(self, rule: Rule, value: Any, loc: Loc, here: _Resource) -> None:
        if type(value) is not dict:
            return _wrong(rule, loc, value, "a CodeableConcept (a JSON object)", here)
        codings = value.get("coding")
        text = isinstance(value.get("text"), str) and bool(value["text"].strip())
        if codings is not None and type(codings) is not list:
            return _wrong(rule, (loc, "coding", -1), codings, "an array of Codings", here)
        concept = here.walk.concepts
        here.walk.concepts += 1
        if not codings:
            if rule.strength == "required" or not text:
                _row(rule, loc, None, None, None, None, concept, text, here)
            return None
        for i, coding in enumerate(codings):
            where = (loc, "coding", i)
            if type(coding) is dict:
                _row(rule, where, coding.get("system"), coding.get("code"),
                     coding.get("display"), coding.get("version"), concept, text, here)  # fmt: skip
            else:
                _wrong(rule, where, coding, "a Coding (a JSON object)", here)
        return None


#: Location texts already made, by chain: resources of one shape repeat them (bounded).
_TEXTS: dict[Any, str] = {}
_MAX_TEXTS = 1 << 16


def location(loc: Loc) -> str:
    """The FHIRPath text of a location chain: ``Observation.component[0].code``."""
    found = _TEXTS.get(loc)
    if found is not None:
        return found
    chain, parts = loc, []
    while type(chain) is tuple:
        chain, label, index = chain
        parts.append(f".{label}[{index}]" if index >= 0 else f".{label}")
    parts.append(str(chain))
    found = "".join(reversed(parts))
    if len(_TEXTS) >= _MAX_TEXTS:
        _TEXTS.clear()
    _TEXTS[loc] = found
    return found


def _row(
    rule: Rule, loc: Loc, system: Any, code: Any, display: Any, version: Any, concept: int,
    text: bool, here: _Resource,
) -> None:  # fmt: skip
    for name, part in (("system", system), ("code", code), ("display", display),
                       ("version", version)):  # fmt: skip
        if part is not None and type(part) is not str:
            return _wrong(rule, (loc, name, -1), part, "a string", here)
    here.walk.rows.append((here.type, here.id, location(loc), rule.element, rule.profile,
                           rule.strength, rule.valueset, rule.max_valueset, system, code,
                           display, version, concept, text, None))  # fmt: skip
    return None


def _wrong(rule: Rule, loc: Loc, value: Any, expected: str, here: _Resource) -> None:
    found = _JSON.get(type(value), type(value).__name__)
    where = location(loc)
    problem = f"{where} holds {found} where {expected} belongs"
    here.walk.rows.append((here.type, here.id, where, rule.element, rule.profile,
                           rule.strength, rule.valueset, rule.max_valueset, None, None, None,
                           None, -1, False, problem))  # fmt: skip


def _passes(sliced: Slice, value: Any) -> bool:
    for path, fixed in sliced.tests:
        test = path[0] if path else ""
        if test == "@never":
            return False
        if test == "@profile":
            if not any(_claims(found) & set(fixed.value) for found in _at(value, path[1:])):
                return False
        elif test == "@type":
            found = _at(value, path[1:])
            if not any(type(f) is dict and f.get("resourceType") == fixed.value for f in found):
                return False
        elif not any(_matches(found, fixed.value, fixed.exact) for found in _at(value, path)):
            return False
    return True


def _claims(value: Any) -> set[str]:
    """The profiles a value claims: a resource's ``meta.profile``, an extension's url."""
    if type(value) is not dict:
        return set()
    meta = value.get("meta")
    claimed = set(meta.get("profile") or ()) if type(meta) is dict else set()
    if isinstance(value.get("url"), str):
        claimed.add(value["url"])
    return claimed


def _at(value: Any, path: tuple[str, ...]) -> list[Any]:
    found = [value]
    for part in path:
        step: list[Any] = []
        for item in found:
            inner = item.get(part) if isinstance(item, dict) else None
            if isinstance(inner, list):
                step.extend(inner)
            elif inner is not None:
                step.append(inner)
        found = step
    return found


def _matches(value: Any, wanted: Any, exact: bool) -> bool:
    """Whether ``value`` is ``wanted`` (``exact``: equal; else a pattern: every element of
    ``wanted`` is in ``value``, every item of a wanted array matched by one of the value)."""
    if exact:
        return bool(value == wanted)
    if isinstance(wanted, dict):
        return isinstance(value, dict) and all(
            k in value and _matches(value[k], v, False) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        items = value if isinstance(value, list) else [value]
        return all(any(_matches(i, w, False) for i in items) for w in wanted)
    return bool(value == wanted)
