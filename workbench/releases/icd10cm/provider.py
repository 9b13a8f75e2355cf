"""The ICD-10-CM code system provider: the store's rows as a CodeSystemIndex (concepts by code,
the hierarchy, ``billable``, ``kind``, groupers not selectable), plus the implicit value sets
(``?fhir_vs`` for all codes, ``?fhir_vs=isa/CODE`` for a subtree) and frames straight from the
store's columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench import collector
from workbench.releases.icd10cm import tabular
from workbench.releases.icd10cm.store import open_tables
from workbench.terminology.codesystem import CodeSystemIndex, Concept

SYSTEM = tabular.SYSTEM
INCLUSION_USE = {
    "system": "http://snomed.info/sct",
    "code": "900000000000013009",
    "display": "Synonym",
}


class Icd10cmProvider(CodeSystemIndex):
    """ICD-10-CM concepts by code, made from a store folder (``store.build``)."""

    def __init__(self, folder: str | Path, *, version: str | None = None) -> None:
        meta, concepts, designations = open_tables(Path(folder))
        self.folder = Path(folder)
        self._tables = (concepts, designations)
        header: dict[str, Any] = {
            "resourceType": "CodeSystem",
            "url": SYSTEM,
            "version": version or meta.get("version"),
            "name": "ICD10CM",
            "title": "ICD-10-CM",
            "status": "active",
            "publisher": "Centers for Medicare & Medicaid Services (CMS)",
            "caseSensitive": True,
            "hierarchyMeaning": "is-a",
            "content": "not-present",
            "count": concepts.num_rows,
            "property": tabular.properties(),
        }
        super().__init__(header)
        self.content = "complete"  # the provider knows every code (the resource lists none)
        with collector.paused():  # ~500k small containers, and no cycles
            self._fill(concepts, designations)

    def _fill(self, concepts: pa.Table, designations: pa.Table) -> None:
        kinds = concepts.column("kind").combine_chunks()
        if pa.types.is_dictionary(kinds.type):  # each kind's text once, not per row
            names = kinds.dictionary.to_pylist()
            kind_of = [names[i] for i in kinds.indices.to_numpy(zero_copy_only=False)]
        else:
            kind_of = kinds.to_pylist()
        cols = {
            name: concepts.column(name).to_pylist()
            for name in ("code", "display", "parent", "abstract", "billable")
        }
        cols["kind"] = kind_of
        terms: dict[str, list[dict[str, Any]]] = {}
        for code, value in zip(
            designations.column("code").to_pylist(),
            designations.column("value").to_pylist(),
            strict=True,
        ):
            terms.setdefault(code, []).append(
                {"language": "en", "use": INCLUSION_USE, "value": value}
            )
        made = self.concepts
        keys = {"notSelectable": "valueBoolean", "billable": "valueBoolean", "kind": "valueCode"}
        for order, (code, display, parent, kind, abstract, billable) in enumerate(
            zip(
                cols["code"],
                cols["display"],
                cols["parent"],
                cols["kind"],
                cols["abstract"],
                cols["billable"],
                strict=True,
            )
        ):
            made[code] = Concept(
                code=code,
                display=display,
                definition=None,
                order=order,
                designations=terms.get(code, []),
                properties={
                    "notSelectable": [abstract],
                    "billable": [billable],
                    "kind": [kind],
                },
                value_keys=dict(keys),
                parents=[parent] if parent else [],
                abstract=abstract,
            )
        for code, parent in zip(cols["code"], cols["parent"], strict=True):
            if parent:
                made[parent].children.append(code)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its store folder and version (reopened on unpickling)."""
        return {"folder": str(self.folder), "version": self.version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["folder"], version=state["version"])  # type: ignore[misc]

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
        t = self._tables[0]
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

    def designations_frame(self) -> pd.DataFrame:
        """Every inclusion term (code, language, use_system, use_code, value)."""
        t = self._tables[1]
        n = t.num_rows
        return pd.DataFrame(
            {
                "code": t.column("code").to_pandas(),
                "language": pd.Series(["en"] * n, dtype=object),
                "use_system": pd.Series([INCLUSION_USE["system"]] * n, dtype=object),
                "use_code": pd.Series([INCLUSION_USE["code"]] * n, dtype=object),
                "value": t.column("value").to_pandas(),
            }
        )
