"""A LOINC store folder, opened by memory-mapping its Arrow and numpy files.

Files: ``concepts.arrow`` (code, kind, display, status, active; rows sorted by code),
``properties.arrow`` and ``designations.arrow`` (long form, sorted by concept row),
``answers.arrow`` (each answer list's answers in order), ``answer_links.arrow`` (terms and
their answer lists) and the closure of the component hierarchy (``parents``, ``children``,
``up``, ``down`` as CSR arrays).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from workbench.releases.storage import ColumnarStore

LOINC = "http://loinc.org"
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


class Store(ColumnarStore):
    """The opened store: tables mapped, rows found by code."""

    FORMAT = 2  # 2: the concepts' ``active`` column (was ``inactive``)
    TABLES = ("concepts", "properties", "designations", "answers", "answer_links")
    HIERARCHY = True
    LONG: ClassVar[dict[str, str]] = {
        "properties": "row",
        "designations": "row",
        "answers": "list",
        "answer_links": "term",
    }

    def row(self, code: Any) -> int:
        """The row of a code (LOINC codes are case-insensitive: ``lp…`` finds ``LP…``), -1
        when there is none."""
        if not isinstance(code, str):
            return -1
        found = self.index.get(code)
        if found is None:
            found = self.index.get(code.upper(), -1)
        return found

    @cached_property
    def kind(self) -> npt.NDArray[np.int8]:
        """The kind of every row (an index into ``KINDS``)."""
        return self.tables["concepts"].column("kind").to_numpy()


#: The store's files (besides ``meta.json``).
FILES = Store.files()
#: The store format (bump it when the files change).
FORMAT = Store.FORMAT


def is_store(path: Path) -> bool:
    """True when ``path`` holds a complete store of this format."""
    return Store.is_store(path)
