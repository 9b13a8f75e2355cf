"""``$closure`` over HTTP (uvicorn on 127.0.0.1), as R4 defines it (ConceptMap-closure, a
system-level operation): a closure table per name, kept in the server's database (SQLite
in the data folder; PostgreSQL for a fleet), initialised by a call without concepts; each
call answers a ConceptMap of the relationships that are new (``source`` the narrower,
``target`` the broader, equivalence ``subsumes``) at the table's new version; ``version``
replays every relationship added after it. Over SNOMED CT, LOINC parts, ICD-10-CM and a
CodeSystem written with PUT. Bad input is a clear OperationOutcome, never a 5xx."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import snomed_rf2
from http_support import TOKEN, assert_outcome, client, params, serve_app

from workbench import Workbench
from workbench.server import create_app

SCT = "http://snomed.info/sct"
LOINC = "http://loinc.org"
ICD = "http://hl7.org/fhir/sid/icd-10-cm"
PUT_CS = "http://example.org/cs/closure-body"
UCUM = "http://unitsofmeasure.org"
LOINC_RELEASE = Path(__file__).parent / "data" / "loinc-release"

#: A CodeSystem with a hierarchy, written with PUT: body > limb > arm > hand.
BODY = {
    "resourceType": "CodeSystem",
    "id": "closure-body",
    "url": PUT_CS,
    "status": "active",
    "content": "complete",
    "hierarchyMeaning": "is-a",
    "concept": [
        {
            "code": "body",
            "concept": [
                {"code": "limb", "concept": [{"code": "arm", "concept": [{"code": "hand"}]}]}
            ],
        },
        {"code": "organ"},
    ],
}


def _icd_xml() -> Path:
    spec = importlib.util.find_spec("simple_icd_10_cm")
    assert spec is not None and spec.submodule_search_locations
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("data/*tabular*.xml"))
    assert found, "simple-icd-10-cm ships no tabular XML"
    return found[0]


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    """SNOMED CT (a small RF2 release), LOINC (with parts) and ICD-10-CM."""
    root = tmp_path_factory.mktemp("releases")
    bench = Workbench()
    bench.load_release(snomed_rf2.write(root / "sct"), cache_dir=root / "c1", progress=False)
    bench.load_release(LOINC_RELEASE, cache_dir=root / "c2", progress=False)
    bench.load_release(_icd_xml(), cache_dir=root / "c3", progress=False)
    return bench


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def http(wb: Workbench, folder: Path) -> Iterator[httpx.Client]:
    app = create_app(wb, token=TOKEN, data_dir=folder)
    with serve_app(app) as running, client(running.url) as c:
        put = c.put("/CodeSystem/closure-body", json=BODY)
        assert put.status_code in (200, 201), put.text
        yield c


def closure(
    http: httpx.Client, name: str, *codings: tuple[str, str], **more: str
) -> httpx.Response:
    """POST ``$closure`` naming ``name`` with ``codings`` (system, code) and ``more``."""
    entries = [("name", {"valueString": name})]
    entries += [("concept", {"valueCoding": {"system": s, "code": c}}) for s, c in codings]
    entries += [(k, {"valueString": v}) for k, v in more.items()]
    return http.post("/$closure", json=params(*entries))


def entries(conceptmap: dict[str, Any]) -> set[tuple[str, str, str]]:
    """The relationships of a ConceptMap answer: (system, narrower, broader), each checked
    to be read as R4 reads them (``subsumes``: the target subsumes the source)."""
    assert conceptmap["resourceType"] == "ConceptMap", conceptmap
    found = set()
    for group in conceptmap.get("group", []):
        assert group["source"] == group["target"]
        for element in group["element"]:
            for target in element["target"]:
                assert target["equivalence"] == "subsumes"
                found.add((group["source"], element["code"], target["code"]))
    return found


def answered(response: httpx.Response) -> tuple[str, set[tuple[str, str, str]]]:
    """The version and relationships of a successful call."""
    assert response.status_code == 200, response.text
    body = response.json()
    return body["version"], entries(body)


#: (system, the concepts each call adds, the relationships each call answers)
GROWTH = [
    (
        SCT,
        [["22298006", "404684003"], ["57054005", "64572001", "80891009"], ["22298006"]],
        [
            {("22298006", "404684003")},
            {
                ("57054005", "22298006"),
                ("57054005", "64572001"),
                ("57054005", "404684003"),
                ("64572001", "404684003"),
                ("22298006", "64572001"),
            },
            set(),
        ],
    ),
    (
        LOINC,
        [["2345-7"], ["LP14635-4", "LP443001-2"]],
        [set(), {("2345-7", "LP443001-2"), ("2345-7", "LP14635-4"), ("LP443001-2", "LP14635-4")}],
    ),
    (
        ICD,
        [["S52.521A", "A00.0"], ["S52", "A00-A09"]],
        [set(), {("S52.521A", "S52"), ("A00.0", "A00-A09")}],
    ),
    (
        PUT_CS,
        [["hand", "organ"], ["limb"], ["body", "arm"]],
        [
            set(),
            {("hand", "limb")},
            {("hand", "body"), ("limb", "body"), ("hand", "arm"), ("arm", "limb"), ("arm", "body")},
        ],
    ),
]


@pytest.mark.parametrize(
    ("system", "calls", "expected"), GROWTH, ids=["snomed", "loinc", "icd-10-cm", "put"]
)
def test_each_call_answers_the_new_relationships(
    http: httpx.Client, system: str, calls: list[list[str]], expected: list[set[tuple[str, str]]]
) -> None:
    name = f"grow-{system}"
    assert answered(closure(http, name)) == ("0", set())
    version, seen = 0, set()
    for codes, relationships in zip(calls, expected, strict=True):
        found_version, found = answered(closure(http, name, *((system, c) for c in codes)))
        version += 1 if set(codes) - seen else 0  # a call that adds no concept keeps it
        seen |= set(codes)
        assert (found_version, found) == (str(version), {(system, a, b) for a, b in relationships})
    # replaying from 0 answers every relationship, from the current version none
    current, every = answered(closure(http, name, version="0"))
    assert every == {(system, a, b) for step in expected for a, b in step}
    assert answered(closure(http, name, version=current)) == (current, set())


def test_version_replays_from_a_version(http: httpx.Client) -> None:
    name = "replay"
    closure(http, name)
    assert answered(closure(http, name, (SCT, "57054005"), (SCT, "64572001")))[0] == "1"
    v2 = answered(closure(http, name, (SCT, "404684003")))
    assert v2 == ("2", {(SCT, "57054005", "404684003"), (SCT, "64572001", "404684003")})
    # a call that adds nothing known already keeps the version
    assert answered(closure(http, name, (SCT, "404684003"))) == ("2", set())
    assert answered(closure(http, name, version="1")) == v2
    _, every = answered(closure(http, name, version="0"))
    assert every == v2[1] | {(SCT, "57054005", "64572001")}


def test_initialising_again_empties_the_table(http: httpx.Client) -> None:
    name = "again"
    closure(http, name)
    closure(http, name, (SCT, "57054005"), (SCT, "64572001"))
    assert answered(closure(http, name)) == ("0", set())
    assert answered(closure(http, name, version="0")) == ("0", set())
    assert answered(closure(http, name, (SCT, "64572001"))) == ("1", set())


def test_systems_do_not_mix(http: httpx.Client) -> None:
    name = "mixed"
    closure(http, name)
    _, found = answered(
        closure(
            http,
            name,
            (SCT, "22298006"),
            (LOINC, "2345-7"),
            (SCT, "56265001"),
            (LOINC, "LP443001-2"),
        )
    )
    assert found == {(SCT, "22298006", "56265001"), (LOINC, "2345-7", "LP443001-2")}


def _setup(http: httpx.Client) -> None:
    closure(http, "bad")
    closure(http, "bad", (SCT, "22298006"))


#: (what, request, status, issue code, text)
BAD = [
    (
        "name never initialised",
        [
            ("name", {"valueString": "never"}),
            ("concept", {"valueCoding": {"system": SCT, "code": "22298006"}}),
        ],
        404,
        "not-found",
        "closure 'never' is not known: initialise it",
    ),
    (
        "replay of a name never initialised",
        [("name", {"valueString": "never"}), ("version", {"valueString": "0"})],
        404,
        "not-found",
        "closure 'never' is not known",
    ),
    (
        "system not loaded",
        [
            ("name", {"valueString": "bad"}),
            ("concept", {"valueCoding": {"system": "http://example.org/none", "code": "x"}}),
        ],
        404,
        "not-found",
        "http://example.org/none",
    ),
    (
        "system without a hierarchy",
        [
            ("name", {"valueString": "bad"}),
            ("concept", {"valueCoding": {"system": UCUM, "code": "mg"}}),
        ],
        400,
        "not-supported",
        "has no hierarchy",
    ),
    (
        "unknown code",
        [
            ("name", {"valueString": "bad"}),
            ("concept", {"valueCoding": {"system": SCT, "code": "999999999"}}),
        ],
        404,
        "not-found",
        "Unknown code '999999999'",
    ),
    (
        "coding without a system",
        [("name", {"valueString": "bad"}), ("concept", {"valueCoding": {"code": "22298006"}})],
        400,
        "invalid",
        "needs a system and a code",
    ),
    (
        "version in the future",
        [("name", {"valueString": "bad"}), ("version", {"valueString": "2"})],
        400,
        "invalid",
        "at version 1: there is no version 2 .*future",
    ),
    (
        "version not a number",
        [("name", {"valueString": "bad"}), ("version", {"valueString": "v1"})],
        400,
        "invalid",
        "is not a version of closure 'bad'",
    ),
    (
        "version huge",
        [("name", {"valueString": "bad"}), ("version", {"valueString": "9" * 40})],
        400,
        "invalid",
        "is not a version",
    ),
    (
        "concept and version",
        [
            ("name", {"valueString": "bad"}),
            ("version", {"valueString": "0"}),
            ("concept", {"valueCoding": {"system": SCT, "code": "22298006"}}),
        ],
        400,
        "invalid",
        "either 'concept'",
    ),
    (
        "no name",
        [("concept", {"valueCoding": {"system": SCT, "code": "22298006"}})],
        400,
        "",
        "name",
    ),
    (
        "name with a control character",
        [("name", {"valueString": "a\u0007b"})],
        400,
        "invalid",
        "without control characters",
    ),
    ("name too long", [("name", {"valueString": "n" * 300})], 400, "invalid", "at most 256"),
]


@pytest.mark.parametrize(
    ("request_", "status", "code", "text"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_is_a_clear_outcome(
    http: httpx.Client,
    request_: list[tuple[str, dict[str, Any]]],
    status: int,
    code: str,
    text: str,
) -> None:
    _setup(http)
    found = http.post("/$closure", json=params(*request_))
    assert found.status_code < 500
    if code:
        assert_outcome(found, status, code, text)
    else:
        assert found.status_code == status and text in found.text


def test_closure_is_post_only_at_system_and_type_level(http: httpx.Client) -> None:
    """``[base]/$closure`` as R4 defines it, and ``[base]/ConceptMap/$closure`` where clients
    call it: one table, whichever path a call takes; GET is refused on both."""
    for path in ("/$closure", "/ConceptMap/$closure"):
        assert_outcome(http.get(f"{path}?name=x"), 405, "not-supported", "changes state")
    initialised = http.post("/ConceptMap/$closure", json=params(("name", {"valueString": "both"})))
    assert answered(initialised) == ("0", set())
    added = closure(http, "both", (SCT, "22298006"), (SCT, "404684003"))
    version, found = answered(added)
    replayed = http.post(
        "/ConceptMap/$closure",
        json=params(("name", {"valueString": "both"}), ("version", {"valueString": "0"})),
    )
    assert answered(replayed) == (version, found) and found
    instance = http.post("/ConceptMap/x/$closure", json=params(("name", {"valueString": "x"})))
    assert_outcome(instance, 405, "not-supported", "only at system, type")


def test_tables_outlive_the_server_and_are_shared(
    wb: Workbench, folder: Path, http: httpx.Client
) -> None:
    """A second server on the same data folder (another worker, or the next run) sees the
    tables; both grow one table in turns and neither misses a relationship."""
    name = "shared"
    closure(http, name)
    closure(http, name, (SCT, "57054005"))
    with ExitStack() as stack:
        other = stack.enter_context(serve_app(create_app(wb, token=TOKEN, data_dir=folder)))
        second = stack.enter_context(client(other.url))
        assert answered(closure(second, name, (SCT, "22298006"))) == (
            "2",
            {(SCT, "57054005", "22298006")},
        )
        assert answered(closure(http, name, (SCT, "64572001"))) == (
            "3",
            {(SCT, "57054005", "64572001"), (SCT, "22298006", "64572001")},
        )
        assert answered(closure(second, name, (SCT, "56265001")))[0] == "4"
        _, every = answered(closure(second, name, version="0"))
    assert len(every) == 6  # each pair of the chain 57054005 < 22298006 < 56265001 < 64572001


def _close_connections(app: Any) -> None:
    """Close the database connections of an app served in this process."""
    app.state.closures.close()
    app.state.caches.backing.close()
    app.state.store.db.close()


@pytest.fixture(scope="module")
def postgres() -> Iterator[Any]:
    from postgres_support import running

    with running() as server:
        yield server


def test_a_fleet_on_postgresql_shares_the_tables(wb: Workbench, postgres: Any) -> None:
    """Two servers on one PostgreSQL database: a table initialised on one grows on both,
    calls racing on both (threads) lose no relationship, and a replay on either answers
    every one (each pair of a chain of five SNOMED CT concepts: 10)."""
    from concurrent.futures import ThreadPoolExecutor

    url = postgres.create("closures")
    chain = ["57054005", "22298006", "56265001", "49601007", "64572001"]
    apps = [create_app(wb, token=TOKEN, database=url) for _ in range(2)]
    with ExitStack() as stack:
        for app in apps:
            stack.callback(_close_connections, app)
        https = [stack.enter_context(client(stack.enter_context(serve_app(a)).url)) for a in apps]
        assert answered(closure(https[0], "fleet")) == ("0", set())
        with ThreadPoolExecutor(len(chain)) as pool:
            calls = [
                pool.submit(closure, https[i % 2], "fleet", (SCT, code))
                for i, code in enumerate(chain)
            ]
            answers = [answered(call.result()) for call in calls]
        assert sorted(int(v) for v, _ in answers) == [1, 2, 3, 4, 5]
        assert sum(len(found) for _, found in answers) == 10
        for http in https:
            current, every = answered(closure(http, "fleet", version="0"))
            assert current == "5" and len(every) == 10
        found = closure(https[1], "fleet", version="6")
        assert_outcome(found, 400, "invalid", "at version 5: there is no version 6")
