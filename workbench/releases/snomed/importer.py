"""Import an RF2 Snapshot release into a SNOMED CT store folder (built once, reopened fast).

The import reads every Snapshot file (``rf2``), resolves identifiers to concept rows, picks the
displays from the language reference sets, computes the transitive closure of the inferred
is-a relationships (``closure``) and writes the store's files (``store.FILES``) into a
temporary folder that is renamed into place only when complete, so a failed import leaves no
half-built store behind. Texts with control characters, and two rows of one description,
relationship or concrete value with different content, are refused (``hygiene``); equal
twins are kept once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import ReleaseFormatError
from workbench.releases import hygiene
from workbench.releases.closure import Closure
from workbench.releases.snomed import rf2
from workbench.releases.snomed.store import SCT, Store
from workbench.releases.storage import write_table

IS_A = 116680003
FSN = 900000000000003001
SYNONYM = 900000000000013009
DEFINITION = 900000000000550004
PREFERRED = 900000000000548007
ACCEPTABLE = 900000000000549004
DEFINED = 900000000000073002
CORE_MODULE = 900000000000207008
US_ENGLISH = 900000000000509007
GB_ENGLISH = 900000000000508004

Progress = Callable[[str], None]


def build(
    files: list[rf2.ReleaseFile], dest: Path, *, progress: Progress | None = None
) -> dict[str, Any]:
    """Import ``files`` (from ``rf2.find_files``) into the store folder ``dest``.

    Returns the store's metadata. Raises ReleaseFormatError for a broken file; then nothing
    is left at ``dest`` or beside it.
    """
    step = progress or (lambda _msg: None)
    return Store.build(dest, lambda tmp: _build(files, tmp, step))


def _read_file(file: rf2.ReleaseFile) -> pa.Table:
    """One RF2 file, its texts checked for control characters (``hygiene.check_text``)."""
    table = rf2.read(file)
    hygiene.check_text(table, file)
    return table


def _concat(files: list[rf2.ReleaseFile], kind: str, step: Progress) -> pa.Table | None:
    tables = []
    for file in rf2.iter_kind(files, kind):
        step(f"reading {rf2.label(file)}")
        tables.append(_read_file(file))
    if not tables:
        return None
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowInvalid as exc:
        raise ReleaseFormatError(f"the {kind} files do not share their columns ({exc})") from exc


def _np(table: pa.Table, column: str) -> np.ndarray:
    return table.column(column).to_numpy()


def _empty(kind: str) -> pa.Table:
    """An empty table with the columns of an RF2 file kind."""
    return pa.table({name: pa.array([], rf2._type_of(name, kind)) for name in rf2.HEADERS[kind]})


def _read(files: list[rf2.ReleaseFile], kind: str, step: Progress) -> pa.Table:
    """Every file of a kind, concatenated (an empty table when there is none)."""
    table = _concat(files, kind, step)
    return _empty(kind) if table is None else table


def _active(table: pa.Table) -> pa.Table:
    return table.filter(pc.equal(table.column("active"), 1))


class _Rows:
    """Concept rows by SCTID: the sorted ids of the concept file."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids
        self.n = len(ids)

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """The rows of many ids (-1 where unknown), as int32."""
        n, ids = self.n, self.ids
        at = np.searchsorted(ids, values)
        at = np.minimum(at, max(n - 1, 0))
        found = ids[at] == values if n else np.zeros(len(values), dtype=bool)
        return np.where(found, at, -1).astype(np.int32)


def _build(files: list[rf2.ReleaseFile], out: Path, step: Progress) -> dict[str, Any]:
    concepts = _read_concepts(files, step)
    rows_of = _Rows(_np(concepts, "id"))
    step("descriptions")
    descriptions = _read_descriptions(files, step, rows_of)
    acceptability = _read_acceptability(files, step, descriptions)
    refsets_seen = sorted(set(_np(acceptability, "refset").tolist()))
    default_refset = (
        US_ENGLISH if US_ENGLISH in refsets_seen else (refsets_seen[0] if refsets_seen else None)
    )
    step("displays")
    concept_table = _concept_table(concepts, descriptions, acceptability, default_refset)
    write_table(concept_table, out / "concepts.arrow")
    write_table(_description_table(descriptions), out / "descriptions.arrow")
    write_table(acceptability, out / "acceptability.arrow")
    step("relationships")
    relationships = _write_relationships(files, step, rows_of, out)
    _write_concrete(files, step, rows_of, out)
    step("reference sets")
    refset_ids = _write_refsets(files, step, out)
    module, effective = _edition(files, step, concepts)
    return {
        "system": SCT,
        "module": str(module),
        "effectiveTime": str(effective),
        "version": f"{SCT}/{module}/version/{effective}",
        "concepts": rows_of.n,
        "activeConcepts": int(pc.sum(concept_table.column("active")).as_py() or 0),
        "descriptions": descriptions.num_rows,
        "relationships": relationships,
        "languageRefsets": refsets_seen,
        "defaultLanguageRefset": default_refset,
        "refsets": refset_ids,
        "sources": [rf2.label(f) for f in files],
    }


def _read_concepts(files: list[rf2.ReleaseFile], step: Progress) -> pa.Table:
    """The concept rows sorted by id (ReleaseFormatError for an id seen twice)."""
    concepts = _concat(files, "concept", step)
    assert concepts is not None  # find_files guarantees a concept file
    concepts = concepts.sort_by("id")
    ids = _np(concepts, "id")
    if len(ids) and np.any(ids[1:] == ids[:-1]):
        dup = int(ids[1:][ids[1:] == ids[:-1]][0])
        raise ReleaseFormatError(f"concept {dup} appears twice in the Snapshot concept file")
    return concepts


def _read_descriptions(files: list[rf2.ReleaseFile], step: Progress, rows_of: _Rows) -> pa.Table:
    """Descriptions and text definitions of known concepts, with their concept row
    (``concept``), sorted by concept row and id."""
    desc_tables = [t for t in (_concat(files, k, step) for k in ("description",)) if t is not None]
    textdefs = _concat(files, "textdefinition", step)
    if textdefs is not None:
        desc_tables.append(textdefs)
    descriptions = pa.concat_tables(desc_tables) if desc_tables else _empty("description")
    texts = [f for f in files if f.kind in ("description", "textdefinition")]
    descriptions = hygiene.unique(descriptions, "id", "description", texts)
    d_rows = rows_of(_np(descriptions, "conceptId"))
    descriptions = descriptions.append_column("concept", pa.array(d_rows, type=pa.int32()))
    descriptions = descriptions.filter(pc.greater_equal(descriptions.column("concept"), 0))
    return descriptions.sort_by([("concept", "ascending"), ("id", "ascending")])


def _read_acceptability(
    files: list[rf2.ReleaseFile], step: Progress, descriptions: pa.Table
) -> pa.Table:
    """The active language refset rows of known descriptions: description row, refset,
    acceptability, sorted by description row and refset."""
    d_ids = _np(descriptions, "id")
    order = np.argsort(d_ids, kind="stable")
    sorted_d_ids = d_ids[order]
    language = _concat(files, "language", step)
    if language is None:
        language = pa.table(
            {
                "referencedComponentId": pa.array([], pa.int64()),
                "refsetId": pa.array([], pa.int64()),
                "acceptabilityId": pa.array([], pa.int64()),
                "active": pa.array([], pa.int8()),
            }
        )
    language = _active(language)
    lang_desc = _np(language, "referencedComponentId")
    at = np.searchsorted(sorted_d_ids, lang_desc)
    at = np.minimum(at, max(len(sorted_d_ids) - 1, 0))
    ok = sorted_d_ids[at] == lang_desc if len(sorted_d_ids) else np.zeros(len(at), bool)
    lang_row = np.where(ok, order[at] if len(order) else 0, -1)
    acceptability = pa.table(
        {
            "description": pa.array(lang_row, pa.int32()),
            "refset": language.column("refsetId"),
            "acceptability": language.column("acceptabilityId"),
        }
    ).filter(pa.array(ok))
    return acceptability.sort_by([("description", "ascending"), ("refset", "ascending")])


def _concept_table(
    concepts: pa.Table, descriptions: pa.Table, acceptability: pa.Table, refset: int | None
) -> pa.Table:
    """The store's concept table: id, flags, module, time and the display and FSN."""
    display, fsn = _displays(concepts.num_rows, descriptions, acceptability, refset)
    return pa.table(
        {
            "id": concepts.column("id"),
            "active": pc.equal(concepts.column("active"), 1),
            "moduleId": concepts.column("moduleId"),
            "effectiveTime": concepts.column("effectiveTime"),
            "defined": pc.equal(concepts.column("definitionStatusId"), DEFINED),
            "display": display,
            "fsn": fsn,
        }
    )


def _description_table(descriptions: pa.Table) -> pa.Table:
    """The store's description table (by concept row)."""
    return pa.table(
        {
            "id": descriptions.column("id"),
            "concept": descriptions.column("concept"),
            "active": pc.equal(descriptions.column("active"), 1),
            "effectiveTime": descriptions.column("effectiveTime"),
            "moduleId": descriptions.column("moduleId"),
            "language": descriptions.column("languageCode"),
            "typeId": descriptions.column("typeId"),
            "term": descriptions.column("term"),
            "caseSignificanceId": descriptions.column("caseSignificanceId"),
        }
    )


def _write_relationships(
    files: list[rf2.ReleaseFile], step: Progress, rows_of: _Rows, out: Path
) -> int:
    """Write the active relationships (``rel_*``, sorted by source row and group) and the
    closure of the inferred is-a relationships; return how many relationships were kept."""
    rels = _read(files, "relationship", step)
    rels = _active(
        hygiene.unique(rels, "id", "relationship", list(rf2.iter_kind(files, "relationship")))
    )
    src = rows_of(_np(rels, "sourceId"))
    dst = rows_of(_np(rels, "destinationId"))
    typ = rows_of(_np(rels, "typeId"))
    keep = (src >= 0) & (typ >= 0)
    rel_order = np.lexsort((_np(rels, "relationshipGroup")[keep], src[keep]))
    rel = {
        "rel_src": src[keep][rel_order],
        "rel_dst": dst[keep][rel_order],
        "rel_type": typ[keep][rel_order],
        "rel_group": _np(rels, "relationshipGroup")[keep][rel_order].astype(np.int16),
        "rel_dst_id": _np(rels, "destinationId")[keep][rel_order],
        "rel_char": _np(rels, "characteristicTypeId")[keep][rel_order],
    }
    is_a = (_np(rels, "typeId") == IS_A) & (src >= 0) & (dst >= 0)
    step("transitive closure")
    closure = Closure.build(rows_of.n, src[is_a], dst[is_a])
    arrays: dict[str, np.ndarray] = {**rel, **closure.arrays()}
    arrays["rel_by_dst"] = np.argsort(arrays["rel_dst"], kind="stable").astype(np.int32)
    for name, array in arrays.items():
        np.save(out / f"{name}.npy", np.ascontiguousarray(array))
    return len(rel["rel_src"])


def _write_concrete(
    files: list[rf2.ReleaseFile], step: Progress, rows_of: _Rows, out: Path
) -> None:
    """Write the active concrete values (by source row and group), each with its number."""
    concrete = _read(files, "concrete", step)
    concrete = _active(
        hygiene.unique(concrete, "id", "concrete value", list(rf2.iter_kind(files, "concrete")))
    )
    values = concrete.column("value").to_pylist()
    write_table(
        pa.table(
            {
                "source": pa.array(rows_of(_np(concrete, "sourceId")), pa.int32()),
                "type": pa.array(rows_of(_np(concrete, "typeId")), pa.int32()),
                "typeId": concrete.column("typeId"),
                "group": concrete.column("relationshipGroup"),
                "value": pa.array(values, pa.string()),
                "number": pa.array([_number(v) for v in values], pa.float64()),
            }
        ).sort_by([("source", "ascending"), ("group", "ascending")]),
        out / "concrete.arrow",
    )


def _write_refsets(files: list[rf2.ReleaseFile], step: Progress, out: Path) -> list[int]:
    """Write the reference sets (active members, historical associations, map rows, the
    MRCM domains and ranges); return the ids of the refsets that have rows."""
    members = []
    map_rows = []
    for file in rf2.iter_kind(files, "refset"):
        step(f"reading {rf2.label(file)}")
        table = _read_file(file)
        members.append(_active(table).select(["refsetId", "referencedComponentId"]))
        if "mapTarget" in table.column_names:
            map_rows.append(_map_rows(table, rf2.label(file)))
    for kind in ("association", "mrcm_domain", "mrcm_range"):
        for file in rf2.iter_kind(files, kind):
            members.append(_active(_read_file(file)).select(["refsetId", "referencedComponentId"]))
    member_table = (
        pa.concat_tables(members)
        if members
        else pa.table(
            {
                "refsetId": pa.array([], pa.int64()),
                "referencedComponentId": pa.array([], pa.int64()),
            }
        )
    )
    write_table(
        member_table.sort_by([("refsetId", "ascending"), ("referencedComponentId", "ascending")]),
        out / "members.arrow",
    )
    assoc = _read(files, "association", step)
    _write_associations(assoc, out)
    _write_maps(map_rows, out)
    for kind in ("mrcm_domain", "mrcm_range"):
        write_table(_active(_read(files, kind, step)), out / f"{kind}.arrow")
    return sorted(
        set(_np(member_table, "refsetId").tolist()) | set(_np(assoc, "refsetId").tolist())
    )


def _write_associations(assoc: pa.Table, out: Path) -> None:
    """Write the historical association rows (every row, with its active flag)."""
    write_table(
        pa.table(
            {
                "source": assoc.column("referencedComponentId"),
                "target": assoc.column("targetComponentId"),
                "refsetId": assoc.column("refsetId"),
                "active": pc.equal(assoc.column("active"), 1),
            }
        ).sort_by([("source", "ascending"), ("refsetId", "ascending")]),
        out / "associations.arrow",
    )


def _write_maps(map_rows: list[pa.Table], out: Path) -> None:
    """Write the rows of every map refset, by refset, source, group and priority."""
    write_table(
        (pa.concat_tables(map_rows) if map_rows else _map_rows(None, "")).sort_by(
            [
                ("refsetId", "ascending"),
                ("source", "ascending"),
                ("group", "ascending"),
                ("priority", "ascending"),
            ]
        ),
        out / "maps.arrow",
    )


_MAP_COLUMNS = {
    "refsetId": pa.int64(),
    "source": pa.int64(),
    "target": pa.string(),
    "group": pa.int32(),
    "priority": pa.int32(),
    "rule": pa.string(),
    "advice": pa.string(),
    "correlation": pa.int64(),
    "active": pa.bool_(),
}


def _map_rows(table: pa.Table | None, label: str) -> pa.Table:
    """The rows of a map refset (simple, complex or extended: any refset with a
    ``mapTarget``) in one shape; the columns a simple map lacks are 1, 1, "", "", 0."""
    if table is None:
        return pa.table({k: pa.array([], t) for k, t in _MAP_COLUMNS.items()})
    n = table.num_rows
    names = {
        "group": "mapGroup",
        "priority": "mapPriority",
        "rule": "mapRule",
        "advice": "mapAdvice",
        "correlation": "correlationId",
    }
    defaults = {"group": 1, "priority": 1, "rule": "", "advice": "", "correlation": 0}
    columns: dict[str, Any] = {
        "refsetId": table.column("refsetId"),
        "source": table.column("referencedComponentId"),
        "target": table.column("mapTarget"),
    }
    for key, rf2_name in names.items():
        kind = _MAP_COLUMNS[key]
        if rf2_name not in table.column_names:
            columns[key] = pa.array([defaults[key]] * n, kind)
            continue
        try:
            columns[key] = pc.cast(table.column(rf2_name), kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ReleaseFormatError(f"{rf2_name} must be a number ({exc})", file=label) from exc
    columns["active"] = pc.equal(table.column("active"), 1)
    return pa.table({k: columns[k] for k in _MAP_COLUMNS}).cast(pa.schema(_MAP_COLUMNS))


def _number(value: str | None) -> float:
    if value and value.startswith("#"):
        try:
            return float(value[1:])
        except ValueError:
            return float("nan")
    return float("nan")


def _displays(
    n: int, descriptions: pa.Table, acceptability: pa.Table, refset: int | None
) -> tuple[pa.Array, pa.Array]:
    """The display (preferred synonym) and FSN of every concept row, for one language refset.

    Preferred in the refset wins; then any active description of that type; else null.
    """
    concept = _np(descriptions, "concept").astype(np.int64)
    active = _np(descriptions, "active") == 1
    typ = _np(descriptions, "typeId")
    preferred = np.zeros(len(concept), dtype=bool)
    if refset is not None and acceptability.num_rows:
        acc = acceptability.filter(
            pc.and_(
                pc.equal(acceptability.column("refset"), refset),
                pc.equal(acceptability.column("acceptability"), PREFERRED),
            )
        )
        preferred[_np(acc, "description")] = True
    terms = descriptions.column("term")
    out = []
    for wanted in (SYNONYM, FSN):
        pick = np.full(n, -1, dtype=np.int64)
        for mask in (active & (typ == wanted), active & (typ == wanted) & preferred):
            rows = np.flatnonzero(mask)
            pick[concept[rows]] = rows
        has = pick >= 0
        taken = terms.take(pa.array(np.where(has, pick, 0))) if len(concept) else None
        if taken is None:
            out.append(pa.nulls(n, pa.string()))
        else:
            out.append(pc.if_else(pa.array(has), taken, pa.scalar(None, pa.string())))
    display, fsn = out
    display = pc.coalesce(display, fsn)
    return display, fsn


def _edition(files: list[rf2.ReleaseFile], step: Progress, concepts: pa.Table) -> tuple[int, int]:
    """The edition's module and effective time, from the module dependency refset.

    Among the modules that own concepts, the edition module is the one no other such module
    depends on (the most concepts decides a tie or a cycle); its effective time is the
    latest ``sourceEffectiveTime`` of its dependencies. Without a module dependency refset:
    the module owning most concepts and the latest concept effective time.
    """
    latest = int(pc.max(concepts.column("effectiveTime")).as_py() or 0)
    modules, counts = np.unique(_np(concepts, "moduleId"), return_counts=True)
    owned = dict(zip(modules.tolist(), counts.tolist(), strict=True))
    biggest = max(owned, key=lambda m: owned[m]) if owned else CORE_MODULE
    deps = _concat(files, "dependency", step)
    if deps is None or deps.num_rows == 0:
        return int(biggest), latest
    deps = deps.filter(pc.equal(deps.column("active"), 1))
    src = _np(deps, "moduleId")
    dst = _np(deps, "referencedComponentId")
    edges = [
        (int(a), int(b))
        for a, b in zip(src.tolist(), dst.tolist(), strict=True)
        if a != b and a in owned and b in owned
    ]
    targets = {b for _a, b in edges}
    top = [m for m in owned if m not in targets]
    module = max(top, key=lambda m: owned[m]) if top else biggest
    times = _np(deps, "sourceEffectiveTime")[src == module]
    return int(module), int(times.max()) if len(times) else latest
