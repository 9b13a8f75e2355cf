"""ValueSet/$compare over HTTP (a real server on loopback): GET and POST, the outputs,
and the bad input answered as OperationOutcomes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from compare_fixtures import CASES, VS, compare_workbench, valueset
from http_support import TOKEN, assert_outcome, client, params, values


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    wb = compare_workbench()
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        yield c


def _codes(body: dict, name: str) -> str:
    found = values(body, name)
    return ",".join(sorted(found[0].split(","))) if found else ""


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize(
    ("this", "other", "result", "expanded", "common", "missing", "extra"), CASES
)
def test_compare(
    http: httpx.Client,
    method: str,
    this: str,
    other: str,
    result: str,
    expanded: bool,
    common: str,
    missing: str,
    extra: str,
) -> None:
    this_url, _, this_version = this.partition("|")
    inputs = [("thisUrl", VS + this_url), ("otherUrl", VS + other)]
    if this_version:
        inputs.append(("thisVersion", this_version))
    if method == "GET":
        response = http.get("/ValueSet/$compare", params=dict(inputs))
    else:
        body = params(
            *((n, {"valueUri" if n.endswith("Url") else "valueString": v}) for n, v in inputs)
        )
        response = http.post("/ValueSet/$compare", json=body)
    assert response.status_code == 200, response.text
    got = response.json()
    assert values(got, "result") == [result]
    assert values(got, "performed-expansion") == [expanded]
    assert (
        _codes(got, "common-codes"),
        _codes(got, "missing-codes"),
        _codes(got, "extra-codes"),
    ) == (
        common,
        missing,
        extra,
    )
    assert VS + this_url in values(got, "message")[0]


def test_inline_value_sets_and_diagnostics(http: httpx.Client) -> None:
    body = params(
        ("thisValueSet", {"resource": valueset("inline", "ba")}),
        ("otherUrl", {"valueUri": VS + "ab"}),
        ("diagnostics", {"valueBoolean": True}),
    )
    got = http.post("/ValueSet/$compare", json=body).json()
    assert values(got, "result") == ["same"]
    assert "normalised definitions" in values(got, "diagnostics")[0]


@pytest.mark.parametrize(
    ("inputs", "status", "code", "text"),
    [
        ([("thisUrl", VS + "nowhere"), ("otherUrl", VS + "ab")], 404, "not-found", "nowhere"),
        (
            [("thisUrl", VS + "abc"), ("thisVersion", "9"), ("otherUrl", VS + "ab")],
            404,
            "not-found",
            "the loaded versions are '1', '2'",
        ),
        ([("otherUrl", VS + "ab")], 400, "required", "thisUrl"),
    ],
)
def test_bad_input(
    http: httpx.Client, inputs: list[tuple[str, str]], status: int, code: str, text: str
) -> None:
    assert_outcome(http.get("/ValueSet/$compare", params=dict(inputs)), status, code, text)
