"""The provider contract: every kind of terminology × every entry point, in Python and over HTTP.

One Workbench holds a FHIR CodeSystem (the shipped demo), SNOMED CT (the synthetic RF2
release), LOINC and RxNorm (the hand-made release fixtures), ICD-10-CM (the CMS tabular XML
shipped in ``simple-icd-10-cm``) and UCUM (built in). Each call of the table either answers
correctly or gives the documented refusal (a WorkbenchError in Python, a 4xx OperationOutcome
on the wire); never an AttributeError or a 500.

The cases name their inputs as the FHIR operations do; ``python_call`` maps them onto the
Workbench's keyword arguments, and both sides are compared through the same FHIR output
(``to_parameters()`` / ``to_fhir()``), so one table checks both.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
import snomed_rf2
from http_support import TOKEN, client

from workbench import Workbench
from workbench.errors import WorkbenchError
from workbench.releases.ucum.provider import UcumProvider
from workbench.terminology.provider import CodeSystemProvider

DATA = Path(__file__).parent / "data"
VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"


@dataclass(frozen=True)
class Kind:
    """One terminology of the table: a known code, an ancestor of it with the $subsumes
    outcome of (ancestor, code), an unknown code, and whether its codes can be listed."""

    name: str
    system: str
    code: str
    ancestor: str
    subsumes: str
    unknown: str
    enumerable: bool = True
    german: str | None = None  # its display for displayLanguage=de, where it has one

    @property
    def valueset(self) -> str:
        """A value set of the whole code system (loaded by the fixture)."""
        return f"http://example.org/contract/{self.name}"

    @property
    def listed(self) -> str:
        """A value set that lists the code (loaded by the fixture)."""
        return f"http://example.org/contract/{self.name}-listed"


KINDS = [
    Kind(
        "fhir",
        "http://example.org/fhir/CodeSystem/workbench-demo",
        "office",
        "in-person",
        "subsumes",
        "no-such-visit",
    ),
    Kind("snomed", "http://snomed.info/sct", "57054005", "49601007", "subsumes", "1234567"),
    Kind(
        "loinc",
        "http://loinc.org",
        "2345-7",
        "LP7786-9",
        "subsumes",
        "99999-9",
        german="Glucose [Masse/Volumen] in Serum oder Plasma",
    ),
    Kind("icd10cm", "http://hl7.org/fhir/sid/icd-10-cm", "A00.0", "A00", "subsumes", "Q99.99X"),
    Kind(
        "rxnorm",
        "http://www.nlm.nih.gov/research/umls/rxnorm",
        "313782",
        "202433",
        "not-subsumed",
        "31378",
    ),
    Kind("ucum", "http://unitsofmeasure.org", "mL", "cm3", "equivalent", "m/", enumerable=False),
    Kind("bcp47", "urn:ietf:bcp:47", "en-US", "EN-us", "equivalent", "zz", enumerable=False),
    Kind(
        "bcp13",
        "urn:ietf:bcp:13",
        "application/pdf",
        "Application/PDF",
        "equivalent",
        "foo/bar",
        enumerable=False,
    ),
    Kind("iso3166", "urn:iso:std:iso:3166", "US", "us", "equivalent", "XX"),
    Kind("iso3166-2", "urn:iso:std:iso:3166:-2", "GB-LND", "GB-ENG", "subsumes", "GB-XXX"),
    Kind("iso4217", "urn:iso:std:iso:4217", "EUR", "eur", "equivalent", "XYZ"),
]
GRAMMARS = frozenset(k.name for k in KINDS if not k.enumerable)
BY_NAME = {k.name: k for k in KINDS}


def _icd10cm_xml() -> Path:
    spec = importlib.util.find_spec("simple_icd_10_cm")
    assert spec is not None and spec.submodule_search_locations, "simple-icd-10-cm is missing"
    found = sorted(
        (Path(next(iter(spec.submodule_search_locations))) / "data").glob("*tabular*.xml")
    )
    assert found, "simple-icd-10-cm ships no tabular XML"
    return found[0]


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    bench = Workbench()
    bench.load(VALUESETS, progress=False)
    cache = tmp_path_factory.mktemp("contract-cache")
    rf2 = snomed_rf2.write(tmp_path_factory.mktemp("rf2"))
    for release in (rf2, DATA / "loinc-release", DATA / "rxnorm-release", _icd10cm_xml()):
        bench.load_release(release, cache_dir=cache, progress=False)
    for kind in KINDS:
        for url, include in (
            (kind.valueset, {"system": kind.system}),
            (kind.listed, {"system": kind.system, "concept": [{"code": kind.code}]}),
        ):
            bench.load(
                {
                    "resourceType": "ValueSet",
                    "url": url,
                    "status": "active",
                    "compose": {"include": [include]},
                }
            )
    return bench


@pytest.fixture(scope="module")
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        yield c


# --- the calls, by their FHIR names -----------------------------------------------------

KEYWORDS = {
    "displayLanguage": "display_language",
    "includeDesignations": "include_designations",
    "activeOnly": "active_only",
    "property": "properties",
    "codeA": "code_a",
    "codeB": "code_b",
}
LISTS = {"property"}


def python_call(wb: Workbench, operation: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Run an operation through the Workbench; its FHIR output."""
    kwargs = {KEYWORDS.get(k, k): ([v] if k in LISTS else v) for k, v in inputs.items()}
    if operation == "lookup":
        return wb.lookup(kwargs.pop("system"), kwargs.pop("code"), **kwargs).to_parameters()
    if operation == "cs-validate":
        system = kwargs.pop("url")
        return wb.validate_in_codesystem(system, kwargs.pop("code"), **kwargs).to_parameters()
    if operation == "vs-validate":
        return wb.validate_code(kwargs.pop("url"), **kwargs).to_parameters()
    if operation == "expand":
        return wb.expand(kwargs.pop("url"), **kwargs).to_valueset()
    if operation == "subsumes":
        outcome = wb.subsumes(kwargs["system"], kwargs["code_a"], kwargs["code_b"])
        return {
            "resourceType": "Parameters",
            "parameter": [{"name": "outcome", "valueCode": outcome}],
        }
    raise AssertionError(operation)


PATHS = {
    "lookup": "/CodeSystem/$lookup",
    "cs-validate": "/CodeSystem/$validate-code",
    "vs-validate": "/ValueSet/$validate-code",
    "expand": "/ValueSet/$expand",
    "subsumes": "/CodeSystem/$subsumes",
}


def http_call(http: httpx.Client, operation: str, inputs: dict[str, Any]) -> httpx.Response:
    """Run an operation over HTTP GET."""
    query = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in inputs.items()}
    return http.get(PATHS[operation], params=query)


def out(body: dict[str, Any], name: str) -> Any:
    """The value of an output parameter (None when absent)."""
    for p in body.get("parameter", ()):
        if p["name"] == name:
            return next((v for k, v in p.items() if k.startswith("value")), p.get("part"))
    return None


@dataclass(frozen=True)
class Case:
    """One call of the table and what its FHIR output must show."""

    label: str
    operation: str
    inputs: Callable[[Kind], dict[str, Any]]
    check: Callable[[Kind, dict[str, Any]], None]
    refused_for: frozenset[str] = frozenset()  # kinds where a 4xx / WorkbenchError is right


def _looked_up(kind: Kind, body: dict[str, Any]) -> None:
    assert body["resourceType"] == "Parameters"
    assert isinstance(out(body, "display"), str) and out(body, "display")
    assert out(body, "name")


def _german(kind: Kind, body: dict[str, Any]) -> None:
    _looked_up(kind, body)
    if kind.german:
        assert out(body, "display") == kind.german


def _valid(kind: Kind, body: dict[str, Any]) -> None:
    assert out(body, "result") is True, body
    assert out(body, "code") == kind.code


def _invalid(kind: Kind, body: dict[str, Any]) -> None:
    assert out(body, "result") is False, body
    assert out(body, "message")


def _expanded(kind: Kind, body: dict[str, Any]) -> None:
    assert body["resourceType"] == "ValueSet"
    contains = body["expansion"].get("contains", [])
    assert 1 <= len(contains) <= 2
    assert all(c["system"] == kind.system and c["code"] for c in contains)


def _subsumed(kind: Kind, body: dict[str, Any]) -> None:
    assert out(body, "outcome") == kind.subsumes


CASES = [
    Case("lookup", "lookup", lambda k: {"system": k.system, "code": k.code}, _looked_up),
    Case(
        "lookup displayLanguage property",
        "lookup",
        lambda k: {
            "system": k.system,
            "code": k.code,
            "displayLanguage": "de",
            "property": "parent",
        },
        _german,
    ),
    Case(
        "CodeSystem validate-code displayLanguage",
        "cs-validate",
        lambda k: {"url": k.system, "code": k.code, "abstract": True, "displayLanguage": "de"},
        _valid,
    ),
    Case(
        "CodeSystem validate-code unknown",
        "cs-validate",
        lambda k: {"url": k.system, "code": k.unknown},
        _invalid,
    ),
    Case(
        "ValueSet validate-code displayLanguage abstract activeOnly",
        "vs-validate",
        lambda k: {
            "url": k.valueset,
            "system": k.system,
            "code": k.code,
            "displayLanguage": "de",
            "abstract": False,
            "activeOnly": True,
        },
        _valid,
    ),
    Case(
        "ValueSet validate-code wrong display",
        "vs-validate",
        lambda k: {"url": k.valueset, "system": k.system, "code": k.code, "display": "Not it"},
        _invalid,
    ),
    Case(
        "ValueSet validate-code unknown",
        "vs-validate",
        lambda k: {"url": k.valueset, "system": k.system, "code": k.unknown},
        _invalid,
    ),
    Case(
        "expand displayLanguage designations activeOnly count property",
        "expand",
        lambda k: {
            "url": k.valueset,
            "displayLanguage": "de",
            "includeDesignations": True,
            "activeOnly": True,
            "count": 2,
            "offset": 0,
            "property": "parent",
        },
        _expanded,
        refused_for=GRAMMARS,
    ),
    Case(
        "expand listed displayLanguage designations",
        "expand",
        lambda k: {"url": k.listed, "displayLanguage": "de", "includeDesignations": True},
        _expanded,
    ),
    Case(
        "expand listed filter property",
        "expand",
        lambda k: {"url": k.listed, "filter": k.code[:2], "property": "parent"},
        _expanded,
    ),
    Case(
        "ValueSet validate-code listed displayLanguage",
        "vs-validate",
        lambda k: {"url": k.listed, "system": k.system, "code": k.code, "displayLanguage": "de"},
        _valid,
    ),
    Case(
        "subsumes",
        "subsumes",
        lambda k: {"system": k.system, "codeA": k.ancestor, "codeB": k.code},
        _subsumed,
    ),
]

TABLE = [
    pytest.param(kind, case, id=f"{kind.name}-{case.label}") for kind in KINDS for case in CASES
]


@pytest.mark.parametrize(("kind", "case"), TABLE)
def test_python(wb: Workbench, kind: Kind, case: Case) -> None:
    if kind.name in case.refused_for:
        with pytest.raises(WorkbenchError) as refused:
            python_call(wb, case.operation, case.inputs(kind))
        assert 400 <= refused.value.status < 500
        return
    case.check(kind, python_call(wb, case.operation, case.inputs(kind)))


@pytest.mark.parametrize(("kind", "case"), TABLE)
def test_http(wb: Workbench, http: httpx.Client, kind: Kind, case: Case) -> None:
    response = http_call(http, case.operation, case.inputs(kind))
    body = response.json()
    if kind.name in case.refused_for:
        assert 400 <= response.status_code < 500, body
        assert body["resourceType"] == "OperationOutcome"
        return
    assert response.status_code == 200, body
    case.check(kind, body)
    expected = python_call(wb, case.operation, case.inputs(kind))
    if case.operation != "expand":  # an expansion's identifier and timestamp differ
        assert body == expected


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_provider_is_one_subclass(wb: Workbench, kind: Kind) -> None:
    found = wb.terminology.require_codesystem(kind.system)
    assert isinstance(found, CodeSystemProvider)
    assert found.enumerable is kind.enumerable
    assert isinstance(found, UcumProvider) is (kind.name == "ucum")


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_frames(wb: Workbench, kind: Kind) -> None:
    concepts = wb.concepts(kind.system)
    # a grammar (UCUM, BCP-47, BCP-13): its table of atoms (units, language subtags…)
    assert kind.code in set(concepts["code"]) or not kind.enumerable
    assert len(concepts) > 0
    assert "code" in wb.designations(kind.system).columns


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_bulk_validation(wb: Workbench, kind: Kind) -> None:
    codes = pd.Series([kind.code, kind.unknown, None, kind.code])
    frame = wb.validate_column(codes, kind.valueset, system=kind.system)
    assert frame["result"].tolist() == [True, False, pd.NA, True]
    one = wb.validate_code(kind.valueset, code=kind.unknown, system=kind.system)
    assert frame["message"].iloc[1] == one.message
