"""The notebook widgets, tested headlessly in the ipywidgets style: build a widget, set
``.value`` on its inputs (or ``.click()`` its buttons), then assert on the outputs' state and
on what the engine was asked (a recording wrapper around the Workbench method, calling
through)."""

from __future__ import annotations

import base64
import html
import io
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import matplotlib

matplotlib.use("Agg")

import httpx
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from workbench import Workbench
from workbench.bulk.report import ValidationFrame
from workbench.errors import (
    CodeSystemNotFoundError,
    ImportCycleError,
    TooCostlyError,
    ValueSetNotFoundError,
    WorkbenchError,
)
from workbench.notebook import (
    CodeSystemTree,
    CodeValidator,
    ColumnReport,
    ServerPanel,
    ValueSetBrowser,
    views,
)

DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
DEMO_VS = "http://example.org/fhir/ValueSet/"
ALL = DEMO_VS + "workbench-demo-all"
IN_PERSON = DEMO_VS + "workbench-demo-in-person"
BOOKABLE = DEMO_VS + "workbench-demo-bookable"
REMOTE_LIVE = DEMO_VS + "workbench-demo-remote-live"
GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
THO_VS = "http://terminology.hl7.org/ValueSet/"
ACT_CODE = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
ENCOUNTER = THO_VS + "v3-ActEncounterCode"
COVERAGE = "http://hl7.org/fhir/ValueSet/coverage-type"
IDENTIFIER_TYPE = "http://hl7.org/fhir/ValueSet/identifier-type"
INACTIVE_VS = "http://hl7.org/fhir/ValueSet/inactive"
SECURITY = "http://hl7.org/fhir/ValueSet/security-labels"
LOCATION = THO_VS + "v3-ServiceDeliveryLocationRoleType"
PERSON_NAME_USE = THO_VS + "v3-PersonNameUse"
YESNO = "http://hl7.org/fhir/ValueSet/yesnodontknow"
MISSING_CS = "http://example.org/fhir/CodeSystem/not-loaded"
MISSING_VS = "http://example.org/fhir/ValueSet/not-loaded"
TEST_VS = "http://example.org/fhir/ValueSet/widget-test-"

Call = tuple[tuple[Any, ...], dict[str, Any]]


def record(monkeypatch: pytest.MonkeyPatch, wb: Workbench, name: str) -> list[Call]:
    """Wrap ``wb.<name>`` on the instance: record each call's args and kwargs, call through."""
    original: Callable[..., Any] = getattr(wb, name)
    calls: list[Call] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, dict(kwargs)))
        return original(*args, **kwargs)

    # setitem on the instance dict: undoing it removes the wrapper again, leaving no trace
    # on a shared (session) Workbench.
    monkeypatch.setitem(wb.__dict__, name, recording)
    return calls


def text_of(markup: str) -> str:
    """The visible text of an HTML fragment."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def valueset(
    name: str, compose: dict[str, Any], *, version: str | None = "1.0.0"
) -> dict[str, Any]:
    """A small test ValueSet ``TEST_VS + name``."""
    resource: dict[str, Any] = {
        "resourceType": "ValueSet",
        "url": TEST_VS + name,
        "name": "WidgetTest" + name.title().replace("-", ""),
        "status": "active",
        "compose": compose,
    }
    if version is not None:
        resource["version"] = version
    resource["title"] = f"Widget test: {name}"
    return resource


def canonical(resource: dict[str, Any]) -> str:
    return f"{resource['url']}|{resource['version']}" if "version" in resource else resource["url"]


# --- CodeValidator -----------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """Set ``widget.<control>.value = value``; the change must cause ``calls`` engine calls."""

    control: str
    value: Any
    calls: int = 1


@dataclass(frozen=True)
class Shown:
    """What the CodeValidator must show after the steps.

    ``result`` None means no ValidationResult (a hint or an error message in ``text``).
    ``kwargs`` are the keyword arguments of the last engine call (None: no call at all).
    """

    result: bool | None
    reason: str | None = None
    display: str | None = None
    word: str | None = None
    colour: str = views.GREEN
    kwargs: dict[str, Any] | None = None
    valueset: str = ALL
    text: list[str] = field(default_factory=list)


def plain(code: str, **extra: Any) -> dict[str, Any]:
    """The kwargs the CodeValidator passes for a typed code."""
    return {"abstract": False, "code": code, "system": None, "display": None, **extra}


VALID = {"word": "valid", "colour": views.GREEN}
WARNING = {"word": "valid, with a warning", "colour": views.AMBER}
INVALID = {"word": "invalid", "colour": views.RED}
OFFICE_CODING = f'{{"system": "{DEMO}", "code": "office-new"}}'

VALIDATOR_CASES = [
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "office")],
        Shown(True, None, "Office visit", kwargs=plain("office"), **VALID),
        id="valid",
    ),
    pytest.param(
        [
            Step("valueset", ALL, 0),
            Step("system", DEMO, 0),
            Step("code", "office"),
            Step("display", "Office visit"),
        ],
        Shown(
            True,
            None,
            "Office visit",
            kwargs=plain("office", system=DEMO, display="Office visit"),
            **VALID,
        ),
        id="valid-system-and-display",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "office"), Step("display", "Praxisbesuch")],
        Shown(True, None, "Office visit", kwargs=plain("office", display="Praxisbesuch"), **VALID),
        id="valid-german-designation",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "office"), Step("display", "Bogus")],
        Shown(
            False,
            "invalid-display",
            "Office visit",
            kwargs=plain("office", display="Bogus"),
            text=["Wrong display 'Bogus'"],
            **INVALID,
        ),
        id="wrong-display",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "in-person")],
        Shown(
            False,
            "abstract",
            "In-person visit",
            kwargs=plain("in-person"),
            text=["is abstract"],
            **INVALID,
        ),
        id="abstract",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "in-person"), Step("abstract", True)],
        Shown(True, None, "In-person visit", kwargs=plain("in-person", abstract=True), **VALID),
        id="abstract-allowed",
    ),
    pytest.param(
        [
            Step("valueset", ALL, 0),
            Step("code", "in-person"),
            Step("abstract", True),
            Step("abstract", False),
        ],
        Shown(False, "abstract", "In-person visit", kwargs=plain("in-person"), **INVALID),
        id="abstract-allowed-then-not",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "group")],
        Shown(
            True,
            "inactive",
            "Group visit",
            kwargs=plain("group"),
            text=["is inactive"],
            **WARNING,
        ),
        id="inactive-warning",
    ),
    pytest.param(
        [
            Step("valueset", ALL, 0),
            Step("code", "office"),
            Step("system", "http://example.org/unknown-system"),
        ],
        Shown(
            False,
            "unknown-system",
            None,
            kwargs=plain("office", system="http://example.org/unknown-system"),
            text=["http://example.org/unknown-system", "could not be found"],
            **INVALID,
        ),
        id="unknown-system",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "nope")],
        Shown(
            False,
            "unknown-code",
            None,
            kwargs=plain("nope"),
            text=["Unknown code 'nope'"],
            **INVALID,
        ),
        id="unknown-code",
    ),
    pytest.param(
        [Step("valueset", IN_PERSON, 0), Step("code", "video")],
        Shown(
            False,
            "not-in-vs",
            "Video consultation",
            kwargs=plain("video"),
            valueset=IN_PERSON,
            text=["is not in the value set"],
            **INVALID,
        ),
        id="not-in-value-set",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "video"), Step("valueset", IN_PERSON)],
        Shown(
            False,
            "not-in-vs",
            "Video consultation",
            kwargs=plain("video"),
            valueset=IN_PERSON,
            **INVALID,
        ),
        id="value-set-changed",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("coding", OFFICE_CODING)],
        Shown(
            True,
            None,
            "New patient office visit",
            kwargs={"abstract": False, "coding": {"system": DEMO, "code": "office-new"}},
            **VALID,
        ),
        id="coding-json-valid",
    ),
    pytest.param(
        [
            Step("valueset", ALL, 0),
            Step("code", "nope"),
            Step("coding", '{"system": "' + DEMO + '", "code": "office", "display": "Bogus"}'),
        ],
        Shown(
            False,
            "invalid-display",
            "Office visit",
            kwargs={
                "abstract": False,
                "coding": {"system": DEMO, "code": "office", "display": "Bogus"},
            },
            **INVALID,
        ),
        id="coding-json-wins-over-code",
    ),
    pytest.param(
        [
            Step("valueset", ALL, 0),
            Step("coding", OFFICE_CODING),
            Step("abstract", True),
        ],
        Shown(
            True,
            None,
            "New patient office visit",
            kwargs={"abstract": True, "coding": {"system": DEMO, "code": "office-new"}},
            **VALID,
        ),
        id="coding-json-abstract-flag",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("coding", f'{{"system": "{DEMO}"}}')],
        Shown(
            False,
            "missing",
            None,
            kwargs={"abstract": False, "coding": {"system": DEMO}},
            text=["No code was given"],
            **INVALID,
        ),
        id="coding-json-without-code",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "office"), Step("coding", '{"code": ', 0)],
        Shown(None, colour=views.RED, kwargs=plain("office"), text=["not valid JSON"]),
        id="coding-invalid-json",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("coding", '["office"]', 0)],
        Shown(None, colour=views.RED, text=["must be a JSON object"]),
        id="coding-json-not-an-object",
    ),
    pytest.param(
        [
            Step("valueset", ALL, 0),
            Step("code", "video"),
            Step("coding", "{not json", 0),
            Step("coding", ""),
        ],
        Shown(True, None, "Video consultation", kwargs=plain("video"), **VALID),
        id="coding-cleared-back-to-code",
    ),
    pytest.param(
        [Step("code", "office", 0)],
        Shown(None, colour=views.GREY, text=["Pick a value set."]),
        id="no-value-set",
    ),
    pytest.param(
        [Step("code", "office", 0), Step("display", "Office visit", 0)],
        Shown(None, colour=views.GREY, text=["Pick a value set."]),
        id="no-value-set-display",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("code", "office"), Step("code", "", 0)],
        Shown(None, colour=views.GREY, kwargs=plain("office"), text=["Enter a code."]),
        id="no-code",
    ),
    pytest.param(
        [Step("valueset", ALL, 0), Step("display", "Office visit", 0)],
        Shown(None, colour=views.GREY, text=["Enter a code."]),
        id="display-without-code",
    ),
]


def run_steps(widget: Any, steps: list[Step], calls: list[Call]) -> None:
    for step in steps:
        before = len(calls)
        getattr(widget, step.control).value = step.value
        assert len(calls) - before == step.calls, (step, calls[before:])


@pytest.mark.parametrize(("steps", "shown"), VALIDATOR_CASES)
def test_code_validator(
    default_wb: Workbench, monkeypatch: pytest.MonkeyPatch, steps: list[Step], shown: Shown
) -> None:
    wb = default_wb
    calls = record(monkeypatch, wb, "validate_code")
    validator = CodeValidator(wb, delay=0)
    assert validator.result is None
    run_steps(validator, steps, calls)
    out = validator.output.value
    for text in shown.text:
        assert views.esc(text) in out, (text, out)
    if shown.kwargs is None:
        assert calls == []
    else:
        args, kwargs = calls[-1]
        assert args == (shown.valueset,)
        assert kwargs == shown.kwargs
    if shown.result is None:
        assert validator.result is None
        assert "data-result" not in out
        assert f"color:{shown.colour}" in out
        return
    result = validator.result
    assert result is not None
    assert (result.result, result.issue, result.display) == (
        shown.result,
        shown.reason,
        shown.display,
    )
    # The widget shows exactly what the engine answers for the same question.
    assert result == Workbench.validate_code(wb, *calls[-1][0], **calls[-1][1])
    assert f"data-result='{str(shown.result).lower()}'" in out
    assert f"border-left:6px solid {shown.colour}" in out
    assert f"<b style='color:{shown.colour}'>{shown.word}</b>" in out
    if shown.reason:
        assert f"<code>{shown.reason}</code>" in out
    else:
        assert "<code>" not in out
    if shown.display:
        assert f"display: <b>{views.esc(shown.display)}</b>" in out
    else:
        assert "display:" not in out
    assert out == views.result_html(result)


def test_code_validator_lists_value_sets_and_takes_one(default_wb: Workbench) -> None:
    validator = CodeValidator(default_wb, ALL, delay=0)
    options = dict(validator.valueset.options)
    assert options["Workbench demo: all visit types"] == ALL
    assert set(options.values()) == set(default_wb.valuesets["url"])
    assert validator.valueset.value == ALL
    validator.code.value = "phone"
    assert validator.result is not None
    assert validator.result.result is True
    assert validator.result.display == "Telephone consultation"
    assert "data-result='true'" in validator.output.value


ENGINE_ERROR_CASES = [
    pytest.param(
        [
            valueset("cycle-a", {"include": [{"valueSet": [TEST_VS + "cycle-b"]}]}),
            valueset("cycle-b", {"include": [{"valueSet": [TEST_VS + "cycle-a"]}]}),
        ],
        ImportCycleError,
        id="import-cycle",
    ),
]


@pytest.mark.parametrize(("resources", "error"), ENGINE_ERROR_CASES)
def test_code_validator_shows_engine_errors_as_messages(
    wb: Workbench,
    monkeypatch: pytest.MonkeyPatch,
    resources: list[dict[str, Any]],
    error: type[WorkbenchError],
) -> None:
    wb.load(resources)
    url = resources[0]["url"]
    with pytest.raises(error) as raised:
        wb.validate_code(url, code="x")
    calls = record(monkeypatch, wb, "validate_code")
    validator = CodeValidator(wb, delay=0)
    run_steps(validator, [Step("valueset", url, 0), Step("code", "x")], calls)
    assert calls == [((url,), plain("x"))]
    assert validator.result is None
    assert validator.output.value == views.message(raised.value.text)
    assert "Traceback" not in validator.output.value


def test_code_validator_unknown_system_in_the_value_set(
    wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = valueset("unknown-cs", {"include": [{"system": MISSING_CS}]})
    wb.load(broken)
    calls = record(monkeypatch, wb, "validate_code")
    validator = CodeValidator(wb, delay=0)
    run_steps(validator, [Step("valueset", broken["url"], 0), Step("code", "x")], calls)
    assert validator.result is not None
    assert (validator.result.result, validator.result.issue) == (False, "unknown-system")
    assert "data-result='false'" in validator.output.value
    assert MISSING_CS in validator.output.value


# --- ValueSetBrowser: search and metadata -------------------------------------------------


SEARCH_CASES = [
    pytest.param("gender", {GENDER}, id="url-name-title"),
    pytest.param("GENDER", {GENDER}, id="case-insensitive"),
    pytest.param("  gender  ", {GENDER}, id="stripped"),
    pytest.param("v3-ActEncounterCode", {ENCOUNTER}, id="url-only"),
    pytest.param(
        "example.org/fhir/ValueSet", {ALL, BOOKABLE, IN_PERSON, REMOTE_LIVE}, id="url-prefix"
    ),
    pytest.param("demoinperson", {IN_PERSON}, id="name-only"),
    pytest.param("yes/no", {YESNO}, id="name-only-no-title"),
    pytest.param("visit types", {ALL, BOOKABLE, IN_PERSON, REMOTE_LIVE}, id="title-only"),
    pytest.param("Coverage Type and Self-Pay", {COVERAGE}, id="title-with-spaces"),
    pytest.param("no such value set", set(), id="no-match"),
    pytest.param("[(*", set(), id="regex-characters-are-text"),
]


@pytest.mark.parametrize(("query", "urls"), SEARCH_CASES)
def test_browser_search(default_wb: Workbench, query: str, urls: set[str]) -> None:
    browser = ValueSetBrowser(default_wb)
    assert len(browser.select.options) == len(default_wb.valuesets)
    browser.search.value = query
    values = [value for _, value in browser.select.options]
    assert {value.split("|")[0] for value in values} == urls
    assert values == sorted(values)
    browser.search.value = ""
    assert len(browser.select.options) == len(default_wb.valuesets)


LABEL_CASES = [
    pytest.param(ALL, ALL + "|1.0.0", "Workbench demo: all visit types (1.0.0)", id="title"),
    pytest.param(
        ENCOUNTER, ENCOUNTER + "|2014-03-26", "V3 Value SetActEncounterCode (2014-03-26)", id="v3"
    ),
    pytest.param(
        YESNO,
        YESNO + "|4.0.1",
        "Yes/No/Don't Know (4.0.1)",
        id="no-title-uses-name",
    ),
]


@pytest.mark.parametrize(("url", "value", "label"), LABEL_CASES)
def test_browser_option_labels(default_wb: Workbench, url: str, value: str, label: str) -> None:
    browser = ValueSetBrowser(default_wb)
    browser.search.value = url
    assert (label, value) in browser.select.options


def test_browser_clears_when_nothing_matches(default_wb: Workbench) -> None:
    browser = ValueSetBrowser(default_wb)
    browser.select.value = ALL + "|1.0.0"
    assert browser.metadata.value
    assert browser.table.value
    browser.search.value = "no such value set"
    assert browser.select.options == ()
    assert browser.select.value is None
    assert (browser.metadata.value, browser.table.value, browser.status.value) == ("", "", "")


METADATA_CASES = [
    pytest.param(
        ENCOUNTER + "|2014-03-26",
        "V3 Value SetActEncounterCode",
        [
            f"include codes of {ACT_CODE} where concept is-a _ActEncounterCode",
            f"exclude codes _ActEncounterCode from {ACT_CODE}",
        ],
        id="is-a-and-exclude",
    ),
    pytest.param(
        COVERAGE + "|4.0.1",
        "Coverage Type and Self-Pay Codes",
        [
            "include all codes of http://terminology.hl7.org/CodeSystem/coverage-selfpay",
            f"include the codes of {THO_VS}v3-ActCoverageTypeCode",
        ],
        id="import",
    ),
    pytest.param(
        IDENTIFIER_TYPE + "|4.0.1",
        "IdentifierType",
        [
            "include codes DL, PPN, BRN, MR, MCN, EN, TAX, NIIP … (18 codes) from "
            "http://terminology.hl7.org/CodeSystem/v2-0203"
        ],
        id="long-concept-list",
    ),
    pytest.param(
        BOOKABLE + "|1.0.0",
        "Workbench demo: bookable visit types",
        [
            f"include the codes of {IN_PERSON}",
            f"include codes video, phone from {DEMO}",
            f"exclude codes walk-in from {DEMO}",
            f"exclude codes of {DEMO} where concept is-a group",
        ],
        id="import-concepts-excludes",
    ),
    pytest.param(
        INACTIVE_VS + "|4.0.1",
        "Example with inactive codes",
        [
            "include codes of http://terminology.hl7.org/CodeSystem/v3-ActMood where concept "
            "descendent-of _ActMoodPredicate"
        ],
        id="descendent-of",
    ),
]


@pytest.mark.parametrize(("value", "title", "lines"), METADATA_CASES)
def test_browser_metadata_and_compose(
    default_wb: Workbench, value: str, title: str, lines: list[str]
) -> None:
    browser = ValueSetBrowser(default_wb)
    browser.select.value = value
    url, version = value.split("|")
    resource = default_wb.resource("ValueSet", url)
    meta = browser.metadata.value
    assert f"<h4 style='margin:4px 0'>{views.esc(title)}</h4>" in meta
    assert f"<code>{url}</code> version <b>{version}</b>" in meta
    assert f"status <b>{resource['status']}</b>" in meta
    items = re.findall(r"<li>(.*?)</li>", meta)
    assert [html.unescape(item) for item in items] == lines


# --- ValueSetBrowser: the expansion -------------------------------------------------------


def table_codes(markup: str) -> list[str]:
    return [
        html.unescape(code)
        for code in re.findall(r"<tr style='[^']*'><td><code>(.*?)</code>", markup)
    ]


def assert_page(
    wb: Workbench, browser: ValueSetBrowser, url: str, filter: str | None, offset: int
) -> None:
    """The table shows exactly the engine's page for the same question."""
    expected = wb.expand(url, filter=filter, offset=offset, count=browser.page_size)
    assert table_codes(browser.table.value) == expected.frame["code"].tolist()


FIRST_PAGE_CASES = [
    pytest.param(ALL + "|1.0.0", "codes 1–15 of 15", True, id="demo-all"),
    pytest.param(PERSON_NAME_USE + "|3.0.0", "codes 1–3 of 3", True, id="import-only"),
    pytest.param(COVERAGE + "|4.0.1", "codes 1–25 of 58", False, id="coverage-type"),
    pytest.param(SECURITY + "|4.0.1", "codes 1–25 of 217", False, id="security-labels"),
]


@pytest.mark.parametrize(("value", "status", "next_disabled"), FIRST_PAGE_CASES)
def test_browser_first_page(
    default_wb: Workbench,
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    status: str,
    next_disabled: bool,
) -> None:
    browser = ValueSetBrowser(default_wb)
    calls = record(monkeypatch, default_wb, "expand")
    browser.select.value = value
    assert calls == [((value,), {"filter": None, "offset": 0, "count": 25})]
    assert browser.status.value == status
    assert browser.previous.disabled is True
    assert browser.next.disabled is next_disabled
    assert_page(default_wb, browser, value, None, 0)


# (button, status, previous disabled, next disabled, offset asked for)
PAGING_WALK = [
    ("next", "codes 26–50 of 127", False, False, 25),
    ("next", "codes 51–75 of 127", False, False, 50),
    ("previous", "codes 26–50 of 127", False, False, 25),
    ("previous", "codes 1–25 of 127", True, False, 0),
    ("next", "codes 26–50 of 127", False, False, 25),
    ("next", "codes 51–75 of 127", False, False, 50),
    ("next", "codes 76–100 of 127", False, False, 75),
    ("next", "codes 101–125 of 127", False, False, 100),
    ("next", "codes 126–127 of 127", False, True, 125),
    ("previous", "codes 101–125 of 127", False, False, 100),
]


def test_browser_pages_with_the_buttons(
    default_wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = ValueSetBrowser(default_wb)
    calls = record(monkeypatch, default_wb, "expand")
    value = LOCATION + "|2014-03-26"
    browser.select.value = value
    assert browser.status.value == "codes 1–25 of 127"
    assert (browser.previous.disabled, browser.next.disabled) == (True, False)
    for button, status, previous_disabled, next_disabled, offset in PAGING_WALK:
        before = len(calls)
        getattr(browser, button).click()
        assert calls[before:] == [((value,), {"filter": None, "offset": offset, "count": 25})]
        assert browser.status.value == status
        assert (browser.previous.disabled, browser.next.disabled) == (
            previous_disabled,
            next_disabled,
        )
        assert_page(default_wb, browser, value, None, offset)


FILTER_CASES = [
    pytest.param(
        ALL + "|1.0.0",
        "office",
        "codes 1–4 of 4",
        ["office", "office-new", "office-followup", "office-procedure"],
        id="code-word",
    ),
    pytest.param(
        ALL + "|1.0.0",
        "Telephone",
        "codes 1–2 of 2",
        ["phone", "phone-triage"],
        id="display-word",
    ),
    pytest.param(
        ALL + "|1.0.0",
        "visit office",
        "codes 1–4 of 4",
        ["office", "office-new", "office-followup", "office-procedure"],
        id="all-words",
    ),
    pytest.param(SECURITY + "|4.0.1", "restricted", "codes 1–3 of 3", ["U", "R", "V"], id="v3"),
    pytest.param(ALL + "|1.0.0", "zzz", "codes 0–0 of 0", [], id="nothing"),
]


@pytest.mark.parametrize(("value", "text", "status", "codes"), FILTER_CASES)
def test_browser_code_filter(
    default_wb: Workbench,
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    text: str,
    status: str,
    codes: list[str],
) -> None:
    browser = ValueSetBrowser(default_wb)
    browser.select.value = value
    calls = record(monkeypatch, default_wb, "expand")
    browser.code_filter.value = text
    assert calls == [((value,), {"filter": text, "offset": 0, "count": 25})]
    assert browser.status.value == status
    assert table_codes(browser.table.value) == codes
    assert_page(default_wb, browser, value, text, 0)
    assert browser.next.disabled is True
    if not codes:
        assert "No codes." in browser.table.value
    browser.code_filter.value = ""
    assert calls[-1] == ((value,), {"filter": None, "offset": 0, "count": 25})


def test_browser_filter_resets_the_page_and_pages_filtered(
    default_wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = ValueSetBrowser(default_wb)
    value = LOCATION + "|2014-03-26"
    browser.select.value = value
    browser.next.click()
    browser.next.click()
    calls = record(monkeypatch, default_wb, "expand")
    browser.code_filter.value = "clinic"
    assert calls[-1] == ((value,), {"filter": "clinic", "offset": 0, "count": 25})
    assert browser.status.value == "codes 1–25 of 58"
    browser.next.click()
    assert calls[-1] == ((value,), {"filter": "clinic", "offset": 25, "count": 25})
    assert browser.status.value == "codes 26–50 of 58"
    browser.next.click()
    assert browser.status.value == "codes 51–58 of 58"
    assert browser.next.disabled is True
    assert_page(default_wb, browser, value, "clinic", 50)
    # Another value set starts at its first page again, the filter kept.
    browser.select.value = ALL + "|1.0.0"
    assert calls[-1] == ((ALL + "|1.0.0",), {"filter": "clinic", "offset": 0, "count": 25})
    assert browser.status.value == "codes 0–0 of 0"


# (value set, code, abstract, inactive)
MARK_CASES = [
    pytest.param(ALL, "in-person", True, False, id="all-in-person-abstract"),
    pytest.param(ALL, "remote", True, False, id="all-remote-abstract"),
    pytest.param(ALL, "group", False, True, id="all-group-inactive"),
    pytest.param(ALL, "fax-consult", False, True, id="all-fax-consult-inactive"),
    pytest.param(ALL, "office", False, False, id="all-office-plain"),
    pytest.param(ALL, "phone-triage", False, False, id="all-phone-triage-plain"),
    pytest.param(IN_PERSON, "in-person", True, False, id="in-person-root-abstract"),
    pytest.param(IN_PERSON, "group", False, True, id="in-person-group-inactive"),
    pytest.param(IN_PERSON, "home-hospital", False, False, id="in-person-home-hospital-plain"),
]

TABLE_ROW = re.compile(r"<tr style='([^']*)'><td><code>([^<]*)</code>(.*?)</td><td>(.*?)</td>")


@pytest.mark.parametrize(("url", "code", "abstract", "inactive"), MARK_CASES)
def test_browser_marks_abstract_and_inactive(
    default_wb: Workbench, url: str, code: str, abstract: bool, inactive: bool
) -> None:
    browser = ValueSetBrowser(default_wb)
    browser.select.value = url + "|1.0.0"
    rows = {
        c: (style, badges, display)
        for style, c, badges, display in TABLE_ROW.findall(browser.table.value)
    }
    style, badges, display = rows[code]
    concept = default_wb.terminology.require_codesystem(DEMO).concepts[code]
    assert display == views.esc(concept.display)
    assert ("font-style:italic" in style) is abstract
    assert ("text-decoration:line-through" in style) is inactive
    assert (">abstract</span>" in badges) is abstract
    assert (">inactive</span>" in badges) is inactive


BROKEN_CASES = [
    pytest.param(
        [valueset("unknown-cs", {"include": [{"system": MISSING_CS}]})],
        CodeSystemNotFoundError,
        MISSING_CS,
        id="unknown-code-system",
    ),
    pytest.param(
        [valueset("imports-missing", {"include": [{"valueSet": [MISSING_VS]}]})],
        ValueSetNotFoundError,
        MISSING_VS,
        id="import-not-loaded",
    ),
    pytest.param(
        [
            valueset("cycle-a", {"include": [{"valueSet": [TEST_VS + "cycle-b"]}]}),
            valueset("cycle-b", {"include": [{"valueSet": [TEST_VS + "cycle-a"]}]}),
        ],
        ImportCycleError,
        "cycle",
        id="import-cycle",
    ),
]


@pytest.mark.parametrize(("resources", "error", "mentions"), BROKEN_CASES)
def test_browser_shows_engine_errors_as_messages(
    wb: Workbench,
    resources: list[dict[str, Any]],
    error: type[WorkbenchError],
    mentions: str,
) -> None:
    wb.load(resources)
    value = canonical(resources[0])
    with pytest.raises(error) as raised:
        wb.expand(value, offset=0, count=25)
    browser = ValueSetBrowser(wb)
    browser.search.value = "widget test"
    browser.select.value = value
    assert browser.table.value == views.message(raised.value.text)
    assert mentions in browser.table.value
    assert browser.status.value == ""
    assert (browser.previous.disabled, browser.next.disabled) == (True, True)
    assert "Widget test: " in browser.metadata.value


def test_browser_pages_past_the_expansion_limit(
    wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The browser always asks for a page, so a value set over the expansion limit (which
    is too costly unpaged) still shows, page by page, without an error."""
    wb.terminology.max_expansion = 100
    with pytest.raises(TooCostlyError):
        wb.expand(SECURITY).to_fhir()
    calls = record(monkeypatch, wb, "expand")
    browser = ValueSetBrowser(wb)
    browser.select.value = SECURITY + "|4.0.1"
    assert calls[-1][1]["count"] == 25
    assert browser.status.value == "codes 1–25 of 217"
    for _ in range(8):
        browser.next.click()
    assert browser.status.value == "codes 201–217 of 217"
    assert browser.next.disabled is True
    assert len(table_codes(browser.table.value)) == 17
    assert "too-costly" not in browser.table.value
    assert "limit" not in browser.table.value


def test_browser_shows_a_value_set_without_version(wb: Workbench) -> None:
    resource = valueset("no-version", {"include": [{"system": DEMO}]}, version=None)
    wb.load(resource)
    assert wb.expand(resource["url"], count=25).total == 15
    browser = ValueSetBrowser(wb)
    browser.search.value = "widget test: no-version"
    [(label, value)] = browser.select.options
    browser.select.value = value
    assert "not found" not in browser.table.value
    assert browser.status.value == "codes 1–15 of 15"
    assert "Widget test: no-version" in browser.metadata.value
    assert (label, value) == ("Widget test: no-version (-)", resource["url"])


def test_browser_shows_a_missing_display_as_empty(wb: Workbench) -> None:
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/fhir/CodeSystem/widget-test-bare",
                "version": "1",
                "status": "active",
                "content": "complete",
                "concept": [{"code": "a", "display": "Alpha"}, {"code": "b"}],
            },
            valueset(
                "bare",
                {"include": [{"system": "http://example.org/fhir/CodeSystem/widget-test-bare"}]},
            ),
        ]
    )
    browser = ValueSetBrowser(wb)
    browser.search.value = "widget test: bare"
    browser.select.value = TEST_VS + "bare|1.0.0"
    rows = {code: display for _, code, _, display in TABLE_ROW.findall(browser.table.value)}
    assert rows == {"a": "Alpha", "b": ""}


# --- CodeSystemTree ------------------------------------------------------------------------


@dataclass(frozen=True)
class Level:
    """The tree's state: child codes listed, breadcrumb text, detail text, badges."""

    children: list[str]
    breadcrumb: str
    detail: str
    badges: list[str] = field(default_factory=list)


TOP = Level(["in-person", "remote"], "top", "15 concepts; 2 at the top")
IN_PERSON_LEVEL = Level(
    ["office", "home", "walk-in", "group"],
    "top › in-person",
    "in-person In-person visit",
    ["abstract"],
)
OFFICE_LEVEL = Level(
    ["office-new", "office-followup", "office-procedure"],
    "top › in-person › office",
    "office Office visit",
)

# Actions: ("system", url) picks a code system, ("child", code) steps in, ("up",) goes up.
TREE_CASES = [
    pytest.param([("system", DEMO)], TOP, id="top"),
    pytest.param([("system", DEMO), ("child", "in-person")], IN_PERSON_LEVEL, id="in-person"),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("child", "office")], OFFICE_LEVEL, id="office"
    ),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("child", "office"), ("child", "office-new")],
        Level([], "top › in-person › office › office-new", "office-new New patient office visit"),
        id="leaf",
    ),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("child", "home")],
        Level(["home-hospital"], "top › in-person › home", "home Home visit"),
        id="child-by-parent-property",
    ),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("child", "group")],
        Level([], "top › in-person › group", "group Group visit", ["inactive"]),
        id="inactive",
    ),
    pytest.param(
        [("system", DEMO), ("child", "remote")],
        Level(["video", "phone", "e-visit", "fax-consult"], "top › remote", "remote", ["abstract"]),
        id="remote",
    ),
    pytest.param(
        [("system", DEMO), ("child", "remote"), ("child", "fax-consult")],
        Level([], "top › remote › fax-consult", "fax-consult Fax consultation", ["inactive"]),
        id="remote-inactive",
    ),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("child", "office"), ("up",)],
        IN_PERSON_LEVEL,
        id="up",
    ),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("child", "office"), ("up",), ("up",)],
        TOP,
        id="up-up",
    ),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("up",), ("child", "in-person")],
        IN_PERSON_LEVEL,
        id="same-child-again",
    ),
    pytest.param(
        [("system", DEMO), ("child", "in-person"), ("child", "office"), ("system", GENDER_CS)],
        Level(["male", "female", "other", "unknown"], "top", "4 concepts; 4 at the top"),
        id="other-system-resets",
    ),
]


@pytest.mark.parametrize(("actions", "level"), TREE_CASES)
def test_code_system_tree(
    default_wb: Workbench, actions: list[tuple[str, ...]], level: Level
) -> None:
    tree = CodeSystemTree(default_wb)
    assert DEMO in [url for _, url in tree.system.options]
    labels = [label for label, _ in tree.system.options]
    assert labels == sorted(labels, key=str.casefold)
    for action in actions:
        if action[0] == "system":
            tree.system.value = action[1]
        elif action[0] == "child":
            assert action[1] in [value for _, value in tree.children_list.options]
            tree.children_list.value = action[1]
        else:
            tree.up.click()
        assert tree.children_list.value is None
    assert [value for _, value in tree.children_list.options] == level.children
    assert text_of(tree.breadcrumb.value) == level.breadcrumb
    detail = text_of(tree.detail.value)
    assert detail.startswith(level.detail)
    assert re.findall(r">(abstract|inactive)</span>", tree.detail.value) == level.badges
    assert tree.up.disabled is (level.breadcrumb == "top")
    system = tree.system.value
    cs = default_wb.terminology.require_codesystem(system)
    for label, code in tree.children_list.options:
        concept = cs.concepts[code]
        assert label.startswith(f"{code}  {concept.display or ''}")
        assert label.endswith("▸") is bool(concept.children)
    if tree.path:
        assert views.esc(cs.concepts[tree.path[-1]].definition) in tree.detail.value


def test_browser_has_the_tree_in_a_tab(default_wb: Workbench) -> None:
    browser = ValueSetBrowser(default_wb)
    tabs = browser.children[0]
    assert [tabs.get_title(0), tabs.get_title(1)] == ["Value sets", "Code systems"]
    assert isinstance(browser.hierarchy, CodeSystemTree)
    assert tabs.children[1] is browser.hierarchy
    browser.hierarchy.system.value = DEMO
    assert [v for _, v in browser.hierarchy.children_list.options] == ["in-person", "remote"]


# --- ColumnReport ---------------------------------------------------------------------------

# code, display -> the reason validate_column gives against workbench-demo-in-person
# (abstract=False: abstract codes refused)
COLUMN = [
    ("office", None, "valid"),
    ("office", None, "valid"),
    ("office-new", None, "valid"),
    ("in-person", None, "abstract"),
    ("group", None, "inactive"),
    ("video", None, "not-in-vs"),
    ("nope", None, "unknown-code"),
    ("nope", None, "unknown-code"),
    ("nope", None, "unknown-code"),
    (None, None, "missing"),
    ("office", "Bogus", "invalid-display"),
]
COUNTS = {
    "valid": 3,
    "unknown-code": 3,
    "abstract": 1,
    "inactive": 1,
    "not-in-vs": 1,
    "missing": 1,
    "invalid-display": 1,
}
FAILING = {"unknown-code": 3, "abstract": 1, "not-in-vs": 1, "missing": 1, "invalid-display": 1}


@pytest.fixture(scope="module")
def column_result(default_wb: Workbench) -> ValidationFrame:
    frame = pd.DataFrame(
        {"code": [c for c, _, _ in COLUMN], "display": [d for _, d, _ in COLUMN]},
        index=[f"row{i}" for i in range(len(COLUMN))],
    )
    return default_wb.validate_column(
        frame, IN_PERSON, code="code", display="display", abstract=False
    )


@pytest.fixture(scope="module")
def shared_report(column_result: ValidationFrame) -> ColumnReport:
    """One ColumnReport with the default options (drawing the chart takes a while)."""
    return ColumnReport(column_result)


@pytest.fixture
def report(shared_report: ColumnReport) -> ColumnReport:
    """The shared ColumnReport, back at "all failures"."""
    shared_report.issue.value = "all failures"
    return shared_report


def test_column_fixture_has_the_reasons_it_claims(column_result: ValidationFrame) -> None:
    issues = column_result["issue"].astype(object).where(column_result["issue"].notna(), "valid")
    assert issues.tolist() == [reason for _, _, reason in COLUMN]


def test_column_report_counts(report: ColumnReport) -> None:
    counts = report.counts.value
    assert "<p><b>4</b> of 11 rows valid (36.4%)</p>" in counts
    shown = dict(
        re.findall(r"<tr><td>([^<]*)</td><td style='text-align:right'>([\d,]+)</td>", counts)
    )
    assert {k: int(v) for k, v in shown.items()} == COUNTS


def test_column_report_counts_with_thousands(default_wb: Workbench) -> None:
    codes = pd.Series(["office"] * 1200 + ["nope"] * 1001)
    report = ColumnReport(default_wb.validate_column(codes, IN_PERSON, abstract=False))
    assert "<b>1,200</b> of 2,201 rows valid (54.5%)" in report.counts.value
    assert "<td>unknown-code</td><td style='text-align:right'>1,001</td>" in report.counts.value
    assert report.rows_caption.value == "<div>1,001 rows</div>"
    assert report.codes.df["code"].tolist() == ["nope"]
    assert report.codes.df["count"].tolist() == [1001]


def test_column_report_shows_distinct_codes_first(report: ColumnReport) -> None:
    """The first table is by code (failing ones, most frequent first), in an interactive
    table widget that pages, sorts, searches and exports."""
    assert report.children[2] is report.codes_caption
    assert report.children[3] is report.codes
    shown = report.codes.df
    assert shown["code"].tolist()[0] == "nope"
    assert shown["count"].tolist()[0] == 3
    assert shown["share"].tolist()[0] == "27.3%"
    assert sorted(shown["issue"]) == sorted(FAILING)
    assert report.codes_caption.value.startswith("<b>5 distinct failing codes</b>")
    args = report.codes._dt_args
    assert args["pageLength"] == 10
    assert {"csvHtml5", "excelHtml5"} <= set(args["buttons"])


def test_column_report_chart_is_vega_lite(report: ColumnReport) -> None:
    [output] = report.chart.outputs
    spec = output["data"]["application/vnd.vegalite.v5+json"]
    reasons, codes = spec["hconcat"]
    assert {r["reason"]: r["rows"] for r in reasons["data"]["values"]} == COUNTS
    assert codes["data"]["values"][0]["code"].startswith("nope")
    assert "scale" not in reasons["encoding"]["x"]  # 1..3 rows: no log scale
    assert plt.get_fignums() == []


def test_column_report_chart_follows_the_filter(report: ColumnReport) -> None:
    report.issue.value = "not-in-vs"
    spec = report.chart.outputs[0]["data"]["application/vnd.vegalite.v5+json"]
    reasons, codes = spec["hconcat"]
    chosen = [r["reason"] for r in reasons["data"]["values"] if r["chosen"]]
    assert chosen == ["not-in-vs"]
    assert [c["issue"] for c in codes["data"]["values"]] == ["not-in-vs"]
    assert codes["title"].endswith("(not-in-vs)")


def test_column_report_chart_log_scale_when_counts_span_decades(default_wb: Workbench) -> None:
    codes = pd.Series(["office"] * 5000 + ["nope"] * 3 + ["bad"])
    report = ColumnReport(default_wb.validate_column(codes, IN_PERSON, abstract=False))
    reasons = report.chart_spec.spec["hconcat"][0]
    assert reasons["encoding"]["x"]["scale"] == {"type": "log"}


def test_column_report_top_invalid_codes(column_result: ValidationFrame) -> None:
    report = ColumnReport(column_result, top=2)
    top = report.summary.top_invalid
    assert top["code"].tolist()[0] == "nope"
    assert top["count"].tolist()[0] == 3
    assert len(top) == 2
    assert len(report.chart_spec.spec["hconcat"][1]["data"]["values"]) == 2


@pytest.mark.parametrize("top", [3, 10, 12])
def test_column_report_chart_draws_the_top_invalid_codes(default_wb: Workbench, top: int) -> None:
    codes = pd.Series([f"bad-{i:02}" for i in range(15) for _ in range(15 - i)])
    report = ColumnReport(default_wb.validate_column(codes, IN_PERSON, abstract=False), top=top)
    assert len(report.summary.top_invalid) == top
    bars = report.chart_spec.spec["hconcat"][1]["data"]["values"]
    assert len(bars) == top
    assert bars[0]["code"].startswith("bad-00")
    assert bars[0]["rows"] == 15


def test_column_report_reason_options(report: ColumnReport) -> None:
    options = list(report.issue.options)
    assert options[0] == "all failures"
    assert report.issue.value == "all failures"
    assert set(FAILING) <= set(options[1:])
    assert "valid" not in options
    with pytest.warns(DeprecationWarning, match="ColumnReport.issue"):
        assert report.reason is report.issue


def test_column_report_every_offered_reason_selects_rows(report: ColumnReport) -> None:
    for reason in report.issue.options[1:]:
        report.issue.value = reason
        assert len(report.shown) > 0, reason
        assert set(report.selected["issue"]) == {reason}


FILTER_REASONS = [pytest.param(reason, n, id=reason) for reason, n in FAILING.items()]


@pytest.mark.parametrize(("reason", "rows"), FILTER_REASONS)
def test_column_report_filters_failing_rows(
    column_result: ValidationFrame, report: ColumnReport, reason: str, rows: int
) -> None:
    everything = report.shown
    assert len(everything) == sum(FAILING.values())
    pd.testing.assert_frame_equal(everything, column_result.failure_cases)
    report.issue.value = reason
    assert len(report.shown) == rows
    assert set(report.shown["issue"]) == {reason}
    expected_index = [f"row{i}" for i, (_, _, r) in enumerate(COLUMN) if r == reason]
    assert report.shown.index.tolist() == expected_index
    assert report.rows_caption.value == f"<div>{rows:,} rows</div>"
    assert report.table.df.index.tolist() == expected_index
    assert set(report.codes.df["issue"]) == {reason}
    report.issue.value = "all failures"
    assert len(report.shown) == len(everything)


def test_column_report_show_valid_codes(report: ColumnReport) -> None:
    report.show_valid.value = True
    try:
        assert "office" in report.codes.df["code"].tolist()
        assert report.codes_caption.value.startswith("<b>8 distinct codes</b>")
    finally:
        report.show_valid.value = False
    assert "office-new" not in report.codes.df["code"].tolist()


def test_column_report_all_valid(default_wb: Workbench) -> None:
    report = ColumnReport(default_wb.validate_column(pd.Series(["office", "home"]), IN_PERSON))
    assert list(report.issue.options) == ["all failures"]
    assert "<b>2</b> of 2 rows valid (100.0%)" in report.counts.value
    assert len(report.shown) == 0
    assert len(report.codes.df) == 0
    assert report.rows_caption.value == "<div>0 rows</div>"
    assert len(report.chart_spec.spec["hconcat"]) == 1


def test_column_report_shows_whitespace_and_suggestions(default_wb: Workbench) -> None:
    codes = pd.Series([" male", "Female", "femal", "male", "zzzz"])
    report = ColumnReport(default_wb.validate_column(codes, GENDER))
    shown = report.codes.df.set_index("code")
    assert shown.loc["␣male", "suggestion"] == "male"
    assert shown.loc["Female", "suggestion"] == "female"
    assert shown.loc["femal", "suggestion"] == "female"
    assert shown.loc["zzzz", "suggestion"] == ""
    assert "did you mean 'male'" in shown.loc["␣male", "message"]
    # the data behind it keeps the code as given
    assert " male" in report.by_code["code"].tolist()


EXPORT_CASES = [
    pytest.param("csv", lambda b: pd.read_csv(io.BytesIO(b), keep_default_na=False), id="csv"),
    pytest.param("xlsx", lambda b: pd.read_excel(io.BytesIO(b), keep_default_na=False), id="xlsx"),
    pytest.param("parquet", lambda b: pd.read_parquet(io.BytesIO(b)), id="parquet"),
]


@pytest.mark.parametrize(("fmt", "read"), EXPORT_CASES)
def test_column_report_exports(
    default_wb: Workbench, fmt: str, read: Callable[[bytes], pd.DataFrame]
) -> None:
    codes = pd.Series([" male", " male", "Female", "male"])
    report = ColumnReport(default_wb.validate_column(codes, GENDER))
    report.export_format.value = fmt
    report.export_button.click()
    link = report.download.value
    assert f"download='codes.{fmt}'" in link
    data = base64.b64decode(re.search(r"base64,([^']+)'", link).group(1))  # type: ignore[union-attr]
    frame = read(data)
    assert frame["code"].tolist() == [" male", "Female"]  # whitespace kept, no ␣
    assert frame["count"].tolist() == [2, 1]
    report.export_what.value = "failures"
    assert report.download.value == ""  # a changed choice clears the old link
    report.export_button.click()
    assert "download='failing-rows." in report.download.value


def test_column_report_on_raw_data_says_what_to_do(default_wb: Workbench) -> None:
    frame = pd.DataFrame({"gender": ["male", "x"]})
    with pytest.raises(WorkbenchError, match=r"validate_column.*code='gender'"):
        ColumnReport(frame)
    report = ColumnReport(frame, GENDER, code="gender", workbench=default_wb)
    assert report.summary.valid == 1
    with pytest.raises(WorkbenchError, match="not list"):
        ColumnReport(["male"])


def test_column_report_nullable_integer_codes(wb: Workbench) -> None:
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/int",
                "status": "active",
                "content": "complete",
                "concept": [{"code": "1", "display": "One"}, {"code": "2", "display": "Two"}],
            },
            {
                "resourceType": "ValueSet",
                "url": "http://example.org/int-vs",
                "status": "active",
                "compose": {"include": [{"system": "http://example.org/int"}]},
            },
        ]
    )
    for dtype in ("Int64", "float64", "object"):
        frame = pd.DataFrame({"c": pd.Series([1, 2, 3, None], dtype=dtype)})
        result = frame.fhir.validate("http://example.org/int-vs", code="c", workbench=wb)
        assert result["result"].tolist()[:3] == [True, True, False], dtype
        report = ColumnReport(result)
        assert report.codes.df["code"].tolist()[0] == "3", dtype


# --- ServerPanel -----------------------------------------------------------------------------


def port_of(url: str) -> int:
    match = re.match(r"http://127\.0\.0\.1:(\d+)/", url)
    assert match, url
    return int(match.group(1))


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.fixture
def panels() -> Iterator[list[ServerPanel]]:
    """Collects the panels a test makes, and stops any still serving afterwards."""
    made: list[ServerPanel] = []
    yield made
    for panel in made:
        if panel.handle is not None:
            panel.handle.stop()


SERVER_CASES = [
    pytest.param(None, id="generated-token"),
    pytest.param("widget-test-token-42", id="given-token"),
]


@pytest.mark.parametrize("token", SERVER_CASES)
def test_server_panel_start_and_stop(
    default_wb: Workbench, panels: list[ServerPanel], token: str | None
) -> None:
    panel = ServerPanel(default_wb, token=token)
    panels.append(panel)
    assert panel.handle is None
    assert "Stopped." in panel.info.value
    assert (panel.start.disabled, panel.stop.disabled) == (False, True)
    assert panel.curl.value == ""

    panel.start.click()
    handle = panel.handle
    assert handle is not None
    url, used = handle.url, handle.token
    if token is not None:
        assert used == token
    assert used
    port = port_of(url + "/")
    assert url.endswith("/fhir/R4")
    assert f"<code>{url}</code>" in panel.info.value
    # the panel links the interactive API documentation of the same FastAPI app
    assert handle.docs_url == f"{url}/docs"
    assert f'<a href="{url}/docs" target="_blank" rel="noopener">API docs</a>' in panel.info.value
    assert f'<a href="{url}/docs" target="_blank">API docs</a>' in handle._repr_html_()
    assert (panel.start.disabled, panel.stop.disabled) == (True, False)
    # the token is masked: in no HTML, no text box, not in the curl example
    assert used not in panel.info.value
    assert panel.token_box.value == "•" * 12
    assert used not in panel.curl.value
    assert "Authorization: Bearer $WORKBENCH_TOKEN" in panel.curl.value
    assert used not in handle._repr_html_()
    panel.reveal.value = True
    assert panel.token_box.value == used
    assert panel.reveal.description == "Hide token"
    curl = panel.curl.value
    assert curl.startswith(f"export WORKBENCH_TOKEN='{used}'\ncurl ")
    panel.reveal.value = False
    assert used not in panel.token_box.value + panel.curl.value
    assert f"'{url}/ValueSet/$validate-code?" in curl
    with httpx.Client(trust_env=False, timeout=10.0) as client:
        assert client.get(f"{url}/metadata").status_code == 200
        docs = client.get(handle.docs_url)  # no token needed to open the documentation
        assert docs.status_code == 200, docs.text
        assert docs.headers["content-type"].startswith("text/html")
        assert f"{url.split(':' + str(port))[1]}/openapi.json" in docs.text
        # The curl example's request works with its token.
        target = re.search(r"'(http://[^']+)'", curl)
        assert target
        answer = client.get(target.group(1), headers={"Authorization": f"Bearer {used}"})
        assert answer.status_code == 200, answer.text
    assert not port_is_free(port)

    panel.start.click()  # a second start while running does nothing
    assert panel.handle is handle

    panel.stop.click()
    assert panel.handle is None
    assert not handle.running
    assert text_of(panel.info.value) == "Stopped."
    assert panel.curl.value == ""
    assert (panel.token_box.value, panel.reveal.disabled) == ("", True)
    assert (panel.start.disabled, panel.stop.disabled) == (False, True)
    assert port_is_free(port)
    with httpx.Client(trust_env=False, timeout=2.0) as client, pytest.raises(httpx.ConnectError):
        client.get(f"{url}/metadata")

    panel.stop.click()  # a second stop does nothing
    assert text_of(panel.info.value) == "Stopped."


def test_server_panel_restarts(default_wb: Workbench, panels: list[ServerPanel]) -> None:
    panel = ServerPanel(default_wb, token="widget-test-token-restart")
    panels.append(panel)
    for _ in range(2):
        panel.start.click()
        assert panel.handle is not None
        with httpx.Client(trust_env=False, timeout=10.0) as client:
            assert client.get(f"{panel.handle.url}/metadata").status_code == 200
        panel.stop.click()
        assert panel.handle is None
    assert (panel.start.disabled, panel.stop.disabled) == (False, True)


# uvicorn ends its thread with SystemExit when it cannot bind; Python's default thread
# excepthook ignores SystemExit (so a notebook shows nothing), pytest reports it as a warning.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_server_panel_start_error_is_a_message(
    default_wb: Workbench, panels: list[ServerPanel]
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        panel = ServerPanel(default_wb, port=port)
        panels.append(panel)
        panel.start.click()
    assert panel.handle is None
    assert panel.info.value == views.message(f"The server did not start on 127.0.0.1:{port}")
    assert (panel.start.disabled, panel.stop.disabled) == (False, True)
    assert panel.curl.value == ""


# --- CodeValidator: pausing, exclusive inputs, suggestions, the picker --------------------


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Poll ``condition`` (bounded) until it holds."""
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_code_validator_waits_for_a_pause_and_says_typing(
    default_wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record(monkeypatch, default_wb, "validate_code")
    validator = CodeValidator(default_wb, ALL, delay=0.2)
    for text in ("o", "of", "off", "offi", "offic", "office"):
        validator.code.value = text
        assert text_of(validator.output.value) == "typing…"
        assert "data-result" not in validator.output.value  # never red while typing
        assert validator.result is None
    assert calls == []
    assert validator.pending
    wait_for(lambda: not validator.pending and validator.result is not None)
    assert len(calls) == 1  # one check after the pause, for the last text only
    assert calls[0][1]["code"] == "office"
    assert "data-result='true'" in validator.output.value


def test_code_validator_flush_and_immediate_controls(
    default_wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record(monkeypatch, default_wb, "validate_code")
    validator = CodeValidator(default_wb, ALL, delay=30)
    validator.code.value = "in-person"
    assert calls == [] and validator.pending
    validator.abstract.value = True  # a checkbox checks at once, cancelling the wait
    assert not validator.pending
    assert len(calls) == 1 and calls[0][1]["abstract"] is True
    validator.code.value = "nope"
    validator.flush()
    assert not validator.pending
    assert validator.result is not None and validator.result.issue == "unknown-code"


def test_code_validator_inputs_are_exclusive(default_wb: Workbench) -> None:
    validator = CodeValidator(default_wb, ALL, delay=0)
    validator.code.value = "nope"
    assert validator.mode.value == "Code"
    assert "Checking the code" in validator.using.value
    assert not validator.code.disabled
    validator.coding.value = OFFICE_CODING
    assert validator.mode.value == "Coding"
    assert "Checking the Coding" in validator.using.value
    assert (validator.code.disabled, validator.system.disabled, validator.display.disabled) == (
        True,
        True,
        True,
    )
    assert validator.result is not None and validator.result.result is True
    validator.mode.value = "Code"  # switching back checks the code box again
    assert validator.result is not None and validator.result.issue == "unknown-code"
    assert not validator.code.disabled
    validator.mode.value = "Coding"
    validator.coding.value = ""
    assert validator.mode.value == "Code"


SUGGEST_CASES = [
    pytest.param(GENDER, "Female", "female", "case variant", id="case"),
    pytest.param(GENDER, " male", "male", "without the surrounding whitespace", id="whitespace"),
    pytest.param(GENDER, "femal", "female", "nearest code", id="typo"),
    pytest.param(ALL, "ofice", "office", "nearest code", id="demo-typo"),
]


@pytest.mark.parametrize(("vs", "code", "suggested", "why"), SUGGEST_CASES)
def test_code_validator_suggests(
    default_wb: Workbench, vs: str, code: str, suggested: str, why: str
) -> None:
    validator = CodeValidator(default_wb, vs, delay=0)
    validator.code.value = code
    assert validator.result is not None and validator.result.result is False
    assert validator.suggestion is not None
    assert (validator.suggestion.code, validator.suggestion.why) == (suggested, why)
    assert f"Did you mean <code>{suggested}</code>" in validator.output.value
    assert validator.code.value == code  # never corrected


def test_code_validator_shows_whitespace_in_suggestion_context(default_wb: Workbench) -> None:
    validator = CodeValidator(default_wb, GENDER, delay=0)
    validator.code.value = "zzzz"
    assert validator.suggestion is None
    assert "Did you mean" not in validator.output.value


def test_code_validator_unknown_value_set_url_hint(wb: Workbench) -> None:
    broken = valueset(
        "typo-import", {"include": [{"valueSet": [GENDER.replace("gender", "gendr")]}]}
    )
    wb.load(broken)
    validator = CodeValidator(wb, broken["url"], delay=0)
    validator.code.value = "male"
    # an import that is not loaded makes the code invalid (issue 22, a11), with the hint
    assert validator.result is not None and validator.result.issue == "unknown-valueset"
    assert f"Did you mean {GENDER}?" in text_of(validator.output.value)


def test_value_set_picker_searches_as_you_type(default_wb: Workbench) -> None:
    validator = CodeValidator(default_wb, delay=0)
    picker = validator.picker
    total = len(default_wb.valuesets)
    assert len(picker.search.options) == total
    labels = [label for label, _ in validator.valueset.options]
    assert len(labels) == len(set(labels))  # unique labels
    picker.search.value = "visit types"
    assert {v for _, v in validator.valueset.options} == {ALL, BOOKABLE, IN_PERSON, REMOTE_LIVE}
    assert text_of(picker.status.value) == f"4 of {total} value sets match"
    picker.search.value = "administrative-gender 4.0.1"  # URL and version words
    assert [v for _, v in validator.valueset.options] == [GENDER]
    picker.search.value = "Workbench demo: all visit types"  # a label picks it
    assert validator.valueset.value == ALL
    validator.code.value = "office"
    assert validator.result is not None and validator.result.result is True
    picker.search.value = "gender"  # narrowing keeps the chosen value set listed
    assert validator.valueset.value == ALL


def test_value_set_options_are_unique_across_versions() -> None:
    from workbench.notebook.pickers import valueset_options

    resources = [
        {"url": "http://x/a", "version": "1.0.0", "title": "Same"},
        {"url": "http://x/a", "version": "2.0.0", "title": "Same"},
        {"url": "http://x/b", "version": "1.0.0", "title": "Same"},
        {"url": "http://x/c", "name": "OnlyName"},
    ]
    options = {label: value for label, value, _ in valueset_options(resources)}
    assert options == {
        "Same (1.0.0)": "http://x/a|1.0.0",
        "Same (2.0.0)": "http://x/a",
        "Same (1.0.0) · http://x/b": "http://x/b",
        "OnlyName": "http://x/c",
    }


def test_code_systems_tab_shows_titles_and_counts(default_wb: Workbench) -> None:
    tree = CodeSystemTree(default_wb)
    labels = dict((url, label) for label, url in tree.system.options)
    assert labels[DEMO].endswith(f"— {DEMO} (15 concepts)")
    assert labels[GENDER_CS].startswith("AdministrativeGender — ")
    assert labels[GENDER_CS].endswith("(4 concepts)")
    tree.picker.search.value = "gender"
    assert GENDER_CS in [url for _, url in tree.system.options]
    assert DEMO not in [url for _, url in tree.system.options]


def test_code_system_tree_finds_concepts(default_wb: Workbench) -> None:
    tree = CodeSystemTree(default_wb)
    tree.system.value = DEMO
    tree.find.value = "office"
    found = [code for _, code in tree.found.options]
    assert found[:1] == ["office"] or "office" in found
    assert set(found) >= {"office", "office-new"}
    tree.found.value = "office-new"
    assert text_of(tree.detail.value).startswith("office-new New patient office visit")
    assert tree.path == ["office-new"]
    tree.system.value = GENDER_CS
    assert tree.find.value == ""
    assert tree.found.options == ()
