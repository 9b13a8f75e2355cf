"""SNOMED CT's ValueSet filters (FHIR's SNOMED CT page): each filter as the ECL it stands
for, evaluated as a boolean mask over concept rows; ``inactive``, ``moduleId`` and
``expressions`` are masks of their own.

``concept is-a / descendent-of / in / = / generalizes / child-of`` (in = refset members),
``constraint =`` ECL, ``expression =`` ECL or an expression's subsumees, ``parent`` /
``child =``, ``inactive =``, ``moduleId =``, ``expressions =`` and any attribute id ``=``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from workbench.errors import InvalidValueSetError, UnsupportedFilterError
from workbench.releases.snomed import ecl, scg
from workbench.releases.snomed.ecl_eval import Evaluator, Mask
from workbench.releases.snomed.store import SCT, Store

__all__ = ["ecl_of", "expression_ecl", "mask"]


class Release(Protocol):
    """What a filter reads from a SNOMED CT code system (``SnomedCT``)."""

    @property
    def store(self) -> Store: ...
    @property
    def evaluate(self) -> Evaluator: ...


def mask(sct: Release, prop: str, op: str, value: str) -> Mask:
    """The concepts a ValueSet ``compose.include.filter`` selects, as a mask over rows
    (UnsupportedFilterError for a filter SNOMED CT does not define; InvalidValueSetError
    when its ECL names a concept the release does not have)."""
    text = ecl_of(prop, op, value)
    if text is not None:
        _check_concepts(sct.store, text, f"{prop} {op} {value}")
        return sct.evaluate(text)
    store = sct.store
    if prop == "expressions":
        return np.ones(store.n, dtype=bool)
    if prop == "inactive":
        return ~store.active if value == "true" else np.asarray(store.active)
    modules = store.tables["concepts"].column("moduleId").to_numpy()
    return np.asarray(modules == int(value), dtype=bool) if value.isdigit() else modules < 0


def _check_concepts(store: Store, text: str, shown: str) -> None:
    """Raise InvalidValueSetError when the ECL ``text`` names a concept ``store`` lacks: the
    constraint cannot mean anything then (tx.fhir.org: ``vs-invalid``, not an empty set)."""
    ids = sorted(ecl.concept_ids(ecl.parse(text)))
    if not ids:
        return
    rows = store.rows(np.asarray(ids, dtype=np.int64))
    refsets = set(store.refsets())  # a refset with members need not be a concept here
    missing = [str(i) for i, r in zip(ids, rows, strict=True) if r < 0 and i not in refsets]
    if missing:
        raise InvalidValueSetError(
            f"The filter '{shown}' on {SCT} names the concept(s) {', '.join(missing)}, "
            "which this SNOMED CT release does not have"
        )


def ecl_of(prop: str, op: str, value: str) -> str | None:
    """The ECL a filter stands for (None for ``inactive``, ``moduleId`` and
    ``expressions``, which are not ECL); UnsupportedFilterError for anything else."""
    if prop in ("concept", "code"):
        ecl_text = {
            "is-a": f"<< {value}",
            "descendent-of": f"< {value}",
            "in": " OR ".join(f"^ {v.strip()}" for v in value.split(",") if v.strip()),
            "=": value,
            "generalizes": f">> {value}",
            "child-of": f"<! {value}",
        }.get(op)
        if ecl_text is None or not value.strip():
            raise UnsupportedFilterError(
                f"Filter '{prop} {op} {value}' on {SCT}: '{op}' is not supported on concept"
            )
        return ecl_text
    if op != "=":
        raise UnsupportedFilterError(
            f"Filter '{prop} {op} {value}' on {SCT}: only '=' is supported on '{prop}'"
        )
    if prop == "constraint":
        return value
    if prop == "expression":
        if scg.looks_like_expression(value) and ":" in value:
            return expression_ecl(value)
        return value
    if prop == "expressions":
        if value not in ("true", "false"):
            raise UnsupportedFilterError("The 'expressions' filter takes true or false")
        return None
    if prop == "parent":
        return f"<! {value}"
    if prop == "child":
        return f">! {value}"
    if prop in ("inactive", "moduleId"):
        return None
    if prop.isdigit():
        return f"* : {prop} = {value}"
    raise UnsupportedFilterError(
        f"Filter '{prop} {op} {value}' on {SCT}: the property '{prop}' is not supported "
        "(concept, constraint, expression, expressions, parent, child, inactive, moduleId, "
        "or an attribute id)"
    )


def expression_ecl(text: str) -> str:
    """The ECL of the concepts a post-coordinated expression subsumes."""
    expression = scg.parse(text)
    ecl_text = " AND ".join(f"<< {c}" for c in expression.focus)
    refinements = [f"{a.name} = {_ecl_value(a.value)}" for a in expression.ungrouped]
    refinements += [
        "{" + ", ".join(f"{a.name} = {_ecl_value(a.value)}" for a in g) + "}"
        for g in expression.groups
    ]
    if refinements:
        ecl_text = f"({ecl_text}) : " + ", ".join(refinements)
    return ecl_text


def _ecl_value(value: Any) -> str:
    if isinstance(value, scg.Expression):
        return " AND ".join(f"<< {c}" for c in value.focus)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"#{value:g}"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    return f"<< {value}"
