"""The structural check of R4 terminology resources: its schema is derived from the R4
StructureDefinitions, every real resource passes it, and the R4 rules it enforces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from workbench import Workbench
from workbench.errors import StructureError
from workbench.structure import check_resource, check_value, schema, tolerated_gaps, types
from workbench.structure.build import build_schema


@pytest.mark.slow
def test_shipped_schema_is_derived_from_the_r4_structure_definitions(
    package_dirs: dict[str, Path],
) -> None:
    folder = package_dirs["hl7.fhir.r4.examples"]
    package = folder / "package" if (folder / "package").is_dir() else folder
    assert build_schema(package) == schema()


@pytest.mark.slow
def test_shipped_type_model_is_derived_from_the_r4_structure_definitions(
    package_dirs: dict[str, Path],
) -> None:
    folder = package_dirs["hl7.fhir.r4.examples"]
    package = folder / "package" if (folder / "package").is_dir() else folder
    shipped = orjson.loads((Path(types.__file__).parent / "r4-types.json").read_bytes())
    assert build_schema(package, roots=None) == shipped
    assert len(types.model().resources) == 146
    assert types.model().child("Observation", "value").choice("Quantity").json == "valueQuantity"


def test_schema_has_the_terminology_resources_and_their_data_types() -> None:
    types = schema()["types"]
    assert types["Coding"]["elements"]["code"] == ["code", False, False]
    assert types["CodeSystem"]["elements"]["status"] == ["code", False, True]
    assert types["CodeSystem.concept"]["elements"]["concept"] == ["CodeSystem.concept", True, False]
    assert types["CodeSystem.concept.property"]["choices"]["value"]["required"] is True
    assert types["ConceptMap.group.element.target"]["elements"]["equivalence"][2] is True
    assert schema()["primitives"]["unsignedInt"] == {"json": "integer", "min": 0, "max": 2**31 - 1}


@pytest.mark.slow
@pytest.mark.parametrize("rtype", ["ValueSet", "CodeSystem", "ConceptMap"])
def test_every_r4_core_resource_passes(r4_wb: Workbench, rtype: str) -> None:
    resources = r4_wb.registry.all(rtype)
    assert len(resources) > 10
    for resource in resources:
        check_resource(resource)


def test_shipped_content_passes(default_wb: Workbench) -> None:
    for rtype in ("ValueSet", "CodeSystem", "ConceptMap"):
        for resource in default_wb.registry.all(rtype):
            check_resource(resource)


VALUE_ERRORS = [
    ("Coding", {"code": 1}, "c.code must be a code (a JSON string), not a number"),
    ("Coding", {"system": "a b"}, "c.system: 'a b' is not a valid uri"),
    ("Coding", {"display": ""}, "c.display must not be an empty string"),
    ("Coding", [], "c must be a Coding (a JSON object), not an array"),
    ("CodeableConcept", {"coding": [{"code": True}]}, "c.coding[0].code must be a code"),
    ("CodeableConcept", {"text": ["a"]}, "c.text must be a single value, not an array"),
    ("Coding", {"extension": [{"url": 1}]}, "c.extension[0].url must be a uri"),
    ("Coding", {"extension": [{"valueString": "x"}]}, "c.extension[0].url is required"),
    ("Quantity", {"value": "1"}, "c.value must be a decimal (a JSON number), not a string"),
    ("Quantity", {"value": float("inf")}, "c.value must be a finite number"),
    ("Period", {"start": "2024-13-01"}, "c.start: '2024-13-01' is not a valid dateTime"),
]


@pytest.mark.parametrize(("tname", "value", "text"), VALUE_ERRORS)
def test_value_errors(tname: str, value: Any, text: str) -> None:
    with pytest.raises(StructureError) as caught:
        check_value(tname, value, "c")
    assert caught.value.text.startswith(text)
    assert caught.value.status == 400 and caught.value.code == "structure"


def test_unknown_elements_are_kept_but_not_nested_without_limit() -> None:
    ok = {"resourceType": "ValueSet", "status": "draft", "future": {"a": [[{"b": 1}]]}}
    check_resource(ok)
    deep: Any = 1
    for _ in range(150):
        deep = [deep]
    with pytest.raises(StructureError, match="nested more than 100 levels"):
        check_resource({**ok, "future": deep})


def test_primitive_arrays_may_hold_null_where_an_extension_stands() -> None:
    vs = {
        "resourceType": "ValueSet",
        "status": "draft",
        "compose": {
            "include": [{"valueSet": ["http://a", None], "_valueSet": [None, {"id": "x"}]}]
        },
    }
    check_resource(vs)
    del vs["compose"]["include"][0]["_valueSet"]  # type: ignore[index]
    with pytest.raises(StructureError, match=r"valueSet\[1\] must be a canonical"):
        check_resource(vs)


def test_inline_resources_need_not_carry_required_elements() -> None:
    inline = {"resourceType": "CodeSystem", "status": "active"}
    check_resource(inline, required=False)
    with pytest.raises(StructureError, match=r"CodeSystem\.content is required"):
        check_resource(inline)


def test_a_missing_status_or_filter_value_is_tolerated() -> None:
    """Issue 22, e2: they change no terminology answer (a filter without a value fails
    when its value set is used, e3)."""
    stored = {
        "resourceType": "ValueSet",
        "compose": {"include": [{"system": "http://x", "filter": [{"property": "a", "op": "="}]}]},
    }
    check_resource(stored)
    assert [where for where, _ in tolerated_gaps(stored)] == [
        "ValueSet.status",
        "ValueSet.compose.include[0].filter[0].value",
    ]
