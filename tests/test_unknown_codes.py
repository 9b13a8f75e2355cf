"""Why a code is unknown: SNOMED CT and LOINC say it (``why_unknown``), in Python and over
HTTP, for a value set (an ECL one and the implicit all-codes one) and for the code system.

A well-formed identifier the release lacks, one with a wrong check digit and one of another
shape each get their own reason; a malformed post-coordinated expression names where it
stops parsing; a concept of the release is never given a reason.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pandas as pd
import pytest
import snomed_rf2
from http_support import assert_outcome, served_fixtures, values

from workbench import Workbench
from workbench.errors import ExpressionSyntaxError

SCT = "http://snomed.info/sct"
LOINC = "http://loinc.org"
ECL_VS = f"{SCT}?fhir_vs=ecl/<< 404684003"
LOINC_RELEASE = Path(__file__).parent / "data" / "loinc-release"

ABSENT = "a well-formed SNOMED CT concept id (its Verhoeff check digit is right) that this release"
CASES = [
    pytest.param(SCT, "73211009", ABSENT, id="sct-absent"),
    pytest.param(SCT, "73211008", "the Verhoeff check digit of 7321100 is 9", id="sct-check-digit"),
    pytest.param(SCT, "22298010", "SNOMED CT description id (partition 01)", id="sct-description"),
    pytest.param(SCT, "12345", "has 6 to 18 digits, not 5", id="sct-too-short"),
    pytest.param(SCT, "MI", "has only the digits 0-9", id="sct-letters"),
    pytest.param(
        LOINC,
        "2951-2",
        "a well-formed LOINC number (its mod 10 check digit is right) that this release",
        id="loinc-absent",
    ),
    pytest.param(LOINC, "2345-8", "check digit of LOINC number 2345 is 7", id="loinc-check-digit"),
    pytest.param(LOINC, "2345", "(2345-7 perhaps)", id="loinc-no-check-digit"),
    pytest.param(LOINC, "LP99999-9", "a well-formed LOINC part code", id="loinc-part-absent"),
    pytest.param(LOINC, "glucose", "a LOINC code is a number, a hyphen", id="loinc-text"),
]


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    bench = Workbench()
    root = tmp_path_factory.mktemp("releases")
    bench.load_release(snomed_rf2.write(root / "rf2"), cache_dir=root / "cache", progress=False)
    bench.load_release(LOINC_RELEASE, cache_dir=root / "cache", progress=False)
    return bench


server, http = served_fixtures()


def _valueset(system: str) -> str:
    return ECL_VS if system == SCT else f"{LOINC}/vs"


@pytest.mark.parametrize(("system", "code", "reason"), CASES)
def test_python_names_the_cause(wb: Workbench, system: str, code: str, reason: str) -> None:
    for found in (
        wb.validate_code(_valueset(system), code=code, system=system),
        wb.validate_code(f"{system}?fhir_vs" if system == SCT else f"{LOINC}/vs", code=code),
        wb.validate_in_codesystem(system, code),
    ):
        assert found.result is False and found.issue == "unknown-code", found
        assert f"Unknown code '{code}' in the CodeSystem" in str(found.message)
        assert reason in str(found.message), found.message
        assert "compositional" not in str(found.message)


@pytest.mark.parametrize(("system", "code", "reason"), CASES)
def test_http_names_the_cause(http: httpx.Client, system: str, code: str, reason: str) -> None:
    for path, params in (
        ("/ValueSet/$validate-code", {"url": _valueset(system), "code": code, "system": system}),
        ("/CodeSystem/$validate-code", {"url": system, "code": code}),
    ):
        body = http.get(path, params=params).json()
        assert values(body, "result") == [False], body
        assert reason in values(body, "message")[0], body


@pytest.mark.parametrize(("system", "code"), [(SCT, "22298006"), (LOINC, "2345-7")])
def test_a_known_code_has_no_reason(wb: Workbench, system: str, code: str) -> None:
    provider = wb.terminology.require_codesystem(system, None)
    assert provider.why_unknown(code) is None
    assert provider.why_unknown(f" {code}") is None  # the engine names the whitespace


def test_a_column_gives_each_code_its_reason(wb: Workbench) -> None:
    codes = pd.Series(["22298006", "73211009", "73211008"])
    report = wb.validate_column(codes, ECL_VS, system=SCT)
    assert report["result"].tolist() == [True, False, False]
    assert ABSENT in report["message"][1]
    assert "Verhoeff check digit of 7321100 is 9" in report["message"][2]


def test_an_unknown_concept_inside_an_expression(wb: Workbench) -> None:
    found = wb.validate_code(ECL_VS, code="22298006 : 363698007 = 80891008", system=SCT)
    assert found.result is False
    assert "The concept 80891008 is not in" in str(found.message)
    assert "Verhoeff check digit of 8089100 is 9" in str(found.message)


@pytest.mark.parametrize("valueset", [ECL_VS, None])
def test_a_malformed_expression_says_where_it_stops(wb: Workbench, valueset: str | None) -> None:
    code = "22298006 : 363698007 = "
    with pytest.raises(ExpressionSyntaxError, match="does not parse at the end of the text"):
        if valueset is None:
            wb.validate_in_codesystem(SCT, code)
        else:
            wb.validate_code(valueset, code=code, system=SCT)


def test_http_malformed_expression(http: httpx.Client) -> None:
    params = {"url": ECL_VS, "code": "22298006 : 363698007 = ", "system": SCT}
    response = http.get("/ValueSet/$validate-code", params=params)
    assert_outcome(response, 400, "invalid", "does not parse at the end of the text")


@pytest.mark.parametrize(("system", "code", "reason"), CASES)
def test_a_long_column_says_why_as_validate_code_does(
    wb: Workbench, system: str, code: str, reason: str
) -> None:
    """Columns of 256 codes or more answer non-members column-wise from the store
    (``describe``); unknown codes still say why, in the very words of validate_code."""
    filler = [f"{9000000 + i}" for i in range(300)]  # unknown plain ids: the long path
    codes = pd.Series([code, *filler])
    frame = wb.validate_column(codes, _valueset(system), system=system)
    single = wb.validate_code(_valueset(system), code=code, system=system)
    assert frame["message"].iloc[0] == single.message
    assert reason in str(frame["message"].iloc[0])
