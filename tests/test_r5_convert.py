"""The R4/R5 converters (``workbench.r5``): lossless round trips, ConceptMap's mapping
table, the R5-only elements' cross-version extensions, $translate's parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, EXPANSIONS
from workbench.r5 import fhir_version, to_r4, to_r5
from workbench.r5.conceptmap import NotRepresentableError
from workbench.r5.operations import inputs_to_r4, outputs_to_r5, query_to_r4
from workbench.r5.xver import BASE
from workbench.server.r5 import r5_base_for

KINDS = ("ConceptMap", "ValueSet", "CodeSystem", "CapabilityStatement", "TerminologyCapabilities")


def _resources(folder: Path) -> list[dict[str, Any]]:
    out = []
    inner = folder / "package"
    for path in sorted((inner if inner.is_dir() else folder).glob("*.json")):
        if not path.name.startswith(KINDS):
            continue
        try:
            found = json.loads(path.read_bytes())
        except ValueError:
            continue
        if isinstance(found, dict) and found.get("resourceType") in KINDS:
            out.append(found)
    return out


@pytest.mark.parametrize("package", [EXAMPLES[0], EXPANSIONS[0]])
def test_r4_packages_round_trip_losslessly(package_dirs: dict[str, Path], package: str) -> None:
    resources = _resources(package_dirs[package])
    assert len(resources) > 100
    changed = [r.get("id") for r in resources if to_r4(to_r5(r)) != r]
    assert changed == []
    maps = [to_r5(r) for r in resources if r["resourceType"] == "ConceptMap"]
    assert all('"equivalence"' not in json.dumps(m) for m in maps)  # every target converted
    assert len(maps) > 50 or package != EXAMPLES[0]


EQUIVALENCES = [
    ("equivalent", "equivalent", False),
    ("equal", "equivalent", True),
    ("wider", "source-is-narrower-than-target", False),
    ("subsumes", "source-is-narrower-than-target", True),
    ("narrower", "source-is-broader-than-target", False),
    ("specializes", "source-is-broader-than-target", True),
    ("relatedto", "related-to", False),
    ("inexact", "related-to", True),
    ("disjoint", "not-related-to", False),
]


def _map(target: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceType": "ConceptMap",
        "group": [{"element": [{"code": "a", "target": [target]}]}],
    }


@pytest.mark.parametrize(
    ("equivalence", "relationship", "kept"), EQUIVALENCES, ids=[e[0] for e in EQUIVALENCES]
)
def test_equivalence_and_relationship(equivalence: str, relationship: str, kept: bool) -> None:
    r4 = _map({"code": "b", "equivalence": equivalence})
    target = to_r5(r4)["group"][0]["element"][0]["target"][0]
    assert target["relationship"] == relationship
    assert ("_relationship" in target) is kept  # the old code kept where it is not implied
    assert to_r4(to_r5(r4)) == r4


def test_unmatched_is_no_map() -> None:
    r4 = _map({"equivalence": "unmatched", "comment": "none fits"})
    element = to_r5(r4)["group"][0]["element"][0]
    assert element["noMap"] is True and "target" not in element
    assert to_r4(to_r5(r4)) == r4


R5_RESOURCES: list[tuple[str, dict[str, Any], str]] = [
    (
        "valueset-r5-elements",
        {
            "resourceType": "ValueSet",
            "versionAlgorithmString": "semver",
            "copyrightLabel": "(c) HL7",
            "topic": [{"text": "a"}, {"text": "b"}],
            "scope": {"inclusionCriteria": "all"},
            "compose": {"include": [{"system": "http://s", "copyright": "c"}]},
            "expansion": {
                "timestamp": "2024-01-01",
                "property": [{"code": "definition", "uri": "http://u"}],
                "contains": [
                    {
                        "code": "x",
                        "property": [
                            {
                                "code": "p",
                                "valueCoding": {"code": "q"},
                                "subProperty": [{"code": "s", "valueString": "t"}],
                            }
                        ],
                        "contains": [{"code": "y", "property": [{"code": "p", "valueInteger": 1}]}],
                    }
                ],
            },
        },
        BASE + "ValueSet.expansion.contains.property",
    ),
    (
        "codesystem-additional-use",
        {
            "resourceType": "CodeSystem",
            "versionAlgorithmCoding": {"code": "semver"},
            "concept": [
                {
                    "code": "a",
                    "concept": [
                        {
                            "code": "b",
                            "designation": [{"value": "B", "additionalUse": [{"code": "u"}]}],
                        }
                    ],
                }
            ],
        },
        BASE + "CodeSystem.concept.designation.additionalUse",
    ),
    (
        "conceptmap-r5",
        {
            "resourceType": "ConceptMap",
            "identifier": [{"value": "1"}, {"value": "2"}],
            "targetScopeCanonical": "http://vs",
            "property": [{"code": "p", "type": "string"}],
            "group": [
                {
                    "element": [
                        {
                            "code": "a",
                            "target": [
                                {
                                    "code": "b",
                                    "relationship": "related-to",
                                    "dependsOn": [
                                        {
                                            "attribute": "x",
                                            "valueCoding": {"system": "http://s", "code": "c"},
                                        }
                                    ],
                                    "property": [{"code": "p", "valueString": "v"}],
                                }
                            ],
                        },
                    ],
                    "unmapped": {
                        "mode": "other-map",
                        "otherMap": "http://other",
                        "relationship": "related-to",
                    },
                }
            ],
        },
        BASE + "ConceptMap.group.element.target.property",
    ),
]


@pytest.mark.parametrize(
    ("resource", "extension"), [c[1:] for c in R5_RESOURCES], ids=[c[0] for c in R5_RESOURCES]
)
def test_r5_only_elements_travel_as_extensions(resource: dict[str, Any], extension: str) -> None:
    r4 = to_r4(resource)
    assert extension in json.dumps(r4)
    assert to_r5(r4) == resource
    assert to_r4(to_r5(r4)) == r4


@pytest.mark.parametrize(
    ("dependency", "error"),
    [
        ({"attribute": "x", "valueQuantity": {"value": 1}}, NotRepresentableError),
        ({"attribute": "x", "valueSet": "http://vs"}, NotRepresentableError),
    ],
    ids=["quantity", "value-set-only"],
)
def test_what_r4_cannot_state(dependency: dict[str, Any], error: type[Exception]) -> None:
    cm = _map({"code": "b", "relationship": "equivalent", "dependsOn": [dependency]})
    with pytest.raises(error, match=r"group\[0\]\.element\[0\]\.target\[0\]\.dependsOn\[0\]"):
        to_r4(cm)


def test_translate_parameters() -> None:
    assert query_to_r4("translate", [("sourceScope", "a"), ("targetScope", "b"), ("url", "u")]) == [
        ("source", "a"),
        ("target", "b"),
        ("url", "u"),
    ]
    assert query_to_r4("lookup", [("sourceScope", "a")]) == [("sourceScope", "a")]
    body = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "targetCodeableConcept", "valueCodeableConcept": {"coding": [{"code": "c"}]}},
            {
                "name": "dependency",
                "part": [
                    {"name": "attribute", "valueUri": "x"},
                    {"name": "value", "valueCoding": {"code": "d"}},
                ],
            },
        ],
    }
    names = [p["name"] for p in inputs_to_r4("translate", body)["parameter"]]
    assert names == ["codeableConcept", "dependency", "reverse"]
    assert body["parameter"][1]["part"] == [
        {"name": "element", "valueUri": "x"},
        {"name": "concept", "valueCodeableConcept": {"coding": [{"code": "d"}]}},
    ]
    answer = {
        "resourceType": "Parameters",
        "parameter": [
            {
                "name": "match",
                "part": [
                    {"name": "equivalence", "valueCode": "narrower"},
                    {"name": "source", "valueUri": "http://m"},
                    {
                        "name": "product",
                        "part": [
                            {"name": "element", "valueUri": "e"},
                            {"name": "concept", "valueCoding": {"code": "p"}},
                        ],
                    },
                ],
            }
        ],
    }
    parts = outputs_to_r5("translate", answer)["parameter"][0]["part"]
    assert parts == [
        {"name": "relationship", "valueCode": "source-is-broader-than-target"},
        {"name": "originMap", "valueCanonical": "http://m"},
        {
            "name": "product",
            "part": [
                {"name": "attribute", "valueUri": "e"},
                {"name": "value", "valueCoding": {"code": "p"}},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("header", "version"),
    [
        ("application/fhir+json; fhirVersion=5.0", "5.0"),
        ("application/fhir+json;fhirVersion=5.0.0", "5.0"),
        ('application/fhir+json; charset=utf-8; FHIRVERSION="4.0.1"', "4.0"),
        ("application/fhir+json, application/fhir+json; fhirVersion=3.0", "3.0"),
        ("application/fhir+json", None),
        (None, None),
    ],
    ids=["5.0", "5.0.0", "quoted-4.0.1", "second-item", "none", "absent"],
)
def test_fhir_version_of_media_types(header: str | None, version: str | None) -> None:
    assert fhir_version(header) == version


@pytest.mark.parametrize(
    ("base", "r5"),
    [("/fhir/R4", "/fhir/R5"), ("/r4", "/r5"), ("/tx", "/tx/R5"), ("", "/R5")],
    ids=["fhir-R4", "r4", "other", "root"],
)
def test_r5_base_beside(base: str, r5: str) -> None:
    assert r5_base_for(base) == r5
