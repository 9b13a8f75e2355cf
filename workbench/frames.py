"""Terminology resources as pandas frames, and CodeSystems built from frames.

Each frame leads with what people look for (a resource's url, name and title; a code and
its display), keeps the wide columns (systems, URLs, free text) in the middle and ends with
narrow ones: pandas, fitting a frame to a terminal's width, keeps as many columns from the
right as from the left and elides the middle ones (``tests/test_terminal_frames.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd

from workbench.resources import Resource
from workbench.terminology.provider import CodeSystemProvider

#: The identifying columns of a resource's row, in the order the frames show them.
_META = ["url", "name", "title", "version", "status"]


def valuesets_frame(resources: Iterable[Resource]) -> pd.DataFrame:
    """One row per ValueSet: url, name, title, version, id, systems, publisher, status (the
    narrow status last: a terminal's pandas shows the url and it, see the module)."""
    rows = []
    for r in resources:
        compose = r.get("compose") or {}
        systems = sorted({str(c["system"]) for c in compose.get("include", []) if c.get("system")})
        rows.append(
            [
                *(r.get(k) for k in _META[:4]),
                r.get("id"),
                systems,
                r.get("publisher"),
                r.get("status"),
            ]
        )
    return pd.DataFrame(rows, columns=[*_META[:4], "id", "systems", "publisher", "status"])


def codesystems_frame(resources: Iterable[Resource]) -> pd.DataFrame:
    """One row per CodeSystem: url, name, title, version, status, id, content, count,
    concepts."""
    rows = []
    for r in resources:
        rows.append(
            [
                *(r.get(k) for k in _META),
                r.get("id"),
                r.get("content"),
                r.get("count"),
                _count_concepts(r.get("concept") or []),
            ]
        )
    frame = pd.DataFrame(rows, columns=[*_META, "id", "content", "count", "concepts"])
    return frame.astype({"concepts": "int64"})


def _count_concepts(concepts: list[dict[str, Any]]) -> int:
    total, todo = 0, list(concepts)
    while todo:
        concept = todo.pop()
        total += 1
        todo.extend(concept.get("concept") or [])
    return total


def concepts_frame(cs: CodeSystemProvider) -> pd.DataFrame:
    """One row per concept: code, display, definition, parents, abstract, inactive, status,
    then one column per other property (lists of values where a concept has several)."""
    skip = {"parent", "child", "subsumedBy", "notSelectable", "inactive", "status"}
    extra = [p for p in cs.property_types if cs.role_of(p) not in skip]
    seen_extra = set(extra)
    for concept in cs:
        for name in concept.properties:
            if name not in seen_extra and cs.role_of(name) not in skip:
                extra.append(name)
                seen_extra.add(name)
    rows = []
    for c in cs:
        values = []
        for name in extra:
            found = [_plain(v) for v in c.properties.get(name, ())]
            values.append(found[0] if len(found) == 1 else (found or None))
        rows.append(
            [
                c.code,
                c.display,
                c.definition,
                list(c.parents),
                c.abstract,
                c.inactive,
                c.status,
                *values,
            ]
        )
    columns = ["code", "display", "definition", "parents", "abstract", "inactive", "status", *extra]
    frame = pd.DataFrame(rows, columns=columns).astype({"abstract": bool, "inactive": bool})
    nullable: dict[str, Any] = {
        "integer": pd.Int64Dtype(),
        "decimal": pd.Float64Dtype(),
        "boolean": pd.BooleanDtype(),
    }
    for name in extra:
        dtype = nullable.get(cs.property_types.get(name, ""))
        if dtype and not frame[name].map(lambda v: isinstance(v, list)).any():
            frame[name] = frame[name].astype(dtype)
    return frame


def _plain(value: Any) -> Any:
    """A property value for a frame: a Coding becomes its code; others stay as typed."""
    return value.get("code") if isinstance(value, Mapping) else value


def designations_frame(cs: CodeSystemProvider) -> pd.DataFrame:
    """Designations in long form: code, language, use_system, use_code, value."""
    rows = [
        [
            c.code,
            d.get("language"),
            (d.get("use") or {}).get("system"),
            (d.get("use") or {}).get("code"),
            d.get("value"),
        ]
        for c in cs
        for d in c.designations
    ]
    return pd.DataFrame(rows, columns=["code", "language", "use_system", "use_code", "value"])


def codesystem_from_frame(
    frame: pd.DataFrame,
    *,
    url: str,
    code: str = "code",
    display: str | None = "display",
    parent: str | None = None,
    definition: str | None = None,
    abstract: str | None = None,
    inactive: str | None = None,
    properties: Sequence[str] | Mapping[str, str] = (),
    version: str | None = None,
    name: str | None = None,
    title: str | None = None,
    status: str = "active",
    id: str | None = None,
) -> Resource:
    """Build a CodeSystem (a FHIR JSON dict) from a table of codes.

    ``parent`` names a column of parent codes (one code, a list of codes, or empty); the
    hierarchy is written as ``parent`` properties with ``hierarchyMeaning = is-a``.
    ``abstract`` and ``inactive`` name boolean columns. ``properties`` names more columns to
    keep as concept properties (a mapping gives each its FHIR type; the default is string).

    >>> import pandas as pd
    >>> cs = codesystem_from_frame(pd.DataFrame({"code": ["A", "A1"], "display": ["a", "a1"],
    ...     "parent": [None, "A"]}), url="http://example.org/cs", parent="parent")
    >>> [c["code"] for c in cs["concept"]], cs["concept"][1]["property"]
    (['A', 'A1'], [{'code': 'parent', 'valueCode': 'A'}])
    """
    missing = [
        c
        for c in (code, display, parent, definition, abstract, inactive, *properties)
        if c is not None and c not in frame.columns
    ]
    if missing:
        raise KeyError(f"Columns {missing} are not in the frame; it has {list(frame.columns)}")
    types = (
        dict(properties) if isinstance(properties, Mapping) else dict.fromkeys(properties, "string")
    )
    columns = _Columns(code, display, parent, definition, abstract, inactive, types)
    used = list(dict.fromkeys(c for c in (*columns[:6], *types) if c is not None))
    concepts = [
        _concept_of(dict(zip(used, values, strict=True)), columns)
        for values in zip(*(frame[c].tolist() for c in used), strict=True)
    ]
    declared = _declared(columns)
    resource: dict[str, Any] = {"resourceType": "CodeSystem"}
    if id is not None:
        resource["id"] = id
    resource["url"] = url
    if version is not None:
        resource["version"] = version
    if name is not None:
        resource["name"] = name
    if title is not None:
        resource["title"] = title
    resource.update({"status": status, "content": "complete", "count": len(concepts)})
    if parent is not None:
        resource["hierarchyMeaning"] = "is-a"
    if declared:
        resource["property"] = declared
    resource["concept"] = concepts
    return resource


class _Columns(NamedTuple):
    """The frame's columns ``codesystem_from_frame`` reads, and the properties' types."""

    code: str
    display: str | None
    parent: str | None
    definition: str | None
    abstract: str | None
    inactive: str | None
    types: dict[str, str]


_CONCEPT_PROPERTY = "http://hl7.org/fhir/concept-properties#"
_VALUE_KEY = {
    "string": "valueString",
    "code": "valueCode",
    "integer": "valueInteger",
    "boolean": "valueBoolean",
    "decimal": "valueDecimal",
    "dateTime": "valueDateTime",
    "Coding": "valueCoding",
}


def _declared(columns: _Columns) -> list[dict[str, Any]]:
    """The CodeSystem's ``property`` declarations for the columns given."""
    declared: list[dict[str, Any]] = []
    for column, prop, kind in (
        (columns.parent, "parent", "code"),
        (columns.abstract, "notSelectable", "boolean"),
        (columns.inactive, "inactive", "boolean"),
    ):
        if column is not None:
            declared.append({"code": prop, "uri": _CONCEPT_PROPERTY + prop, "type": kind})
    return declared + [{"code": p, "type": t} for p, t in columns.types.items()]


def _concept_of(row: Mapping[str, Any], columns: _Columns) -> dict[str, Any]:
    """One ``concept`` element from a row of the frame."""
    c: dict[str, Any] = {"code": str(row[columns.code])}
    if columns.display is not None and _present(row[columns.display]):
        c["display"] = str(row[columns.display])
    if columns.definition is not None and _present(row[columns.definition]):
        c["definition"] = str(row[columns.definition])
    props: list[dict[str, Any]] = []
    if columns.parent is not None:
        props += [{"code": "parent", "valueCode": p} for p in _codes(row[columns.parent])]
    for column, prop in ((columns.abstract, "notSelectable"), (columns.inactive, "inactive")):
        if column is not None and _present(row[column]) and bool(row[column]):
            props.append({"code": prop, "valueBoolean": True})
    for p, t in columns.types.items():
        if _present(row[p]):
            props.append({"code": p, _VALUE_KEY.get(t, "valueString"): _typed(row[p], t)})
    if props:
        c["property"] = props
    return c


def _typed(value: Any, kind: str) -> Any:
    """A cell's value as the property type wants it."""
    if kind == "integer":
        return int(value)
    if kind == "boolean":
        return bool(value)
    return float(value) if kind == "decimal" else str(value)


def _present(value: Any) -> bool:
    if value is None or value is pd.NA:
        return False
    if isinstance(value, float) and value != value:
        return False
    return not (isinstance(value, str) and value == "")


def _codes(value: Any) -> list[str]:
    if isinstance(value, list | tuple | set | frozenset):
        return [str(v) for v in value if _present(v)]
    if hasattr(value, "tolist"):
        return [str(v) for v in value.tolist() if _present(v)]
    return [str(value)] if _present(value) else []


class CodeSystem:
    """Namespace for building CodeSystems: ``CodeSystem.from_frame(df, url=..., ...)``."""

    from_frame = staticmethod(codesystem_from_frame)


def conceptmaps_frame(resources: Iterable[Resource]) -> pd.DataFrame:
    """One row per ConceptMap: url, name, title, version, status, id, source, target, groups."""
    rows = []
    for r in resources:
        source = r.get("sourceUri") or r.get("sourceCanonical")
        target = r.get("targetUri") or r.get("targetCanonical")
        rows.append(
            [*(r.get(k) for k in _META), r.get("id"), source, target, len(r.get("group", []))]
        )
    return pd.DataFrame(rows, columns=[*_META, "id", "source", "target", "groups"])


def mappings_frame(resource: Resource) -> pd.DataFrame:
    """One row per source code -> target code of a ConceptMap: source_code, target_code,
    equivalence, both displays, both systems, comment, depends_on, product."""
    cols = [
        "source_code",
        "target_code",
        "equivalence",
        "source_display",
        "target_display",
        "source_system",
        "target_system",
        "comment",
        "depends_on",
        "product",
    ]
    rows = []
    for group in resource.get("group", []):
        for element in group.get("element", []):
            for target in element.get("target", []):
                rows.append(
                    [
                        element.get("code"),
                        target.get("code"),
                        target.get("equivalence"),
                        element.get("display"),
                        target.get("display"),
                        group.get("source"),
                        group.get("target"),
                        target.get("comment"),
                        target.get("dependsOn", []),
                        target.get("product", []),
                    ]
                )
    return pd.DataFrame(rows, columns=cols)


#: ``(system, codes) -> their displays`` (None for a code or system that is not loaded).
DisplayLookup = Callable[[str, list[str]], list[str | None]]


def fill_displays(frame: pd.DataFrame, displays: DisplayLookup) -> pd.DataFrame:
    """``source_display`` and ``target_display`` of a mappings frame from the loaded code
    systems (each distinct system and code looked up once), else the map's own display: as
    ``$translate`` shows a target."""
    out = frame.copy()
    for side in ("source", "target"):
        systems, codes = out[f"{side}_system"], out[f"{side}_code"]
        found: dict[tuple[str, str], str | None] = {}
        for system in systems.dropna().unique():
            wanted = sorted({str(c) for c in codes[systems == system].dropna()})
            if wanted:
                shown = displays(system, wanted)
                found.update(zip(((system, c) for c in wanted), shown, strict=True))
        looked = [
            found.get((s, str(c))) if isinstance(s, str) and isinstance(c, str) else None
            for s, c in zip(systems, codes, strict=True)
        ]
        own = out[f"{side}_display"]
        out[f"{side}_display"] = [
            new if new is not None else old for new, old in zip(looked, own, strict=True)
        ]
    return out
