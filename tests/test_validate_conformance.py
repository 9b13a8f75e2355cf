"""$validate-code as the reference terminology servers answer it (issue 9, points 1-4, 11).

Tables, each asked in Python and over HTTP (the real server on loopback), with the project's
own small code system in three versions side by side:

- the version matrix: coding version × value set include version × each version parameter;
- the outputs and the ``issues`` OperationOutcome: severity, tx-issue-type code and the
  FHIRPath expression of the input element, for the code parameters, a Coding and each
  coding of a CodeableConcept;
- CodeableConcept semantics, inferSystem, lenient-display-validation,
  valueset-membership-only, activeOnly;
- parameter typing as other servers send it, and bad version parameters as 400s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client, params

from workbench import Workbench
from workbench.errors import IncompleteCodeSystemError, InvalidRequestError
from workbench.terminology.versions import check_version_text

S = "http://example.org/fhir/CodeSystem/versions"
OTHER = "http://example.org/fhir/CodeSystem/other"
VS = "http://example.org/fhir/ValueSet/versions-"
TX = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"


def codesystem(version: str, codes: list[str]) -> dict[str, Any]:
    concepts = [{"code": c, "display": f"{c.upper()} {version}"} for c in codes]
    concepts.append(
        {
            "code": "old",
            "display": f"Old {version}",
            "property": [{"code": "status", "valueCode": "retired"}],
        }
    )
    concepts.append(
        {
            "code": "group",
            "display": f"Group {version}",
            "property": [{"code": "notSelectable", "valueBoolean": True}],
        }
    )
    return {
        "resourceType": "CodeSystem",
        "id": f"versions-{version}",
        "url": S,
        "version": version,
        "status": "active",
        "content": "complete",
        "property": [
            {"code": "status", "type": "code"},
            {"code": "notSelectable", "type": "boolean"},
        ],
        "concept": concepts,
    }


def valueset(name: str, version: str | None = None, *more: dict[str, Any]) -> dict[str, Any]:
    include: dict[str, Any] = {"system": S}
    if version is not None:
        include["version"] = version
    return {
        "resourceType": "ValueSet",
        "id": f"versions-{name}",
        "url": VS + name,
        "version": "1",
        "status": "active",
        "compose": {"include": [include, *more]},
    }


RESOURCES = [
    codesystem("1.0.0", ["a", "b"]),
    codesystem("1.2.0", ["a", "b"]),
    codesystem("2.0.0", ["a", "c"]),
    {
        "resourceType": "CodeSystem",
        "id": "other",
        "url": OTHER,
        "version": "1",
        "status": "active",
        "content": "complete",
        "caseSensitive": False,
        "concept": [{"code": "Mixed", "display": "Mixed case"}, {"code": "z", "display": "Zed"}],
    },
    valueset("nn"),
    valueset("10", "1.0.0"),
    valueset("1x", "1.x"),
    valueset("two", None, {"system": OTHER}),
]


@pytest.fixture(scope="module")
def vwb() -> Workbench:
    wb = Workbench()
    wb.load(RESOURCES)
    return wb


@pytest.fixture(scope="module")
def http(vwb: Workbench) -> Iterator[httpx.Client]:
    with vwb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


@dataclass(frozen=True)
class Case:
    """One question: the value set, the coding, the request parameters, the answer."""

    vs: str
    code: str = "a"
    version: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    result: bool = True
    used: str | None = None
    display: str | None = None
    reason: str | None = None
    tx: tuple[tuple[str, str, str], ...] = ()  # (severity, tx-issue-type, expression)
    unknown: tuple[str, ...] = ()
    message: str | None = None


def case(id: str, *args: Any, **kwargs: Any) -> Any:
    return pytest.param(Case(*args, **kwargs), id=id)


MATRIX = [
    case("nn-none-latest", "nn", used="2.0.0", display="A 2.0.0"),
    case("nn-v10", "nn", version="1.0.0", used="1.0.0", display="A 1.0.0"),
    case(
        "nn-none-code-only-in-1x",
        "nn",
        code="b",
        result=False,
        used="2.0.0",
        reason="unknown-code",
        tx=(("error", "invalid-code", "Coding.code"), ("error", "not-in-vs", "Coding.code")),
    ),
    case("nn-v12-code-only-in-1x", "nn", code="b", version="1.2.0", used="1.2.0"),
    case(
        "nn-unknown-version",
        "nn",
        version="9.9",
        result=False,
        used="2.0.0",
        display="A 2.0.0",
        reason="unknown-system",
        tx=(
            ("error", "not-found", "Coding.system"),
            ("warning", "vs-invalid", "Coding.version"),
        ),
        unknown=(f"{S}|9.9",),
        message=f"A definition for CodeSystem '{S}' version '9.9' could not be found, so the "
        "code cannot be validated. Valid versions: 1.0.0 or 1.2.0 or 2.0.0",
    ),
    case("10-none", "10", used="1.0.0", display="A 1.0.0"),
    case("10-v10", "10", version="1.0.0", used="1.0.0"),
    case(
        "10-v20-differs-from-pinned",
        "10",
        version="2.0.0",
        result=False,
        used="1.0.0",
        display="A 1.0.0",
        reason="version",
        tx=(("error", "vs-invalid", "Coding.version"),),
        message=f"The code system '{S}' version '1.0.0' in the ValueSet include is different "
        "to the one in the value ('2.0.0')",
    ),
    case(
        "10-unknown-version",
        "10",
        version="9.9",
        result=False,
        used="1.0.0",
        reason="unknown-system",
        # tx.fhir.org's order: by severity, then issue code (invalid before not-found)
        tx=(("error", "vs-invalid", "Coding.version"), ("error", "not-found", "Coding.system")),
        unknown=(f"{S}|9.9",),
    ),
    case("1x-none-latest-match", "1x", used="1.2.0", display="A 1.2.0"),
    case("1x-v10-matches-pattern", "1x", version="1.0.0", used="1.0.0"),
    case(
        "1x-v20-outside-pattern",
        "1x",
        version="2.0.0",
        result=False,
        used="1.2.0",
        reason="version",
        tx=(("error", "vs-invalid", "Coding.version"),),
    ),
    case("nn-system-version", "nn", params={"system-version": f"{S}|1.0.0"}, used="1.0.0"),
    case("nn-system-version-pattern", "nn", params={"system-version": f"{S}|1.x"}, used="1.2.0"),
    case(
        "10-system-version-is-only-a-default",
        "10",
        params={"system-version": f"{S}|2.0.0"},
        used="1.0.0",
    ),
    case(
        "nn-coding-version-beats-system-version",
        "nn",
        version="1.0.0",
        params={"system-version": f"{S}|2.0.0"},
        used="1.0.0",
    ),
    case("10-force", "10", params={"force-system-version": f"{S}|2.0.0"}, used="2.0.0"),
    case(
        "10-force-beats-coding-version",
        "10",
        version="1.0.0",
        params={"force-system-version": f"{S}|2.0.0"},
        used="2.0.0",
        display="A 2.0.0",
    ),
    case(
        "nn-check-selects-for-the-versionless-include",
        "nn",
        params={"check-system-version": f"{S}|1.x"},
        used="1.2.0",
        display="A 1.2.0",
    ),
    case(
        "10-check-fails-on-the-pinned-version",
        "10",
        params={"check-system-version": f"{S}|2.x"},
        result=False,
        used="1.0.0",
        reason="version",
        tx=(("error", "version-error", "Coding.version"),),
        message=f"The version '1.0.0' is not allowed for system '{S}': required to be '2.x' "
        "by a version-check parameter",
    ),
    case(
        "nn-check-passes-with-coding-version",
        "nn",
        version="1.2.0",
        params={"check-system-version": f"{S}|1.x"},
        used="1.2.0",
    ),
    case(
        "1x-check-passes",
        "1x",
        params={"check-system-version": f"{S}|1.2.0"},
        used="1.2.0",
    ),
]

OUTPUTS = [
    case(
        "inactive-warning",
        "nn",
        code="old",
        used="2.0.0",
        display="Old 2.0.0",
        reason="inactive",
        tx=(("warning", "code-comment", "Coding"),),
    ),
    case(
        "inactive-refused-by-activeOnly",
        "nn",
        code="old",
        params={"activeOnly": True},
        result=False,
        used="2.0.0",
        display="Old 2.0.0",
        reason="inactive",
        tx=(
            ("error", "code-rule", "Coding.code"),
            ("error", "not-in-vs", "Coding.code"),
            ("warning", "code-comment", "Coding"),
        ),
    ),
    case(
        "abstract-refused",
        "nn",
        code="group",
        params={"abstract": False},
        result=False,
        used="2.0.0",
        display="Group 2.0.0",
        reason="abstract",
        tx=(("error", "code-rule", "Coding.code"), ("error", "not-in-vs", "Coding.code")),
    ),
    case("abstract-not-refused", "nn", code="group", used="2.0.0"),
    case("abstract-allowed", "nn", code="group", params={"abstract": True}, used="2.0.0"),
    case(
        "abstract-membership-only",
        "nn",
        code="group",
        params={"valueset-membership-only": True},
        used="2.0.0",
    ),
]


def coding(c: Case, system: str = S, display: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"system": system, "code": c.code}
    if c.version is not None:
        found["version"] = c.version
    if display is not None:
        found["display"] = display
    return found


_PY = {
    "system-version": "system_version",
    "force-system-version": "force_system_version",
    "check-system-version": "check_system_version",
    "activeOnly": "active_only",
    "abstract": "abstract",
    "valueset-membership-only": "membership_only",
    "lenient-display-validation": "lenient_display",
}


def in_python(wb: Workbench, c: Case, **extra: Any) -> Any:
    kwargs = {_PY[k]: v for k, v in c.params.items()}
    return wb.validate_code(VS + c.vs, coding=coding(c), **kwargs, **extra)


def post_body(c: Case, **entries: dict[str, Any]) -> dict[str, Any]:
    items: list[tuple[str, dict[str, Any]]] = [("url", {"valueUri": VS + c.vs})]
    items += list(entries.items())
    for name, value in c.params.items():
        key = "valueBoolean" if isinstance(value, bool) else "valueCanonical"
        items.append((name, {key: value}))
    return params(*items)


def check(c: Case, result: Any) -> None:
    assert result.result is c.result, result
    assert result.version == c.used
    assert result.issue == c.reason
    if c.display is not None:
        assert result.display == c.display
    assert tuple((i.severity, i.code, i.expression) for i in result.issues) == c.tx
    assert result.unknown_systems == c.unknown
    if c.message is not None:
        assert result.message == c.message


@pytest.mark.parametrize("c", MATRIX + OUTPUTS)
def test_python(vwb: Workbench, c: Case) -> None:
    check(c, in_python(vwb, c))


@pytest.mark.parametrize("c", MATRIX + OUTPUTS)
def test_http_post_coding_answers_as_python(vwb: Workbench, http: httpx.Client, c: Case) -> None:
    body = post_body(c, coding={"valueCoding": coding(c)})
    response = http.post("/ValueSet/$validate-code", json=body)
    assert response.status_code == 200, response.text
    assert response.json() == in_python(vwb, c).to_parameters()


@pytest.mark.parametrize("c", MATRIX)
def test_http_get_code_parameters(vwb: Workbench, http: httpx.Client, c: Case) -> None:
    """The same questions as code/system/systemVersion query parameters (expressions
    then name the parameters themselves)."""
    query: list[tuple[str, str]] = [("url", VS + c.vs), ("system", S), ("code", c.code)]
    if c.version is not None:
        query.append(("systemVersion", c.version))
    query += [(k, str(v).lower() if isinstance(v, bool) else v) for k, v in c.params.items()]
    response = http.get("/ValueSet/$validate-code", params=query)
    assert response.status_code == 200, response.text
    kwargs = {_PY[k]: v for k, v in c.params.items()}
    expected = vwb.validate_code(VS + c.vs, code=c.code, system=S, version=c.version, **kwargs)
    assert response.json() == expected.to_parameters()
    expressions = [i.expression for i in expected.issues]
    assert all("." not in e for e in expressions), expressions


VERSIONLESS = (
    f"The code system '{S}' version '2.0.0' for the versionless include in the ValueSet "
    "include is different to the one in the value ('9')"
)


def test_outputs_in_full(http: httpx.Client) -> None:
    """An unknown version, as tx.fhir.org reports it: every output, the issues in full."""
    body = post_body(Case("nn"), coding={"valueCoding": {"system": S, "code": "a", "version": "9"}})
    answer = http.post("/ValueSet/$validate-code", json=body).json()
    text = (
        f"A definition for CodeSystem '{S}' version '9' could not be found, so the code cannot "
        "be validated. Valid versions: 1.0.0 or 1.2.0 or 2.0.0"
    )
    assert answer == {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "result", "valueBoolean": False},
            {"name": "message", "valueString": text},
            {"name": "display", "valueString": "A 2.0.0"},
            {"name": "code", "valueCode": "a"},
            {"name": "system", "valueUri": S},
            {"name": "version", "valueString": "2.0.0"},
            {
                "name": "issues",
                "resource": {
                    "resourceType": "OperationOutcome",
                    "issue": [
                        {
                            "severity": "error",
                            "code": "not-found",
                            "details": {
                                "coding": [{"system": TX, "code": "not-found"}],
                                "text": text,
                            },
                            "location": ["Coding.system"],
                            "expression": ["Coding.system"],
                        },
                        {
                            "severity": "warning",
                            "code": "invalid",
                            "details": {
                                "coding": [{"system": TX, "code": "vs-invalid"}],
                                "text": VERSIONLESS,
                            },
                            "location": ["Coding.version"],
                            "expression": ["Coding.version"],
                        },
                    ],
                },
            },
            {"name": "x-caused-by-unknown-system", "valueCanonical": f"{S}|9"},
        ],
    }


# --- CodeableConcept, inferSystem, displays, case -----------------------------------------

CONCEPTS = [
    pytest.param(
        [{"system": S, "code": "zz"}, {"system": S, "code": "a"}],
        {},
        (False, "a"),
        (
            ("error", "invalid-code", "CodeableConcept.coding[0].code"),
            ("information", "this-code-not-in-vs", "CodeableConcept.coding[0].code"),
        ),
        (),
        id="an-unknown-code-beside-a-valid-coding",
    ),
    pytest.param(
        [{"system": "http://unknown.example.org", "code": "a"}, {"system": S, "code": "a"}],
        {},
        (True, "a"),
        (
            ("information", "not-found", "CodeableConcept.coding[0].system"),
            ("information", "this-code-not-in-vs", "CodeableConcept.coding[0].code"),
        ),
        (),
        id="unknown-system-does-not-hide-a-valid-coding",
    ),
    pytest.param(
        [{"system": S, "code": "zz"}, {"system": S, "code": "a", "display": "Wrong"}],
        {},
        (False, "a"),
        (
            ("error", "invalid-code", "CodeableConcept.coding[0].code"),
            ("information", "this-code-not-in-vs", "CodeableConcept.coding[0].code"),
            ("error", "invalid-display", "CodeableConcept.coding[1].display"),
        ),
        (),
        id="none-valid-a-member-with-a-wrong-display-adds-no-not-in-vs",
    ),
    pytest.param(
        [{"system": S, "code": "a", "display": "Wrong"}],
        {"lenient_display": True},
        (True, "a"),
        (("warning", "invalid-display", "CodeableConcept.coding[0].display"),),
        (),
        id="lenient-display",
    ),
    pytest.param(
        [{"system": S, "code": "a", "display": "Wrong"}],
        {"membership_only": True},
        (True, "a"),
        (),
        (),
        id="membership-only-ignores-display",
    ),
]


@pytest.mark.parametrize(("codings", "kwargs", "answer", "tx", "unknown"), CONCEPTS)
def test_codeable_concept(
    vwb: Workbench,
    http: httpx.Client,
    codings: list[dict[str, Any]],
    kwargs: dict[str, Any],
    answer: tuple[bool, str],
    tx: tuple[tuple[str, str, str], ...],
    unknown: tuple[str, ...],
) -> None:
    result = vwb.validate_code(VS + "nn", codeable_concept={"coding": codings}, **kwargs)
    assert (result.result, result.code) == answer
    assert tuple((i.severity, i.code, i.expression) for i in result.issues) == tx
    assert result.unknown_systems == unknown
    names = {v: k for k, v in _PY.items()}
    entries = {names[k]: {"valueBoolean": v} for k, v in kwargs.items()}
    body = post_body(
        Case("nn"), codeableConcept={"valueCodeableConcept": {"coding": codings}}, **entries
    )
    assert http.post("/ValueSet/$validate-code", json=body).json() == result.to_parameters()


def test_case_insensitive_code_system_reports_the_normalized_code(vwb: Workbench) -> None:
    result = vwb.validate_code(VS + "two", code="MIXED", system=OTHER)
    assert (result.result, result.code, result.normalized_code) == (True, "MIXED", "Mixed")
    assert {"name": "normalized-code", "valueCode": "Mixed"} in result.to_parameters()["parameter"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param("c", (True, S, None), id="only-one-system-has-it"),
        pytest.param("z", (True, OTHER, None), id="the-other-system-has-it"),
        pytest.param("nothing", (False, None, "cannot-infer"), id="no-system-has-it"),
    ],
)
def test_infer_system(
    vwb: Workbench, http: httpx.Client, code: str, expected: tuple[Any, ...]
) -> None:
    result = vwb.validate_code(VS + "two", code=code)
    tx = result.issues[0].code if result.issues else None
    assert (result.result, result.system, tx) == expected
    query = {"url": VS + "two", "code": code, "inferSystem": "true"}
    answer = http.get("/ValueSet/$validate-code", params=query).json()
    assert answer == result.to_parameters()


def test_code_without_system_needs_infer_system_over_http(http: httpx.Client) -> None:
    response = http.get("/ValueSet/$validate-code", params={"url": VS + "two", "code": "c"})
    assert_outcome(response, 400, "required", r"'system' is required with 'code'.*inferSystem")


# --- parameter typing and bad version parameters ------------------------------------------

TYPED = [
    pytest.param("url", {"valueCanonical": VS + "nn"}, id="url-as-valueCanonical"),
    pytest.param("url", {"valueUrl": VS + "nn"}, id="url-as-valueUrl"),
    pytest.param("url", {"valueString": VS + "nn"}, id="url-as-valueString"),
    pytest.param("system", {"valueCanonical": S}, id="system-as-valueCanonical"),
    pytest.param("code", {"valueString": "a"}, id="code-as-valueString"),
    pytest.param("display", {"valueCode": "A 2.0.0"}, id="display-as-valueCode"),
]


@pytest.mark.parametrize(("name", "value"), TYPED)
def test_parameter_types_other_servers_send(
    http: httpx.Client, name: str, value: dict[str, Any]
) -> None:
    given = {
        "url": {"valueUri": VS + "nn"},
        "system": {"valueUri": S},
        "code": {"valueCode": "a"},
        "display": {"valueString": "A 2.0.0"},
        name: value,
    }
    response = http.post("/ValueSet/$validate-code", json=params(*given.items()))
    assert response.status_code == 200, response.text
    assert response.json()["parameter"][0] == {"name": "result", "valueBoolean": True}


BAD_VERSIONS = [
    pytest.param("system-version", f"{S}|1.x.2", r"'1\.x\.2' is malformed", id="malformed"),
    pytest.param("force-system-version", "1.0.0", r"must be 'system\|version'", id="no-system"),
    pytest.param("check-system-version", f"{S}|", r"is not a version", id="empty-version"),
]


@pytest.mark.parametrize(("name", "value", "text"), BAD_VERSIONS)
def test_bad_version_parameters(
    vwb: Workbench, http: httpx.Client, name: str, value: str, text: str
) -> None:
    query = {"url": VS + "nn", "system": S, "code": "a", name: value}
    assert_outcome(http.get("/ValueSet/$validate-code", params=query), 400, "invalid", text)
    with pytest.raises(InvalidRequestError, match=text):
        vwb.validate_code(VS + "nn", code="a", system=S, **{_PY[name]: value})


@pytest.mark.parametrize(
    ("version", "refused"),
    [("1.0.0 ", True), ("\t1", True), ("1\f", True), ("1\x1c", False), ("1\xa0", False)],
    ids=["space", "tab", "form-feed", "file-separator", "no-break-space"],
)
def test_a_version_may_not_start_or_end_with_fhirs_white_space(version: str, refused: bool) -> None:
    """The white space the OpenAPI document's pattern excludes, no other (the long
    schemathesis run sent a version ending in \\x1c, which Python's strip() takes)."""
    if refused:
        with pytest.raises(InvalidRequestError, match="is not a version"):
            check_version_text(version, "system-version")
    else:
        assert check_version_text(version, "system-version") == version


def test_version_parameters_repeat_per_system(vwb: Workbench) -> None:
    result = vwb.validate_code(
        VS + "two",
        code="a",
        system=S,
        system_version=[f"{S}|1.0.0", f"{OTHER}|1"],
    )
    assert (result.result, result.version) == (True, "1.0.0")


# --- code system content kinds (point 8) --------------------------------------------------

KINDS = "http://example.org/fhir/CodeSystem/kind-"


def kind_codesystem(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "id": f"kind-{name}",
        "url": KINDS + name,
        "version": "1",
        "status": "active",
        "content": "complete",
        "concept": [{"code": "a", "display": "A"}],
        **extra,
    }


def whole(name: str) -> dict[str, Any]:
    return {"resourceType": "ValueSet", "compose": {"include": [{"system": KINDS + name}]}}


@pytest.fixture(scope="module")
def kinds_wb() -> Workbench:
    wb = Workbench()
    wb.load(
        [
            kind_codesystem("fragment", content="fragment"),
            kind_codesystem("example", content="example"),
            kind_codesystem("not-present", content="not-present", concept=[]),
            kind_codesystem("version-needed", versionNeeded=True),
            kind_codesystem("compositional", compositional=True),
        ]
    )
    return wb


@pytest.fixture(scope="module")
def kinds_http(kinds_wb: Workbench) -> Iterator[httpx.Client]:
    with kinds_wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


FRAGMENT_NOTE = (
    f"Unknown Code 'zz' in the CodeSystem '{KINDS}fragment' version '1' - note that the code "
    "system is labeled as a fragment, so the code may be valid in some other fragment"
)

KIND_CASES = [
    pytest.param("fragment", "a", {}, (True, None, ()), id="fragment-known-code"),
    pytest.param(
        "fragment",
        "zz",
        {},
        (True, None, (("warning", "invalid-code", "code"),)),
        id="fragment-unknown-code-is-a-warning-without-message",
    ),
    pytest.param(
        "version-needed",
        "a",
        {},
        (
            False,
            f"The code system '{KINDS}version-needed' says a version is needed "
            "(versionNeeded), but the code 'a' was given without one",
            (("error", "version-error", "version"),),
        ),
        id="version-needed-without-version",
    ),
    pytest.param("version-needed", "a", {"version": "1"}, (True, None, ()), id="version-given"),
    pytest.param(
        "compositional",
        "a:b=c",
        {},
        (
            False,
            f"Unknown code 'a:b=c' in the CodeSystem '{KINDS}compositional|1' (the code system "
            "is compositional, but this server does not know its grammar, so an expression "
            f"cannot be checked); The code {KINDS}compositional#a:b=c is not in the value set",
            (("error", "invalid-code", "code"), ("error", "not-in-vs", "code")),
        ),
        id="compositional-grammar-unknown",
    ),
]


@pytest.mark.parametrize(("name", "code", "extra", "expected"), KIND_CASES)
def test_content_kinds(
    kinds_wb: Workbench,
    kinds_http: httpx.Client,
    name: str,
    code: str,
    extra: dict[str, Any],
    expected: tuple[Any, ...],
) -> None:
    result = kinds_wb.validate_code(valueset=whole(name), code=code, system=KINDS + name, **extra)
    issues = tuple((i.severity, i.code, i.expression) for i in result.issues)
    assert (result.result, result.message, issues) == expected
    entries: list[tuple[str, dict[str, Any]]] = [
        ("valueSet", {"resource": whole(name)}),
        ("code", {"valueCode": code}),
        ("system", {"valueUri": KINDS + name}),
    ]
    if "version" in extra:
        entries.append(("systemVersion", {"valueString": extra["version"]}))
    answer = kinds_http.post("/ValueSet/$validate-code", json=params(*entries))
    assert answer.json() == result.to_parameters()


NOT_PRESENT = (
    f"The CodeSystem '{KINDS}not-present|1' is loaded without its codes (content "
    "'not-present'), so the code 'a' cannot be validated: load the code system's release "
    "(Workbench.load_release, or --release on the command line)"
)


def test_a_not_present_code_system_answers_as_one_not_loaded(
    kinds_wb: Workbench, kinds_http: httpx.Client
) -> None:
    """A code system loaded as not-present has no codes: validating a code of it is
    result=false with the unknown-system issue (x-caused-by-unknown-system on the wire), as
    for a code system that is not loaded; expanding over it stays an error."""
    system = KINDS + "not-present"
    results = [
        kinds_wb.validate_code(valueset=whole("not-present"), code="a", system=system),
        kinds_wb.validate_in_codesystem(system, "a"),
    ]
    for result in results:
        assert (result.result, result.issue, result.message) == (
            False,
            "unknown-system",
            NOT_PRESENT,
        )
        assert result.unknown_systems == (f"{system}|1",)
    with pytest.raises(IncompleteCodeSystemError, match="has content 'not-present'"):
        kinds_wb.expand(whole("not-present"))
    body = params(
        ("valueSet", {"resource": whole("not-present")}),
        ("code", {"valueCode": "a"}),
        ("system", {"valueUri": system}),
    )
    answers = [
        kinds_http.post("/ValueSet/$validate-code", json=body),
        kinds_http.get("/CodeSystem/$validate-code", params={"url": system, "code": "a"}),
    ]
    for answer, result in zip(answers, results, strict=True):
        assert answer.status_code == 200
        assert answer.json() == result.to_parameters()
        names = [p["name"] for p in answer.json()["parameter"]]
        assert "x-caused-by-unknown-system" in names


@pytest.mark.parametrize("name", ["example"])
def test_example_is_refused(kinds_wb: Workbench, kinds_http: httpx.Client, name: str) -> None:
    text = f"has content '{name}': its codes cannot be used"
    with pytest.raises(IncompleteCodeSystemError, match=text):
        kinds_wb.validate_code(valueset=whole(name), code="a", system=KINDS + name)
    with pytest.raises(IncompleteCodeSystemError, match=text):
        kinds_wb.expand(whole(name))
    with pytest.raises(IncompleteCodeSystemError, match=text):
        kinds_wb.validate_in_codesystem(KINDS + name, "a")
    body = params(
        ("valueSet", {"resource": whole(name)}),
        ("code", {"valueCode": "a"}),
        ("system", {"valueUri": KINDS + name}),
    )
    response = kinds_http.post("/ValueSet/$validate-code", json=body)
    assert_outcome(response, 422, "not-supported", text)
    query = {"url": KINDS + name, "code": "a"}
    assert_outcome(
        kinds_http.get("/CodeSystem/$validate-code", params=query), 422, "not-supported", text
    )


def test_a_fragment_expands_to_what_it_has_marked_unclosed(
    kinds_wb: Workbench, kinds_http: httpx.Client
) -> None:
    """c3: 200 with valueset-unclosed and its reason, used-codesystem and used-fragment; a9:
    an unknown code of a fragment is a warning, with no message."""
    expansion = kinds_wb.expand(whole("fragment")).to_valueset()["expansion"]
    canonical = f"{KINDS}fragment|1"
    assert expansion["extension"] == [
        {"url": "http://hl7.org/fhir/StructureDefinition/valueset-unclosed", "valueBoolean": True},
        {
            "url": "http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason",
            "valueString": f"based on a fragment of the code system {canonical}",
        },
    ]
    used = [(p["name"], p.get("valueUri")) for p in expansion["parameter"]]
    assert ("used-codesystem", canonical) in used and ("used-fragment", canonical) in used
    assert [c["code"] for c in expansion["contains"]] == ["a"]
    answer = kinds_http.post(
        "/ValueSet/$expand", json=params(("valueSet", {"resource": whole("fragment")}))
    )
    assert answer.status_code == 200
    assert answer.json()["expansion"]["extension"] == expansion["extension"]
    result = kinds_wb.validate_in_codesystem(KINDS + "fragment", "zz")
    assert (result.result, result.message) == (True, None)
    assert [i.text for i in result.issues] == [FRAGMENT_NOTE]


# --- the latest version by the code system's version algorithm ----------------------------

ALGORITHM = "http://hl7.org/fhir/5.0/StructureDefinition/extension-CodeSystem.versionAlgorithm"


@pytest.mark.parametrize(
    ("algorithm", "versions", "latest"),
    [
        pytest.param(None, ["9", "10"], "10", id="default-semver-like"),
        pytest.param("integer", ["9", "10"], "10", id="integer"),
        pytest.param("alpha", ["9", "10"], "9", id="alpha"),
        pytest.param("date", ["2024-12-01", "2025-01-15"], "2025-01-15", id="date"),
        pytest.param("natural", ["v9", "v10"], "v10", id="natural"),
        pytest.param("semver", ["1.0.0", "1.0.0-ballot"], "1.0.0", id="semver-prerelease"),
    ],
)
def test_latest_follows_the_version_algorithm(
    algorithm: str | None, versions: list[str], latest: str
) -> None:
    wb = Workbench()
    url = "http://example.org/fhir/CodeSystem/algorithm"
    resources = []
    for version in versions:
        resource: dict[str, Any] = {
            "resourceType": "CodeSystem",
            "url": url,
            "version": version,
            "content": "complete",
            "concept": [{"code": "a"}],
        }
        if algorithm is not None:
            resource["extension"] = [{"url": ALGORITHM, "valueString": algorithm}]
        resources.append(resource)
    wb.load(resources)
    vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": url}]}}
    assert wb.validate_code(valueset=vs, code="a", system=url).version == latest


def test_deprecated_concept_is_valid_with_a_warning() -> None:
    wb = Workbench()
    url = "http://example.org/fhir/CodeSystem/deprecated"
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": url,
            "content": "complete",
            "property": [{"code": "status", "type": "code"}],
            "concept": [
                {
                    "code": "old",
                    "display": "Old",
                    "property": [{"code": "status", "valueCode": "deprecated"}],
                },
            ],
        }
    )
    vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": url}]}}
    result = wb.validate_code(valueset=vs, code="old", system=url)
    assert (result.result, result.status, result.inactive) == (True, "deprecated", None)
    assert result.message == "The concept 'old' is deprecated and its use should be reviewed"
    assert [(i.severity, i.code) for i in result.issues] == [("warning", "code-comment")]
    import pandas as pd

    column = wb.validate_column(pd.Series(["old"]), vs, system=url)
    assert column["message"].tolist() == [result.message]


STANDARDS = "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status"


@pytest.mark.parametrize(
    ("cs_extra", "vs_extra", "texts"),
    [
        pytest.param({}, {}, [], id="active"),
        pytest.param(
            {"extension": [{"url": STANDARDS, "valueCode": "deprecated"}]},
            {"status": "retired"},
            [
                "Reference to retired ValueSet http://example.org/fhir/ValueSet/status|1",
                "Reference to deprecated CodeSystem http://example.org/fhir/CodeSystem/status|1",
            ],
            id="deprecated-code-system-retired-value-set",
        ),
        pytest.param(
            {"status": "draft"},
            {},
            ["Reference to draft CodeSystem http://example.org/fhir/CodeSystem/status|1"],
            id="draft-code-system",
        ),
        pytest.param(
            {},
            {"extension": [{"url": STANDARDS, "valueCode": "withdrawn"}]},
            ["Reference to withdrawn ValueSet http://example.org/fhir/ValueSet/status|1"],
            id="withdrawn-value-set",
        ),
    ],
)
def test_status_checks(
    cs_extra: dict[str, Any], vs_extra: dict[str, Any], texts: list[str]
) -> None:
    url = "http://example.org/fhir/CodeSystem/status"
    wb = Workbench()
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": url,
                "version": "1",
                "status": "active",
                "content": "complete",
                "concept": [{"code": "a"}],
                **cs_extra,
            },
            {
                "resourceType": "ValueSet",
                "url": "http://example.org/fhir/ValueSet/status",
                "version": "1",
                "status": "active",
                "compose": {"include": [{"system": url}]},
                **vs_extra,
            },
        ]
    )
    result = wb.validate_code("http://example.org/fhir/ValueSet/status", code="a", system=url)
    assert result.result is True and result.message is None
    notes = [i for i in result.issues if i.code == "status-check"]
    assert [i.text for i in notes] == texts
    assert all(i.severity == "information" and "expression" not in i.to_fhir() for i in notes)
