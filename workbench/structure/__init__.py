"""Structural checks of FHIR R4 terminology resources and data types (pure; no web imports).

``check_resource`` checks a ValueSet, CodeSystem, ConceptMap or Parameters against the R4
structure: every known element has its type (JSON kind, primitive format, integer range,
nested types), repeats only where it may (a JSON array) and is present where required; choice
elements (``value[x]``) appear once. Unknown elements and extensions are left alone (FHIR
JSON stays lossless). ``check_value`` does the same for one value of a data type (a Coding, a
CodeableConcept) given to an operation; ``check_parameters`` and ``check_entry`` the parts of
a Parameters body the codec does not type by the operation's definition. The schema
(``r4.json``) is derived from the R4 StructureDefinitions by ``workbench.structure.build``.

>>> check_value("Coding", {"system": "http://x", "code": 5}, "coding")
Traceback (most recent call last):
...
workbench.errors.StructureError: coding.code must be a code (a JSON string), not a number
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from importlib import resources as package_data
from typing import Any

import orjson

from workbench.errors import StructureError

#: Required elements whose absence changes no terminology answer (issue 22, e2): a resource
#: without them passes the structure check and is stored as it is, with a warning
#: (``tolerated_gaps``). A filter without a value fails only when its value set is
#: expanded or validated against (``definition.check_filter_values``).
TOLERATED: dict[str, frozenset[str]] = {
    "CodeSystem": frozenset({"status"}),
    "ValueSet": frozenset({"status"}),
    "ValueSet.compose.include.filter": frozenset({"value"}),
}

# Deeper than any real resource (the R4 core and terminology packages stay under 25) and
# shallow enough that a check never nears the interpreter's recursion limit.
MAX_DEPTH = 100
_SHOWN = 60


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The shipped R4 structure schema."""
    data = package_data.files("workbench.structure").joinpath("r4.json").read_bytes()
    loaded: dict[str, Any] = orjson.loads(data)
    return loaded


@lru_cache(maxsize=1)
def _compiled() -> tuple[dict[str, Any], dict[str, Any]]:
    raw = schema()
    primitives = {}
    for name, spec in raw["primitives"].items():
        regex = spec.get("regex")
        # FHIR's regular expressions are Java's: \s and \S are ASCII classes
        pattern = re.compile(regex, re.ASCII) if regex and regex not in _TRIVIAL else None
        primitives[name] = (spec["json"], pattern, spec.get("min"), spec.get("max"))
    types = {}
    for name, table in raw["types"].items():
        elements = {k: (v[0], v[1], v[2]) for k, v in table["elements"].items()}
        required = [k for k, v in elements.items() if v[2]]
        choices = [
            # (the names of a choice, each also as "_name", to look up by the object's keys:
            # value[x] has 50 names, an Extension a key or two)
            (c["names"], c["required"], base, {p + n for n in c["names"] for p in ("", "_")})
            for base, c in table.get("choices", {}).items()
        ]
        types[name] = (elements, required, choices)
    return primitives, types


# Regular expressions that a non-empty string of the right kind always matches.
_TRIVIAL = frozenset({r"[ \r\n\t\S]+"})
_KIND_NAMES = {
    bool: "a boolean",
    int: "a number",
    float: "a number",
    Decimal: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def integral(value: Any) -> bool:
    """True for a JSON number with a fraction that is an integer (``1.0``, ``1e3``): the
    same number as ``1``, as JSON Schema's ``integer`` has it (JSON has one number type)."""
    if type(value) is float:
        return value.is_integer()
    return type(value) is Decimal and value.is_finite() and value == value.to_integral_value()


def _kind(value: Any) -> str:
    return _KIND_NAMES.get(type(value), "an object" if isinstance(value, Mapping) else "a value")


def _a(name: str) -> str:
    vowel = name[:1] in "aeiouAEIOU" and not name.startswith(("ur", "uu"))
    return f"an {name}" if vowel else f"a {name}"


def _show(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "…")


def check_resource(resource: Any, *, required: bool = True, path: str | None = None) -> None:
    """Raise StructureError (naming the element path) when a terminology resource breaks the
    R4 structure. ``required=False`` skips the checks of the resource's own required elements
    (``status``, ``content``: an inline resource given to an operation, which is never
    stored); required elements inside it (``filter.op``, ``concept.code``) are still needed."""
    where = path or "The resource"
    if not isinstance(resource, Mapping):
        raise StructureError(f"{where} must be a JSON object, not {_kind(resource)}")
    rtype = resource.get("resourceType")
    _, types = _compiled()
    if not isinstance(rtype, str) or rtype not in types or "." in rtype:
        raise StructureError(f"{where} must be a ValueSet, CodeSystem or ConceptMap, not {rtype!r}")
    _run(_Checker(required).resource, rtype, resource, path or rtype)


def tolerated_gaps(resource: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The required elements a resource lacks that ``TOLERATED`` lets pass, as
    ``(expression, text)`` for warnings: a missing ``status``, a filter without a value
    (include and exclude filters alike)."""
    rtype = str(resource.get("resourceType"))
    found: list[tuple[str, str]] = []
    if rtype in ("CodeSystem", "ValueSet") and "status" not in resource:
        found.append(
            (
                f"{rtype}.status",
                f"{rtype}.status is missing (required in R4); the {rtype} is kept as it is, "
                "since its status changes no terminology answer",
            )
        )
    if rtype != "ValueSet":
        return found
    compose = resource.get("compose")
    for kind in ("include", "exclude"):
        clauses = compose.get(kind) if isinstance(compose, Mapping) else None
        for i, clause in enumerate(clauses if isinstance(clauses, list) else ()):
            filters = clause.get("filter") if isinstance(clause, Mapping) else None
            for j, item in enumerate(filters if isinstance(filters, list) else ()):
                if isinstance(item, Mapping) and "value" not in item:
                    where = f"ValueSet.compose.{kind}[{i}].filter[{j}]"
                    found.append(
                        (
                            f"{where}.value",
                            f"{where}.value is missing (required in R4); the value set is "
                            "kept, but expanding it or validating against it fails",
                        )
                    )
    return found


def check_value(type_name: str, value: Any, path: str, *, required: bool = True) -> None:
    """Raise StructureError when ``value`` is not a well-formed ``type_name`` (a data type
    such as Coding or CodeableConcept, or a primitive such as code)."""
    _run(_Checker(required).value, type_name, value, path)


#: The longest text whose verdict ``check_text`` remembers (longer ones are checked each time).
_REMEMBERED_TEXT = 256


def check_text(type_name: str, text: str, path: str) -> None:
    """``check_value`` of a primitive sent as text (a query parameter): the verdict on a
    well-formed text is remembered, since clients send the same urls, systems and codes
    again and again (the check itself is ``check_value``'s, never another)."""
    if len(text) > _REMEMBERED_TEXT or not _well_formed(type_name, text):
        check_value(type_name, text, path)


@lru_cache(maxsize=4096)
def _well_formed(type_name: str, text: str) -> bool:
    try:
        check_value(type_name, text, "")
    except StructureError:
        return False
    return True


#: The elements of a Parameters entry that the codec reads by the operation's definition
#: (and types by it): its value[x], resource and parts.
_CONTENT = ("value", "resource", "part")


def check_parameters(body: Mapping[str, Any]) -> None:
    """Raise StructureError when a Parameters' own elements (``id``, ``meta``,
    ``implicitRules``, ``language``, unknown content's depth) break the R4 structure; its
    entries are left to ``check_entry``."""
    own = {key: value for key, value in body.items() if key != "parameter"}
    _run(_Checker(False).complex, "Parameters", own, "Parameters")


def check_entry(entry: Mapping[str, Any], path: str, *, typed: bool) -> None:
    """Raise StructureError when a Parameters entry (``Parameters.parameter``) breaks the R4
    structure. ``typed``: the codec reads the entry's value, resource and parts by the
    operation's definition and types them itself, so only the other elements (``id``,
    ``extension``, ``modifierExtension``, a primitive's ``_value[x]``) of the entry and of
    its parts are checked; else (a parameter the operation does not know) all of it."""
    checker = _Checker(False)
    if not typed:
        _run(checker.complex, "Parameters.parameter", entry, path)
        return
    stack = [(entry, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise StructureError(f"{where} is nested more than {MAX_DEPTH} levels deep")
        own = {k: v for k, v in item.items() if k == "name" or not k.startswith(_CONTENT)}
        _run(checker.complex, "Parameters.parameter", own, where)
        parts = item.get("part")
        for i, part in enumerate(parts if isinstance(parts, list) else ()):
            # (a part that is no object, or has no name, is the codec's to refuse)
            if isinstance(part, Mapping) and (len(part) > 2 or "part" in part):
                stack.append((part, f"{where}.part[{i}]", depth + 1))


class _Bad(Exception):
    """A problem found deep down; each level adds its step to the path on the way out."""

    def __init__(self, problem: str, element: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.element = element  # the missing element, below the path
        self.steps: list[str | int] = []


def _run(check: Any, tname: str, value: Any, path: str) -> None:
    try:
        check(tname, value, 0)
    except _Bad as bad:
        where = path
        for step in reversed(bad.steps):
            where += f"[{step}]" if isinstance(step, int) else f".{step}"
        text = bad.problem.replace("{path}", where)
        expression = f"{where}.{bad.element}" if bad.element else where
        raise StructureError(text, expression=[expression]) from None


class _Checker:
    def __init__(self, root_required: bool) -> None:
        self.root_required = root_required
        self.primitives, self.types = _compiled()

    def value(self, tname: str, value: Any, depth: int) -> None:
        if tname in self.primitives:
            self.primitive(tname, value)
        elif tname == "Resource":
            self.contained(value, depth)
        else:
            self.complex(tname, value, depth)

    def primitive(self, tname: str, value: Any) -> None:
        kind, pattern, low, high = self.primitives[tname]
        if kind == "string":
            if type(value) is not str:
                raise _Bad(f"{{path}} must be {_a(tname)} (a JSON string), not {_kind(value)}")
            if pattern is not None:
                if not pattern.fullmatch(value):
                    raise _Bad(f"{{path}}: {_show(value)} is not a valid {tname}")
            elif not value:
                raise _Bad("{path} must not be an empty string")
        elif kind == "boolean":
            if type(value) is not bool:
                raise _Bad(f"{{path}} must be a boolean (true or false), not {_kind(value)}")
        elif kind == "integer":
            if type(value) is not int and not integral(value):
                raise _Bad(f"{{path}} must be {_a(tname)} (a JSON integer), not {_kind(value)}")
            if not low <= value <= high:
                raise _Bad(f"{{path}} must be {_a(tname)} from {low} to {high}, not {value}")
        else:  # decimal
            if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
                raise _Bad(f"{{path}} must be a decimal (a JSON number), not {_kind(value)}")
            if not math.isfinite(value):
                raise _Bad("{path} must be a finite number")

    def contained(self, value: Any, depth: int) -> None:
        if not isinstance(value, Mapping) or not isinstance(value.get("resourceType"), str):
            raise _Bad("{path} must be a resource (a JSON object with a resourceType)")
        rtype = value["resourceType"]
        if rtype in self.types and "." not in rtype:
            self.resource(rtype, value, depth)
        else:
            _check_depth(value, depth)

    def resource(self, rtype: str, obj: Any, depth: int) -> None:
        self.complex(rtype, obj, depth, root=True)

    def complex(self, tname: str, obj: Any, depth: int, *, root: bool = False) -> None:
        if not isinstance(obj, Mapping):
            shown = "an element" if "." in tname else _a(tname)
            raise _Bad(f"{{path}} must be {shown} (a JSON object), not {_kind(obj)}")
        if depth > MAX_DEPTH:
            raise _Bad(f"{{path}} is nested more than {MAX_DEPTH} levels deep")
        elements, required, choices = self.types[tname]
        primitives = self.primitives
        for key, item in obj.items():
            spec = elements.get(key)
            try:
                if spec is None:
                    if key[:1] == "_" and key[1:] in elements:
                        self.primitive_extension(elements[key[1:]], item, depth)
                    else:
                        _check_depth(item, depth + 1)
                    continue
                etype, repeats, _ = spec
                if repeats:
                    if type(item) is not list:
                        raise _Bad(f"{{path}} must be an array (it repeats), not {_kind(item)}")
                    allow_null = etype in primitives and ("_" + key) in obj
                    for i, entry in enumerate(item):
                        if entry is None and allow_null:
                            continue
                        try:
                            self.value(etype, entry, depth + 1)
                        except _Bad as bad:
                            bad.steps.append(i)
                            raise
                elif type(item) is list:
                    raise _Bad("{path} must be a single value, not an array (it does not repeat)")
                elif etype in primitives:
                    self.primitive(etype, item)
                else:
                    self.value(etype, item, depth + 1)
            except _Bad as bad:
                bad.steps.append(key)
                raise
        for names, needed, base, keys in choices:
            hits = [k for k in obj if k in keys]
            if len(hits) > 1:
                present = [n for n in names if n in obj or ("_" + n) in obj]
            else:
                present = [hits[0].lstrip("_")] if hits else []
            if len(present) > 1:
                raise _Bad(f"{{path}} has {' and '.join(present)}: {base}[x] takes one value")
            if needed and (self.root_required or not root) and not present:
                raise _Bad(f"{{path}}.{base}[x] is required", f"{base}[x]")
        if self.root_required or not root:
            tolerated = TOLERATED.get(tname, frozenset())
            for name in required:
                if name not in obj and ("_" + name) not in obj and name not in tolerated:
                    raise _Bad(f"{{path}}.{name} is required", name)

    def primitive_extension(self, spec: tuple[str, bool, bool], item: Any, depth: int) -> None:
        etype, repeats, _ = spec
        if etype not in self.primitives:
            _check_depth(item, depth + 1)
            return
        if not repeats:
            self.complex("Element", item, depth + 1)
            return
        if type(item) is not list:
            raise _Bad(f"{{path}} must be an array, not {_kind(item)}")
        for i, entry in enumerate(item):
            if entry is not None:
                try:
                    self.complex("Element", entry, depth + 1)
                except _Bad as bad:
                    bad.steps.append(i)
                    raise


def _check_depth(value: Any, depth: int) -> None:
    """Unknown content is kept as it is, but not nested without limit."""
    if not isinstance(value, Mapping | list):
        return
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > MAX_DEPTH:
            raise _Bad(f"{{path}} is nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, level + 1) for child in children)
