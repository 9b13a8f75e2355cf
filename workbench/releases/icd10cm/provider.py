"""The ICD-10-CM code system provider: the store's rows as a CodeSystemIndex (concepts by
code, made on demand; the hierarchy, ``billable``, ``kind``, groupers not selectable), plus
the implicit value sets (``?fhir_vs`` for all codes, ``?fhir_vs=isa/CODE`` for a subtree) and
frames straight from the store's columns."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench import collector
from workbench.releases.icd10cm import tabular
from workbench.releases.icd10cm.store import Store
from workbench.terminology.codesystem import CodeSystemIndex, Concept
from workbench.terminology.provider import Described

SYSTEM = tabular.SYSTEM
ROW_COLUMNS = ("code", "display", "parent", "abstract", "billable", "kind")
INCLUSION_USE = {
    "system": "http://snomed.info/sct",
    "code": "900000000000013009",
    "display": "Synonym",
}


class Icd10cmProvider(CodeSystemIndex):
    """ICD-10-CM concepts by code, made on demand from a store (``store.build``)."""

    #: its concepts are active, with no status (a tabular list has neither), and their
    #: display is the store's: an expansion entry says all that validation says
    plain_entries = True

    def __init__(self, store: Store, *, version: str | None = None) -> None:
        self.store = store
        self.folder = store.path
        header: dict[str, Any] = {
            "resourceType": "CodeSystem",
            "url": SYSTEM,
            "version": version or store.meta.get("version"),
            "name": "ICD10CM",
            "title": "ICD-10-CM",
            "status": "active",
            "publisher": "Centers for Medicare & Medicaid Services (CMS)",
            "caseSensitive": True,
            "hierarchyMeaning": "is-a",
            "content": "not-present",
            "count": store.n,
            "property": tabular.properties(),
        }
        super().__init__(header)
        self.content = "complete"  # the provider knows every code (the resource lists none)
        # the concepts, made from the store's rows when first asked for
        self._table = _Concepts(store)
        self.concepts = self._table  # type: ignore[assignment]

    def describe(self, codes: Sequence[str]) -> Described:
        """Known, inactive (never: a tabular list has no inactive codes) and display of many
        codes at once, from the store's columns (bulk validation of its non-members)."""
        return self._table.describe(codes)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its store (its folder) and version (reopened on unpickling)."""
        return {"store": self.store, "version": self.version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["store"], version=state["version"])  # type: ignore[misc]

    def implicit_valueset(self, url: str) -> dict[str, Any] | None:
        """The implicit ValueSet for ``url`` (None when it is not one of this system's)."""
        base, _, query = url.partition("?")
        if base != SYSTEM:
            return None
        include: dict[str, Any] = {"system": SYSTEM}
        if query == "fhir_vs":
            pass
        elif query.startswith("fhir_vs=isa/"):
            code = query[len("fhir_vs=isa/") :]
            include["filter"] = [{"property": "concept", "op": "is-a", "value": code}]
        else:
            return None
        return {
            "resourceType": "ValueSet",
            "url": url,
            "version": self.version,
            "status": "active",
            "compose": {"include": [include]},
        }

    def concepts_frame(self) -> pd.DataFrame:
        """Every code (code, display, parents, abstract, inactive, status, then billable and
        kind), from the store's columns."""
        t = self.store.tables["concepts"]
        n = t.num_rows
        parents = [[p] if p else [] for p in t.column("parent").to_pylist()]
        return pd.DataFrame(
            {
                "code": t.column("code").to_pandas(),
                "display": t.column("display").to_pandas(),
                "definition": pd.Series([None] * n, dtype=object),
                "parents": pd.Series(parents, dtype=object),
                "abstract": t.column("abstract").to_numpy(),
                "inactive": np.zeros(n, dtype=bool),
                "status": pd.Series([None] * n, dtype=object),
                "billable": t.column("billable").to_numpy(),
                "kind": t.column("kind").to_pandas().astype(object),
            }
        )

    def concept_columns(self) -> pa.Table:
        """Code, display, abstract and inactive (never) of every code, straight from the
        store's columns (nothing converted)."""
        t = self.store.tables["concepts"]
        return pa.table(
            {
                "code": t.column("code"),
                "display": t.column("display"),
                "abstract": t.column("abstract"),
                "inactive": pa.array(np.zeros(t.num_rows, dtype=bool)),
            }
        )

    def parents_column(self) -> pa.Array:
        """Each code's one parent (empty for a chapter), straight from the store's column."""
        return pc.fill_null(self.store.tables["concepts"].column("parent"), "")

    def designations_frame(self) -> pd.DataFrame:
        """Every inclusion term (code, language, use_system, use_code, value)."""
        t = self.store.tables["designations"]
        n = t.num_rows
        return pd.DataFrame(
            {
                "code": self.store.codes.take(t.column("row")).to_pandas(),
                "language": pd.Series(["en"] * n, dtype=object),
                "use_system": pd.Series([INCLUSION_USE["system"]] * n, dtype=object),
                "use_code": pd.Series([INCLUSION_USE["code"]] * n, dtype=object),
                "value": t.column("value").to_pandas(),
            }
        )


class _Concepts(Mapping[str, Concept]):
    """The concepts by code, made from the store's rows as they are asked for and kept
    (nothing is read when the store opens; a look-up reads the code column alone, into the
    store's row-by-code mapping; the other columns become Python lists when the first
    concept is made)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._made: dict[str, Concept] = {}

    @cached_property
    def _columns(self) -> dict[str, Any]:
        t = self.store.tables["concepts"]
        kinds = t.column("kind").combine_chunks()
        names = kinds.dictionary.to_pylist()  # each kind's text once, not per row
        designations = self.store.tables["designations"]
        starts = np.searchsorted(
            self.store.column_np("designations", "row"), np.arange(self.store.n + 1)
        )
        with collector.paused():  # a few hundred thousand strings, no cycles
            columns: dict[str, Any] = {
                name: t.column(name).to_pylist()
                for name in ("code", "display", "parent", "abstract", "billable")
            }
            columns["kind"] = [names[i] for i in kinds.indices.to_numpy(zero_copy_only=False)]
            columns["terms"] = designations.column("value").to_pylist()
        columns["starts"] = starts.tolist()
        return columns

    @property
    def _rows(self) -> dict[str, int]:
        """Row by code (the store's, made from the code column alone on first use)."""
        return self.store.index

    def describe(self, codes: Sequence[str]) -> Described:
        """Known, inactive and display of many codes (``CodeSystemProvider.describe``),
        the displays read from the store's column for the known ones only."""
        rows = self._rows
        found = np.fromiter(
            (rows.get(c, -1) if isinstance(c, str) else -1 for c in codes),
            dtype=np.int64,
            count=len(codes),
        )
        known = found >= 0
        shown: list[str | None] = [None] * len(found)
        for at, display in zip(
            np.flatnonzero(known).tolist(), self.store.column("display", found[known]), strict=True
        ):
            shown[at] = display
        return known, np.zeros(len(found), dtype=bool), shown

    def _make(self, row: int, children: list[str] | None = None) -> Concept:
        """The concept of a row: from the columns' lists once they are made (``_all``),
        else from the store's row (a few concepts need not convert every column)."""
        if "_columns" in self.__dict__:
            cols = self._columns
            values = {name: cols[name][row] for name in ROW_COLUMNS}
            terms = cols["terms"][cols["starts"][row] : cols["starts"][row + 1]]
            if children is None:
                children = [cols["code"][c] for c in self.store.closure.children[row].tolist()]
        else:
            t = self.store.tables["concepts"]
            values = {name: t.column(name)[row].as_py() for name in ROW_COLUMNS}
            terms = self.store.rows_of("designations", row).column("value").to_pylist()
            if children is None:
                below = self.store.closure.children[row]
                children = self.store.codes.take(pa.array(below, type=pa.int64())).to_pylist()
        code, parent, abstract = values["code"], values["parent"], values["abstract"]
        return Concept(
            code=code,
            display=values["display"],
            definition=None,
            order=row,
            designations=[{"language": "en", "use": INCLUSION_USE, "value": t} for t in terms],
            properties={
                "notSelectable": [abstract],
                "billable": [values["billable"]],
                "kind": [values["kind"]],
            },
            value_keys={
                "notSelectable": "valueBoolean",
                "billable": "valueBoolean",
                "kind": "valueCode",
            },
            parents=[parent] if parent else [],
            children=children,
            abstract=abstract,
        )

    @cached_property
    def _all(self) -> dict[str, Concept]:
        """Every concept, in row order, made at once (when a call goes through them all)."""
        codes = self._columns["code"]
        children = self.store.closure.children
        offsets, rows = children.offsets.tolist(), children.values.tolist()
        made = self._made
        with collector.paused():  # ~500k small containers, and no cycles
            for row, code in enumerate(codes):
                if code not in made:
                    below = [codes[c] for c in rows[offsets[row] : offsets[row + 1]]]
                    made.setdefault(code, self._make(row, below))
            return {code: made[code] for code in codes}

    def values(self) -> ValuesView[Concept]:
        """Every concept, in row order."""
        return self._all.values()

    def items(self) -> ItemsView[str, Concept]:
        """Every (code, concept), in row order."""
        return self._all.items()

    def get(self, code: str, default: Any = None) -> Concept | Any:
        """The concept of a code, or ``default``."""
        found = self._made.get(code) if isinstance(code, str) else None
        if found is None:
            row = self._rows.get(code, -1) if isinstance(code, str) else -1
            if row < 0:
                return default
            found = self._made.setdefault(code, self._make(row))
        return found

    def __getitem__(self, code: str) -> Concept:
        found = self.get(code)
        if found is None:
            raise KeyError(code)
        return found

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and (code in self._made or code in self._rows)

    def __len__(self) -> int:
        return self.store.n

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns["code"])
