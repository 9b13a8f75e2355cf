"""What to look at in a resource: StructureDefinitions compiled into a tree of ``Node``s,
one per element with children, each naming the JSON keys that hold a bound code or lead to
one, so a resource is walked along its bindings only.

A node is compiled once per (StructureDefinition, element id) and reused wherever that
element or data type appears; a choice element gives one slot per type (``valueQuantity``
read as ``value.ofType(Quantity)``); a data type without constraints in the profile is read
with the data type's own definition (a profile's type profile first, an extension's by its
url); ``contentReference`` reuses the element it names. Extensions are not slots: the
walker finds an extension's definition by its ``url``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field

from workbench.bindings.store import Structures
from workbench.bindings.structures import ElementDef, Fixed, StructureDef, TypeRef

#: The types whose values are codes a binding can check.
CODED = frozenset({"code", "Coding", "CodeableConcept", "Quantity", "string", "uri"})
#: Types never walked into: primitives (lower-case) and resources (a contained resource is
#: walked with its own type's definition).
_OPAQUE = frozenset({"Resource", "DomainResource", "Extension", "Element", "xhtml"})
_EXTENSIONS = frozenset({"extension", "modifierExtension"})
_MISSING = object()


@dataclass(frozen=True)
class Rule:
    """A binding to check on a value: from element ``element`` of ``profile``."""

    strength: str
    valueset: str | None
    max_valueset: str | None
    profile: str
    element: str


@dataclass
class Slice:
    """A slice of a repeating element: the ``tests`` its discriminators make of an item
    (a path within the item and the fixed or pattern value there; a ``profile`` test has
    the path ``("@profile",)``), and what applies to an item that passes them."""

    name: str
    tests: tuple[tuple[tuple[str, ...], Fixed], ...]
    rules: tuple[Rule, ...]
    node: Node | None


@dataclass
class Slot:
    """One JSON key of a node: how its values read in a location (``label``), the element
    it is, whether it ``repeats``, its type, the ``rules`` checked on each value, the
    ``slices`` an item may fall in, and the ``node`` to walk into."""

    key: str
    label: str
    element: str
    repeats: bool
    type: str
    rules: tuple[Rule, ...] = ()
    slices: tuple[Slice, ...] = ()
    node: Node | None = None


@dataclass
class Node:
    """The slots of one element with children (a resource, a backbone element, a data
    type), and whether anything bound lies beneath (``live``: else it is walked only for
    extensions)."""

    name: str
    slots: dict[str, Slot] = field(default_factory=dict)
    live: bool = False
    live_keys: tuple[str, ...] = ()
    #: The live slots as the walker reads them: (key, slot, label, the node to walk into
    #: when that is all the slot asks, else None).
    live_slots: tuple[tuple[str, Slot, str, Node | None], ...] = ()


class Plans:
    """Compiled nodes over ``structures`` for bindings of ``strengths``: ``root(url)`` for a
    resource, profile or extension definition (None when it is not loaded)."""

    def __init__(self, structures: Structures, strengths: frozenset[str]) -> None:
        self.structures = structures
        self.strengths = strengths
        self.generation = structures.generation
        self._nodes: dict[tuple[str, str], Node] = {}
        self._children: dict[str, dict[str, list[ElementDef]]] = {}
        self._pending: list[Node] = []
        self._roots: dict[str, Node | None] = {}
        self._lock = threading.Lock()

    def root(self, url: str) -> Node | None:
        """The node of a StructureDefinition's root element, or None when not loaded. A
        root is compiled under a lock and handed out settled: walkers in several threads
        (Dask's) share the plans; a compiled node is never changed after."""
        found = self._roots.get(url, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        with self._lock:
            if url not in self._roots:
                sd = self.structures.usable(url)
                fresh = None if sd is None or not sd.elements else self._compiled(
                    sd, sd.elements[0].id
                )  # fmt: skip
                self._roots[url] = fresh
            return self._roots[url]

    def _compiled(self, sd: StructureDef, element_id: str) -> Node:
        node = self._node(sd, element_id)
        if self._pending:  # (nodes compiled before refer to none of these: they are settled)
            _settle(self._pending)
            self._pending = []
        return node

    def _node(self, sd: StructureDef, element_id: str) -> Node:
        key = (sd.url, element_id)
        found = self._nodes.get(key)
        if found is not None:
            return found
        node = self._nodes[key] = Node(element_id)
        self._pending.append(node)
        groups: dict[str, list[ElementDef]] = defaultdict(list)
        for child in self._children_of(sd).get(element_id, ()):
            groups[child.id.rsplit(".", 1)[-1].split(":", 1)[0]].append(child)
        for group in groups.values():
            for slot in self._slots(sd, group):
                node.slots[slot.key] = slot
        return node

    def _children_of(self, sd: StructureDef) -> dict[str, list[ElementDef]]:
        found = self._children.get(sd.url)
        if found is None:
            found = defaultdict(list)
            for element in sd.elements[1:]:
                found[element.id.rsplit(".", 1)[0]].append(element)
            self._children[sd.url] = found
        return found

    def _slots(self, sd: StructureDef, group: list[ElementDef]) -> list[Slot]:
        base = next((e for e in group if e.slice_name is None), None)
        if base is None or base.name in _EXTENSIONS:
            return []
        sliced = [e for e in group if e.slice_name is not None]
        if not base.name.endswith("[x]"):
            ref = base.types[0] if base.types else TypeRef("")
            slot = self._slot(sd, base, base.name, base.name, ref, base)
            slot.slices = tuple(self._slice(sd, base, s, ref) for s in sliced)
            return [slot]
        stem = base.name[:-3]
        by_type = {s.slice_name: s for s in sliced}
        slots = []
        for ref in base.types:
            if not ref.code:
                continue
            key = stem + ref.code[0].upper() + ref.code[1:]
            own = by_type.get(key, base)
            slots.append(self._slot(sd, base, key, f"{stem}.ofType({ref.code})", ref, own))
        return slots

    def _slot(
        self, sd: StructureDef, base: ElementDef, key: str, label: str, ref: TypeRef,
        own: ElementDef,
    ) -> Slot:  # fmt: skip
        rules = self._rules(sd, ref.code, base)
        if own is not base:
            rules += self._rules(sd, ref.code, own)
        return Slot(key, label, own.id, base.repeats, ref.code, rules,
                    node=self._into(sd, own, ref))  # fmt: skip

    def _rules(self, sd: StructureDef, type_code: str, element: ElementDef) -> tuple[Rule, ...]:
        binding = element.binding
        if binding is None or type_code not in CODED or binding.strength not in self.strengths:
            return ()
        return (Rule(binding.strength, binding.valueset, binding.max_valueset, sd.url,
                     element.id),)  # fmt: skip

    def _into(self, sd: StructureDef, element: ElementDef, ref: TypeRef) -> Node | None:
        """The node of an element's value: its children in this definition, the element a
        content reference names, else the definition of its (profiled) type."""
        if self._children_of(sd).get(element.id):
            return self._node(sd, element.id)
        if element.content_reference is not None:
            target = element.content_reference
            if self._children_of(sd).get(target):
                return self._node(sd, target)
            base = self.structures.base(target.split(".", 1)[0])
            return self._node(base, target) if base is not None else None
        code = ref.code
        if not code or code[0].islower() or code in _OPAQUE:
            return None
        for url in ref.profiles:
            typed = self.structures.get(url)
            if typed is not None and typed.elements:
                return self._node(typed, typed.elements[0].id)
        typed = self.structures.base(code)
        return self._node(typed, typed.elements[0].id) if typed and typed.elements else None

    def _slice(
        self, sd: StructureDef, base: ElementDef, element: ElementDef, ref: TypeRef
    ) -> Slice:
        tests: list[tuple[tuple[str, ...], Fixed]] = []
        for kind, path in base.discriminators or ():
            test = _test(sd, element, kind, path)
            if test is None:  # a discriminator this check cannot read: never matched
                return Slice(str(element.slice_name), ((("@never",), Fixed(None, True)),), (), None)
            tests.append(test)
        refs = element.types[0] if element.types else ref
        rules = self._rules(sd, refs.code, element)
        return Slice(str(element.slice_name), tuple(tests), rules, self._into(sd, element, refs))


def _test(
    sd: StructureDef, element: ElementDef, kind: str, path: str
) -> tuple[tuple[str, ...], Fixed] | None:
    parts: tuple[str, ...] = () if path == "$this" else tuple(path.split("."))
    if any("(" in p for p in parts):
        return None
    target = element if not parts else sd.element(element.id + "." + ".".join(parts))
    if kind == "profile":  # what the item there claims (meta.profile, an extension's url)
        profiles = [p for t in (target or element).types for p in t.profiles]
        return (("@profile", *parts), Fixed(tuple(profiles), True)) if profiles else None
    if kind == "type":  # a resource's type is in its JSON; a data type's is not
        codes = [t.code for t in (target or element).types]
        resource = len(codes) == 1 and codes[0][:1].isupper() and parts[-1:] == ("resource",)
        return (("@type", *parts), Fixed(codes[0], True)) if resource else None
    if kind not in ("value", "pattern"):
        return None
    if target is None or target.fixed is None:
        return None
    return parts, target.fixed


def _settle(nodes: list[Node]) -> None:
    """Mark the nodes under which something is bound (``live``), to a fixed point (data
    types refer to each other in cycles)."""
    changed = True
    while changed:
        changed = False
        for node in nodes:
            keys = tuple(
                key
                for key, slot in node.slots.items()
                if slot.rules or slot.slices or (slot.node is not None and slot.node.live)
            )
            if keys != node.live_keys:
                node.live_keys, node.live, changed = keys, bool(keys), True
    for node in nodes:
        node.live_slots = tuple(
            (key, slot, slot.label, None if slot.rules or slot.slices else slot.node)
            for key in node.live_keys
            for slot in (node.slots[key],)
        )
