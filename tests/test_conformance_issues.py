"""$validate-code semantics and the issues of its OperationOutcome (issue 22: a2, a3, a6, a7,
a8, a11, d1-d6), each rule asked in Python and over HTTP (the real server on loopback), for
the code, Coding and CodeableConcept forms where the rule applies, with this file's own
small code systems and value sets.

Expected issues are (severity, issue code, tx-issue-type code, expression); in an expression
``@`` stands for where the input sits: ``code`` for the code parameters (``@`` alone is then
``code`` too), ``Coding`` for a Coding, ``CodeableConcept.coding[0]`` for the first coding.
Every HTTP answer must equal the Python one (``to_parameters()``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client, params

from workbench import ValidationResult, Workbench

TX = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
STANDARDS = "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status"
BASE = "http://example.org/issues/"
CS = BASE + "cs"
CS2 = BASE + "cs2"
CSV = BASE + "versioned"
SUPPLEMENT = BASE + "cs-fr"
VS = BASE + "vs/"
NOWHERE = BASE + "nowhere"

Issues = list[tuple[str, str, str, str | None]]


def _codesystem(url: str, version: str, concepts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": url,
        "version": version,
        "name": "Issues",
        "status": "active",
        "language": "en",
        "content": "complete",
        "property": [
            {"code": "status", "type": "code"},
            {"code": "notSelectable", "type": "boolean"},
        ],
        "concept": concepts,
    }


CONCEPTS = [
    {
        "code": "a",
        "display": "Alpha",
        "designation": [
            {"language": "de", "value": "Alfa"},
            {"language": "en", "value": "The Alpha"},  # an alternate English designation
            {
                "language": "en",
                "value": "Old Alpha",
                "extension": [{"url": STANDARDS, "valueCode": "deprecated"}],
            },
        ],
    },
    {"code": "b", "display": "Beta"},
    {
        "code": "grp",
        "display": "Group",
        "property": [{"code": "notSelectable", "valueBoolean": True}],
    },
    {"code": "old", "display": "Old", "property": [{"code": "status", "valueCode": "retired"}]},
]


def _valueset(name: str, compose: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": VS + name,
        "version": "1",
        "status": "active",
        "compose": compose,
        **extra,
    }


def _deprecated(code: str, how: dict[str, Any]) -> dict[str, Any]:
    return {"code": code, "extension": [how]}


RESOURCES = [
    _codesystem(CS, "1", CONCEPTS),
    _codesystem(CS2, "1", [{"code": "a", "display": "Other A"}]),
    _codesystem(CSV, "1", [{"code": "a", "display": "A one"}]),
    _codesystem(CSV, "2", [{"code": "a", "display": "A two"}]),
    _valueset("all", {"include": [{"system": CS}]}),
    _valueset(
        "abstract",
        {
            "include": [
                {
                    "system": CS,
                    "filter": [{"property": "notSelectable", "op": "=", "value": "true"}],
                }
            ]
        },
    ),
    _valueset("only-b", {"include": [{"system": CS, "concept": [{"code": "b"}]}]}),
    _valueset("active-only", {"inactive": False, "include": [{"system": CS}]}),
    _valueset("two", {"include": [{"system": CS}, {"system": CS2}]}),
    _valueset("imports-missing", {"include": [{"valueSet": [NOWHERE]}]}),
    _valueset(
        "deprecated-entries",
        {
            "include": [
                {
                    "system": CS,
                    "concept": [
                        _deprecated(
                            "a",
                            {
                                "url": "http://hl7.org/fhir/StructureDefinition/valueset-deprecated",
                                "valueBoolean": True,
                            },
                        ),
                        _deprecated("b", {"url": STANDARDS, "valueCode": "deprecated"}),
                    ],
                }
            ]
        },
    ),
    {
        **_valueset("draft-imported", {"include": [{"system": CS}]}),
        "status": "draft",
        "experimental": True,
    },
    _valueset("importer", {"include": [{"valueSet": [VS + "draft-imported"]}]}),
    _valueset(
        "english",
        {
            "extension": [
                {
                    "url": "http://hl7.org/fhir/StructureDefinition/valueset-expansion-parameter",
                    "extension": [
                        {"url": "name", "valueCode": "displayLanguage"},
                        {"url": "value", "valueCode": "en"},
                    ],
                }
            ],
            "include": [{"system": CS}],
        },
    ),
    {
        "resourceType": "CodeSystem",
        "url": SUPPLEMENT,
        "version": "1",
        "status": "active",
        "content": "supplement",
        "supplements": f"{CS}|1",
        "concept": [{"code": "a", "designation": [{"language": "fr", "value": "Alpha (fr)"}]}],
    },
    _valueset(
        "supplemented",
        {"include": [{"system": CS}]},
        extension=[
            {
                "url": "http://hl7.org/fhir/StructureDefinition/valueset-supplement",
                "valueCanonical": SUPPLEMENT,
            }
        ],
    ),
    _valueset("pinned", {"include": [{"system": CSV, "version": "1"}]}),
    _valueset("versionless", {"include": [{"system": CSV}]}),
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


FORMS = ["code", "coding", "codeableConcept"]
ROOT = {"code": "", "coding": "Coding", "codeableConcept": "CodeableConcept.coding[0]"}
# Python keyword -> (HTTP input name, value key)
INPUTS = {
    "abstract": ("abstract", "valueBoolean"),
    "active_only": ("activeOnly", "valueBoolean"),
    "membership_only": ("valueset-membership-only", "valueBoolean"),
    "display_language": ("displayLanguage", "valueCode"),
    "use_supplements": ("useSupplement", "valueCanonical"),
}


def at(form: str, expression: str | None) -> str | None:
    """An expected expression with ``@`` put where the input of ``form`` sits."""
    if expression is None:
        return None
    root = ROOT[form]
    if not root:
        return expression.replace("@.", "").replace("@", "code")
    return expression.replace("@", root)


def ask(
    wb: Workbench,
    http: httpx.Client,
    valueset: str | dict[str, Any],
    form: str,
    coding: dict[str, Any] | None = None,
    *,
    codings: list[dict[str, Any]] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Validate one coding (or the ``codings`` of a CodeableConcept) in ``form`` in Python
    and over HTTP; both answers must be the same. Returns the FHIR Parameters."""
    kwargs: dict[str, Any] = dict(options)
    entries: list[tuple[str, dict[str, Any]]] = []
    if isinstance(valueset, str):
        entries.append(("url", {"valueUri": valueset}))
    else:
        entries.append(("valueSet", {"resource": valueset}))
    if form == "code":
        assert coding is not None
        kwargs.update(code=coding["code"], system=coding.get("system"))
        entries.append(("code", {"valueCode": coding["code"]}))
        if coding.get("system"):
            entries.append(("system", {"valueUri": coding["system"]}))
        else:
            entries.append(("inferSystem", {"valueBoolean": True}))
        if "display" in coding:
            kwargs["display"] = coding["display"]
            entries.append(("display", {"valueString": coding["display"]}))
    elif form == "coding":
        kwargs["coding"] = coding
        entries.append(("coding", {"valueCoding": coding}))
    else:
        concept = {"coding": codings if codings is not None else [coding]}
        kwargs["codeable_concept"] = concept
        entries.append(("codeableConcept", {"valueCodeableConcept": concept}))
    for name, value in options.items():
        wire, key = INPUTS[name]
        entries += [(wire, {key: v}) for v in (value if isinstance(value, list) else [value])]
    result: ValidationResult = wb.validate_code(valueset, **kwargs)
    response = http.post("/ValueSet/$validate-code", json=params(*entries))
    assert response.status_code == 200, response.text
    assert response.json() == result.to_parameters()
    return response.json()


def outputs(body: dict[str, Any]) -> dict[str, Any]:
    """Output parameters by name (the first value of each)."""
    found: dict[str, Any] = {}
    for p in body["parameter"]:
        value = next((v for k, v in p.items() if k.startswith("value")), None)
        found.setdefault(p["name"], p.get("resource", value))
    return found


def issues_of(body: dict[str, Any]) -> Issues:
    """The issues as (severity, code, tx-issue-type code, expression); an issue has both
    expression and location, with the same value, or neither."""
    found: Issues = []
    for i in (outputs(body).get("issues") or {"issue": []})["issue"]:
        assert i.get("expression") == i.get("location")
        tx = next(c["code"] for c in i["details"]["coding"] if c["system"] == TX)
        found.append((i["severity"], i["code"], tx, (i.get("expression") or [None])[0]))
    return found


def expect(form: str, issues: Issues) -> Issues:
    return [(s, c, t, at(form, e)) for s, c, t, e in issues]


# --- a2: abstract concepts ------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a2_an_abstract_member_is_valid(wb: Workbench, http: httpx.Client, form: str) -> None:
    """A value set that selects abstract concepts takes them when ``abstract`` is left out
    (tx.fhir.org) or true."""
    for options in ({}, {"abstract": True}):
        body = ask(wb, http, VS + "abstract", form, {"system": CS, "code": "grp"}, **options)
        found = outputs(body)
        assert (found["result"], found["display"], found["version"]) == (True, "Group", "1")
        assert issues_of(body) == [] and "message" not in found


@pytest.mark.parametrize("form", FORMS)
def test_a2_abstract_false_refuses_an_abstract_member(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    body = ask(wb, http, VS + "abstract", form, {"system": CS, "code": "grp"}, abstract=False)
    assert outputs(body)["result"] is False
    rule = ("error", "business-rule", "code-rule", "@.code")
    if form == "codeableConcept":
        expected = [
            ("error", "code-invalid", "not-in-vs", None),
            rule,
            ("information", "code-invalid", "this-code-not-in-vs", "@.code"),
        ]
    else:
        expected = [rule, ("error", "code-invalid", "not-in-vs", "@.code")]
    assert issues_of(body) == expect(form, expected)
    assert "is abstract" in outputs(body)["message"]


# --- a3: an unknown code beside a valid coding ------------------------------------------


def test_a3_an_unknown_code_makes_a_codeable_concept_invalid(
    wb: Workbench, http: httpx.Client
) -> None:
    body = ask(
        wb,
        http,
        VS + "all",
        "codeableConcept",
        codings=[{"system": CS, "code": "zz"}, {"system": CS, "code": "a"}],
    )
    found = outputs(body)
    assert (found["result"], found["code"], found["system"]) == (False, "a", CS)
    assert (found["version"], found["display"]) == ("1", "Alpha")
    assert issues_of(body) == [
        ("error", "code-invalid", "invalid-code", "CodeableConcept.coding[0].code"),
        ("information", "code-invalid", "this-code-not-in-vs", "CodeableConcept.coding[0].code"),
    ]
    assert found["message"] == f"Unknown code 'zz' in the CodeSystem '{CS}|1'"


# --- a6: contained value sets of an inline value set --------------------------------------


INLINE = {
    "resourceType": "ValueSet",
    "status": "active",
    "contained": [
        {"resourceType": "ValueSet", "id": "c1", "compose": {"include": [{"system": CS}]}},
        {
            "resourceType": "ValueSet",
            "id": "c2",
            "compose": {"include": [{"system": CS, "concept": [{"code": "a"}, {"code": "old"}]}]},
        },
    ],
    "compose": {"include": [{"valueSet": ["#c1", "#c2"]}]},
}


@pytest.mark.parametrize("form", FORMS)
def test_a6_contained_value_sets_are_resolved_and_intersected(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    body = ask(wb, http, INLINE, form, {"system": CS, "code": "old"})
    found = outputs(body)
    assert (found["result"], found["inactive"], found["status"]) == (True, True, "retired")
    assert issues_of(body) == expect(form, [("warning", "business-rule", "code-comment", "@")])
    assert found["message"] == f"The code {CS}#old is inactive (status 'retired'); review its use"
    # b is in #c1 only: the intersection leaves it out
    assert outputs(ask(wb, http, INLINE, form, {"system": CS, "code": "b"}))["result"] is False


# --- a7: supplements in scope ------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a7_a_supplement_display_counts_only_in_scope(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    """A display only a supplement defines is wrong unless the value set
    (valueset-supplement) or the request (useSupplement) brings the supplement in."""
    coding = {"system": CS, "code": "a", "display": "Alpha (fr)"}
    body = ask(wb, http, VS + "all", form, coding)
    assert (outputs(body)["result"], outputs(body)["display"]) == (False, "Alpha")
    assert issues_of(body) == expect(form, [("error", "invalid", "invalid-display", "@.display")])
    asked = ask(wb, http, VS + "all", form, coding, use_supplements=[SUPPLEMENT])
    assert outputs(asked)["result"] is True and issues_of(asked) == []
    brought = ask(wb, http, VS + "supplemented", form, coding)
    assert outputs(brought)["result"] is True and issues_of(brought) == []


# --- a8: a compose-level displayLanguage -------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a8_compose_expansion_parameter_sets_the_display_language(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    """The value set fixes ``en`` (valueset-expansion-parameter on compose): the German
    designation is the wrong display, the English display is reported."""
    body = ask(wb, http, VS + "english", form, {"system": CS, "code": "a", "display": "Alfa"})
    found = outputs(body)
    assert (found["result"], found["display"]) == (False, "Alpha")
    assert issues_of(body) == expect(form, [("error", "invalid", "invalid-display", "@.display")])
    # the same display is fine when the value set names no language
    assert outputs(ask(wb, http, VS + "all", form, {"system": CS, "code": "a", "display": "Alfa"}))[
        "result"
    ]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("display", ["Alpha", "The Alpha"], ids=["preferred", "alternate"])
def test_a8_no_display_in_the_language_the_default_language_is_valid(
    wb: Workbench, http: httpx.Client, form: str, display: str
) -> None:
    """No French display: the default language's display, or (debatable, followed here as
    FHIRsmith's code does) one of its other designations, is valid with an information
    issue that is also the message; the preferred display is reported."""
    coding = {"system": CS, "code": "a", "display": display}
    body = ask(wb, http, VS + "all", form, coding, display_language="fr")
    found = outputs(body)
    assert (found["result"], found["display"]) == (True, "Alpha")
    assert issues_of(body) == expect(
        form, [("information", "invalid", "invalid-display", "@.display")]
    )
    assert found["message"] == found["issues"]["issue"][0]["details"]["text"]
    assert "no display for" in found["message"] and "'fr'" in found["message"]


# --- a11: an import that cannot be found --------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a11_an_unresolvable_import_is_result_false(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    body = ask(wb, http, VS + "imports-missing", form, {"system": CS, "code": "a"})
    found = outputs(body)
    assert found["result"] is False
    assert issues_of(body) == [("error", "not-found", "not-found", None)]
    assert found["message"].startswith(f"A definition for the value set '{NOWHERE}' could not be")
    # the value set asked for itself unknown: a request error (operation API 7.2)
    missing = http.get(
        "/ValueSet/$validate-code", params={"url": VS + "nope", "code": "a", "system": CS}
    )
    assert_outcome(missing, 400, "invalid", f"ValueSet {VS}nope not found")
    # $expand of the same value set is a 4xx
    expanded = http.get("/ValueSet/$expand", params={"url": VS + "imports-missing"})
    assert 400 <= expanded.status_code < 500


# --- d1: not-in-vs beside the cause -------------------------------------------------------

NOT_IN_VS = ("error", "code-invalid", "not-in-vs", "@.code")

D1 = [
    pytest.param(
        VS + "all",
        {"system": CS, "code": "zz"},
        [("error", "code-invalid", "invalid-code", "@.code"), NOT_IN_VS],
        None,
        id="unknown-code",
    ),
    pytest.param(
        VS + "all",
        {"system": NOWHERE, "code": "a"},
        [("error", "not-found", "not-found", "@.system"), NOT_IN_VS],
        NOWHERE,
        id="unknown-system",
    ),
    pytest.param(
        VS + "all",
        {"system": VS + "all", "code": "a"},
        [("error", "invalid", "invalid-data", "@.system"), NOT_IN_VS],
        None,
        id="system-is-a-value-set",
    ),
    pytest.param(
        VS + "all",
        {"system": "cs", "code": "a"},
        [
            ("error", "invalid", "invalid-data", "@.system"),
            ("error", "not-found", "not-found", "@.system"),
            NOT_IN_VS,
        ],
        "cs",
        id="relative-system",
    ),
]


@pytest.mark.parametrize("form", ["code", "coding"])
@pytest.mark.parametrize(("valueset", "coding", "issues", "unknown"), D1)
def test_d1_not_in_vs_beside_the_root_cause(
    wb: Workbench,
    http: httpx.Client,
    form: str,
    valueset: str,
    coding: dict[str, Any],
    issues: Issues,
    unknown: str | None,
) -> None:
    body = ask(wb, http, valueset, form, coding)
    found = outputs(body)
    assert found["result"] is False
    assert issues_of(body) == expect(form, issues)
    assert found.get("x-unknown-system") == unknown
    assert "x-caused-by-unknown-system" not in found
    texts = [i["details"]["text"] for i in found["issues"]["issue"] if i["severity"] == "error"]
    assert found["message"] == "; ".join(texts)


def test_d1_a_system_that_cannot_be_inferred(wb: Workbench, http: httpx.Client) -> None:
    """Two systems of the value set have the code: cannot-infer and not-in-vs, at code."""
    body = ask(wb, http, VS + "two", "code", {"code": "a"})
    assert outputs(body)["result"] is False
    assert issues_of(body) == [
        ("error", "not-found", "cannot-infer", "code"),
        ("error", "code-invalid", "not-in-vs", "code"),
    ]


# --- d2: a CodeableConcept --------------------------------------------------------------

D2_CODINGS = [{"system": CS, "code": "zz"}, {"system": CS, "code": "a"}]


def test_d2_no_coding_is_a_member(wb: Workbench, http: httpx.Client) -> None:
    """One overall not-in-vs without expression; each coding's cause, and
    this-code-not-in-vs for every coding that is no member (a valid code outside too)."""
    body = ask(wb, http, VS + "only-b", "codeableConcept", codings=D2_CODINGS)
    assert outputs(body)["result"] is False
    assert issues_of(body) == [
        ("error", "code-invalid", "not-in-vs", None),
        ("error", "code-invalid", "invalid-code", "CodeableConcept.coding[0].code"),
        ("information", "code-invalid", "this-code-not-in-vs", "CodeableConcept.coding[0].code"),
        ("information", "code-invalid", "this-code-not-in-vs", "CodeableConcept.coding[1].code"),
    ]


def test_d2_membership_only_keeps_only_membership_issues(wb: Workbench, http: httpx.Client) -> None:
    body = ask(wb, http, VS + "only-b", "codeableConcept", codings=D2_CODINGS, membership_only=True)
    assert outputs(body)["result"] is False
    assert issues_of(body) == [
        ("error", "code-invalid", "not-in-vs", None),
        ("information", "code-invalid", "this-code-not-in-vs", "CodeableConcept.coding[0].code"),
        ("information", "code-invalid", "this-code-not-in-vs", "CodeableConcept.coding[1].code"),
    ]


def test_d2_a_member_with_a_wrong_display_gets_only_invalid_display(
    wb: Workbench, http: httpx.Client
) -> None:
    coding = {"system": CS, "code": "b", "display": "Wrong"}
    body = ask(wb, http, VS + "only-b", "codeableConcept", coding)
    assert (outputs(body)["result"], outputs(body)["display"]) == (False, "Beta")
    assert issues_of(body) == [
        ("error", "invalid", "invalid-display", "CodeableConcept.coding[0].display")
    ]


# --- d3: a member failing for another reason adds no not-in-vs ----------------------------

D3 = [
    pytest.param(
        VS + "english",
        {"system": CS, "code": "a", "display": "Alfa"},
        {"display_language": "en"},
        ("Alpha", "1"),
        [("error", "invalid", "invalid-display", "CodeableConcept.coding[0].display")],
        id="display-under-display-language",
    ),
    pytest.param(
        VS + "pinned",
        {"system": CSV, "code": "a", "version": "2"},
        {},
        ("A one", "1"),
        [("error", "invalid", "vs-invalid", "CodeableConcept.coding[0].version")],
        id="version-differs-from-the-pinned-include",
    ),
    pytest.param(
        VS + "pinned",
        {"system": CSV, "code": "a", "version": "9"},
        {},
        ("A one", "1"),
        [  # errors ordered by issue code, as tx.fhir.org lists them
            ("error", "invalid", "vs-invalid", "CodeableConcept.coding[0].version"),
            ("error", "not-found", "not-found", "CodeableConcept.coding[0].system"),
        ],
        id="unknown-version-pinned-include",
    ),
    pytest.param(
        VS + "versionless",
        {"system": CSV, "code": "a", "version": "9"},
        {},
        ("A two", "2"),
        [
            ("error", "not-found", "not-found", "CodeableConcept.coding[0].system"),
            ("warning", "invalid", "vs-invalid", "CodeableConcept.coding[0].version"),
        ],
        id="unknown-version-versionless-include-is-a-warning",
    ),
]


@pytest.mark.parametrize(("valueset", "coding", "options", "shown", "issues"), D3)
def test_d3_no_not_in_vs_for_a_member_failing_otherwise(
    wb: Workbench,
    http: httpx.Client,
    valueset: str,
    coding: dict[str, Any],
    options: dict[str, Any],
    shown: tuple[str, str],
    issues: Issues,
) -> None:
    body = ask(wb, http, valueset, "codeableConcept", coding, **options)
    found = outputs(body)
    assert found["result"] is False
    assert (found["display"], found["version"]) == shown
    assert issues_of(body) == issues


# --- d4: an inactive code where only active codes count ---------------------------------


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("valueset", "options"),
    [(VS + "active-only", {}), (VS + "all", {"active_only": True})],
    ids=["compose-inactive-false", "activeOnly"],
)
def test_d4_inactive_in_active_only(
    wb: Workbench, http: httpx.Client, form: str, valueset: str, options: dict[str, Any]
) -> None:
    body = ask(wb, http, valueset, form, {"system": CS, "code": "old"}, **options)
    found = outputs(body)
    assert (found["result"], found["inactive"]) == (False, True)
    rule = ("error", "business-rule", "code-rule", "@.code")
    comment = ("warning", "business-rule", "code-comment", "@")
    if form == "codeableConcept":
        expected = [
            ("error", "code-invalid", "not-in-vs", None),
            rule,
            ("information", "code-invalid", "this-code-not-in-vs", "@.code"),
            comment,
        ]
    else:
        expected = [rule, NOT_IN_VS, comment]
    assert issues_of(body) == expect(form, expected)


# --- d5: status information and value-set-level deprecation --------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_d5_status_check_for_an_imported_value_set(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    body = ask(wb, http, VS + "importer", form, {"system": CS, "code": "a"})
    found = outputs(body)
    assert found["result"] is True and "message" not in found
    assert issues_of(body) == [("information", "business-rule", "status-check", None)]
    text = found["issues"]["issue"][0]["details"]["text"]
    assert text == f"Reference to experimental ValueSet {VS}draft-imported|1"
    # the draft, experimental value set asked for itself: nothing to say
    body = ask(wb, http, VS + "draft-imported", form, {"system": CS, "code": "a"})
    assert issues_of(body) == []


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("code", ["a", "b"], ids=["valueset-deprecated", "standards-status"])
def test_d5_an_include_concept_marked_deprecated(
    wb: Workbench, http: httpx.Client, form: str, code: str
) -> None:
    body = ask(wb, http, VS + "deprecated-entries", form, {"system": CS, "code": code})
    found = outputs(body)
    assert found["result"] is True and "message" not in found
    assert issues_of(body) == expect(form, [("warning", "business-rule", "code-comment", "@.code")])
    assert "deprecated in the value set" in found["issues"]["issue"][0]["details"]["text"]


# --- d6: a deprecated designation as display -----------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_d6_a_display_that_is_a_deprecated_designation(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    coding = {"system": CS, "code": "a", "display": "Old Alpha"}
    body = ask(wb, http, VS + "all", form, coding)
    found = outputs(body)
    assert (found["result"], found["display"]) == (True, "Alpha")
    assert "message" not in found
    assert issues_of(body) == expect(form, [("warning", "invalid", "display-comment", "@.display")])
    text = found["issues"]["issue"][0]["details"]["text"]
    assert "no longer considered a correct display" in text and "'Alpha'" in text
