"""ValueSet/$compare over HTTP (a real server on loopback): GET and POST, the outputs,
and the bad input answered as OperationOutcomes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from compare_fixtures import (
    CASES,
    HL7,
    VERSION_CASES,
    VERSION_RESOURCES,
    VS,
    compare_workbench,
    valueset,
    versions_workbench,
)
from http_support import TOKEN, assert_outcome, client, params, values

from workbench import Workbench


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


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, httpx.Client]]:
    """A server with the version cases' resources loaded, and one with nothing loaded (the
    resources then come as tx-resource, as HL7's test runner sends its setup)."""
    with (
        versions_workbench().serve(port=0, token=TOKEN) as loaded,
        Workbench().serve(port=0, token=TOKEN) as bare,
        client(loaded.url) as stored,
        client(bare.url) as sent,
    ):
        yield {"stored": stored, "tx-resource": sent}


def _side(name: str, canonical: str) -> list[tuple[str, dict[str, str]]]:
    """``{name}Url`` and, for ``url|version``, ``{name}Version``."""
    url, _, version = canonical.partition("|")
    found = [(f"{name}Url", {"valueUri": HL7 + url})]
    return found + ([(f"{name}Version", {"valueString": version})] if version else [])


@pytest.mark.parametrize("where", ["stored", "tx-resource"])
@pytest.mark.parametrize(
    ("this", "other", "result", "expanded", "common", "missing", "extra"), VERSION_CASES
)
def test_compare_versions(
    servers: dict[str, httpx.Client],
    where: str,
    this: str,
    other: str,
    result: str,
    expanded: bool,
    common: str,
    missing: str,
    extra: str,
) -> None:
    inputs = _side("this", this) + _side("other", other)
    if where == "tx-resource":
        inputs += [("tx-resource", {"resource": r}) for r in VERSION_RESOURCES]
    response = servers[where].post("/ValueSet/$compare", json=params(*inputs))
    assert response.status_code == 200, response.text
    got = response.json()
    assert values(got, "result") == [result], values(got, "message")
    assert values(got, "performed-expansion") == [expanded]
    codes = tuple(_codes(got, n) for n in ("common-codes", "missing-codes", "extra-codes"))
    assert codes == (common, missing, extra)
    assert HL7 + this.partition("|")[0] in values(got, "message")[0]


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
