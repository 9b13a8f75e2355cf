"""Views over the real example resources of R4 and of the International Patient Summary 2.0.0,
read as a user reads them (the packages' files, Bundles opened), checked row for row against
the same flattening written plainly in Python over the resource dicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_fhirdata_packages import ips_examples  # noqa: F401  (the IPS example folder)
from workbench import FhirData, read_fhir, view

CONFORMANCE = {"StructureDefinition", "ValueSet", "CodeSystem", "ConceptMap", "SearchParameter",
               "OperationDefinition", "CapabilityStatement", "CompartmentDefinition",
               "ImplementationGuide", "NamingSystem", "StructureMap", "GraphDefinition",
               "MessageDefinition", "TerminologyCapabilities", "ExampleScenario"}  # fmt: skip


@pytest.fixture(scope="module")
def examples(package_dirs: dict[str, Path], ips_examples: Path) -> FhirData:  # noqa: F811
    folder = package_dirs["hl7.fhir.r4.examples"]
    package = folder / "package" if (folder / "package").is_dir() else folder
    files = [p for p in sorted(package.glob("*.json"))
             if p.name.split("-")[0] not in CONFORMANCE and p.name != "package.json"]  # fmt: skip
    data = read_fhir([*files, ips_examples])
    assert data.counts["Observation"] > 100 and data.counts["Condition"] > 20
    return data


def codings(resource: dict[str, Any], element: str) -> list[dict[str, Any]]:
    concept = resource.get(element)
    concepts = concept if isinstance(concept, list) else [concept] if concept else []
    return [c for found in concepts for c in found.get("coding", [])]


def reference_key(reference: dict[str, Any] | None, kind: str) -> str | None:
    """``Patient/45`` and ``Patient/45/_history/2`` are keyed ``45``."""
    text = ((reference or {}).get("reference") or "").split("/_history/")[0]
    parts = text.split("/")
    return parts[-1] if len(parts) >= 2 and parts[-2] == kind else None


@pytest.mark.parametrize(
    ("resource", "element"),
    [("Observation", "code"), ("Condition", "code"), ("Observation", "category"),
     ("AllergyIntolerance", "code"), ("MedicationStatement", "medicationCodeableConcept")],
)  # fmt: skip
def test_a_foreach_over_codings_is_the_plain_python_flattening(
    examples: FhirData, resource: str, element: str
) -> None:
    path = element.removesuffix("CodeableConcept") + (
        ".ofType(CodeableConcept)" if element.endswith("CodeableConcept") else ""
    )
    subject = "patient" if resource == "AllergyIntolerance" else "subject"
    definition = {
        "resource": resource,
        "select": [
            {"column": [{"name": "id", "path": "getResourceKey()"},
                        {"name": "patient", "path": f"{subject}.getReferenceKey(Patient)"}]},
            {"forEach": f"{path}.coding", "column": [
                {"name": "system", "path": "system"}, {"name": "code", "path": "code"},
                {"name": "display", "path": "display"}, {"name": "i", "path": "%rowIndex"}]},
        ],
    }  # fmt: skip
    found = view(definition, examples, engine="polars")
    expected = [
        (r.get("id"), reference_key(r.get(subject), "Patient"), c.get("system"), c.get("code"),
         c.get("display"), i)
        for r in examples.resources(resource)
        for i, c in enumerate(codings(r, element))
    ]  # fmt: skip
    assert expected, f"the examples have {resource}.{element} codings"
    assert [tuple(row) for row in found.iter_rows()] == expected


def test_every_resource_type_of_the_examples_gives_its_ids(examples: FhirData) -> None:
    columns = [
        {"name": "id", "path": "id"},
        {"name": "profiles", "path": "meta.profile", "collection": True},
    ]
    for kind in examples.types:
        definition = {"resource": kind, "select": [{"column": columns}]}
        rows = view(definition, examples, engine="polars")
        resources = list(examples.resources(kind))
        assert rows["id"].to_list() == [r.get("id") for r in resources], kind
        # a collection column over nothing is [] (SQL on FHIR's fhirpath.json "collection")
        expected = [(r.get("meta") or {}).get("profile") or [] for r in resources]
        assert rows["profiles"].to_list() == expected, kind
