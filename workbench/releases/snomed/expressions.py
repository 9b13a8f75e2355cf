"""Post-coordinated SNOMED CT expressions as codes: $lookup of an expression (checked
against the release first) and an expression written out with each concept's preferred
term."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from workbench.errors import UnknownCodeError
from workbench.releases.snomed import scg
from workbench.releases.snomed.mrcm import ExpressionCheck
from workbench.releases.snomed.store import SCT
from workbench.terminology.lookup import LookupResult, TypedValue


class Release(Protocol):
    """What looking up an expression reads from a SNOMED CT code system (``SnomedCT``)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    def row(self, code: str) -> int: ...
    def display(self, row: int, language: str | None = None) -> str | None: ...
    def check_expression(self, text: str) -> ExpressionCheck: ...


def lookup_expression(
    sct: Release,
    code: str,
    want: Callable[[str], bool],
    display_language: str | None = None,
) -> LookupResult:
    """$lookup of a post-coordinated expression in the release of ``sct``: its display is
    the expression with every concept's preferred term (``64572001 |Disease| : 363698007
    |Finding site| = 80891009 |Heart structure|``); its properties ``inactive`` (false),
    ``parent`` (the focus concepts, which it specialises) and each attribute under its
    concept id, as far as ``want`` asks for them. ExpressionSyntaxError when it does not
    parse, UnknownCodeError (with the reasons) when it is not valid in this release."""
    checked = sct.check_expression(code)
    if not checked.ok:
        raise UnknownCodeError(
            f"The expression '{code}' is not valid in the CodeSystem '{SCT}' version "
            f"'{sct.version}': {'; '.join(checked.problems)}"
        )
    expression = checked.expression
    props: list[tuple[str, TypedValue]] = []
    if want("inactive"):
        props.append(("inactive", TypedValue("valueBoolean", False)))
    if want("parent"):
        props += [("parent", TypedValue("valueCode", str(c))) for c in expression.focus]
    for attribute in expression.attributes():
        name = str(attribute.name)
        if want(name):
            props.append((name, _expression_value(sct, attribute.value, display_language)))
    return LookupResult(
        name=sct.name,
        version=sct.version,
        code=code,
        display=with_terms(sct, expression, display_language),
        definition=None,
        abstract=False,
        designations=(),
        typed_properties=tuple(props),
    )


def with_terms(sct: Release, expression: scg.Expression, language: str | None = None) -> str:
    """The expression written out with each concept's preferred term in the release of
    ``sct`` (in ``language`` when given); a concept without a term stays a bare id."""

    def term(concept: int) -> str:
        shown = sct.display(sct.row(str(concept)), language)
        return f"{concept} |{shown}|" if shown else str(concept)

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
        return ", ".join(f"{term(a.name)} = {value(a.value)}" for a in group)

    parts = [attributes(expression.ungrouped)] if expression.ungrouped else []
    parts += ["{ " + attributes(group) + " }" for group in expression.groups]
    text = " + ".join(term(c) for c in expression.focus)
    if parts:
        text += " : " + ", ".join(parts)
    return f"{expression.status} {text}" if expression.status else text


def _expression_value(sct: Release, found: Any, language: str | None) -> TypedValue:
    """An attribute value of an expression as a typed $lookup property value."""
    if isinstance(found, scg.Expression):
        return TypedValue("valueString", with_terms(sct, found, language))
    if isinstance(found, bool):
        return TypedValue("valueBoolean", found)
    if isinstance(found, int):
        return TypedValue("valueCode", str(found))
    if isinstance(found, float):
        if found.is_integer():
            return TypedValue("valueInteger", int(found))
        return TypedValue("valueDecimal", found)
    return TypedValue("valueString", str(found))
