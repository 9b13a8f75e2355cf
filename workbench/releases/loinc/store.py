"""A LOINC store folder, opened by memory-mapping its Arrow and numpy files.

Files: ``concepts.arrow`` (code, kind, display, status, inactive; rows sorted by code),
``properties.arrow`` and ``designations.arrow`` (long form, sorted by concept row),
``answers.arrow`` (each answer list's answers in order), ``answer_links.arrow`` (terms and
their answer lists) and the closure of the component hierarchy (``parents``, ``children``,
``up``, ``down`` as CSR arrays).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from workbench.releases import storage
from workbench.releases.closure import FILES as CLOSURE_FILES
from workbench.releases.closure import Closure

LOINC = "http://loinc.org"
FORMAT = 1
#: What a concept row is.
KINDS = ("term", "part", "answer", "answer-list", "group")
#: The designation use of a fully specified name (FHIR's usual SNOMED CT code for it).
FSN = "900000000000003001"
#: Properties whose values are Codings (LOINC part, answer list or term codes).
CODING_PROPERTIES = (
    "COMPONENT",
    "PROPERTY",
    "TIME_ASPCT",
    "SYSTEM",
    "SCALE_TYP",
    "METHOD_TYP",
    "answer-list",
    "MAP_TO",
)
#: The order properties are given in (others follow, as they come).
PROPERTY_ORDER = (
    *CODING_PROPERTIES[:6],
    "CLASS",
    "CLASSTYPE",
    "STATUS",
    "ORDER_OBS",
    "answer-list",
    "MAP_TO",
)
_TABLES = ("concepts", "properties", "designations", "answers", "answer_links")
FILES = (*(f"{name}.arrow" for name in _TABLES), *CLOSURE_FILES)


def is_store(path: Path) -> bool:
    """True when ``path`` holds a complete store of this format."""
    return storage.is_store(path, FORMAT)


class Store:
    """The opened store: tables mapped, rows found by code."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.meta, self.tables = storage.open_store(self.path, FILES, _TABLES)
        self.closure = Closure.open(self.path)
        self.n = self.tables["concepts"].num_rows

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its folder (Dask ships code systems to workers, which reopen it)."""
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    # --- concepts ---------------------------------------------------------------------

    @cached_property
    def codes(self) -> pa.Array:
        """Every code, in row order (sorted)."""
        return self.tables["concepts"].column("code").combine_chunks()

    @cached_property
    def index(self) -> dict[str, int]:
        """Row by code."""
        return {code: row for row, code in enumerate(self.codes.to_pylist())}

    def row(self, code: str) -> int:
        """The row of a code (LOINC codes are case-insensitive: ``lp…`` finds ``LP…``), -1
        when there is none."""
        found = self.index.get(code)
        if found is None:
            found = self.index.get(code.upper(), -1)
        return found

    @cached_property
    def inactive(self) -> npt.NDArray[np.bool_]:
        """The inactive flag of every row."""
        return self.tables["concepts"].column("inactive").to_numpy(zero_copy_only=False)

    @cached_property
    def kind(self) -> npt.NDArray[np.int8]:
        """The kind of every row (an index into ``KINDS``)."""
        return self.tables["concepts"].column("kind").to_numpy()

    def value(self, column: str, row: int) -> Any:
        """One concept column's value at a row."""
        return self.tables["concepts"].column(column)[row].as_py()

    def column(self, column: str, rows: npt.NDArray[np.integer]) -> list[Any]:
        """A concept column's values at many rows."""
        return self.tables["concepts"].column(column).take(pa.array(rows)).to_pylist()

    # --- long tables by row -----------------------------------------------------------

    @cached_property
    def _starts(self) -> dict[str, np.ndarray]:
        return {
            name: self.tables[name].column(key).to_numpy()
            for name, key in (
                ("properties", "row"),
                ("designations", "row"),
                ("answers", "list"),
                ("answer_links", "term"),
            )
        }

    def rows_of(self, table: str, row: int) -> pa.Table:
        """The rows of a long table (properties, designations, answers, answer_links) that
        belong to one concept row."""
        keys = self._starts[table]
        lo, hi = np.searchsorted(keys, [row, row + 1])
        return self.tables[table].slice(int(lo), int(hi - lo))
