"""Issue 22, the version and expansion rules (a4, b1-b4, c1, c2, e1), each asked in Python
and over HTTP (the real server on loopback), with this file's own fixtures: one code system
in versions 1.0.0 and 1.2.0 (codes A, B, C) and 2.0.0 (codes A, B, D), each display naming
its version, and value sets that pin no version, an exact one, a pattern, a version that
does not exist ("1" is no prefix of 1.0.0) or several versions at once.

$validate-code rows are asked in the three input forms: code + system (expressions name the
parameters), Coding and CodeableConcept. The HTTP answer must equal the Python one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from http_support import TOKEN, client, params

from workbench import Workbench
from workbench.errors import WorkbenchError

S = "http://example.org/conformance/versions"
V = "http://example.org/conformance/versions/vs-"
TX = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
VALUE_SET_PARAMETER = "http://hl7.org/fhir/tools/StructureDefinition/valueset-expansion-parameter"
KNOWN = "1.0.0 or 1.2.0 or 2.0.0"
NONE = "http://example.org/conformance/no-such-system"


def codesystem(version: str, codes: str) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "id": "versions-" + version.replace(".", "-"),
        "url": S,
        "version": version,
        "status": "active",
        "content": "complete",
        "concept": [{"code": c, "display": f"{c} {version}"} for c in codes],
    }


def valueset(
    name: str, *includes: dict[str, Any], exclude: tuple[dict[str, Any], ...] = (), **more: Any
) -> dict[str, Any]:
    compose: dict[str, Any] = {"include": list(includes), **more}
    if exclude:
        compose["exclude"] = list(exclude)
    return {
        "resourceType": "ValueSet",
        "id": f"versions-{name}",
        "url": V + name,
        "version": "1",
        "status": "active",
        "compose": compose,
    }


def include(version: str | None = None, **more: Any) -> dict[str, Any]:
    return {"system": S, **({"version": version} if version else {}), **more}


def versions_match(value: bool) -> list[dict[str, Any]]:
    parts = [
        {"url": "name", "valueString": "versionsMatch"},
        {"url": "value", "valueBoolean": value},
    ]
    return [{"url": VALUE_SET_PARAMETER, "extension": parts}]


RESOURCES = [
    codesystem("1.0.0", "ABC"),
    codesystem("1.2.0", "ABC"),
    codesystem("2.0.0", "ABD"),
    valueset("nn", include()),
    valueset("1wb", include("1")),
    valueset("10", include("1.0.0")),
    valueset("1x", include("1.x")),
    valueset("both", include("1.0.0"), include("2.0.0")),
    valueset("latest-and-10", include(), include("1.0.0")),
    valueset("both-merged", include("1.0.0"), include("2.0.0"), extension=versions_match(True)),
    valueset(
        "both-minus-b10",
        include("1.0.0"),
        include("2.0.0"),
        exclude=(include("1.0.0", concept=[{"code": "B"}]),),
    ),
    valueset("20-minus-10", include("2.0.0"), exclude=(include("1.0.0"),)),
    valueset(
        "20-minus-10-scoped",
        include("2.0.0"),
        exclude=(include("1.0.0"),),
        extension=versions_match(False),
    ),
    valueset("imports-nn", {"valueSet": [V + "nn"]}),
    valueset("unknown-system", {"system": NONE}),
]


@pytest.fixture(scope="module")
def wb() -> Workbench:
    bench = Workbench()
    bench.load(RESOURCES)
    return bench


@pytest.fixture(scope="module")
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


_PY = {
    "system-version": "system_version",
    "force-system-version": "force_system_version",
    "check-system-version": "check_system_version",
    "default-valueset-version": "default_valueset_version",
}

# --- $validate-code ------------------------------------------------------------------------

# severity, issue code, tx-issue-type, element; listed in tx.fhir.org's order (by severity,
# then issue code), while ``message`` joins the error texts in the order they were found
Issue = tuple[str, str, str, str | None]


@dataclass(frozen=True)
class Check:
    """One $validate-code question and its answer; issue elements are relative to the input
    form (``system`` becomes ``Coding.system``, ``CodeableConcept.coding[0].system``…)."""

    vs: str
    code: str = "A"
    version: str | None = None
    display: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    result: bool = True
    out_version: str | None = None
    out_display: str | None = None
    issues: tuple[Issue, ...] = ()
    caused_by: str | None = None
    # False where another rule (d1: not-in-vs beside the cause) may add issues: the listed
    # ones must then be there, in this order, among others
    exact: bool = True
    message: str | None = None


def row(rule: str, *args: Any, **kwargs: Any) -> Any:
    return pytest.param(Check(*args, **kwargs), id=rule)


def unknown(version: str) -> str:
    return (
        f"A definition for CodeSystem '{S}' version '{version}' could not be found, so the "
        f"code cannot be validated. Valid versions: {KNOWN}"
    )


def differs(used: str, given: str, origin: str = "") -> str:
    return (
        f"The code system '{S}' version '{used}'{origin} in the ValueSet include is different "
        f"to the one in the value ('{given}')"
    )


NOT_FOUND: Issue = ("error", "not-found", "not-found", "system")
VS_INVALID: Issue = ("error", "invalid", "vs-invalid", "version")
VERSION_ERROR: Issue = ("error", "exception", "version-error", "version")
INVALID_CODE: Issue = ("error", "code-invalid", "invalid-code", "code")

CHECKS = [
    # a4: a value set that includes 1.0.0 and 2.0.0
    row("a4-no-version-takes-the-newest", "both", out_version="2.0.0", out_display="A 2.0.0"),
    row(
        "a4-a-display-of-the-newer-version-is-valid",
        "both",
        display="A 2.0.0",
        out_version="2.0.0",
        out_display="A 2.0.0",
    ),
    # issue 36.8 (tx.fhir.org): a display of another included version is right, and the
    # answer names the version that has it, with no message about the others
    row(
        "a4-a-display-of-the-older-version-names-that-version",
        "both",
        display="A 1.0.0",
        out_version="1.0.0",
        out_display="A 1.0.0",
    ),
    row(
        "a4-a-wrong-display-is-reported-against-the-newer-one",
        "both",
        display="A 9.9.9",
        result=False,
        out_version="2.0.0",
        out_display="A 2.0.0",
        issues=(("error", "invalid", "invalid-display", "display"),),
        message=f"Wrong display 'A 9.9.9' for {S}#A. Valid display is 'A 2.0.0'",
    ),
    row(
        "a4-a-code-only-in-the-older-version",
        "both",
        code="C",
        out_version="1.0.0",
        out_display="C 1.0.0",
    ),
    row(
        "a4-a-coding-version-is-checked-in-that-version-only",
        "both",
        version="1.0.0",
        display="A 1.0.0",
        out_version="1.0.0",
        out_display="A 1.0.0",
    ),
    row(
        "a4-a-code-of-another-included-version",
        "both",
        code="D",
        version="1.0.0",
        result=False,
        out_version="1.0.0",
        issues=(INVALID_CODE,),
        exact=False,
    ),
    row(
        "a4-a-code-of-the-older-included-version",
        "both",
        code="C",
        version="2.0.0",
        result=False,
        out_version="2.0.0",
        issues=(INVALID_CODE,),
        exact=False,
    ),
    # b1: "1" is neither a version nor a pattern
    row(
        "b1-unknown-include-version",
        "1wb",
        result=False,
        out_version="2.0.0",
        out_display="A 2.0.0",
        issues=(NOT_FOUND,),
        caused_by=f"{S}|1",
        message=unknown("1"),
    ),
    row(
        "b1-and-the-coding-gives-another-version",
        "1wb",
        version="1.0.0",
        result=False,
        out_version="1.0.0",
        out_display="A 1.0.0",
        issues=(VS_INVALID, NOT_FOUND),
        caused_by=f"{S}|1",
        message=f"{unknown('1')}; {differs('1', '1.0.0')}",
    ),
    *(
        row(
            f"b1-{name}-does-not-rescue-it",
            "1wb",
            params={name: f"{S}|1.0.x"},
            result=False,
            out_version="1.0.0",
            out_display="A 1.0.0",
            issues=(NOT_FOUND,),
            caused_by=f"{S}|1",
        )
        for name in ("system-version", "check-system-version")
    ),
    # b2: the version parameters choose for an include that names none
    row(
        "b2-check-selects-the-latest-match",
        "nn",
        params={"check-system-version": f"{S}|1.0.x"},
        out_version="1.0.0",
        out_display="A 1.0.0",
    ),
    row(
        "b2-system-version-selects",
        "nn",
        params={"system-version": f"{S}|1.x"},
        out_version="1.2.0",
        out_display="A 1.2.0",
    ),
    *(
        row(
            f"b2-unknown-coding-version-with-{name}",
            "nn",
            version="2.4.0",
            params={name: f"{S}|1.0.x"},
            result=False,
            out_version="1.0.0",
            out_display="A 1.0.0",
            issues=(VS_INVALID, NOT_FOUND),
            caused_by=f"{S}|2.4.0",
            message=f"{unknown('2.4.0')}; "
            + differs("1.0.x", "2.4.0", " resulting from the version ''"),
        )
        for name in ("system-version", "check-system-version")
    ),
    row(
        "b2-unknown-coding-version-versionless-is-a-warning",
        "nn",
        version="2.4.0",
        result=False,
        out_version="2.0.0",
        out_display="A 2.0.0",
        issues=(NOT_FOUND, ("warning", "invalid", "vs-invalid", "version")),
        caused_by=f"{S}|2.4.0",
        message=unknown("2.4.0"),
    ),
    # b3: the version used breaks check-system-version
    row(
        "b3-pinned-include",
        "10",
        params={"check-system-version": f"{S}|2.x"},
        result=False,
        out_version="1.0.0",
        out_display="A 1.0.0",
        issues=(VERSION_ERROR,),
        message=f"The version '1.0.0' is not allowed for system '{S}': required to be '2.x' by "
        "a version-check parameter",
    ),
    row(
        "b3-wildcard-include",
        "1x",
        params={"check-system-version": f"{S}|1.0.x"},
        result=False,
        out_version="1.2.0",
        out_display="A 1.2.0",
        issues=(VERSION_ERROR,),
    ),
    row(
        "b3-plus-the-mismatch",
        "10",
        version="2.0.0",
        params={"check-system-version": f"{S}|2.x"},
        result=False,
        out_version="1.0.0",
        out_display="A 1.0.0",
        issues=(VERSION_ERROR, VS_INVALID),
        message=f"{differs('1.0.0', '2.0.0')}; The version '1.0.0' is not allowed for system "
        f"'{S}': required to be '2.x' by a version-check parameter",
    ),
    # b4: a forced version does not hide an unknown coding version
    row(
        "b4-force-and-an-unknown-coding-version",
        "10",
        version="2.4.0",
        params={"force-system-version": f"{S}|1.0.x"},
        result=False,
        out_version="1.0.0",
        out_display="A 1.0.0",
        issues=(VS_INVALID, NOT_FOUND),
        caused_by=f"{S}|2.4.0",
        message=f"{unknown('2.4.0')}; "
        + differs("1.0.x", "2.4.0", " resulting from the version '1.0.0'"),
    ),
    row(
        "b4-force-on-a-versionless-include",
        "nn",
        version="2.4.0",
        params={"force-system-version": f"{S}|1.0.x"},
        result=False,
        out_version="1.0.0",
        out_display="A 1.0.0",
        issues=(VS_INVALID, NOT_FOUND),
        caused_by=f"{S}|2.4.0",
    ),
    row(
        "b4-a-known-coding-version-yields-to-force",
        "10",
        version="2.0.0",
        params={"force-system-version": f"{S}|1.0.x"},
        out_version="1.0.0",
        out_display="A 1.0.0",
    ),
]

FORMS = ["code", "coding", "codeableConcept"]
_PATH = {"code": "", "coding": "Coding", "codeableConcept": "CodeableConcept.coding[0]"}


def the_coding(c: Check) -> dict[str, Any]:
    found: dict[str, Any] = {"system": S, "code": c.code}
    if c.version is not None:
        found["version"] = c.version
    if c.display is not None:
        found["display"] = c.display
    return found


def ask_python(wb: Workbench, c: Check, form: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {_PY[k]: v for k, v in c.params.items()}
    if form == "code":
        kwargs.update(code=c.code, system=S, version=c.version, display=c.display)
    elif form == "coding":
        kwargs["coding"] = the_coding(c)
    else:
        kwargs["codeable_concept"] = {"coding": [the_coding(c)]}
    return wb.validate_code(V + c.vs, **kwargs).to_parameters()


def ask_http(http: httpx.Client, c: Check, form: str) -> httpx.Response:
    entries: list[tuple[str, dict[str, Any]]] = [("url", {"valueUri": V + c.vs})]
    if form == "code":
        entries += [("code", {"valueCode": c.code}), ("system", {"valueUri": S})]
        if c.version is not None:
            entries.append(("systemVersion", {"valueString": c.version}))
        if c.display is not None:
            entries.append(("display", {"valueString": c.display}))
    elif form == "coding":
        entries.append(("coding", {"valueCoding": the_coding(c)}))
    else:
        entries.append(("codeableConcept", {"valueCodeableConcept": {"coding": [the_coding(c)]}}))
    entries += [(k, {"valueCanonical": v}) for k, v in c.params.items()]
    return http.post("/ValueSet/$validate-code", json=params(*entries))


def outputs(body: dict[str, Any]) -> dict[str, Any]:
    return {
        p["name"]: p.get("resource", next((v for k, v in p.items() if k.startswith("value")), None))
        for p in body["parameter"]
    }


def issues_of(body: dict[str, Any]) -> list[tuple[str, str, str, str | None]]:
    outcome = outputs(body).get("issues") or {"issue": []}
    found = []
    for i in outcome["issue"]:
        assert i.get("expression") == i.get("location"), i  # both, with the same value
        tx = next(c["code"] for c in i["details"]["coding"] if c["system"] == TX)
        found.append((i["severity"], i["code"], tx, (i.get("expression") or [None])[0]))
    return found


def placed(issues: tuple[Issue, ...], form: str) -> list[tuple[str, str, str, str | None]]:
    path = _PATH[form]
    return [(s, c, t, f"{path}.{e}" if path and e else e) for s, c, t, e in issues]


def check(c: Check, form: str, body: dict[str, Any]) -> None:
    found = outputs(body)
    assert found["result"] is c.result
    # a CodeableConcept none of whose codes is known names no coding (as tx.fhir.org's)
    unknown = form == "codeableConcept" and not c.result and INVALID_CODE in c.issues
    assert found.get("version") == (None if unknown else c.out_version)
    if c.out_display is not None:
        assert found.get("display") == c.out_display
    assert found.get("x-caused-by-unknown-system") == c.caused_by
    got, wanted = issues_of(body), placed(c.issues, form)
    # one CodeableConcept adds its overall issues (d2/d3): its codings' issues are checked
    if c.exact and form != "codeableConcept":
        assert got == wanted
    else:
        assert [i for i in got if i in wanted] == wanted, got
    if c.message is not None and form != "codeableConcept":
        assert found.get("message") == c.message
    if c.result and not c.issues:
        assert "message" not in found


def _rule_test(c: Check, wb: Workbench, http: httpx.Client, form: str) -> None:
    answer = ask_python(wb, c, form)
    check(c, form, answer)
    response = ask_http(http, c, form)
    assert response.status_code == 200, response.text
    assert response.json() == answer


def _ids(prefix: str) -> list[Any]:
    return [p for p in CHECKS if p.id.startswith(prefix)]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("c", _ids("a4-"))
def test_a4_several_versions_of_one_code_system(
    wb: Workbench, http: httpx.Client, c: Check, form: str
) -> None:
    _rule_test(c, wb, http, form)


def test_a4_debatable_two_codings_from_different_versions(
    wb: Workbench, http: httpx.Client
) -> None:
    """Two codings of A, displays from 1.0.0 and 2.0.0: each is right in the version that
    has its display (issue 36.8), so the first names 1.0.0, with no message."""
    codings = [
        {"system": S, "code": "A", "display": "A 1.0.0"},
        {"system": S, "code": "A", "display": "A 2.0.0"},
    ]
    answer = wb.validate_code(V + "both", codeable_concept={"coding": codings}).to_parameters()
    found = outputs(answer)
    assert (found["result"], found["display"], found["version"]) == (True, "A 1.0.0", "1.0.0")
    assert issues_of(answer) == []
    body = params(
        ("url", {"valueUri": V + "both"}),
        ("codeableConcept", {"valueCodeableConcept": {"coding": codings}}),
    )
    assert http.post("/ValueSet/$validate-code", json=body).json() == answer


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("c", _ids("b1-"))
def test_b1_an_include_version_is_exact_or_a_pattern(
    wb: Workbench, http: httpx.Client, c: Check, form: str
) -> None:
    _rule_test(c, wb, http, form)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("c", _ids("b2-"))
def test_b2_version_parameters_select_for_versionless_includes(
    wb: Workbench, http: httpx.Client, c: Check, form: str
) -> None:
    _rule_test(c, wb, http, form)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("c", _ids("b3-"))
def test_b3_a_check_violation_is_a_version_error(
    wb: Workbench, http: httpx.Client, c: Check, form: str
) -> None:
    _rule_test(c, wb, http, form)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("c", _ids("b4-"))
def test_b4_force_does_not_hide_an_unknown_coding_version(
    wb: Workbench, http: httpx.Client, c: Check, form: str
) -> None:
    _rule_test(c, wb, http, form)


# --- $expand ----------------------------------------------------------------------------


def expand_python(wb: Workbench, target: str, query: dict[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {_PY.get(k, k): v for k, v in query.items()}
    if "valueSetVersion" in kwargs:
        kwargs["version"] = kwargs.pop("valueSetVersion")
    return wb.expand(target, **kwargs).to_fhir()


def expand_http(http: httpx.Client, target: str, query: dict[str, str]) -> httpx.Response:
    return http.get("/ValueSet/$expand", params={"url": target, **query})


def listed(expansion: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(version, code, display) of each code: an item names its version only where the
    expansion holds several of its system, else ``used-codesystem`` names the one."""
    used = dict(u.split("|", 1) for u in echoed(expansion, "used-codesystem") if "|" in u)
    return [
        (c.get("version") or used[c["system"]], c["code"], c["display"])
        for c in expansion.get("contains", [])
    ]


def echoed(expansion: dict[str, Any], name: str) -> list[str]:
    return [
        next(v for k, v in p.items() if k.startswith("value"))
        for p in expansion.get("parameter", [])
        if p["name"] == name
    ]


def both_ways(
    wb: Workbench, http: httpx.Client, name: str, query: dict[str, str] | None = None
) -> dict[str, Any]:
    """The expansion in Python, checked equal to the one over HTTP (but for its identity)."""
    query = query or {}
    expansion = expand_python(wb, V + name, query)
    response = expand_http(http, V + name, query)
    assert response.status_code == 200, response.text
    wire = response.json()["expansion"]
    volatile = ("identifier", "timestamp")
    assert {k: v for k, v in wire.items() if k not in volatile} == {
        k: v for k, v in expansion.items() if k not in volatile
    }
    return expansion


def refused(
    wb: Workbench,
    http: httpx.Client,
    target: str,
    query: dict[str, str],
    status: int,
    code: str,
    tx: str,
    text: str,
) -> None:
    """The expansion is refused the same way in Python and over HTTP: status, one error
    issue with its code, tx-issue-type and text, and no expression."""
    with pytest.raises(WorkbenchError) as info:
        expand_python(wb, target, query)
    error = info.value
    assert (error.status, error.code, error.tx) == (status, code, tx)
    assert re.fullmatch(text, error.text), error.text
    response = expand_http(http, target, query)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["resourceType"] == "OperationOutcome"
    (issue,) = body["issue"]
    assert (issue["severity"], issue["code"]) == ("error", code)
    assert {"system": TX, "code": tx} in issue["details"]["coding"]
    assert re.fullmatch(text, issue["details"]["text"])
    assert "expression" not in issue and "location" not in issue


def test_b1_expand_an_unknown_include_version(wb: Workbench, http: httpx.Client) -> None:
    text = (
        f"A definition for CodeSystem '{S}' version '1' could not be found, so the value set "
        f"cannot be expanded. Valid versions: {KNOWN}"
    )
    refused(wb, http, V + "1wb", {}, 404, "not-found", "not-found", re.escape(text))


def test_b2_expand_with_check_system_version(wb: Workbench, http: httpx.Client) -> None:
    """check-system-version 1.0.x picks 1.0.0 for the versionless include: 200, not 422."""
    expansion = both_ways(wb, http, "nn", {"check-system-version": f"{S}|1.0.x"})
    assert listed(expansion) == [("1.0.0", c, f"{c} 1.0.0") for c in "ABC"]
    assert echoed(expansion, "used-codesystem") == [f"{S}|1.0.0"]
    assert echoed(expansion, "check-system-version") == [f"{S}|1.0.x"]


@pytest.mark.parametrize(
    ("name", "check", "used"),
    [
        pytest.param("10", "2.x", "1.0.0", id="pinned"),
        pytest.param("1x", "1.0.x", "1.2.0", id="wildcard"),
    ],
)
def test_b3_expand_a_check_violation(
    wb: Workbench, http: httpx.Client, name: str, check: str, used: str
) -> None:
    text = (
        f"The version '{used}' is not allowed for system '{S}': required to be '{check}' by a "
        "version-check parameter"
    )
    query = {"check-system-version": f"{S}|{check}"}
    refused(wb, http, V + name, query, 422, "exception", "version-error", re.escape(text))


@pytest.mark.parametrize(
    ("name", "query", "expected"),
    [
        pytest.param(
            "both",
            {},
            [("1.0.0", c, f"{c} 1.0.0") for c in "ABC"]
            + [("2.0.0", c, f"{c} 2.0.0") for c in "ABD"],
            id="two-pinned-versions",
        ),
        pytest.param(
            "latest-and-10",
            {},
            [("2.0.0", c, f"{c} 2.0.0") for c in "ABD"]
            + [("1.0.0", c, f"{c} 1.0.0") for c in "ABC"],
            id="latest-plus-pinned",
        ),
        pytest.param(
            "latest-and-10",
            {"system-version": f"{S}|1.2.0"},
            [("1.2.0", c, f"{c} 1.2.0") for c in "ABC"]
            + [("1.0.0", c, f"{c} 1.0.0") for c in "ABC"],
            id="a-default-never-overrides-a-pinned-include",
        ),
    ],
)
def test_c1_one_entry_per_system_version_and_code(
    wb: Workbench,
    http: httpx.Client,
    name: str,
    query: dict[str, str],
    expected: list[tuple[str, str, str]],
) -> None:
    expansion = both_ways(wb, http, name, query)
    assert listed(expansion) == expected
    assert expansion["total"] == 6
    assert echoed(expansion, "used-codesystem") == sorted({f"{S}|{v}" for v, _, _ in expected})


def test_c1_versions_match_merges_one_entry_per_code(wb: Workbench, http: httpx.Client) -> None:
    expansion = both_ways(wb, http, "both-merged")
    assert [(v, c) for v, c, _ in listed(expansion)] == [
        ("1.0.0", "A"),
        ("1.0.0", "B"),
        ("1.0.0", "C"),
        ("2.0.0", "D"),
    ]
    assert expansion["total"] == 4


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "both-minus-b10",
            [("1.0.0", "A"), ("1.0.0", "C"), ("2.0.0", "A"), ("2.0.0", "B"), ("2.0.0", "D")],
            id="only-B-of-1.0.0-goes",
        ),
        pytest.param("20-minus-10", [("2.0.0", "D")], id="by-code-when-1.0.0-is-not-included"),
        pytest.param(
            "20-minus-10-scoped",
            [("2.0.0", "A"), ("2.0.0", "B"), ("2.0.0", "D")],
            id="versionsMatch-false-scopes-it-to-1.0.0",
        ),
    ],
)
def test_c2_excludes_are_version_scoped(
    wb: Workbench, http: httpx.Client, name: str, expected: list[tuple[str, str]]
) -> None:
    expansion = both_ways(wb, http, name)
    assert [(v, c) for v, c, _ in listed(expansion)] == expected
    assert all(d == f"{c} {v}" for v, c, d in listed(expansion))  # each its own display
    assert expansion["total"] == len(expected)


@pytest.mark.parametrize(
    ("code", "version", "member", "used"),
    [
        pytest.param("B", None, True, "2.0.0", id="B-stays-a-member-through-2.0.0"),
        pytest.param("B", "1.0.0", False, "1.0.0", id="B-of-1.0.0-is-excluded"),
        pytest.param("C", None, True, "1.0.0", id="C-of-1.0.0-stays"),
    ],
)
def test_c2_membership_follows_the_scoped_exclude(
    wb: Workbench, http: httpx.Client, code: str, version: str | None, member: bool, used: str
) -> None:
    c = Check("both-minus-b10", code=code, version=version)
    answer = ask_python(wb, c, "coding")
    assert (outputs(answer)["result"], outputs(answer)["version"]) == (member, used)
    assert ask_http(http, c, "coding").json() == answer


@pytest.mark.parametrize(
    ("target", "query", "label"),
    [
        pytest.param(V + "missing", {}, V + "missing", id="unknown-url"),
        pytest.param(V + "nn", {"valueSetVersion": "9"}, V + "nn|9", id="unknown-version"),
        pytest.param(
            V + "imports-nn",
            {"default-valueset-version": f"{V}nn|9"},
            V + "nn|9",
            id="default-valueset-version-pin",
        ),
    ],
)
def test_e1_expand_an_unknown_value_set_is_not_found(
    wb: Workbench, http: httpx.Client, target: str, query: dict[str, str], label: str
) -> None:
    text = re.escape(f"A definition for the value Set '{label}' could not be found")
    refused(wb, http, target, query, 404, "not-found", "not-found", text)


@pytest.mark.parametrize("query", [{}, {"check-system-version": f"{S}|1.0.x"}])
def test_e1_expand_an_unknown_include_version_wins_over_the_check(
    wb: Workbench, http: httpx.Client, query: dict[str, str]
) -> None:
    text = re.escape(f"A definition for CodeSystem '{S}' version '1' could not be found") + ".*"
    refused(wb, http, V + "1wb", query, 404, "not-found", "not-found", text)


@pytest.mark.parametrize("form", FORMS)
def test_e1_validate_code_keeps_the_operation_api_answer(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    """operation-api.md §7.2: $validate-code of an unknown url stays 400 invalid."""
    response = ask_http(http, Check("missing"), form)
    assert response.status_code == 400
    (issue,) = response.json()["issue"]
    assert (issue["code"], issue["details"]["text"]) == (
        "invalid",
        f"ValueSet {V}missing not found",
    )


def test_e1_expand_an_unknown_code_system_is_not_found(wb: Workbench, http: httpx.Client) -> None:
    """Beside e1's list: a code system that is not loaded at all is the same not-found shape
    (tx.fhir.org's UNKNOWN_CODESYSTEM_EXP text)."""
    text = re.escape(
        f"A definition for CodeSystem '{NONE}' could not be found, so the value set cannot be "
        "expanded"
    )
    refused(wb, http, V + "unknown-system", {}, 404, "not-found", "not-found", text)
