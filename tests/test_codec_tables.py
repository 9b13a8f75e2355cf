"""The codec's per-definition tables give what the definition says: output entries in
definition order whatever order the values come in, the required outputs and inputs
checked, query and body inputs typed and refused as before."""

from __future__ import annotations

import random
from typing import Any

import pytest

from workbench.errors import InvalidRequestError, NotSupportedError, RequiredError, WorkbenchError
from workbench.operations import codesystem_lookup, valueset_validate_code
from workbench.operations.codec import build_output, parse_parameters, parse_query
from workbench.operations.definitions import OperationDef
from workbench.terminology.lookup import TypedValue

VALIDATE = valueset_validate_code.DEFINITION
LOOKUP = codesystem_lookup.DEFINITION
ISSUES = {"resourceType": "OperationOutcome", "issue": []}
VALIDATED = {
    "result": False,
    "message": "Wrong display",
    "display": "Female",
    "code": "female",
    "system": "http://hl7.org/fhir/administrative-gender",
    "version": "4.0.1",
    "issues": ISSUES,
    "inactive": True,
    "x-caused-by-unknown-system": ["http://a", "http://b"],
    "normalized-code": "female",
}
IN_ORDER = [
    {"name": "result", "valueBoolean": False},
    {"name": "message", "valueString": "Wrong display"},
    {"name": "display", "valueString": "Female"},
    {"name": "code", "valueCode": "female"},
    {"name": "system", "valueUri": "http://hl7.org/fhir/administrative-gender"},
    {"name": "version", "valueString": "4.0.1"},
    {"name": "issues", "resource": ISSUES},
    {"name": "inactive", "valueBoolean": True},
    {"name": "x-caused-by-unknown-system", "valueCanonical": "http://a"},
    {"name": "x-caused-by-unknown-system", "valueCanonical": "http://b"},
    {"name": "normalized-code", "valueCode": "female"},
]


@pytest.mark.parametrize("seed", range(5))
def test_outputs_are_written_in_definition_order(seed: int) -> None:
    names = list(VALIDATED)
    random.Random(seed).shuffle(names)
    shuffled = {name: VALIDATED[name] for name in names}
    body = build_output(VALIDATE, shuffled)
    assert body == {"resourceType": "Parameters", "parameter": IN_ORDER}


def test_none_outputs_are_left_out() -> None:
    given = {"result": True, "message": None, "display": "Female", "status": None}
    assert build_output(VALIDATE, given)["parameter"] == [
        {"name": "result", "valueBoolean": True},
        {"name": "display", "valueString": "Female"},
    ]


@pytest.mark.parametrize(
    ("outputs", "text"),
    [
        ({"message": "no result"}, r"did not produce its required 'result'"),
        ({"result": None}, r"did not produce its required 'result'"),
        ({"result": True, "nope": 1}, r"produced undeclared outputs \['nope'\]"),
    ],
)
def test_bad_outputs_are_errors(outputs: dict[str, Any], text: str) -> None:
    with pytest.raises(WorkbenchError, match=text):
        build_output(VALIDATE, outputs)


def test_lookup_outputs_with_parts() -> None:
    outputs = {
        "name": "AdministrativeGender",
        "display": "Female",
        "property": [
            {"code": "inactive", "value": TypedValue("valueBoolean", False), "description": None}
        ],
        "designation": [{"language": "de", "use": None, "value": "weiblich"}],
    }
    assert build_output(LOOKUP, outputs)["parameter"] == [
        {"name": "name", "valueString": "AdministrativeGender"},
        {"name": "display", "valueString": "Female"},
        {
            "name": "designation",
            "part": [
                {"name": "language", "valueCode": "de"},
                {"name": "value", "valueString": "weiblich"},
            ],
        },
        {
            "name": "property",
            "part": [
                {"name": "code", "valueCode": "inactive"},
                {"name": "value", "valueBoolean": False},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("part_values", "parts"),
    [
        (
            {"code": "inactive", "value": TypedValue("valueBoolean", False), "code-display": "I"},
            [
                ("code", "valueCode", "inactive"),
                ("value", "valueBoolean", False),
                ("code-display", "valueString", "I"),  # a part the definition does not declare
            ],
        ),
        (
            {"code": "order", "value": 3, "description": ["a", None, "b"]},
            [
                ("code", "valueCode", "order"),
                ("value", "valueInteger", 3),
                ("description", "valueString", "a"),
                ("description", "valueString", "b"),
            ],
        ),
        (
            {"code": "weight", "value": 1.5, "description": None},
            [("code", "valueCode", "weight"), ("value", "valueDecimal", 1.5)],
        ),
        (
            {"code": "parent", "value": {"system": "http://s", "code": "x"}},
            [
                ("code", "valueCode", "parent"),
                ("value", "valueCoding", {"system": "http://s", "code": "x"}),
            ],
        ),
    ],
)
def test_lookup_property_parts(
    part_values: dict[str, Any], parts: list[tuple[str, str, Any]]
) -> None:
    """Each part by its declared type, else its value's; a list repeats the part, None and
    list items that are None are left out."""
    outputs = {"name": "N", "display": "D", "property": [part_values]}
    entry = build_output(LOOKUP, outputs)["parameter"][2]
    assert entry == {
        "name": "property",
        "part": [{"name": name, key: value} for name, key, value in parts],
    }


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([("url", "u"), ("code", "a"), ("_pretty", "true")], {"url": "u", "code": "a"}),
        ([("abstract", "false"), ("url", "u")], {"abstract": False, "url": "u"}),
        ([("useSupplement", "a"), ("useSupplement", "b")], {"useSupplement": ["a", "b"]}),
    ],
)
def test_query_inputs(items: list[tuple[str, str]], expected: dict[str, Any]) -> None:
    assert parse_query(VALIDATE, items) == expected


SYNTHETIC = OperationDef.from_json(
    {
        "resourceType": "OperationDefinition",
        "id": "needs",
        "url": "http://example.org/OperationDefinition/needs",
        "code": "needs",
        "resource": ["CodeSystem"],
        "system": False,
        "type": True,
        "instance": False,
        "parameter": [
            {"name": "first", "use": "in", "min": 1, "max": "1", "type": "code"},
            {"name": "second", "use": "in", "min": 1, "max": "1", "type": "integer"},
            {"name": "result", "use": "out", "min": 1, "max": "1", "type": "boolean"},
        ],
    }
)


@pytest.mark.parametrize(
    ("definition", "items", "error", "text"),
    [
        (VALIDATE, [("nope", "1")], InvalidRequestError, r"Unknown parameter 'nope' for \$val"),
        (VALIDATE, [("coding", "x")], NotSupportedError, r"type Coding, which cannot be sent"),
        (VALIDATE, [("abstract", "maybe")], InvalidRequestError, r"true or false, not 'maybe'"),
        (VALIDATE, [("code", "a"), ("code", "b")], InvalidRequestError, r"'code' may appear only"),
        # every pair is read before cardinality counts: the unknown name is the error
        (VALIDATE, [("code", "a"), ("code", "b"), ("x", "1")], InvalidRequestError, r"Unknown"),
        (SYNTHETIC, [("second", "2")], RequiredError, r"Parameter 'first' is required"),
        (SYNTHETIC, [], RequiredError, r"Parameter 'first' is required"),
        (SYNTHETIC, [("first", "a")], RequiredError, r"Parameter 'second' is required"),
        (SYNTHETIC, [("second", "x")], InvalidRequestError, r"'second' must be an integer"),
    ],
)
def test_query_refusals(
    definition: OperationDef, items: list[tuple[str, str]], error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        parse_query(definition, items)


def test_required_inputs_given() -> None:
    assert parse_query(SYNTHETIC, [("second", "2"), ("first", "a")]) == {"second": 2, "first": "a"}
    body = _params({"name": "first", "valueCode": "a"}, {"name": "second", "valueInteger": 2})
    assert parse_parameters(SYNTHETIC, body) == {"first": "a", "second": 2}
    with pytest.raises(RequiredError, match="'second' is required"):
        parse_parameters(SYNTHETIC, _params({"name": "first", "valueCode": "a"}))


def _params(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"resourceType": "Parameters", "parameter": list(entries)}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (_params({"name": "url", "valueUri": "u"}), {"url": "u"}),
        (_params({"name": "url", "valueString": "u"}), {"url": "u"}),  # rule 3
        (_params({"name": "code", "valueCode": "a"}, {"name": "_pretty"}), {"code": "a"}),
        (_params({"name": "abstract", "valueBoolean": False}), {"abstract": False}),
    ],
)
def test_body_inputs(body: dict[str, Any], expected: dict[str, Any]) -> None:
    assert parse_parameters(VALIDATE, body) == expected


@pytest.mark.parametrize(
    ("entry", "text"),
    [
        ({"name": "url", "valueUri": 5}, r"'url' must be a JSON string"),
        ({"name": "url", "valueBoolean": True}, r"'url' has type uri, so it must be sent as"),
        ({"name": "nope", "valueString": "x"}, r"Unknown parameter 'nope' for \$validate-code"),
        ({"name": "url", "valueUri": "u", "part": []}, r"carries only one of"),
        ({"valueUri": "u"}, r"Parameters.parameter\[0\] needs a name"),
    ],
)
def test_body_refusals(entry: dict[str, Any], text: str) -> None:
    with pytest.raises(InvalidRequestError, match=text):
        parse_parameters(VALIDATE, _params(entry))
