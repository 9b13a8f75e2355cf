"""ValueSet ``compose.include.filter`` evaluation over a CodeSystemProvider.

A compiled filter answers two questions: does a concept match (``matches``), and, when it can
say cheaply, which codes can match at all (``candidates``, or None to scan every concept).
Membership checks use ``matches`` (hierarchy look-ups, no expansion); expansion intersects the
candidates and then checks ``matches``.

Operators: ``=``, ``is-a``, ``descendent-of``, ``is-not-a``, ``regex``, ``in``, ``not-in``,
``generalizes``, ``exists``, and R5's ``child-of`` and ``descendent-leaf``. Properties:
``concept``/``code`` (the hierarchy), ``parent``, ``child``, ``display``, ``inactive``,
``notSelectable``, ``status``, and every property the CodeSystem defines. ``regex`` is a
whole-value match run by RE2, so no pattern can backtrack catastrophically.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import re2

from workbench.errors import UnsupportedFilterError
from workbench.terminology.concepts import CodeFilter, Concept, Predicate

if TYPE_CHECKING:
    from workbench.terminology.provider import CodeSystemProvider

OPERATORS = (
    "=",
    "is-a",
    "descendent-of",
    "is-not-a",
    "regex",
    "in",
    "not-in",
    "generalizes",
    "exists",
    "child-of",
    "descendent-leaf",
)
_HIERARCHY_OPS = {"is-a", "descendent-of", "is-not-a", "generalizes", "child-of", "descendent-leaf"}


def compile_filter(cs: CodeSystemProvider, raw: Mapping[str, Any]) -> CodeFilter:
    """Compile one ``{"property", "op", "value"}`` filter against a code system.

    Raises UnsupportedFilterError for an unknown operator, a property the code system does
    not have, an operator the property does not support, or a regex RE2 cannot compile.
    """
    prop = str(raw.get("property", ""))
    op = str(raw.get("op", ""))
    value = str(raw.get("value", ""))
    text = f"{prop} {op} {value}"
    if op not in OPERATORS:
        raise UnsupportedFilterError(
            f"Filter '{text}' on {cs.url}: the operator '{op}' is not supported "
            f"(supported: {', '.join(OPERATORS)})"
        )
    role = cs.role_of(prop)
    if role in ("parent", "child") and op in ("=", "in", "not-in"):
        value = ",".join(_canonical_code(cs, v) for v in _split(value))
    if prop in ("concept", "code"):
        return _hierarchy_filter(cs, op, value, text)
    if op in _HIERARCHY_OPS:
        if role in ("parent", "child") or cs.property_types.get(prop) in ("code", "Coding"):
            return _property_hierarchy_filter(cs, prop, role, op, value, text)
        raise _unsupported(
            cs, text, f"'{op}' needs a hierarchy, and '{prop}' is not a code property"
        )
    getter = _getter(cs, prop, role, text)
    return CodeFilter(text, _value_predicate(getter, op, value, cs, text))


def _unsupported(cs: CodeSystemProvider, text: str, why: str) -> UnsupportedFilterError:
    return UnsupportedFilterError(f"Filter '{text}' on {cs.url} is not supported: {why}")


def _canonical_code(cs: CodeSystemProvider, code: str) -> str:
    """The code as the code system spells it (matters when it is not case-sensitive)."""
    concept = cs.get(code)
    return concept.code if concept is not None else code


def _split(value: str) -> frozenset[str]:
    return frozenset(v.strip() for v in value.split(",") if v.strip())


def _regex(value: str, cs: CodeSystemProvider, text: str) -> Callable[[str], bool]:
    try:
        pattern = re2.compile(value)
    except re2.error as exc:
        raise _unsupported(cs, text, f"the regex cannot be compiled ({exc})") from exc
    return lambda s: pattern.fullmatch(s) is not None


def _exists_flag(value: str, cs: CodeSystemProvider, text: str) -> bool:
    if value not in ("true", "false"):
        raise _unsupported(cs, text, "'exists' takes the value true or false")
    return value == "true"


def _hierarchy_filter(cs: CodeSystemProvider, op: str, value: str, text: str) -> CodeFilter:
    target = cs.get(value)
    if target is None and op in _HIERARCHY_OPS and cs.is_complete:
        # never an empty (or, for is-not-a, a whole) expansion for a code that does not exist
        raise _unsupported(cs, text, f"the code '{value}' is not in the code system")
    code = target.code if target is not None else value
    if op == "is-a":
        members = cs.descendants(code) | {code} if target else frozenset()
        return CodeFilter(text, lambda c: c.code in members, members)
    if op == "descendent-of":
        below = cs.descendants(code)
        return CodeFilter(text, lambda c: c.code in below, below)
    if op == "is-not-a":
        excluded = cs.descendants(code) | {code} if target else frozenset()
        return CodeFilter(text, lambda c: c.code not in excluded)
    if op == "generalizes":
        members = cs.ancestors(code) | {code} if target else frozenset()
        return CodeFilter(text, lambda c: c.code in members, members)
    if op == "child-of":
        children = frozenset(target.children) if target else frozenset()
        return CodeFilter(text, lambda c: code in c.parents, children)
    if op == "descendent-leaf":
        leaves = frozenset(d for d in cs.descendants(code) if not cs.concepts[d].children)
        return CodeFilter(text, lambda c: c.code in leaves, leaves)
    if op == "=":
        found = frozenset({code}) if target else frozenset()
        return CodeFilter(text, lambda c: c.code == code, found)
    if op == "in":
        codes = frozenset(c.code for c in map(cs.get, _split(value)) if c is not None)
        return CodeFilter(text, lambda c: c.code in codes, codes)
    if op == "not-in":
        excluded = frozenset(c.code for c in map(cs.get, _split(value)) if c is not None)
        return CodeFilter(text, lambda c: c.code not in excluded)
    if op == "regex":
        match = _regex(value, cs, text)
        return CodeFilter(text, lambda c: match(c.code))
    flag = _exists_flag(value, cs, text)
    return CodeFilter(text, lambda c: flag)


def _property_hierarchy_filter(
    cs: CodeSystemProvider, prop: str, role: str, op: str, value: str, text: str
) -> CodeFilter:
    """Hierarchy operators on a code-valued property: the property's value is-a ``value``."""
    if role == "parent" and op in ("=", "child-of"):
        parent = _canonical_code(cs, value)
        return CodeFilter(text, lambda c: parent in c.parents)
    inner = _hierarchy_filter(cs, op, value, text)
    if role == "parent":
        return CodeFilter(text, lambda c: any(inner.matches(cs.concepts[p]) for p in c.parents))
    if role == "child":
        return CodeFilter(text, lambda c: any(inner.matches(cs.concepts[p]) for p in c.children))

    def matches(c: Concept) -> bool:
        for v in c.property_strings(prop):
            target = cs.get(v)
            if target is not None and inner.matches(target):
                return True
        return False

    return CodeFilter(text, matches)


def _getter(
    cs: CodeSystemProvider, prop: str, role: str, text: str
) -> Callable[[Concept], list[str]]:
    """Return a function giving a concept's values for a filter property, as strings."""
    if role == "parent":
        return lambda c: list(c.parents)
    if role == "child":
        return lambda c: list(c.children)
    if prop == "display":
        return lambda c: [c.display] if c.display is not None else []
    if role == "inactive":
        return lambda c: ["true" if c.inactive else "false"]
    if role in ("notSelectable", "abstract"):
        # the values the concept carries: one without the property matches neither true nor
        # false (an abstract concept with no property, a release's grouper, is true)
        codes = list(dict.fromkeys([*cs.property_codes_for(role), "notSelectable", "abstract"]))
        return lambda c: (
            [v for n in codes for v in c.property_strings(n)] or (["true"] if c.abstract else [])
        )
    if role == "status" and not cs.has_property(prop):
        return lambda c: [c.status] if c.status else []
    if not cs.has_property(prop):
        raise _unsupported(cs, text, f"the code system defines no property '{prop}'")
    codes = [prop] if prop in cs.property_types else cs.property_codes_for(prop)
    return lambda c: [v for name in codes for v in c.property_strings(name)]


def _value_predicate(
    getter: Callable[[Concept], list[str]], op: str, value: str, cs: CodeSystemProvider, text: str
) -> Predicate:
    if op == "=":
        return lambda c: value in getter(c)
    if op == "in":
        wanted = _split(value)
        return lambda c: any(v in wanted for v in getter(c))
    if op == "not-in":
        unwanted = _split(value)
        return lambda c: not any(v in unwanted for v in getter(c))
    if op == "regex":
        match = _regex(value, cs, text)
        return lambda c: any(match(v) for v in getter(c))
    if op == "exists":
        flag = _exists_flag(value, cs, text)
        return lambda c: bool(getter(c)) is flag
    raise _unsupported(cs, text, f"'{op}' does not apply to this property")
