"""Pathling's terminology functions in views, answered by the loaded workbench.

``memberOf(valueSetUrl)``, ``translate(conceptMapUrl[, reverse, equivalence, target])``,
``subsumes(coding)``, ``subsumedBy(coding)``, ``display([language])``,
``property(code[, type, language])`` and ``designation([use, language])`` take Codings (and
CodeableConcepts where Pathling does: a CodeableConcept is a member, or subsumes, when one
of its codings is or does). Each is one vectorised step over the whole column of Codings:
the distinct codings of a batch are answered once each (and kept for the next batches) by the
workbench's own calls — ``validate_column`` (the one answer path of ``validate_code``),
``translate``, ``subsumes``, ``lookup`` — and joined back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from workbench.errors import WorkbenchError
from workbench.fhirpath import nodes as n
from workbench.views.errors import ViewDefinitionError
from workbench.views.functions import arity, text_argument
from workbench.views.navigation import step
from workbench.views.needs import Need
from workbench.views.values import Value

if TYPE_CHECKING:
    from workbench.views.scope import Scope

CODING_FIELDS = ("system", "version", "code", "display")
KEY_FIELDS = ("system", "code", "version")
CODING = pl.Struct({name: pl.String() for name in CODING_FIELDS})
Key = tuple[str | None, str | None, str | None]
#: R4's ConceptMapEquivalence is a hierarchy: asking for a code asks for the codes below it
#: (``equivalent`` includes ``equal``; ``relatedto`` every kind of relation).
NARROWER = {
    "equivalent": {"equivalent", "equal"},
    "relatedto": {"relatedto", "equivalent", "equal", "wider", "subsumes", "narrower",
                  "specializes", "inexact"},
}  # fmt: skip
Answer = Callable[[list[Key]], list[Any]]


def _workbench(name: str, scope: Scope) -> Any:
    if scope.terminology is None:
        raise ViewDefinitionError(
            f"{name}() needs the terminology of a workbench: run the view with wb.view(...)"
        )
    return scope.terminology


def _boolean(name: str, node: n.Node) -> bool:
    if isinstance(node, n.Literal) and node.kind == "boolean":
        return bool(node.value)
    raise ViewDefinitionError(f"the argument of {name}() must be true or false")


def _codings(name: str, value: Value, *, concepts: bool) -> tuple[Value, bool]:
    """The Coding items of ``value`` (with their elements recorded), and whether they are the
    codings of CodeableConcepts (a list per item)."""
    if value.type == "CodeableConcept" and concepts:
        codings = step(value.with_expr(pl.element(), many=False), "coding")
        _record(codings.need)
        return codings, True
    if value.type != "Coding":
        what = "Codings and CodeableConcepts" if concepts else "Codings"
        raise ViewDefinitionError(f"{name}() applies to {what}, not to a {value.type or 'empty'}")
    _record(value.need)
    return value, False


def _record(need: Need | None) -> None:
    if need is not None:
        for name in CODING_FIELDS:
            need.child(name, "string", False)


def _keyed(answer: Answer, dtype: pl.DataType) -> Callable[[pl.Series], pl.Series]:
    """A batch function: each distinct (system, code, version) answered once and kept; the
    answers joined back to the batch's rows in polars (no per-row Python)."""
    kept: dict[Key, Any] = {}
    lock = threading.Lock()  # polars may call with parts of a column on several threads

    def run(codings: pl.Series) -> pl.Series:
        frame = pl.DataFrame([codings.struct.field(f).alias(f) for f in KEY_FIELDS])
        distinct = frame.unique(maintain_order=True)
        keys: list[Key] = list(distinct.iter_rows())
        with lock:
            missing = [k for k in keys if k not in kept and k[1] is not None]
            for key, found in zip(missing, answer(missing) if missing else [], strict=True):
                kept[key] = found
            answers = [kept.get(k) for k in keys]
        table = distinct.with_columns(pl.Series("__answer", answers, dtype=dtype))
        joined = frame.join(table, on=list(KEY_FIELDS), how="left", nulls_equal=True,
                            maintain_order="left")  # fmt: skip
        return joined["__answer"].alias(codings.name)

    return run


def _apply(
    value: Value, concepts: bool, run: Callable[[pl.Series], pl.Series], dtype: pl.DataType
) -> pl.Expr:
    """``run`` over every Coding of ``value`` (one call per batch)."""
    mapped = pl.element().map_batches(run, return_dtype=dtype, is_elementwise=True)
    if concepts:  # per CodeableConcept: any of its codings
        per_item = pl.element().struct.field("coding").list.eval(mapped).list.any()
        return value.expr.list.eval(per_item) if value.many else _one(value.expr, per_item)
    if value.many:
        return value.expr.list.eval(mapped)
    return value.expr.map_batches(run, return_dtype=dtype, is_elementwise=True)


def _one(expr: pl.Expr, per_item: pl.Expr) -> pl.Expr:
    return pl.concat_list([expr]).list.eval(per_item).list.first()


def _member_of(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("memberOf", args, 1, 1)
    wb = _workbench("memberOf", scope)
    url = text_argument("memberOf", args[0], scope)
    codings, concepts = _codings("memberOf", value, concepts=True)
    try:
        wb.resource("ValueSet", url)
    except WorkbenchError:
        raise ViewDefinitionError(
            f"memberOf({url!r}): the value set is not loaded (load its package or file: "
            "wb.install_package or wb.load; --package or --load on the command line)"
        ) from None

    def answer(keys: list[Key]) -> list[Any]:
        import pandas as pd

        series = pd.Series(
            [{"system": s, "code": c, **({"version": v} if v else {})} for s, c, v in keys],
            dtype=object,
        )
        found = wb.validate_column(series, url)["result"]
        return [None if r is pd.NA else bool(r) for r in found]

    run = _keyed(answer, pl.Boolean())
    source = value if concepts else codings
    return Value(_apply(source, concepts, run, pl.Boolean()), "boolean", value.many)


def _subsumption(wanted: tuple[str, ...], name: str) -> Any:
    def handler(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
        arity(name, args, 1, 1)
        wb = _workbench(name, scope)
        other = args[0]
        if not isinstance(other, n.CodingLiteral):
            raise ViewDefinitionError(
                f"the argument of {name}() is a Coding literal (system|code), e.g. "
                f"{name}(http://snomed.info/sct|73211009)"
            )
        codings, concepts = _codings(name, value, concepts=True)

        def answer(keys: list[Key]) -> list[Any]:
            return [_subsumes(wb, key, other, wanted) for key in keys]

        run = _keyed(answer, pl.Boolean())
        source = value if concepts else codings
        return Value(_apply(source, concepts, run, pl.Boolean()), "boolean", value.many)

    return handler


def _subsumes(wb: Any, key: Key, other: n.CodingLiteral, wanted: tuple[str, ...]) -> bool:
    system, code, version = key
    if system != other.system or code is None:
        return False
    try:
        return str(wb.subsumes(system, code, other.code, version=version)) in wanted
    except WorkbenchError:
        return False


def _display(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("display", args, 0, 1)
    wb = _workbench("display", scope)
    language = text_argument("display", args[0], scope) if args else None
    codings, _ = _codings("display", value, concepts=False)

    def answer(keys: list[Key]) -> list[Any]:
        return [_lookup(wb, key, language, lambda r: r.display) for key in keys]

    run = _keyed(answer, pl.String())
    return Value(_apply(codings, False, run, pl.String()), "string", value.many)


def _lookup(
    wb: Any, key: Key, language: str | None, pick: Callable[[Any], Any], **extra: Any
) -> Any:
    system, code, version = key
    try:
        found = wb.lookup(system, code, version=version, display_language=language, **extra)
    except WorkbenchError:
        return None
    return pick(found)


def _property(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("property", args, 1, 3)
    wb = _workbench("property", scope)
    code = text_argument("property", args[0], scope)
    kind = text_argument("property", args[1], scope) if len(args) > 1 else "string"
    language = text_argument("property", args[2], scope) if len(args) > 2 else None
    codings, _ = _codings("property", value, concepts=False)

    def values(found: Any) -> list[str]:
        return [str(v) for name, v in found.properties if name == code]

    def answer(keys: list[Key]) -> list[Any]:
        return [_lookup(wb, key, language, values, properties=[code]) or [] for key in keys]

    run = _keyed(answer, pl.List(pl.String()))
    return _flattened(codings, run, pl.List(pl.String()), kind)


def _designation(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("designation", args, 0, 2)
    wb = _workbench("designation", scope)
    use = args[0] if args else None
    if use is not None and not isinstance(use, n.CodingLiteral):
        raise ViewDefinitionError("the use of designation() is a Coding literal (system|code)")
    language = text_argument("designation", args[1], scope) if len(args) > 1 else None
    codings, _ = _codings("designation", value, concepts=False)

    def values(found: Any) -> list[str]:
        return [str(d.get("value")) for d in found.designations if _fits(d, use, language)]

    def answer(keys: list[Key]) -> list[Any]:
        return [_lookup(wb, key, None, values) or [] for key in keys]

    run = _keyed(answer, pl.List(pl.String()))
    return _flattened(codings, run, pl.List(pl.String()), "string")


def _fits(designation: dict[str, Any], use: n.CodingLiteral | None, language: str | None) -> bool:
    found = designation.get("use") or {}
    if use is not None and (found.get("system"), found.get("code")) != (use.system, use.code):
        return False
    return language is None or designation.get("language") == language


def _flattened(codings: Value, run: Any, dtype: pl.DataType, type_name: str) -> Value:
    """A function giving a collection per Coding: the collections of all items, flattened."""
    mapped = pl.element().map_batches(run, return_dtype=dtype, is_elementwise=True)
    if codings.many:
        expr = codings.expr.list.eval(mapped.explode()).list.drop_nulls()
    else:
        expr = codings.expr.map_batches(run, return_dtype=dtype, is_elementwise=True)
    return Value(expr, type_name, True, Need(type_name))


def _translate(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("translate", args, 1, 4)
    wb = _workbench("translate", scope)
    url = text_argument("translate", args[0], scope)
    if not wb.conceptmaps_for(url):
        raise ViewDefinitionError(f"translate({url!r}): the ConceptMap is not loaded")
    reverse = _boolean("translate", args[1]) if len(args) > 1 else False
    kinds = text_argument("translate", args[2], scope) if len(args) > 2 else "equivalent"
    equivalences = {m for k in kinds.split(",") for m in NARROWER.get(k.strip(), {k.strip()})}
    target = text_argument("translate", args[3], scope) if len(args) > 3 else None
    codings, concepts = _codings("translate", value, concepts=True)

    def answer(keys: list[Key]) -> list[Any]:
        return [_translations(wb, key, url, reverse, equivalences, target) for key in keys]

    dtype = pl.List(CODING)
    run = _keyed(answer, dtype)
    source = codings if not concepts else _concept_codings(value)
    found = _flattened(source, run, dtype, "Coding")
    return Value(found.expr, "Coding", True, _coding_need())


def _concept_codings(value: Value) -> Value:
    """The codings of CodeableConcepts, as one collection."""
    inner = pl.element().struct.field("coding").explode()
    expr = value.expr.list.eval(inner) if value.many else value.expr.struct.field("coding")
    return Value(expr.list.drop_nulls(), "Coding", True)


def _coding_need() -> Need:
    need = Need("Coding")
    _record(need)
    return need


def _translations(
    wb: Any, key: Key, url: str, reverse: bool, equivalences: set[str], target: str | None
) -> list[dict[str, Any]]:
    system, code, _ = key
    try:
        found = wb.translate(code, system=system, url=url, reverse=reverse, target_system=target)
    except WorkbenchError:
        return []
    return [
        {"system": m.system, "version": m.version, "code": m.code, "display": m.display}
        for m in found.match_list
        if m.equivalence in equivalences and m.code is not None
    ]


#: The terminology functions views know, by name.
FUNCTIONS: dict[str, Any] = {
    "memberOf": _member_of,
    "subsumes": _subsumption(("equivalent", "subsumes"), "subsumes"),
    "subsumedBy": _subsumption(("equivalent", "subsumed-by"), "subsumedBy"),
    "display": _display,
    "property": _property,
    "designation": _designation,
    "translate": _translate,
}
