"""Clients nobody here wrote: fhirpy (sync and async) and the SMART on FHIR ``fhirclient``
against the embedded server — reading every page of a search, creating conditionally, calling
every operation — and the server.py CLI run as a subprocess (127.0.0.1 only)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from fhirclient import client as smart_client
from fhirclient.models.bundle import Bundle as SmartBundle
from fhirclient.models.codesystem import CodeSystem as SmartCodeSystem
from fhirclient.models.conceptmap import ConceptMap as SmartConceptMap
from fhirclient.models.valueset import ValueSet as SmartValueSet
from fhirpy import AsyncFHIRClient, SyncFHIRClient
from fhirpy.base.exceptions import AuthorizationError, OperationOutcome, ResourceNotFound
from http_support import (
    DEMO_ALL,
    DEMO_CS,
    GENDER_CS,
    GENDER_VS,
    HOST,
    TOKEN,
    client,
    free_port,
    without_volatile,
)

from workbench import Workbench
from workbench.operations import OPERATIONS
from workbench.server.embedded import ServerHandle

ROOT = Path(__file__).resolve().parent.parent
START_DEADLINE = 60.0


@pytest.fixture(scope="module")
def fhirpy_wb() -> Workbench:
    fresh = Workbench()
    fresh.load(ROOT / "valuesets", progress=False)
    return fresh


@pytest.fixture(scope="module")
def fhirpy_server(fhirpy_wb: Workbench) -> Iterator[ServerHandle]:
    with fhirpy_wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture
def fhir(fhirpy_server: ServerHandle) -> SyncFHIRClient:
    return SyncFHIRClient(fhirpy_server.url, authorization=f"Bearer {TOKEN}")


def plain(value: Any) -> Any:
    """fhirpy's AttrDicts (and lists of them) as plain dicts and lists."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# --- fhirpy ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(
    ("url", "system", "code"),
    [
        pytest.param(GENDER_VS, GENDER_CS, "female", id="valid"),
        pytest.param(GENDER_VS, GENDER_CS, "nope", id="invalid"),
        pytest.param(DEMO_ALL, DEMO_CS, "in-person", id="abstract"),
    ],
)
def test_fhirpy_validate_code(
    fhir: SyncFHIRClient, fhirpy_wb: Workbench, method: str, url: str, system: str, code: str
) -> None:
    if method == "get":
        answer = fhir.execute(
            "ValueSet/$validate-code",
            method="get",
            params={"url": url, "system": system, "code": code},
        )
    else:
        body = {
            "resourceType": "Parameters",
            "parameter": [
                {"name": "url", "valueUri": url},
                {"name": "coding", "valueCoding": {"system": system, "code": code}},
            ],
        }
        answer = fhir.execute("ValueSet/$validate-code", method="post", data=body)
    if method == "get":
        expected = fhirpy_wb.validate_code(url, code=code, system=system)
    else:  # the issues of a Coding are located in it (Coding.code)
        expected = fhirpy_wb.validate_code(url, coding={"system": system, "code": code})
    assert plain(answer) == expected.to_parameters()


def test_fhirpy_validate_code_on_instance(fhir: SyncFHIRClient) -> None:
    reference = fhir.reference("ValueSet", "administrative-gender")
    answer = reference.execute(
        "$validate-code", method="get", params={"system": GENDER_CS, "code": "male"}
    )
    assert plain(answer["parameter"]) == [
        {"name": "result", "valueBoolean": True},
        {"name": "display", "valueString": "Male"},
        {"name": "code", "valueCode": "male"},
        {"name": "system", "valueUri": GENDER_CS},
        {"name": "version", "valueString": "4.0.1"},
    ]


def test_fhirpy_expand(fhir: SyncFHIRClient, fhirpy_wb: Workbench) -> None:
    got = fhir.execute("ValueSet/$expand", method="get", params={"url": DEMO_ALL, "count": 4})
    assert got["resourceType"] == "ValueSet"
    expected = fhirpy_wb.expand(DEMO_ALL, count=4).to_valueset()
    assert without_volatile(plain(got)) == without_volatile(expected)
    posted = fhir.execute(
        "ValueSet/$expand",
        data={
            "resourceType": "Parameters",
            "parameter": [
                {"name": "url", "valueUri": DEMO_ALL},
                {"name": "filter", "valueString": "phone"},
            ],
        },
    )
    assert [c["code"] for c in posted["expansion"]["contains"]] == ["phone", "phone-triage"]


def test_fhirpy_lookup(fhir: SyncFHIRClient, fhirpy_wb: Workbench) -> None:
    got = fhir.execute(
        "CodeSystem/$lookup",
        method="get",
        params={"system": DEMO_CS, "code": "office-new", "property": "duration-minutes"},
    )
    expected = fhirpy_wb.lookup(DEMO_CS, "office-new", properties=["duration-minutes"])
    assert plain(got) == expected.to_parameters()
    posted = fhir.execute(
        "CodeSystem/$lookup",
        data={
            "resourceType": "Parameters",
            "parameter": [
                {"name": "coding", "valueCoding": {"system": GENDER_CS, "code": "other"}}
            ],
        },
    )
    assert {"name": "display", "valueString": "Other"} in plain(posted["parameter"])


def test_fhirpy_read_change_save_read(fhir: SyncFHIRClient, fhirpy_wb: Workbench) -> None:
    valueset = fhir.reference("ValueSet", "workbench-demo-bookable").to_resource()
    assert valueset["url"] == "http://example.org/fhir/ValueSet/workbench-demo-bookable"
    version = int(valueset["meta"]["versionId"])
    valueset["title"] = "Bookable visits (edited with fhirpy)"
    valueset.save()
    assert valueset["meta"]["versionId"] == str(version + 1)
    again = fhir.reference("ValueSet", "workbench-demo-bookable").to_resource()
    assert again["title"] == "Bookable visits (edited with fhirpy)"
    assert again["meta"]["versionId"] == str(version + 1)
    assert (
        plain(again.serialize())["compose"]
        == fhirpy_wb.registry.read("ValueSet", "workbench-demo-bookable")["compose"]
    )
    assert fhirpy_wb.registry.read("ValueSet", "workbench-demo-bookable")["title"] == (
        "Bookable visits (edited with fhirpy)"
    )
    valueset.refresh()
    assert valueset["title"] == "Bookable visits (edited with fhirpy)"


def test_fhirpy_search(fhir: SyncFHIRClient) -> None:
    found = fhir.resources("ValueSet").search(name="WorkbenchDemo").fetch_all()
    assert {r["id"] for r in found} == {
        "workbench-demo-all",
        "workbench-demo-bookable",
        "workbench-demo-in-person",
        "workbench-demo-remote-live",
    }
    first = fhir.resources("CodeSystem").search(url=DEMO_CS).first()
    assert first is not None
    assert first["id"] == "workbench-demo"


def test_fhirpy_errors(fhirpy_server: ServerHandle, fhir: SyncFHIRClient) -> None:
    with pytest.raises(OperationOutcome) as unknown:
        fhir.execute(
            "ValueSet/$validate-code",
            method="get",
            params={"url": "http://example.org/fhir/ValueSet/none", "code": "x", "system": "y"},
        )
    issue = unknown.value.resource["issue"][0]
    assert (issue["code"], issue["details"]["text"]) == (
        "invalid",
        "ValueSet http://example.org/fhir/ValueSet/none not found",
    )
    with pytest.raises(ResourceNotFound):
        fhir.reference("ValueSet", "no-such-id").to_resource()
    stranger = SyncFHIRClient(fhirpy_server.url, authorization="Bearer wrong")
    with pytest.raises(AuthorizationError):
        stranger.reference("ValueSet", "workbench-demo-all").to_resource()


# --- every page, conditional create, every operation: three client libraries ---------

MAP_URL = "http://example.org/fhir/ConceptMap/clients-sex"
V2 = "http://example.org/fhir/CodeSystem/v2-sex"
SEX_MAP = {
    "resourceType": "ConceptMap",
    "url": MAP_URL,
    "version": "1.0.0",
    "name": "ClientsSex",
    "status": "active",
    "group": [
        {
            "source": GENDER_CS,
            "target": V2,
            "element": [{"code": "male", "target": [{"code": "M", "equivalence": "equal"}]}],
        }
    ],
}
# One call per operation and level: (path with {map} for the map's id, GET query, POST inputs).
OPERATION_CALLS: list[tuple[str, dict[str, Any], list[tuple[str, str, Any]]]] = [
    (
        "ValueSet/$expand",
        {"url": DEMO_ALL, "count": "3"},
        [("url", "valueUri", DEMO_ALL), ("count", "valueInteger", 3)],
    ),
    ("ValueSet/workbench-demo-all/$expand", {}, []),
    (
        "ValueSet/$compare",
        {"thisUrl": DEMO_ALL, "otherUrl": GENDER_VS},
        [("thisUrl", "valueUri", DEMO_ALL), ("otherUrl", "valueUri", GENDER_VS)],
    ),
    (
        "ValueSet/$validate-code",
        {"url": GENDER_VS, "system": GENDER_CS, "code": "female"},
        [
            ("url", "valueUri", GENDER_VS),
            ("system", "valueUri", GENDER_CS),
            ("code", "valueCode", "female"),
        ],
    ),
    (
        "ValueSet/administrative-gender/$validate-code",
        {"system": GENDER_CS, "code": "nope"},
        [("system", "valueUri", GENDER_CS), ("code", "valueCode", "nope")],
    ),
    (
        "CodeSystem/$lookup",
        {"system": DEMO_CS, "code": "office-new"},
        [("system", "valueUri", DEMO_CS), ("code", "valueCode", "office-new")],
    ),
    (
        "CodeSystem/$validate-code",
        {"url": DEMO_CS, "code": "video"},
        [("url", "valueUri", DEMO_CS), ("code", "valueCode", "video")],
    ),
    (
        "CodeSystem/workbench-demo/$validate-code",
        {"code": "nope"},
        [("code", "valueCode", "nope")],
    ),
    (
        "CodeSystem/$subsumes",
        {"system": DEMO_CS, "codeA": "in-person", "codeB": "office-new"},
        [
            ("system", "valueUri", DEMO_CS),
            ("codeA", "valueCode", "in-person"),
            ("codeB", "valueCode", "office-new"),
        ],
    ),
    (
        "CodeSystem/workbench-demo/$subsumes",
        {"codeA": "office-new", "codeB": "in-person"},
        [("codeA", "valueCode", "office-new"), ("codeB", "valueCode", "in-person")],
    ),
    (
        "ConceptMap/$translate",
        {"url": MAP_URL, "system": GENDER_CS, "code": "male"},
        [
            ("url", "valueUri", MAP_URL),
            ("system", "valueUri", GENDER_CS),
            ("code", "valueCode", "male"),
        ],
    ),
    (
        "ConceptMap/{map}/$translate",
        {"system": GENDER_CS, "code": "male"},
        [("system", "valueUri", GENDER_CS), ("code", "valueCode", "male")],
    ),
]


def test_operation_calls_cover_every_operation_and_level() -> None:
    covered = set()
    for path, _, _ in OPERATION_CALLS:
        parts = path.split("/")
        covered.add((parts[0], parts[-1].lstrip("$"), "instance" if len(parts) == 3 else "type"))
    expected = {
        (rtype, op.definition.code, level)
        for op in OPERATIONS
        for rtype in op.definition.resource_types
        for level in ("type", "instance")
        # (GET and POST alike: a POST-only operation, $batch-validate-code, has its own tests)
        if op.definition.available_at(level) and not op.definition.affects_state
    }
    assert covered == expected


def _parameters(inputs: list[tuple[str, str, Any]]) -> dict[str, Any]:
    return {
        "resourceType": "Parameters",
        "parameter": [{"name": n, kind: v} for n, kind, v in inputs],
    }


def _stable(answer: Any) -> Any:
    """An operation's answer without the parts that differ per call (expansion id, time)."""
    answer = plain(answer)
    if answer.get("resourceType") == "ValueSet":
        return without_volatile(answer)
    return answer


@pytest.fixture
def clients_server(wb: Workbench) -> Iterator[ServerHandle]:
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


def _expected_answers(handle: ServerHandle, map_id: str) -> dict[str, Any]:
    with client(handle.url) as http:
        out = {}
        for path, query, _ in OPERATION_CALLS:
            response = http.get("/" + path.format(map=map_id), params=query)
            assert response.status_code == 200, response.text
            out[path] = _stable(response.json())
        return out


def _demo_valueset(url: str) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": url,
        "name": "ClientMade",
        "status": "draft",
        "compose": {"include": [{"system": DEMO_CS, "concept": [{"code": "video"}]}]},
    }


def test_fhirpy_sync_pages_conditional_create_and_every_operation(
    clients_server: ServerHandle,
) -> None:
    """Before: searches had no next link (fetch_all stopped after one page), conditional
    creates made duplicates and a POST of an operation without a body was refused."""
    fhir = SyncFHIRClient(clients_server.url, authorization=f"Bearer {TOKEN}")
    everything = fhir.resources("ValueSet").search(_count=1000).fetch_all()
    paged = fhir.resources("ValueSet").limit(4).fetch_all()
    assert len(everything) > 8
    assert sorted(r["id"] for r in paged) == sorted(r["id"] for r in everything)
    assert fhir.resources("ValueSet").count() == len(everything)
    # Conditional create, both ways fhirpy offers.
    url = "http://example.org/fhir/ValueSet/fhirpy-made"
    made, created = (
        fhir.resources("ValueSet")
        .search(url=url)
        .get_or_create(fhir.resource("ValueSet", **_demo_valueset(url)))
    )
    assert created is True
    again, created_again = (
        fhir.resources("ValueSet")
        .search(url=url)
        .get_or_create(fhir.resource("ValueSet", **_demo_valueset(url)))
    )
    assert created_again is False
    assert again["id"] == made["id"]
    second = fhir.resource("ValueSet", **_demo_valueset(url))
    second.create(url=url)
    assert second["id"] == made["id"]
    assert fhir.resources("ValueSet").search(url=url).count() == 1
    # Every operation, GET and POST (an empty POST where there are no inputs).
    conceptmap = fhir.resource("ConceptMap", **SEX_MAP)
    conceptmap.save()
    expected = _expected_answers(clients_server, conceptmap["id"])
    for path, query, inputs in OPERATION_CALLS:
        where = path.format(map=conceptmap["id"])
        got = fhir.execute(where, method="get", params=query)
        assert _stable(got) == expected[path], path
        if inputs:
            posted = fhir.execute(where, method="post", data=_parameters(inputs))
        else:
            posted = fhir.execute(where, method="post")
        assert _stable(posted) == expected[path], path


def test_fhirpy_async_pages_conditional_create_and_every_operation(
    clients_server: ServerHandle,
) -> None:
    async def scenario() -> None:
        fhir = AsyncFHIRClient(clients_server.url, authorization=f"Bearer {TOKEN}")
        everything = await fhir.resources("CodeSystem").search(_count=1000).fetch_all()
        paged = await fhir.resources("CodeSystem").limit(3).fetch_all()
        assert len(everything) > 6
        assert sorted(r["id"] for r in paged) == sorted(r["id"] for r in everything)
        url = "http://example.org/fhir/ValueSet/fhirpy-async-made"
        made, created = (
            await fhir.resources("ValueSet")
            .search(url=url)
            .get_or_create(fhir.resource("ValueSet", **_demo_valueset(url)))
        )
        again, created_again = (
            await fhir.resources("ValueSet")
            .search(url=url)
            .get_or_create(fhir.resource("ValueSet", **_demo_valueset(url)))
        )
        assert (created, created_again) == (True, False)
        assert again["id"] == made["id"]
        conceptmap = fhir.resource("ConceptMap", **SEX_MAP)
        await conceptmap.save()
        expected = _expected_answers(clients_server, conceptmap["id"])
        for path, query, inputs in OPERATION_CALLS:
            where = path.format(map=conceptmap["id"])
            got = await fhir.execute(where, method="get", params=query)
            assert _stable(got) == expected[path], path
            body = _parameters(inputs) if inputs else None
            posted = await fhir.execute(where, method="post", data=body)
            assert _stable(posted) == expected[path], path

    asyncio.run(scenario())


def _smart(handle: ServerHandle) -> smart_client.FHIRClient:
    smart = smart_client.FHIRClient(
        settings={"app_id": "workbench-tests", "api_base": handle.url + "/"}
    )
    smart.server.session.headers["Authorization"] = f"Bearer {TOKEN}"
    smart.server.session.trust_env = False  # 127.0.0.1 only, never a proxy
    return smart


def test_fhirclient_capability_pages_crud_conditional_and_every_operation(
    clients_server: ServerHandle,
) -> None:
    """The SMART on FHIR Python client parses every answer into its strict R4 models."""
    smart = _smart(clients_server)
    smart.prepare()  # reads and parses the CapabilityStatement
    statement = smart.server.capabilityStatement
    assert statement.fhirVersion == "4.0.1"
    assert statement.rest[0].security.service[0].text == "Bearer token (RFC 6750)"
    server = smart.server
    # Every page of a search.
    search = SmartValueSet.where(struct={"status": "active", "_count": "3"})
    pages = list(search.perform_iter(server))
    found = [e.resource.id for page in pages for e in page.entry or []]
    assert len(pages) > 2
    assert pages[0].total == len(found) == len(set(found))
    assert all(isinstance(page, SmartBundle) for page in pages)
    # Read, create, update, vread, delete.
    gender = SmartCodeSystem.read("administrative-gender", server)
    assert [c.code for c in gender.concept] == ["male", "female", "other", "unknown"]
    made = SmartValueSet(_demo_valueset("http://example.org/fhir/ValueSet/smart-made"))
    answer = made.create(server)
    rid = answer["id"]
    stored = SmartValueSet.read(rid, server)
    stored.title = "Made with fhirclient"
    stored.update(server)
    assert SmartValueSet.read(rid, server).meta.versionId == "2"
    first = SmartValueSet.read_from(f"ValueSet/{rid}/_history/1", server)
    assert first.title is None
    history = SmartBundle.read_from(f"ValueSet/{rid}/_history", server)
    assert [e.response.etag for e in history.entry] == ['W/"2"', 'W/"1"']
    # Conditional create (fhirclient has no helper: its session sends the header).
    url = "http://example.org/fhir/ValueSet/smart-conditional"
    statuses = []
    for _ in range(2):
        response = server.session.post(
            server.base_uri + "ValueSet",
            json=_demo_valueset(url),
            headers={"Content-Type": "application/fhir+json", "If-None-Exist": f"url={url}"},
        )
        statuses.append(response.status_code)
    assert statuses == [201, 200]
    assert len(list(SmartValueSet.where(struct={"url": url}).perform_resources_iter(server))) == 1
    SmartValueSet.read(rid, server).delete(server)
    with pytest.raises(Exception, match="410"):
        SmartValueSet.read_from(f"ValueSet/{rid}/_history/3", server)
    # Every operation, GET and POST.
    conceptmap = SmartConceptMap(dict(SEX_MAP)).create(server)
    expected = _expected_answers(clients_server, conceptmap["id"])
    for path, query, inputs in OPERATION_CALLS:
        where = path.format(map=conceptmap["id"])
        query_string = "&".join(f"{k}={v}" for k, v in query.items())
        got = server.request_json(where + ("?" + query_string if query else ""))
        assert _stable(got) == expected[path], path
        posted = server.post_json(where, _parameters(inputs)).json()
        assert _stable(posted) == expected[path], path


@pytest.mark.slow
def test_fhirpy_reads_every_default_page_of_the_r4_core(r4_wb: Workbench) -> None:
    """The whole R4 core (over a thousand value sets) in pages of the default size: fhirpy
    follows every next link and gets each value set once."""
    with r4_wb.serve(port=0, token=TOKEN) as handle:
        fhir = SyncFHIRClient(handle.url, authorization=f"Bearer {TOKEN}")
        stored = {r["id"] for r in r4_wb.registry.all("ValueSet")}
        assert len(stored) > 1000
        found = [r["id"] for r in fhir.resources("ValueSet").fetch_all()]
        assert len(found) == len(stored)
        assert set(found) == stored
        with client(handle.url) as http:
            first = http.get("/ValueSet").json()
        assert len(first["entry"]) == 100
        assert any(link["relation"] == "next" for link in first["link"])


# --- the server.py CLI ----------------------------------------------------------------


def test_cli_help() -> None:
    done = subprocess.run(
        [sys.executable, "server.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for option in ("--host", "--port", "--base", "--data", "--token", "--load", "--package"):
        assert re.search(rf"(^|\s){option}\b", done.stdout), option


def _collect(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line)


def test_cli_serves(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://{HOST}:{port}/fhir/R4"
    out: list[str] = []
    err: list[str] = []
    command = [
        sys.executable,
        "server.py",
        "--host",
        HOST,
        "--port",
        str(port),
        "--token",
        "abc",
        "--data",
        str(tmp_path / "data"),
    ]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        readers = [
            threading.Thread(target=_collect, args=(proc.stdout, out), daemon=True),
            threading.Thread(target=_collect, args=(proc.stderr, err), daemon=True),
        ]
        for reader in readers:
            reader.start()
        try:
            deadline = time.monotonic() + START_DEADLINE
            with client(base, token=None) as anonymous:
                while True:
                    assert proc.poll() is None, "server.py exited early:\n" + "".join(err)
                    assert time.monotonic() < deadline, "server.py did not start:\n" + "".join(err)
                    try:
                        if anonymous.get("/metadata").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    time.sleep(0.1)
            printed = "".join(out)
            assert f"FHIR R4 terminology server: {base}" in printed
            assert "Access token: abc" in printed
            curl = next(line.strip() for line in out if line.strip().startswith("curl "))
            match = re.fullmatch(r"curl -H '(Authorization: Bearer abc)' '([^']+)'", curl)
            assert match, curl
            # Do what the printed curl example does, with httpx.
            with client(base, token=None) as anonymous:
                name, value = match.group(1).split(": ", 1)
                answer = anonymous.get(match.group(2), headers={name: value})
                assert answer.status_code == 200, answer.text
                assert answer.json()["parameter"][0] == {"name": "result", "valueBoolean": True}
                assert anonymous.get("/ValueSet").status_code == 401
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
        for reader in readers:
            reader.join(timeout=5)
    assert proc.returncode in (0, -15), "".join(err)
