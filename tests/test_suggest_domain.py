"""Suggestions that know the domain: loaded ConceptMaps first, no edit-distance guess for
identifiers with check digits (SNOMED CT, LOINC) while a display typed as a code is still
matched, and ``ValidationResult.suggestion`` in Python only (the FHIR message, the
Parameters and the HTTP body stay as the operation gives them)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pandas as pd
import pytest
import snomed_rf2
from http_support import served_fixtures, values

from workbench import Workbench
from workbench.bulk.suggest import CodeIndex
from workbench.notebook import CodeValidator
from workbench.releases.check_digits import mod10_digit, verhoeff_valid
from workbench.terminology.requests import ValidateRequest
from workbench.terminology.validate.coding import ValidationResult

SCT = "http://snomed.info/sct"
SCT_ALL = f"{SCT}?fhir_vs"
LOINC = "http://loinc.org"
LOINC_VS = f"{LOINC}/vs"
LOINC_RELEASE = Path(__file__).parent / "data" / "loinc-release"
GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
V2 = "http://terminology.hl7.org/CodeSystem/v2-0001"
V2_MAP = "http://example.org/fhir/ConceptMap/v2-sex-to-gender"
# a well-formed concept id (right Verhoeff digit) the test release lacks, two edits away
# from Myocardial infarction (22298006): a digit-distance guess would name it
NEAR_SCTID = "22198003"
# a well-formed LOINC number the test release lacks, one digit away from 2345-7 (Glucose)
NEAR_LOINC = "2346-5"


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    """SNOMED CT and LOINC test releases, the shipped content, and a v2-to-FHIR sex map."""
    from tests.conftest import VALUESETS

    bench = Workbench()
    root = tmp_path_factory.mktemp("releases")
    bench.load_release(snomed_rf2.write(root / "rf2"), cache_dir=root / "cache", progress=False)
    bench.load_release(LOINC_RELEASE, cache_dir=root / "cache", progress=False)
    bench.load(VALUESETS, progress=False)
    bench.load(
        {
            "resourceType": "ConceptMap",
            "url": V2_MAP,
            "version": "2",
            "status": "active",
            "group": [
                {
                    "source": V2,
                    "target": GENDER_CS,
                    "element": [
                        {"code": "F", "target": [{"code": "female", "equivalence": "equal"}]},
                        {"code": "M", "target": [{"code": "male", "equivalence": "equal"}]},
                        {
                            "code": "A",
                            "target": [
                                {"code": "unknown", "equivalence": "inexact", "comment": "x"},
                                {"code": "other", "equivalence": "wider"},
                            ],
                        },
                        {"code": "N", "target": [{"code": "unknown", "equivalence": "disjoint"}]},
                    ],
                }
            ],
        },
        progress=False,
    )
    return bench


server, http = served_fixtures()


def test_the_near_misses_are_well_formed_and_absent(wb: Workbench) -> None:
    assert verhoeff_valid(NEAR_SCTID) and wb.terminology.codesystem(SCT).get(NEAR_SCTID) is None
    number, digit = NEAR_LOINC.split("-")
    assert mod10_digit(number) == digit and wb.terminology.codesystem(LOINC).get(NEAR_LOINC) is None
    # the same near miss in a code system without check digits gets the nearest code
    for near, known in ((NEAR_SCTID, "22298006"), (NEAR_LOINC, "2345-7")):
        found = CodeIndex([(known, "a display")]).suggest(near)
        assert found is not None and (found.code, found.why) == (known, "nearest code")


DOMAIN_CASES = [
    pytest.param(SCT_ALL, SCT, NEAR_SCTID, None, None, id="sctid-no-digit-guess"),
    pytest.param(
        SCT_ALL, SCT, "asthma", "195967001", "the code with this display", id="sct-display"
    ),
    pytest.param(
        SCT_ALL,
        SCT,
        "Myocardial infarction",
        "22298006",
        "the code with this display",
        id="sct-display-with-space",
    ),
    pytest.param(
        SCT_ALL, SCT, "myocardial infarctoin", "22298006", "nearest display", id="sct-typo"
    ),
    pytest.param(LOINC_VS, LOINC, NEAR_LOINC, None, None, id="loinc-no-digit-guess"),
    pytest.param(
        LOINC_VS,
        LOINC,
        "Glucose [Mass/volume] in Serum or Plasma",
        "2345-7",
        "the code with this display",
        id="loinc-display",
    ),
    pytest.param(GENDER, V2, "F", "female", f"ConceptMap {V2_MAP} (equal)", id="map-equal"),
    pytest.param(GENDER, V2, "A", "other", f"ConceptMap {V2_MAP} (wider)", id="map-strongest"),
    pytest.param(  # a disjoint match is no suggestion: the nearest loaded system is
        GENDER, V2, "N", V2.replace("0001", "0131"), "nearest code system", id="map-disjoint"
    ),
    pytest.param(GENDER, None, "Female", "female", "case variant", id="lexical"),
]


@pytest.mark.parametrize(("valueset", "system", "code", "suggested", "why"), DOMAIN_CASES)
def test_validate_code_has_a_domain_suggestion(
    wb: Workbench,
    valueset: str,
    system: str | None,
    code: str,
    suggested: str | None,
    why: str | None,
) -> None:
    found = wb.validate_code(valueset, code=code, system=system)
    assert found.result is False
    if suggested is None:
        assert found.suggestion is None, found.suggestion
        assert "suggestion=" not in repr(found)
    else:
        assert found.suggestion is not None
        assert (found.suggestion.code, found.suggestion.why) == (suggested, why)
        assert f"suggestion='{suggested}'" in repr(found)
    assert "did you mean" not in str(found.message).casefold()


@pytest.mark.parametrize(("valueset", "system", "code", "suggested", "why"), DOMAIN_CASES)
def test_by_code_has_the_same_suggestion(
    wb: Workbench,
    valueset: str,
    system: str | None,
    code: str,
    suggested: str | None,
    why: str | None,
) -> None:
    report = wb.validate_column(pd.Series([code, code]), valueset, system=system)
    row = report.by_code().iloc[0]
    assert (row["code"], row["count"]) == (code, 2)
    if suggested is None:
        assert row["suggestion"] is None
    else:
        assert row["suggestion"] == suggested
        assert f"({why})" in row["message"]


def test_a_map_comes_before_the_nearest_code_system(wb: Workbench) -> None:
    # v2 table 0001 is not loaded: without the map the hint would be a code system URL
    found = wb.validate_code(GENDER, code="F", system=V2)
    assert found.issue == "unknown-system"
    assert found.suggestion is not None
    assert (found.suggestion.code, found.suggestion.system) == ("female", GENDER_CS)
    assert (found.suggestion.map, found.suggestion.equivalence) == (f"{V2_MAP}|2", "equal")
    assert found.suggestion.display == "Female"
    other = wb.validate_code(GENDER, code="F", system=V2.replace("0001", "0002"))
    assert other.suggestion is not None and other.suggestion.why == "nearest code system"


def test_a_snomed_fragment_as_a_fhir_codesystem_is_opaque_too() -> None:
    bench = Workbench()
    bench.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": SCT,
                "version": "fragment",
                "status": "active",
                "content": "fragment",
                "concept": [{"code": "22298006", "display": "Myocardial infarction"}],
            },
            {
                "resourceType": "ValueSet",
                "url": "http://example.org/vs/mi",
                "status": "active",
                "compose": {"include": [{"system": SCT, "concept": [{"code": "22298006"}]}]},
            },
        ],
        progress=False,
    )
    assert bench.terminology.codesystem(SCT).opaque_codes  # type: ignore[union-attr]
    found = bench.validate_code("http://example.org/vs/mi", code=NEAR_SCTID, system=SCT)
    assert found.result is False and found.suggestion is None
    named = bench.validate_code("http://example.org/vs/mi", code="myocardial infarction")
    assert named.suggestion is not None and named.suggestion.code == "22298006"


def test_the_fhir_message_and_parameters_stay_as_the_operation_gives_them(wb: Workbench) -> None:
    found = wb.validate_code(GENDER, code="Female")
    plain = wb.service.validate(ValidateRequest(valueset=GENDER, code="Female"))
    assert isinstance(plain, ValidationResult) and plain.suggestion is None
    assert found.suggestion is not None
    assert found.message == plain.message
    assert found.to_parameters() == plain.to_parameters()
    assert "suggestion" not in str(found.to_parameters())


def test_the_http_body_has_no_suggestion(wb: Workbench, http: httpx.Client) -> None:
    params = {"url": GENDER, "code": "Female", "system": GENDER_CS}
    response = http.get("/ValueSet/$validate-code", params=params)
    assert response.status_code == 200
    body = response.json()
    assert values(body, "result") == [False]
    assert values(body, "message") == [wb.validate_code(GENDER, code="Female").message]
    assert "did you mean" not in response.text.casefold()
    assert "suggestion" not in response.text


def test_the_code_validator_shows_the_results_suggestion(wb: Workbench) -> None:
    validator = CodeValidator(wb, GENDER, delay=0)
    validator.system.value = V2
    validator.code.value = "F"
    assert validator.result is not None and validator.result.suggestion is not None
    assert validator.suggestion == validator.result.suggestion
    assert "Did you mean <code>female</code> (Female)?" in validator.output.value
    assert f"ConceptMap {V2_MAP} (equal)" in validator.output.value
    assert validator.code.value == "F"  # never applied


def test_a_grammar_gives_no_suggestion_and_no_error(wb: Workbench) -> None:
    ucum = {
        "resourceType": "ValueSet",
        "compose": {"include": [{"system": "http://unitsofmeasure.org"}]},
    }
    found = wb.validate_code(ucum, code="mgg", system="http://unitsofmeasure.org")
    assert found.result is False and found.issue == "unknown-code"
    assert found.suggestion is None
    report = wb.validate_column(pd.Series(["mg", "mgg"]), ucum, system="http://unitsofmeasure.org")
    assert report.by_code().set_index("code").loc["mgg", "suggestion"] is None
