"""ICD-10-CM as a FHIR CodeSystem, built from the data the PyPI package ``simple-icd-10-cm`` ships.

The package parses the CDC's tabular XML when it is imported (about 1.5 s) and exposes the
whole hierarchy: 22 chapters, their blocks (code ranges such as ``A00-A09``), categories
(``E11``) and subcodes down to the 7th character (``S72.001A``), seven levels deep. Codes keep
the dot, as the package gives them (``E11.9``). Chapters (codes ``"1"`` to ``"22"``) and blocks
are not codable, so they are marked abstract (``notSelectable``).

A few blocks hold a single category and share its code (``B20`` is both the block ``B20`` and
the category ``B20``); a CodeSystem needs unique codes, so each of those becomes one concept:
the category, selectable, with the chapter as its parent.

Nothing is cached on disk: every call rebuilds the frame from the imported package.

>>> frame = icd10cm_frame()  # doctest: +SKIP
>>> cs = icd10cm_codesystem(frame)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import re
from typing import Any

import pandas as pd

from workbench import codesystem_from_frame

__all__ = ["ICD10CM_URL", "icd10cm_codesystem", "icd10cm_frame", "icd10cm_version"]

ICD10CM_URL = "http://hl7.org/fhir/sid/icd-10-cm"
_DISTRIBUTION = "simple-icd-10-cm"
_VERSION_RE = re.compile(rb"<version>\s*([^<\s][^<]*?)\s*</version>")


def icd10cm_frame() -> pd.DataFrame:
    """One row per ICD-10-CM code of the package's hierarchy: code, display, parent, abstract.

    ``parent`` is None for the chapters; ``abstract`` is True for chapters and blocks.
    Rows are in the package's (pre-order, tabular) order, so each parent comes before its
    children.
    """
    import simple_icd_10_cm as cm

    codes: list[str] = []
    displays: list[str] = []
    parents: list[str | None] = []
    abstract: list[bool] = []
    seen: set[str] = set()
    for code in cm.get_all_codes(with_dots=True):
        if code in seen:  # a block and its only category share the code: keep one concept
            continue
        seen.add(code)
        category = cm.is_category(code)
        # prioritize_blocks=True steps over a same-code block, to the chapter above it.
        parent = cm.get_parent(code, prioritize_blocks=True)
        codes.append(code)
        displays.append(cm.get_description(code))
        parents.append(parent or None)
        abstract.append(cm.is_chapter(code) or (cm.is_block(code) and not category))
    return pd.DataFrame(
        {"code": codes, "display": displays, "parent": parents, "abstract": abstract}
    )


def icd10cm_version() -> str:
    """Return the ICD-10-CM release of the package's data (its tabular ``<version>``), or
    else the version of the ``simple-icd-10-cm`` distribution."""
    try:
        data = importlib.resources.files("simple_icd_10_cm.data")
        for item in sorted(data.iterdir(), key=lambda entry: entry.name):
            if item.name.endswith(".xml") and item.is_file():
                with item.open("rb") as handle:
                    found = _VERSION_RE.search(handle.read(4096))
                if found:
                    return found.group(1).decode("utf-8")
    except (ModuleNotFoundError, OSError, UnicodeDecodeError):
        pass
    return importlib.metadata.version(_DISTRIBUTION)


def icd10cm_codesystem(frame: pd.DataFrame | None = None) -> dict[str, Any]:
    """Build the ICD-10-CM CodeSystem (FHIR JSON) through ``workbench.codesystem_from_frame``.

    ``frame`` defaults to :func:`icd10cm_frame`; pass one to time the two steps apart.
    """
    if frame is None:
        frame = icd10cm_frame()
    resource = codesystem_from_frame(
        frame,
        url=ICD10CM_URL,
        parent="parent",
        abstract="abstract",
        version=icd10cm_version(),
        name="ICD10CM",
        title="ICD-10-CM",
    )
    description = (
        "ICD-10-CM chapters, blocks and codes as shipped by the Python package "
        f"simple-icd-10-cm {importlib.metadata.version(_DISTRIBUTION)}"
    )
    ordered: dict[str, Any] = {}
    for key, value in resource.items():
        if key == "concept":
            ordered["description"] = description
        ordered[key] = value
    return ordered
