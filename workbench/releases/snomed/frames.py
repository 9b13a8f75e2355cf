"""A SNOMED CT release as pandas frames, built column-wise from the store (no Python object
per concept): every concept, every description, every historical association row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.releases.snomed.ecl_eval import DEFINITION, FSN, SYNONYM
from workbench.releases.snomed.store import SCT, Store

__all__ = ["USES", "USE_SYSTEM", "associations", "concepts", "designations"]

#: The description types, as designation uses (displays of the ``use`` Coding).
USES = {
    FSN: "Fully specified name",
    SYNONYM: "Synonym",
    DEFINITION: "Definition",
}
USE_SYSTEM = SCT


def concepts(store: Store) -> pd.DataFrame:
    """Every concept, with the columns of every code system's concept frame (code,
    display, definition, parents, abstract, inactive, status) and then fsn, moduleId,
    effectiveTime and sufficientlyDefined, built from the store's columns."""
    t = store.tables["concepts"]
    n = store.n
    parents = store.closure.parents
    codes = store.codes
    offsets = np.asarray(parents.offsets)
    parent_codes = codes.take(pa.array(np.asarray(parents.values, dtype=np.int64)))
    lists = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), parent_codes)
    inactive = ~np.asarray(store.active, dtype=bool)
    return pd.DataFrame(
        {
            "code": codes.to_pandas(),
            "display": t.column("display").to_pandas(),
            "definition": pd.Series([None] * n, dtype=object),
            "parents": pd.Series(lists.to_pylist(), dtype=object),
            "abstract": np.zeros(n, dtype=bool),
            "inactive": inactive,
            "status": pd.Series(np.where(inactive, "inactive", "active"), dtype=object),
            "fsn": t.column("fsn").to_pandas(),
            "moduleId": t.column("moduleId").cast(pa.string()).to_pandas(),
            "effectiveTime": t.column("effectiveTime").cast(pa.string()).to_pandas(),
            "sufficientlyDefined": t.column("defined").to_pandas(),
        }
    )


def designations(store: Store) -> pd.DataFrame:
    """Every description, with the columns of every code system's designation frame
    (code, language, use_system, use_code, value) and then use_display and active."""
    t = store.tables["descriptions"]
    concept = t.column("concept").to_numpy()
    uses = t.column("typeId").to_numpy()
    use_codes = np.select([uses == FSN, uses == SYNONYM, uses == DEFINITION], [0, 1, 2], 3)
    use_display = pd.Categorical.from_codes(
        use_codes.astype(np.int64), categories=pd.Index([*USES.values(), "Other"])
    )
    return pd.DataFrame(
        {
            "code": store.codes.take(pa.array(concept)).to_pandas(),
            "language": t.column("language").to_pandas(),
            "use_system": pd.Categorical([USE_SYSTEM] * len(concept)),
            "use_code": t.column("typeId").cast(pa.string()).to_pandas(),
            "value": t.column("term").to_pandas(),
            "use_display": use_display,
            "active": t.column("active").to_pandas(),
        }
    )


def associations(store: Store) -> pd.DataFrame:
    """Every historical association row: ``source``, ``target``, ``refsetId`` (strings)
    and ``active`` (bool), for implicit ConceptMaps (``?fhir_cm={refsetId}``)."""
    table = store.associations()
    return pd.DataFrame(
        {
            "source": table.column("source").cast(pa.string()).to_pandas(),
            "target": table.column("target").cast(pa.string()).to_pandas(),
            "refsetId": table.column("refsetId").cast(pa.string()).to_pandas(),
            "active": table.column("active").to_pandas(),
        }
    )
