"""Property-based fuzzing of the running server (127.0.0.1): random and mutated bodies, raw
bytes and query strings against every operation and the resource endpoints. Whatever is sent,
the answer is never a 5xx, and every 4xx is a FHIR JSON OperationOutcome; the connection
stays usable. Example counts are bounded so that the whole module runs in about 30 s.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from http_support import DEMO_CS, FHIR_JSON, GENDER_CS, GENDER_VS, TOKEN, client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import Workbench
from workbench.operations import OPERATIONS

VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"
FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

OPERATION_PATHS = sorted(
    {
        f"/{rtype}/${op.definition.code}"
        for op in OPERATIONS
        for rtype in op.definition.resource_types
        if op.definition.type
    }
)
PARAMETER_NAMES = sorted({name for op in OPERATIONS for name in op.definition.inputs})
FHIR_KEYS = [
    "resourceType", "url", "version", "status", "compose", "include", "exclude", "system",
    "concept", "code", "display", "filter", "property", "op", "value", "valueSet",
    "designation", "language", "content", "parameter", "name", "valueCoding", "valueCode",
    "valueUri", "valueString", "valueBoolean", "valueInteger", "resource", "coding", "id",
    "extension", "contained", "group", "element", "target", "equivalence", "_display", "meta",
]  # fmt: skip


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """A module-private Workbench and server: fuzzed writes may change it."""
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        yield c


def check(response: httpx.Response) -> None:
    """Never a 5xx; a 4xx is a FHIR JSON OperationOutcome with an issue."""
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith(FHIR_JSON), response.headers
        body = response.json()
        assert body["resourceType"] == "OperationOutcome", body
        issue = body["issue"][0]
        assert issue["severity"] in ("error", "fatal") and issue["code"], issue
        assert issue["details"]["text"], issue


texts = st.text(max_size=12) | st.sampled_from(
    ["", " ", "male", GENDER_CS, GENDER_VS, DEMO_CS, "²", "٣", "1e400", "\n", "a\u0000b", "#x"]
)
numbers = st.integers(min_value=-(2**70), max_value=2**70) | st.floats(
    allow_nan=False, allow_infinity=False
)
scalars = st.none() | st.booleans() | numbers | texts
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FHIR_KEYS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=16,
)

SEEDS: list[dict[str, Any]] = [
    {
        "resourceType": "ValueSet",
        "url": "http://example.org/fuzz/vs",
        "status": "draft",
        "compose": {
            "include": [
                {"system": DEMO_CS, "concept": [{"code": "video", "display": "Video"}]},
                {
                    "system": GENDER_CS,
                    "filter": [{"property": "concept", "op": "is-a", "value": "male"}],
                },
                {"valueSet": [GENDER_VS]},
            ]
        },
    },
    {
        "resourceType": "CodeSystem",
        "url": "http://example.org/fuzz/cs",
        "status": "draft",
        "content": "complete",
        "property": [{"code": "parent", "type": "code"}],
        "concept": [
            {"code": "a", "display": "A", "concept": [{"code": "b"}]},
            {"code": "c", "property": [{"code": "parent", "valueCode": "a"}]},
        ],
    },
    {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": GENDER_VS},
            {"name": "coding", "valueCoding": {"system": GENDER_CS, "code": "male"}},
            {"name": "codeableConcept", "valueCodeableConcept": {"coding": [{"code": "x"}]}},
            {"name": "count", "valueInteger": 2},
        ],
    },
    {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "system", "valueUri": GENDER_CS},
            {"name": "code", "valueCode": "male"},
            {"name": "codeA", "valueCode": "male"},
            {"name": "codeB", "valueCode": "female"},
        ],
    },
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += _paths(inner, (*prefix, i))
    return found


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """A seed resource with one to three of its values replaced by random JSON."""
    body = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(body)))
        replacement = draw(json_values)
        if not path:
            return replacement
        target = body
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = replacement
    return body


def _post(http: httpx.Client, path: str, data: bytes) -> httpx.Response:
    return http.post(path, content=data, headers={"Content-Type": FHIR_JSON})


@FUZZ
@given(path=st.sampled_from([*OPERATION_PATHS, "/ValueSet", "/CodeSystem"]), body=mutated())
def test_mutated_bodies(http: httpx.Client, path: str, body: Any) -> None:
    data = json.dumps(body, allow_nan=False).encode()
    check(_post(http, path, data))


@FUZZ
@given(
    rtype=st.sampled_from(["ValueSet", "CodeSystem", "ConceptMap"]),
    rid=st.sampled_from(["fuzz", "administrative-gender"]) | st.text(max_size=8),
    body=mutated() | json_values,
)
def test_fuzzed_writes(http: httpx.Client, rtype: str, rid: str, body: Any) -> None:
    if isinstance(body, dict) and body.get("resourceType") in ("ValueSet", "CodeSystem"):
        body = {**body, "resourceType": rtype, "id": rid}
    data = json.dumps(body, allow_nan=False).encode()
    response = http.put(
        f"/{rtype}/{quote(rid, safe='')}", content=data, headers={"Content-Type": FHIR_JSON}
    )
    check(response)
    # whatever was stored keeps the operations working
    check(http.get("/ValueSet/$expand", params={"url": "http://example.org/fuzz/vs"}))
    check(
        http.get(
            "/CodeSystem/$lookup", params={"system": "http://example.org/fuzz/cs", "code": "c"}
        )
    )


@FUZZ
@given(
    path=st.sampled_from([*OPERATION_PATHS, "/ValueSet", "/CodeSystem"]),
    data=st.binary(max_size=120),
)
def test_raw_bytes(http: httpx.Client, path: str, data: bytes) -> None:
    check(_post(http, path, data))


@FUZZ
@given(
    path=st.sampled_from([*OPERATION_PATHS, "/ValueSet", "/CodeSystem", "/ConceptMap"]),
    items=st.lists(
        st.tuples(
            st.sampled_from(
                [*PARAMETER_NAMES, "_count", "_offset", "_sort", "_summary", "_elements"]
            )
            | st.text(max_size=6),
            texts | st.integers().map(str) | st.text(max_size=20),
        ),
        max_size=6,
    ),
)
def test_query_strings(http: httpx.Client, path: str, items: list[tuple[str, str]]) -> None:
    query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in items)
    check(http.get(f"{path}?{query}"))
