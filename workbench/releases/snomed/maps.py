"""SNOMED CT implicit ConceptMaps: ``http://snomed.info/sct?fhir_cm={refsetId}``.

A map reference set (simple, complex or extended: ICD-10, ICD-O-3, CTV3, …) is a map from
SNOMED CT to another code system: its active rows become one group (the target system from
``MAP_TARGETS``, else none), ordered by map group and priority. A simple map's rows are
``equivalent``; a complex or extended map's ``correlationId`` gives the equivalence
(``CORRELATION``), and its map group, priority, rule and advice are the target's comment.

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
#: map refset correlation -> R4 equivalence
CORRELATION = {
    447557004: "equivalent",  # exact match
    447558009: "narrower",  # broad to narrow (the target is narrower)
    447559001: "wider",  # narrow to broad
    447560006: "inexact",  # partial overlap
    447556008: "unmatched",  # not mappable
    447561005: "relatedto",  # not specified
}
#: map refset -> the target code system's URI
MAP_TARGETS = {
    447562003: "http://hl7.org/fhir/sid/icd-10",  # ICD-10 complex map
    6011000124106: "http://hl7.org/fhir/sid/icd-10-cm",  # ICD-10-CM (US edition)
    446608001: "http://terminology.hl7.org/CodeSystem/icd-o-3",  # ICD-O-3 simple map
    900000000000497000: "http://read.info/ctv3",  # CTV3 simple map
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


def implicit_map(sct: SnomedCT, url: str) -> dict[str, Any] | None:
    """The implicit ConceptMap ``url`` names in ``sct``: an association or a map refset."""
    return association_map(sct, url) or map_refset_map(sct, url)


def map_refset_map(sct: SnomedCT, url: str) -> dict[str, Any] | None:
    """The ConceptMap of a map refset of ``sct`` (simple, complex or extended), or None."""
    parsed = parse(url)
    if parsed is None or parsed[0] not in (SCT, sct.version):
        return None
    refset = parsed[1]
    rows = sct.store.maps(refset).to_pydict()
    if not rows["source"]:
        return None
    simple = not any(rows["correlation"])
    elements: dict[str, dict[str, Any]] = {}
    for i, source in enumerate(rows["source"]):
        if not rows["active"][i]:
            continue
        code = str(source)
        element = elements.get(code)
        if element is None:
            element = elements[code] = {"code": code, "target": []}
            shown = _display(sct, code)
            if shown:
                element["display"] = shown
        equivalence = (
            "equivalent" if simple else CORRELATION.get(rows["correlation"][i], "relatedto")
        )
        mapped: dict[str, Any] = {"equivalence": equivalence}
        if rows["target"][i]:
            mapped["code"] = rows["target"][i]
        elif equivalence not in ("unmatched", "disjoint"):
            mapped["equivalence"] = "unmatched"
        if not simple:
            note = f"map group {rows['group'][i]}, priority {rows['priority'][i]}"
            for key in ("rule", "advice"):
                if rows[key][i]:
                    note += f", {key} {rows[key][i]}"
            mapped["comment"] = note
        element["target"].append(mapped)
    group: dict[str, Any] = {"source": SCT, "sourceVersion": sct.version}
    target = MAP_TARGETS.get(refset)
    if target is not None:
        group["target"] = target
    group["element"] = list(elements.values())
    row = sct.row(str(refset))
    title = sct.display(row) if row >= 0 else f"SNOMED CT map reference set {refset}"
    resource: dict[str, Any] = {
        "resourceType": "ConceptMap",
        "url": url,
        "version": sct.version,
        "name": f"SNOMED_CT_map_{refset}",
        "title": title,
        "status": "active",
        "sourceUri": f"{SCT}?fhir_vs=refset/{refset}",
        "group": [group] if elements else [],
    }
    if target is not None:
        resource["targetUri"] = f"{target}?fhir_vs"
    return resource


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
