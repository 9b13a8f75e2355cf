"""CodeSystem $lookup and $subsumes over a CodeSystemIndex."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from workbench.errors import UnknownCodeError
from workbench.terminology.codesystem import CodeSystemIndex


@dataclass(frozen=True)
class LookupResult:
    """What $lookup says of a code: name, version, display, designations, properties."""

    name: str
    version: str | None
    code: str
    display: str | None
    definition: str | None
    abstract: bool
    designations: tuple[dict[str, Any], ...]
    typed_properties: tuple[tuple[str, TypedValue], ...]

    @property
    def properties(self) -> tuple[tuple[str, Any], ...]:
        """The properties as ``(code, value)`` pairs (``typed_properties`` keeps each
        value's FHIR type, ``valueCode``, ``valueInteger``…)."""
        return tuple((name, typed.value) for name, typed in self.typed_properties)

    def to_parameters(self) -> dict[str, Any]:
        """Return the $lookup output Parameters."""
        params: list[dict[str, Any]] = [{"name": "name", "valueString": self.name}]
        if self.version:
            params.append({"name": "version", "valueString": self.version})
        if self.display is not None:
            params.append({"name": "display", "valueString": self.display})
        if self.definition is not None:
            params.append({"name": "definition", "valueString": self.definition})
        for d in self.designations:
            part = []
            if d.get("language"):
                part.append({"name": "language", "valueCode": d["language"]})
            if d.get("use"):
                part.append({"name": "use", "valueCoding": d["use"]})
            part.append({"name": "value", "valueString": d.get("value", "")})
            params.append({"name": "designation", "part": part})
        for code, value in self.typed_properties:
            params.append(
                {
                    "name": "property",
                    "part": [{"name": "code", "valueCode": code}, _value_part(value)],
                }
            )
        return {"resourceType": "Parameters", "parameter": params}


class TypedValue(NamedTuple):
    """A property value with its FHIR ``value[x]`` key (``valueCode``, ``valueInteger``…)."""

    key: str
    value: Any


def _value_part(value: TypedValue) -> dict[str, Any]:
    return {"name": "value", value.key: value.value}


def lookup(
    cs: CodeSystemIndex, code: str, *, properties: Sequence[str] | None = None
) -> LookupResult:
    """Look a code up. ``properties`` selects which properties to return (None: all).

    ``name`` is the CodeSystem's ``name`` (its title, then its url, when it has none). Besides
    every property the code system defines, the concept-properties ``parent``, ``child``,
    ``inactive``, ``status`` (when the concept has one) and ``notSelectable`` (when it is
    abstract) are returned; ``definition`` and ``designation`` can be selected as well.
    """
    concept = cs.get(code)
    if concept is None:
        label = f"{cs.url}|{cs.version}" if cs.version else cs.url
        raise UnknownCodeError(f"Unknown code '{code}' in the CodeSystem '{label}'")
    wanted = set(properties) if properties else None

    def want(name: str) -> bool:
        return wanted is None or name in wanted

    props: list[tuple[str, TypedValue]] = []
    hierarchy = {"parent", "child", "subsumedBy"}
    for name, values in concept.properties.items():
        if cs.role_of(name) in hierarchy:
            continue
        if want(name):
            key = concept.value_keys.get(name, "valueString")
            props += [(name, TypedValue(key, v)) for v in values]
    if want("parent"):
        props += [("parent", TypedValue("valueCode", p)) for p in concept.parents]
    if want("child"):
        props += [("child", TypedValue("valueCode", c)) for c in concept.children]
    if want("inactive") and not any(n == "inactive" for n, _ in props):
        props.append(("inactive", TypedValue("valueBoolean", concept.inactive)))
    roles = {cs.role_of(n) for n, _ in props}
    if want("status") and concept.status and "status" not in roles:
        props.append(("status", TypedValue("valueCode", concept.status)))
    if want("notSelectable") and concept.abstract and not roles & {"notSelectable", "abstract"}:
        props.append(("notSelectable", TypedValue("valueBoolean", True)))
    if wanted is not None and "definition" in wanted and concept.definition:
        props.append(("definition", TypedValue("valueString", concept.definition)))
    designations = tuple(concept.designations) if want("designation") else ()
    return LookupResult(
        name=str(cs.resource.get("name") or cs.resource.get("title") or cs.url),
        version=cs.version,
        code=concept.code,
        display=concept.display,
        definition=concept.definition,
        abstract=concept.abstract,
        designations=designations,
        typed_properties=tuple(props),
    )


def subsumes(cs: CodeSystemIndex, code_a: str, code_b: str) -> str:
    """Return equivalent, subsumes, subsumed-by or not-subsumed for codes A and B (either
    may be a post-coordinated expression where the code system has them)."""
    found = []
    is_expression = getattr(cs, "is_expression", None)
    for code in (code_a, code_b):
        if is_expression is not None and is_expression(code):
            found.append(code)  # the provider parses and checks it
            continue
        concept = cs.get(code)
        if concept is None:
            raise UnknownCodeError(f"Unknown code '{code}' in the CodeSystem '{cs.url}'")
        found.append(concept.code)
    return cs.subsumes(found[0], found[1])
