"""Post-coordinated SNOMED CT expressions as codes: $lookup of an expression (checked
against the release first) and an expression written out with each concept's preferred
term (its display, in tx.fhir.org's normalised form: ``64572001|Disease|:363698007|Finding
site|=80891009|Heart structure|``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from workbench.errors import UnknownCodeError
from workbench.releases.snomed import scg
from workbench.releases.snomed.mrcm import ExpressionCheck
from workbench.releases.snomed.store import SCT
from workbench.terminology.lookup import LookupResult, TypedValue
from workbench.terminology.provider import preferred_for

#: The properties of the focus concept a looked-up expression shows as its own (issue 22,
#: f3): its place in the hierarchy, status, module, date and defining attributes.
FOCUS_PROPERTIES = ("parent", "child", "inactive", "moduleId", "effectiveTime")


class Release(Protocol):
    """What looking up an expression reads from a SNOMED CT code system (``SnomedCT``)."""

    @property
    def lookup_name(self) -> str: ...
    @property
    def version(self) -> str: ...
    def row(self, code: str) -> int: ...
    def display(self, row: int, language: str | None = None) -> str | None: ...
    def check_expression(self, text: str) -> ExpressionCheck: ...
    def lookup(
        self,
        code: str,
        *,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
    ) -> LookupResult: ...


def lookup_expression(
    sct: Release,
    code: str,
    want: Callable[[str], bool],
    display_language: str | None = None,
) -> LookupResult:
    """$lookup of a post-coordinated expression in the release of ``sct``: the code as
    given; its display is the normalised expression with every concept's preferred term
    (``with_terms``), also given as the en-US ``preferredForLanguage`` designation; its
    properties are those of its (first) focus concept (``FOCUS_PROPERTIES`` and the focus
    concept's defining attributes), then each refinement of the expression under its
    attribute's concept id, as far as ``want`` asks for them. ExpressionSyntaxError when it
    does not parse, UnknownCodeError (with the reasons) when it is not valid in this
    release."""
    checked = sct.check_expression(code)
    if not checked.ok:
        raise UnknownCodeError(
            f"The expression '{code}' is not valid in the CodeSystem '{SCT}' version "
            f"'{sct.version}': {'; '.join(checked.problems)}"
        )
    expression = checked.expression
    shown = with_terms(sct, expression, display_language)
    props = list(_focus_properties(sct, expression, want))
    for attribute in expression.attributes():
        name = str(attribute.name)
        if want(name):
            value = _expression_value(sct, attribute.value, display_language)
            named = sct.display(sct.row(name), display_language)
            props.append((name, value._replace(code_display=named)))
    return LookupResult(
        name=sct.lookup_name,
        version=sct.version,
        code=code,
        display=shown,
        definition=None,
        abstract=False,
        designations=(preferred_for("en-US", shown),) if want("designation") else (),
        typed_properties=tuple(props),
    )


def _focus_properties(
    sct: Release, expression: scg.Expression, want: Callable[[str], bool]
) -> list[tuple[str, TypedValue]]:
    """The wanted properties of the expression's first focus concept: ``FOCUS_PROPERTIES``
    and its attributes (properties named by a concept id)."""
    focus = sct.lookup(str(expression.focus[0]))
    return [
        (name, value)
        for name, value in focus.typed_properties
        if (name in FOCUS_PROPERTIES or (name.isdigit() and sct.row(name) >= 0)) and want(name)
    ]


def with_terms(sct: Release, expression: scg.Expression, language: str | None = None) -> str:
    """The expression written out with each concept's preferred term in the release of
    ``sct`` (in ``language`` when given), normalised as tx.fhir.org shows it: every concept
    id followed by ``|term|`` (the terms given are replaced), no whitespace, ``{}`` only
    around the groups the expression has (``111|Term A|:222|Term B|=333|Term C|``); a
    concept without a term stays a bare id."""

    def term(concept: int) -> str:
        shown = sct.display(sct.row(str(concept)), language)
        return f"{concept}|{shown}|" if shown else str(concept)

    def value(found: Any) -> str:
        if isinstance(found, scg.Expression):
            return f"({with_terms(sct, found, language)})"
        if isinstance(found, bool):
            return "true" if found else "false"
        if isinstance(found, int):
            return term(found)
        if isinstance(found, float):
            return f"#{found:g}"
        return '"' + str(found).replace("\\", "\\\\").replace('"', '\\"') + '"'

    def attributes(group: Sequence[scg.Attribute]) -> str:
        return ",".join(f"{term(a.name)}={value(a.value)}" for a in group)

    parts = [attributes(expression.ungrouped)] if expression.ungrouped else []
    parts += ["{" + attributes(group) + "}" for group in expression.groups]
    text = "+".join(term(c) for c in expression.focus)
    if parts:
        text += ":" + ",".join(parts)
    return f"{expression.status}{text}" if expression.status else text


def _expression_value(sct: Release, found: Any, language: str | None) -> TypedValue:
    """An attribute value of an expression as a typed $lookup property value."""
    if isinstance(found, scg.Expression):
        return TypedValue("valueString", with_terms(sct, found, language))
    if isinstance(found, bool):
        return TypedValue("valueBoolean", found)
    if isinstance(found, int):
        shown = sct.display(sct.row(str(found)), language)
        return TypedValue("valueCode", str(found), shown)
    if isinstance(found, float):
        if found.is_integer():
            return TypedValue("valueInteger", int(found))
        return TypedValue("valueDecimal", found)
    return TypedValue("valueString", str(found))
