"""Checking a post-coordinated SNOMED CT expression against a release: every concept
known and active, attribute names below 410662002 |Concept model attribute| and, where the
release has MRCM refsets, each attribute allowed on the focus concepts' domain, at most as
often in one group as its in-group cardinality allows, and each value within its range.

The MRCM tables (``Mrcm``) are read once per code system (``SnomedCT.mrcm``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from workbench.errors import WorkbenchError
from workbench.releases.check_digits import sctid_problem
from workbench.releases.snomed import ecl, scg
from workbench.releases.snomed.ecl_eval import Evaluator
from workbench.releases.snomed.store import SCT, Store

ATTRIBUTE_ROOT = 410662002

_NUMBER = r"[+-]?[0-9]+(?:\.[0-9]+)?"
_CONCRETE_RANGE = re.compile(
    rf"^\s*(int|dec|str|bool)\s*\(\s*(?:(>)?#({_NUMBER}))?\s*"
    rf"(?:\.\.\s*(?:(<)?#({_NUMBER}))?)?\s*\)\s*$"
)


@dataclass(frozen=True)
class ExpressionCheck:
    """The outcome of checking a post-coordinated expression: ok, and the problems found."""

    ok: bool
    problems: tuple[str, ...]
    expression: scg.Expression


class Release(Protocol):
    """What checking an expression reads from a SNOMED CT code system (``SnomedCT``)."""

    @property
    def version(self) -> str: ...
    @property
    def store(self) -> Store: ...
    @property
    def evaluate(self) -> Evaluator: ...
    @property
    def mrcm(self) -> Mrcm: ...
    def row(self, code: str) -> int: ...
    def is_active(self, row: int) -> bool: ...
    def display(self, row: int, language: str | None = None) -> str | None: ...
    def replacements(self, row: int) -> str: ...


class Mrcm:
    """The MRCM domain and range rows of one release, by attribute id (each table is read
    from the store once, on first use)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @cached_property
    def domains(self) -> dict[int, list[int]]:
        """Attribute id -> the domain concept ids its MRCM domain rows allow."""
        table = self.store.tables["mrcm_domain"].to_pydict()
        found: dict[int, list[int]] = {}
        for attribute, domain in zip(
            table.get("referencedComponentId", []), table.get("domainId", []), strict=True
        ):
            found.setdefault(int(attribute), []).append(int(domain))
        return found

    @cached_property
    def in_group(self) -> dict[int, list[int | None]]:
        """Attribute id -> the maximum of each MRCM domain row's in-group cardinality
        (None for ``*``)."""
        table = self.store.tables["mrcm_domain"].to_pydict()
        found: dict[int, list[int | None]] = {}
        for attribute, cardinality in zip(
            table.get("referencedComponentId", []),
            table.get("attributeInGroupCardinality", []),
            strict=True,
        ):
            high = str(cardinality).partition("..")[2].strip()
            found.setdefault(int(attribute), []).append(int(high) if high.isdigit() else None)
        return found

    @cached_property
    def ranges(self) -> dict[int, list[str]]:
        """Attribute id -> the ECL range constraints of its MRCM range rows."""
        table = self.store.tables["mrcm_range"].to_pydict()
        found: dict[int, list[str]] = {}
        for attribute, constraint in zip(
            table.get("referencedComponentId", []), table.get("rangeConstraint", []), strict=True
        ):
            if constraint and constraint not in found.get(int(attribute), []):
                found.setdefault(int(attribute), []).append(constraint)
        return found


def check_expression(sct: Release, text: str) -> ExpressionCheck:
    """Parse an expression (ExpressionSyntaxError when malformed) and check it in the
    release of ``sct``: every concept known and active, attribute names below 410662002
    |Concept model attribute|, and, where the release has MRCM refsets, each attribute
    allowed for the focus concepts' domain and each value within the attribute's range."""
    expression = scg.parse(text)
    problems: list[str] = []
    _check(sct, expression, problems)
    return ExpressionCheck(not problems, tuple(problems), expression)


def _check(sct: Release, expression: scg.Expression, problems: list[str]) -> None:
    for concept in expression.concepts():
        row = sct.row(str(concept))
        if row < 0:
            why = sctid_problem(str(concept)) or "a well-formed concept id this release lacks"
            problems.append(f"The concept {concept} is not in {SCT} version {sct.version} ({why})")
        elif not sct.is_active(row):
            extra = sct.replacements(row)
            problems.append(
                f"The concept {concept} |{sct.display(row)}| is inactive"
                + (f" ({extra})" if extra else "")
            )
    if problems:
        return
    attributes = sct.evaluate(f"<< {ATTRIBUTE_ROOT}") if sct.row(str(ATTRIBUTE_ROOT)) >= 0 else None
    focus_rows = [sct.row(str(c)) for c in expression.focus]
    for group_index, group in enumerate([expression.ungrouped, *expression.groups]):
        for attribute in group:
            name_row = sct.row(str(attribute.name))
            if attributes is not None and not attributes[name_row]:
                problems.append(
                    f"{attribute.name} |{sct.display(name_row)}| is not an attribute "
                    f"(not a descendant of {ATTRIBUTE_ROOT} |Concept model attribute|)"
                )
                continue
            _check_mrcm(sct, attribute, focus_rows, group_index > 0, problems)
            if isinstance(attribute.value, scg.Expression):
                _check(sct, attribute.value, problems)
        if group_index > 0:
            _check_in_group_cardinality(sct, group, problems)


def _check_in_group_cardinality(
    sct: Release, group: tuple[scg.Attribute, ...], problems: list[str]
) -> None:
    """Each attribute at most as often in one group as its MRCM in-group cardinality
    (``0..1`` for most) allows."""
    counts: dict[int, int] = {}
    for attribute in group:
        counts[attribute.name] = counts.get(attribute.name, 0) + 1
    for name, count in counts.items():
        limits = sct.mrcm.in_group.get(name)
        if limits and all(high is not None and count > high for high in limits):
            label = f"{name} |{sct.display(sct.row(str(name)))}|"
            problems.append(
                f"The attribute {label} appears {count} times in one group; its MRCM "
                f"in-group cardinality allows at most {max(h for h in limits if h is not None)}"
            )


def _check_mrcm(
    sct: Release,
    attribute: scg.Attribute,
    focus_rows: list[int],
    grouped: bool,
    problems: list[str],
) -> None:
    domains = sct.mrcm.domains.get(attribute.name)
    name_row = sct.row(str(attribute.name))
    label = f"{attribute.name} |{sct.display(name_row)}|"
    if domains is None:
        if sct.mrcm.domains:
            problems.append(f"The attribute {label} has no MRCM domain rule in this release")
        return
    closure = sct.store.closure
    allowed = undecided = False
    for domain in domains:
        d = sct.row(str(domain))
        if d < 0:
            undecided = True  # the release lacks the domain's concept: it cannot judge
            continue
        members = sct.store.members(int(domain))
        if len(members):  # a reference set as the domain (723264001 |Lateralizable…|)
            ids = sct.store.ids[np.asarray(focus_rows, dtype=np.int64)]
            allowed = allowed or bool(np.isin(ids, members).all())
        elif all(f == d or closure.is_below(f, d) for f in focus_rows):
            allowed = True
    if not allowed and not undecided:
        names = ", ".join(f"{d} |{sct.display(sct.row(str(d)))}|" for d in domains)
        problems.append(
            f"The attribute {label} is not allowed on the focus concept(s) "
            f"{', '.join(str(sct.store.ids[f]) for f in focus_rows)}: its MRCM domain is "
            f"{names}"
        )
        return
    ranges = sct.mrcm.ranges.get(attribute.name, [])
    value = attribute.value
    if isinstance(value, scg.Expression):
        value_rows = [sct.row(str(c)) for c in value.focus]
    elif isinstance(value, int) and not isinstance(value, bool):
        value_rows = [sct.row(str(value))]
    else:
        concrete = [r for r in ranges if _CONCRETE_RANGE.match(r)]
        if concrete and not any(_in_concrete_range(value, r) for r in concrete):
            problems.append(
                f"The value {value!r} of the attribute {label} is outside its MRCM range "
                f"{concrete[0]}"
            )
        return
    checked = []
    for constraint in ranges:
        try:
            named = ecl.concept_ids(ecl.parse(constraint))
            if any(sct.row(str(c)) < 0 for c in named):
                continue  # the release lacks the range's concepts: it cannot judge
            mask = sct.evaluate(constraint)
        except WorkbenchError:  # a concrete-domain range such as dec(>#0..)
            continue
        if all(mask[r] for r in value_rows):
            return
        checked.append(constraint)
    if checked:
        shown = value if not isinstance(value, scg.Expression) else value.focus
        problems.append(
            f"The value {shown} of the attribute {label} is outside its MRCM range {checked[0]}"
        )


def _in_concrete_range(value: Any, text: str) -> bool:
    """Whether a concrete value fits an MRCM concrete range such as ``dec(>#0..)`` or
    ``int(#1..#10)``; True when ``text`` is not a concrete range.

    >>> _in_concrete_range(0.5, "dec(>#0..)"), _in_concrete_range(0, "dec(>#0..)")
    (True, False)
    >>> _in_concrete_range(10, "int(#1..#10)"), _in_concrete_range(2.5, "int(#1..#10)")
    (True, False)
    >>> _in_concrete_range(True, "int(#0..)"), _in_concrete_range("x", "str()")
    (False, True)
    >>> _in_concrete_range(3, "<< 404684003")
    True
    """
    found = _CONCRETE_RANGE.match(text)
    if found is None:
        return True
    kind, low_open, low, high_open, high = found.groups()
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if kind == "int" and float(value) != int(value):
        return False
    if low is not None and (value <= float(low) if low_open else value < float(low)):
        return False
    return not (high is not None and (value >= float(high) if high_open else value > float(high)))
