"""The ICD-10-CM code system provider: the parsed tabular list as a CodeSystemIndex, plus the
implicit value sets (``?fhir_vs`` for all codes, ``?fhir_vs=isa/CODE`` for a subtree)."""

from __future__ import annotations

from typing import Any

from workbench.releases.icd10cm.tabular import SYSTEM
from workbench.terminology.codesystem import CodeSystemIndex


class Icd10cmProvider(CodeSystemIndex):
    """ICD-10-CM concepts by code (hierarchy, ``billable``, groupers not selectable)."""

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
