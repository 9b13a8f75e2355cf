"""An RxNorm store: the release's RxNorm rows imported once into Arrow files, then
memory-mapped.

Concepts are the RXCUIs that have an atom with ``SAB=RXNORM`` in RXNCONSO, plus the retired
RXCUIs of RXNCUI (inactive, with what replaced them), one row each, sorted by RXCUI. Files:

- ``concepts.arrow``: rxcui, tty (the preferred atom's term type), display (its string),
  active, retired, replaced_by (the RXCUIs a retired one was remapped to, space-separated)
- ``atoms.arrow``: every RXNORM atom (row, tty, str, suppress), sorted by concept row
- ``rels.arrow``: the RXNORM relationships (row, rela, target): ``row`` *rela* ``target``,
  read as NLM defines RXNREL (RXCUI2 has RELA to RXCUI1), sorted by concept row
- ``attrs.arrow``: the RXNORM attributes of RXNSAT (row, atn, atv), sorted by concept row

The display is the atom of the best term type (``TTY_ORDER``: the normalized names IN, PIN,
MIN, BN, SCD, SBD … before PSN and the synonyms SY, TMSY), an unsuppressed atom before a
suppressed one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import ReleaseFormatError
from workbench.releases import archive, hygiene
from workbench.releases.rxnorm import rrf
from workbench.releases.storage import ColumnarStore, write_table

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
FORMAT = 1
TTY_ORDER = (
    "IN",
    "PIN",
    "MIN",
    "BN",
    "SCD",
    "SBD",
    "GPCK",
    "BPCK",
    "SCDC",
    "SBDC",
    "SCDF",
    "SBDF",
    "SCDFP",
    "SBDFP",
    "SCDG",
    "SBDG",
    "SCDGP",
    "DF",
    "DFG",
    "ET",
    "PSN",
    "SY",
    "TMSY",
)
_TABLES = ("concepts", "atoms", "rels", "attrs")
Progress = Callable[[str], None]


# --- import --------------------------------------------------------------------------------


def build(release: rrf.Release, dest: Path, *, progress: Progress | None = None) -> None:
    """Import a release into the store folder ``dest`` (atomically: on ReleaseFormatError
    nothing is left behind)."""
    step = progress or (lambda _msg: None)
    Store.build(dest, lambda tmp: _build(release, tmp, step))


def _rxnorm_rows(
    file: archive.ReleaseFile,
    required: tuple[str, ...],
    optional: tuple[str, ...],
    step: Progress,
) -> pa.Table:
    """The rows of a file with SAB=RXNORM; every row's RXCUI columns are checked (digits;
    ``optional`` ones may be empty), naming the file and line of a broken one."""
    step(f"reading {Path(file.name).name}")
    kept = []
    for line, batch in rrf.read(file):
        for name in required:
            rrf.require_digits(batch.column(name), name, file, line)
        for name in optional:
            column = batch.column(name)
            filled = pc.if_else(pc.equal(column, ""), "0", column)
            rrf.require_digits(filled, name, file, line)
        mine = pc.equal(batch.column("SAB"), "RXNORM")
        batch = batch.filter(mine)
        at = np.flatnonzero(mine.to_numpy(zero_copy_only=False))
        hygiene.check_text(
            pa.Table.from_batches([batch]),
            file,
            line_of=_line_of(line, at),
        )
        kept.append(batch)
    if not kept:
        return pa.table({n: pa.array([], pa.string()) for n in rrf.KEEP[file.kind]})
    return pa.Table.from_batches(kept)


def _line_of(first: int, at: npt.NDArray[np.intp]) -> Callable[[int], int]:
    """The line of a kept row: ``at`` holds the rows kept of a batch starting on ``first``."""
    return lambda row: first + int(at[row])


def _ids(column: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.int64]:
    filled = pc.if_else(pc.equal(column, ""), "-1", column)
    return np.asarray(pc.cast(filled, pa.int64()).to_numpy(zero_copy_only=False))


def _build(release: rrf.Release, tmp: Path, step: Progress) -> dict[str, Any]:
    files = release.files
    atoms, rxcui, rank = _read_atoms(files["RXNCONSO"], step)
    first = np.flatnonzero(np.r_[True, rxcui[1:] != rxcui[:-1]])
    current = rxcui[first]
    replaced = _read_retired(files["RXNCUI"], step)
    known = set(current.tolist())
    retired = np.array(sorted(r for r in replaced if r not in known), dtype=np.int64)
    ids = np.concatenate([current, retired])
    sort = np.argsort(ids, kind="stable")
    ids = ids[sort]
    concepts = _concept_table(
        ids, sort, atoms.take(pa.array(first)), rank[first] < 100, len(retired), replaced
    )
    rows_of = _Rows(ids)
    atoms_table = pa.table(
        {
            "row": pa.array(rows_of(rxcui).astype(np.int32)),
            "tty": atoms.column("TTY"),
            "str": atoms.column("STR"),
            "suppress": atoms.column("SUPPRESS"),
        }
    )
    rels = _rels_table(files["RXNREL"], step, rows_of)
    attrs = _attrs_table(files["RXNSAT"], step, rows_of)
    step("writing the store")
    for name, table in (
        ("concepts", concepts),
        ("atoms", atoms_table),
        ("rels", rels),
        ("attrs", attrs),
    ):
        write_table(table, tmp / f"{name}.arrow")
    return {
        "version": release.version,
        "concepts": len(ids),
        "retired": len(retired),
        "relas": sorted(set(rels.column("rela").to_pylist())),
        "atns": sorted(set(attrs.column("atn").to_pylist())),
        "ttys": sorted(set(atoms.column("TTY").to_pylist())),
    }


class _Rows:
    """Concept rows by RXCUI over the sorted ids."""

    def __init__(self, ids: npt.NDArray[np.int64]) -> None:
        self.ids = ids

    def __call__(self, values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The rows of many RXCUIs (-1 where unknown)."""
        ids = self.ids
        at = np.minimum(np.searchsorted(ids, values), len(ids) - 1)
        return np.where(ids[at] == values, at, -1)


def _read_atoms(
    file: archive.ReleaseFile, step: Progress
) -> tuple[pa.Table, npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """The RXNORM atoms of RXNCONSO sorted by RXCUI and then rank (the best term type
    first, a suppressed atom 100 ranks lower), with their RXCUIs and ranks in that order.
    ReleaseFormatError when there is none."""
    conso = _rxnorm_rows(file, ("RXCUI",), (), step)
    if conso.num_rows == 0:
        raise ReleaseFormatError(
            "no RxNorm concepts (no row with SAB=RXNORM)", file=archive.label(file)
        )
    rxcui = _ids(conso.column("RXCUI"))
    tty = conso.column("TTY").to_numpy(zero_copy_only=False).astype(object)
    rank_of = {t: i for i, t in enumerate(TTY_ORDER)}
    suppressed = conso.column("SUPPRESS").to_numpy(zero_copy_only=False) != "N"
    rank = np.fromiter((rank_of.get(t, len(TTY_ORDER)) for t in tty), np.int32, len(tty))
    rank = rank + suppressed.astype(np.int32) * 100
    order = np.lexsort((rank, rxcui))
    return conso.take(pa.array(order)), rxcui[order], rank[order]


def _read_retired(file: archive.ReleaseFile, step: Progress) -> dict[int, list[str]]:
    """The retired RXCUIs of RXNCUI (in the order first met) and the RXCUIs each was
    remapped to (without itself or repeats)."""
    step("reading RXNCUI.RRF")
    replaced: dict[int, list[str]] = {}
    for line, batch in rrf.read(file):
        rrf.require_digits(batch.column("CUI1"), "CUI1", file, line)
        cui2 = batch.column("CUI2")
        filled = pc.if_else(pc.equal(cui2, ""), "0", cui2)
        rrf.require_digits(filled, "CUI2", file, line)
        for cui1, cui2 in zip(
            batch.column("CUI1").to_pylist(), batch.column("CUI2").to_pylist(), strict=True
        ):
            targets = replaced.setdefault(int(cui1), [])
            if cui2 and cui2 != cui1 and cui2 not in targets:
                targets.append(cui2)
    return replaced


def _concept_table(
    ids: npt.NDArray[np.int64],
    sort: npt.NDArray[np.int64],
    preferred: pa.Table,
    active: npt.NDArray[np.bool_],
    n_retired: int,
    replaced: dict[int, list[str]],
) -> pa.Table:
    """The concept table: the current RXCUIs (their preferred atoms and active flags) then
    the retired ones, put in RXCUI order by ``sort``."""
    n_current = preferred.num_rows
    display = pa.concat_arrays(
        [preferred.column("STR").combine_chunks(), pa.nulls(n_retired, pa.string())]
    ).take(pa.array(sort))
    ttys = pa.concat_arrays(
        [preferred.column("TTY").combine_chunks(), pa.array([""] * n_retired, pa.string())]
    ).take(pa.array(sort))
    flags = np.concatenate([active, np.zeros(n_retired, bool)])[sort]
    replaced_by = [" ".join(replaced.get(int(i), [])) or None for i in ids]
    return pa.table(
        {
            "rxcui": pa.array(ids, pa.int64()),
            "tty": ttys,
            "display": display,
            "active": pa.array(flags),
            "retired": pa.array(sort >= n_current),
            "replaced_by": pa.array(replaced_by, pa.string()),
        }
    )


def _rels_table(file: archive.ReleaseFile, step: Progress, rows_of: _Rows) -> pa.Table:
    """The RXNORM relationships with a RELA between two RXCUIs, by source concept row
    (RXCUI2 has RELA to RXCUI1)."""
    rel = _rxnorm_rows(file, (), ("RXCUI1", "RXCUI2"), step)
    rel = rel.filter(
        pc.and_(
            pc.and_(pc.not_equal(rel.column("RXCUI1"), ""), pc.not_equal(rel.column("RXCUI2"), "")),
            pc.not_equal(rel.column("RELA"), ""),
        )
    )
    src = rows_of(_ids(rel.column("RXCUI2")))
    keep = src >= 0
    rel = rel.filter(pa.array(keep))
    src = src[keep]
    order = np.argsort(src, kind="stable")
    return pa.table(
        {
            "row": pa.array(src[order].astype(np.int32)),
            "rela": rel.column("RELA").take(pa.array(order)),
            "target": pa.array(_ids(rel.column("RXCUI1"))[order], pa.int64()),
        }
    )


def _attrs_table(file: archive.ReleaseFile, step: Progress, rows_of: _Rows) -> pa.Table:
    """The RXNORM attributes of known RXCUIs, by concept row."""
    sat = _rxnorm_rows(file, (), ("RXCUI",), step)
    sat = sat.filter(pc.not_equal(sat.column("RXCUI"), ""))
    sat_rows = rows_of(_ids(sat.column("RXCUI")))
    keep = sat_rows >= 0
    sat = sat.filter(pa.array(keep))
    sat_rows = sat_rows[keep]
    order = np.argsort(sat_rows, kind="stable")
    return pa.table(
        {
            "row": pa.array(sat_rows[order].astype(np.int32)),
            "atn": sat.column("ATN").take(pa.array(order)),
            "atv": sat.column("ATV").take(pa.array(order)),
        }
    )


# --- the opened store ----------------------------------------------------------------------


class Store(ColumnarStore):
    """The opened store: its tables, mapped, and row look-ups by RXCUI."""

    FORMAT = FORMAT
    TABLES = _TABLES
    CODE = "rxcui"
    NUMERIC = True
    LONG: ClassVar[dict[str, str]] = {"atoms": "row", "rels": "row", "attrs": "row"}
