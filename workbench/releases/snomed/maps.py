"""SNOMED CT implicit ConceptMaps: ``http://snomed.info/sct?fhir_cm={refsetId}``.

A historical association reference set (REPLACED BY, SAME AS, WAS A, POSSIBLY EQUIVALENT
TO, …) is a map from inactive SNOMED CT concepts to SNOMED CT concepts. Its active rows
become one ConceptMap group (source and target ``http://snomed.info/sct`` at the loaded
version), one element per source concept, with the equivalence the FHIR SNOMED CT page
gives the association (``EQUIVALENCE``). An edition URI may stand before the ``?``
(``http://snomed.info/sct/{module}/version/{date}?fhir_cm=…``); it must then be the
loaded one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from workbench.releases.snomed.codesystem import ASSOCIATIONS, SCT

if TYPE_CHECKING:
    from workbench.releases.snomed.codesystem import SnomedCT

#: association refset -> R4 ConceptMap equivalence (the FHIR SNOMED CT page)
EQUIVALENCE = {
    900000000000527005: "equal",  # SAME AS
    900000000000526001: "equivalent",  # REPLACED BY
    900000000000528000: "wider",  # WAS A
    900000000000523009: "inexact",  # POSSIBLY EQUIVALENT TO
    900000000000530003: "inexact",  # ALTERNATIVE
    1186921001: "inexact",  # POSSIBLY REPLACED BY
    1186924009: "inexact",  # PARTIALLY EQUIVALENT TO
    900000000000525002: "equivalent",  # MOVED FROM
    900000000000524003: "equivalent",  # MOVED TO
    900000000000529008: "relatedto",  # SIMILAR TO
    734139008: "relatedto",  # REFERS TO
    900000000000531004: "relatedto",  # REFERS TO (concept)
}
_URL = re.compile(r"^(?P<base>http://snomed\.info/x?sct(?:/[^?]*)?)\?fhir_cm=(?P<refset>\d+)$")


def parse(url: str) -> tuple[str, int] | None:
    """``(base, refset id)`` of an implicit ConceptMap URL, or None.

    >>> parse("http://snomed.info/sct?fhir_cm=900000000000526001")
    ('http://snomed.info/sct', 900000000000526001)
    >>> parse("http://snomed.info/sct?fhir_vs") is None
    True
    """
    found = _URL.match(url)
    if found is None:
        return None
    return found["base"], int(found["refset"])


def association_map(sct: SnomedCT, url: str) -> dict[str, Any] | None:
    """The ConceptMap of an association refset of ``sct``, or None when ``url`` is not an
    implicit ConceptMap of this edition or the refset has no association rows."""
    parsed = parse(url)
    if parsed is None:
        return None
    base, refset = parsed
    if base != SCT and base != sct.version:
        return None
    table = sct.store.associations()
    refsets = table.column("refsetId").to_numpy()
    chosen = (refsets == refset) & table.column("active").to_numpy(zero_copy_only=False)
    if not (refsets == refset).any():
        return None
    sources = table.column("source").to_numpy()[chosen]
    targets = table.column("target").to_numpy()[chosen]
    equivalence = EQUIVALENCE.get(refset, "relatedto")
    name = ASSOCIATIONS.get(refset, f"association {refset}")
    elements: dict[str, dict[str, Any]] = {}
    for source, target in zip(sources.tolist(), targets.tolist(), strict=True):
        code = str(source)
        element = elements.get(code)
        if element is None:
            element = elements[code] = {"code": code, "target": []}
            shown = _display(sct, code)
            if shown:
                element["display"] = shown
        mapped: dict[str, Any] = {"code": str(target), "equivalence": equivalence}
        if equivalence in ("inexact", "narrower"):
            mapped["comment"] = name
        element["target"].append(mapped)
    group: dict[str, Any] = {
        "source": SCT,
        "sourceVersion": sct.version,
        "target": SCT,
        "targetVersion": sct.version,
        "element": list(elements.values()),
    }
    return {
        "resourceType": "ConceptMap",
        "url": url,
        "version": sct.version,
        "name": f"SNOMED_CT_{name.replace(' ', '_').replace('(', '').replace(')', '')}",
        "title": f"SNOMED CT {name} historical association",
        "status": "active",
        "sourceUri": f"{SCT}?fhir_vs",
        "targetUri": f"{SCT}?fhir_vs",
        "group": [group] if elements else [],
    }


def _display(sct: SnomedCT, code: str) -> str | None:
    row = sct.row(code)
    return sct.display(row) if row >= 0 else None
