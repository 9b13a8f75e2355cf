"""``ValueSet/$batch-validate-code`` over HTTP (uvicorn on 127.0.0.1) and
``Workbench.validate_codes``: one answer per entry, in order, the same outputs
``$validate-code`` gives; an entry that cannot be validated answers an error in its place;
an empty batch and one past the limit are refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import (
    GENDER_CS,
    GENDER_VS,
    ORDERABLE_CS,
    TOKEN,
    assert_outcome,
    client,
    params,
    values,
)

from workbench import Workbench
from workbench.operations import batch

OTHER_CS = "http://example.org/fhir/CodeSystem/batch"


@pytest.fixture(scope="module")
def http(default_wb: Workbench) -> Iterator[httpx.Client]:
    with default_wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        yield c


def entry(*pairs: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    return ("validation", {"resource": params(*pairs)})


def coding(code: str, system: str = GENDER_CS, **more: str) -> tuple[str, dict[str, Any]]:
    return ("coding", {"valueCoding": {"system": system, "code": code, **more}})


def answers(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert {p["name"] for p in body["parameter"]} == {"validation"}
    return [p["resource"] for p in body["parameter"]]


def single(http: httpx.Client, *pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    found = http.post("/ValueSet/$validate-code", json=params(*pairs))
    assert found.status_code == 200, found.text
    return dict(found.json())


def test_each_entry_answers_as_validate_code_does(http: httpx.Client) -> None:
    entries = [
        [coding("male")],
        [coding("nope")],
        [("code", {"valueCode": "female"}), ("system", {"valueUri": GENDER_CS})],
        [("code", {"valueCode": "other"}), ("inferSystem", {"valueBoolean": True})],
        [coding("female", display="Femme"), ("lenient-display-validation", {"valueBoolean": True})],
        [coding("male", version="9.9")],
    ]
    top = ("url", {"valueUri": GENDER_VS})
    got = answers(
        http.post(
            "/ValueSet/$batch-validate-code", json=params(top, *map(lambda e: entry(*e), entries))
        )
    )
    assert got == [single(http, top, *e) for e in entries]
    assert [values(a, "result")[0] for a in got] == [True, False, True, True, True, False]
    assert [values(a, "code")[0] for a in got] == [
        "male",
        "nope",
        "female",
        "other",
        "female",
        "male",
    ]


def test_entries_mixing_code_systems_and_value_sets(http: httpx.Client) -> None:
    other = {
        "resourceType": "CodeSystem",
        "url": OTHER_CS,
        "version": "2",
        "status": "active",
        "content": "complete",
        "concept": [{"code": "x", "display": "X"}],
    }
    other_vs = {
        "resourceType": "ValueSet",
        "url": "http://example.org/fhir/ValueSet/batch",
        "status": "active",
        "compose": {"include": [{"system": OTHER_CS}, {"system": ORDERABLE_CS}]},
    }
    body = params(
        ("url", {"valueUri": GENDER_VS}),
        ("tx-resource", {"resource": other}),
        ("tx-resource", {"resource": other_vs}),
        entry(coding("male")),
        entry(("url", {"valueUri": other_vs["url"]}), coding("x", OTHER_CS, version="2")),
        entry(("url", {"valueUri": other_vs["url"]}), coding("x", OTHER_CS, version="1")),
        entry(("url", {"valueUri": other_vs["url"]}), coding("x", GENDER_CS)),
        entry(coding("x", OTHER_CS)),
    )
    got = answers(http.post("/ValueSet/$batch-validate-code", json=body))
    assert [values(a, "result")[0] for a in got] == [True, True, False, False, False]
    assert values(got[1], "version") == ["2"]


@pytest.mark.parametrize("pretty", [False, True])
def test_repeated_entries_answer_as_their_first(http: httpx.Client, pretty: bool) -> None:
    # an entry that repeats an earlier one is answered once per batch (its JSON written
    # once): each answer is still the single call's, in its place, pretty-printed or not
    top = ("url", {"valueUri": GENDER_VS})
    shapes = [
        [coding("male")],
        [coding("nope")],
        [coding("female"), ("diagnostics", {"valueBoolean": True})],
        [("display", {"valueString": "no code"})],
    ]
    order = [0, 1, 0, 3, 1, 2, 2, 0, 3]
    body = params(top, *[entry(*shapes[i]) for i in order])
    url = "/ValueSet/$batch-validate-code" + ("?_pretty=true" if pretty else "")
    response = http.post(url, json=body)
    got = answers(response)
    assert (b'\n  "parameter"' in response.content) is pretty
    expected = [single(http, top, *shape) for shape in shapes[:2]]
    assert [got[0], got[1], got[2], got[4], got[7]] == [
        *expected[:2],
        *expected[:1],
        expected[1],
        expected[0],
    ]
    assert got[3] == got[8] and "Nothing to validate" in outcome_text(got[3])
    for i in (5, 6):  # the diagnostics are each entry's own
        assert values(got[i], "result") == [True]
        assert [p["name"] for p in got[i]["parameter"]].count("diagnostics") == 1


def outcome_text(answer: dict[str, Any]) -> str:
    """The text of an OperationOutcome answered in an entry's place (one issue, invalid)."""
    assert answer["resourceType"] == "OperationOutcome", answer
    (issue,) = answer["issue"]
    assert issue["severity"] == "error" and issue["code"] == "invalid", issue
    return str(issue["details"]["text"])


BAD_ENTRIES: list[tuple[str, tuple[str, dict[str, Any]], str]] = [
    # (id, the entry, what its answer says): an OperationOutcome in its place ("OO: ...")
    # or result=false with the error's message ("false: ...")
    ("not-parameters", ("validation", {"resource": {"resourceType": "ValueSet"}}), "OO: not a"),
    ("no-code", entry(("display", {"valueString": "no code"})), "OO: Nothing to validate"),
    # HL7's tests/batch: an unknown name is ignored, so the entry names no code
    ("codingX", entry(("codingX", {"valueCoding": {"code": "male"}})), "OO: Nothing to"),
    ("value", ("validation", {"valueString": "male"}), "OO: not a value (valueString)"),
    ("parts", ("validation", {"part": [{"name": "code", "valueCode": "m"}]}), "OO: not parts"),
    (
        "resource-and-value",
        ("validation", {"resource": params(coding("male")), "valueString": "x"}),
        "OO: not resource and valueString",
    ),
    ("empty-cc", entry(("codeableConcept", {"valueCodeableConcept": {}})), "false: "),
    (
        "unknown-vs",
        entry(("url", {"valueUri": "http://example.org/no-such-vs"}), coding("male")),
        "false: not found",
    ),
    (
        "bad-extension",
        ("validation", {"resource": params(coding("male")), "extension": [{"url": 5}]}),
        "false: validation.extension[0].url",
    ),
]


@pytest.mark.parametrize(("case", "bad", "says"), BAD_ENTRIES, ids=[c[0] for c in BAD_ENTRIES])
def test_a_bad_entry_answers_in_its_place(
    http: httpx.Client, case: str, bad: tuple[str, dict[str, Any]], says: str
) -> None:
    # the entries around it are validated all the same, each answer in its place
    body = params(("url", {"valueUri": GENDER_VS}), entry(coding("male")), bad, entry(coding("x")))
    got = answers(http.post("/ValueSet/$batch-validate-code", json=body))
    assert len(got) == 3
    assert [values(got[i], "result") for i in (0, 2)] == [[True], [False]]
    kind, _, text = says.partition(": ")
    if kind == "OO":
        assert text in outcome_text(got[1])
    else:
        assert values(got[1], "result") == [False]
        assert text in values(got[1], "message")[0], got[1]
        (issues,) = [p["resource"] for p in got[1]["parameter"] if p["name"] == "issues"]
        assert issues["resourceType"] == "OperationOutcome"


def test_an_unknown_input_of_an_entry_is_ignored_and_named(http: httpx.Client) -> None:
    body = params(
        ("url", {"valueUri": GENDER_VS}),
        entry(("unheard-of", {"valueString": "x"}), coding("male")),
        ("validation", {"resource": params(coding("male")), "id": "e1"}),
    )
    got = answers(http.post("/ValueSet/$batch-validate-code", json=body))
    assert [values(a, "result") for a in got] == [[True], [True]]
    (issues,) = [p["resource"] for p in got[0]["parameter"] if p["name"] == "issues"]
    assert any("'unheard-of'" in i["details"]["text"] for i in issues["issue"])


def test_empty_batch_and_too_many(http: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = http.post(
        "/ValueSet/$batch-validate-code", json=params(("url", {"valueUri": GENDER_VS}))
    )
    assert_outcome(empty, 400, "required", "'validation' is required")
    many = params(*[entry(coding("male")) for _ in range(batch.MAX_ENTRIES + 1)])
    found = http.post("/ValueSet/$batch-validate-code", json=many)
    assert_outcome(found, 422, "too-costly", "at most 10,000 validations")
    assert http.get("/ValueSet/$batch-validate-code").status_code == 405


def test_batch_in_a_client_cache(http: httpx.Client) -> None:
    cs = {
        "resourceType": "CodeSystem",
        "url": OTHER_CS,
        "status": "active",
        "content": "complete",
        "concept": [{"code": "y"}],
    }
    started = http.post(
        "/$cache-control?mode=start", json=params(("tx-resource", {"resource": cs}))
    )
    header = {"X-Cache-Id": str(values(started.json(), "cache-id")[0])}
    body = params(
        (
            "valueSet",
            {
                "resource": {
                    "resourceType": "ValueSet",
                    "status": "active",
                    "url": "http://example.org/vs-y",
                    "compose": {"include": [{"system": OTHER_CS}]},
                }
            },
        ),
        entry(coding("y", OTHER_CS)),
    )
    got = answers(http.post("/ValueSet/$batch-validate-code", json=body, headers=header))
    assert values(got[0], "result") == [True]
    later = params(("url", {"valueUri": "http://example.org/vs-y"}), entry(coding("y", OTHER_CS)))
    again = answers(http.post("/ValueSet/$batch-validate-code", json=later, headers=header))
    assert values(again[0], "result") == [True]


def test_validate_codes_in_python(default_wb: Workbench) -> None:
    items: list[Any] = [
        {"system": GENDER_CS, "code": "male"},
        {"system": GENDER_CS, "code": "nope"},
        {"code": "female", "system": GENDER_CS, "display": "Femme", "lenient_display": True},
        {"display": "no code"},
        5,
    ]
    found = default_wb.validate_codes(GENDER_VS, items)
    assert [r.result for r in found] == [True, False, True, False, False]
    assert found[0] == default_wb.validate_code(GENDER_VS, coding=items[0])
    assert found[3].issue == "invalid" and "Give something to validate" in (found[3].message or "")


def test_validate_codes_answers_a_wrong_item_and_never_hides_a_bug(
    default_wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item is data: a keyword validate_code does not take is that item's answer
    (result false, the issue ``invalid``, naming the keyword). A programming error (a
    TypeError inside the engine) is never turned into a result: it propagates."""
    items: list[Any] = [{"cod": "male", "system": GENDER_CS}, {"system": GENDER_CS, "code": "male"}]
    found = default_wb.validate_codes(GENDER_VS, items)
    assert [r.result for r in found] == [False, True]
    assert found[0].issue == "invalid" and "cod" in (found[0].message or "")

    def broken(*_: Any, **__: Any) -> Any:
        raise TypeError("a bug")

    monkeypatch.setattr(type(default_wb.terminology), "validate_code", broken)
    with pytest.raises(TypeError, match="a bug"):
        default_wb.validate_codes(GENDER_VS, items[1:])


# --- CodeSystem/$batch-validate-code (issue 49, point 3) ------------------------------

CS_ENTRIES: list[tuple[str, list[tuple[str, dict[str, Any]]], bool]] = [
    # (id, the entry's inputs, its result): systems and versions mixed in one batch
    ("coding", [coding("male")], True),
    ("coding-version", [coding("male", version="4.0.1")], True),
    ("coding-bad-version", [coding("male", version="9.9")], False),
    ("other-system", [coding("TAB", ORDERABLE_CS)], True),
    ("other-system-bad-code", [coding("nope", ORDERABLE_CS)], False),
    ("unknown-system", [coding("x", "http://example.org/none", version="2")], False),
    ("code-system", [("code", {"valueCode": "female"}), ("system", {"valueUri": GENDER_CS})], True),
    ("url-code", [("url", {"valueUri": GENDER_CS}), ("code", {"valueCode": "nope"})], False),
]


def test_codesystem_batch_answers_each_entry_as_validate_code(http: httpx.Client) -> None:
    body = params(*[entry(*inputs) for _, inputs, _ in CS_ENTRIES])
    got = answers(http.post("/CodeSystem/$batch-validate-code", json=body))
    for (case, inputs, result), answer in zip(CS_ENTRIES, got, strict=True):
        found = http.post("/CodeSystem/$validate-code", json=params(*inputs))
        assert answer == found.json(), case
        assert values(answer, "result") == [result], case
        sent = dict(inputs)
        code = sent.get("coding", {}).get("valueCoding") or {
            "code": sent["code"]["valueCode"],
            "system": (sent.get("system") or sent["url"])["valueUri"],
        }
        assert values(answer, "code") == [code["code"]], case
        assert values(answer, "system") == [code["system"]], case
        if "version" in code:  # a version given is answered (the one validated against)
            assert len(values(answer, "version")) == 1, case


def test_codesystem_batch_top_url_and_bad_entries(http: httpx.Client) -> None:
    body = params(
        ("url", {"valueUri": GENDER_CS}),
        entry(("code", {"valueCode": "male"})),
        entry(("display", {"valueString": "no code"})),
        ("validation", {"resource": {"resourceType": "CodeSystem"}}),
        entry(("code", {"valueCode": "nope"})),
    )
    got = answers(http.post("/CodeSystem/$batch-validate-code", json=body))
    assert values(got[0], "result") == [True] and values(got[0], "system") == [GENDER_CS]
    assert "Nothing to validate" in outcome_text(got[1])
    assert "must be a Parameters resource" in outcome_text(got[2])
    assert values(got[3], "result") == [False] and values(got[3], "code") == ["nope"]


@pytest.mark.parametrize("rtype", ["ValueSet", "CodeSystem"])
def test_batch_sizes_and_methods(http: httpx.Client, rtype: str) -> None:
    path = f"/{rtype}/$batch-validate-code"
    empty = http.post(path, json=params())
    assert_outcome(empty, 400, "required", "'validation' is required")
    limit = params(*[entry(coding("male")) for _ in range(batch.MAX_ENTRIES)])
    if rtype == "ValueSet":
        limit["parameter"].insert(0, {"name": "url", "valueUri": GENDER_VS})
    assert len(answers(http.post(path, json=limit))) == batch.MAX_ENTRIES
    limit["parameter"].append({"name": "validation", "resource": params(coding("male"))})
    assert_outcome(http.post(path, json=limit), 422, "too-costly", "at most 10,000 validations")
    assert http.get(path).status_code == 405
