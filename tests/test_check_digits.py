"""Check digits of SNOMED CT identifiers (Verhoeff) and LOINC numbers (mod 10), and the
reason ``sctid_problem``/``loinc_problem`` give for a malformed identifier."""

from __future__ import annotations

import pytest
import snomed_rf2

from workbench.releases.check_digits import (
    loinc_kind,
    loinc_problem,
    mod10_digit,
    sctid_namespace,
    sctid_problem,
    verhoeff_digit,
    verhoeff_valid,
)


@pytest.mark.parametrize("code", [*sorted(snomed_rf2.CONCEPTS), snomed_rf2.CORE, snomed_rf2.FSN])
def test_real_concept_ids_are_well_formed(code: str) -> None:
    assert verhoeff_valid(code)
    assert verhoeff_digit(code[:-1]) == code[-1]
    assert sctid_problem(code) is None


@pytest.mark.parametrize("code", ["22298006", "138875005", "900000000000207008"])
def test_every_single_digit_error_is_caught(code: str) -> None:
    """Verhoeff catches every single-digit substitution and adjacent transposition."""
    for i, digit in enumerate(code):
        for other in "0123456789".replace(digit, ""):
            assert not verhoeff_valid(code[:i] + other + code[i + 1 :])
    for i in range(len(code) - 1):
        swapped = code[:i] + code[i + 1] + code[i] + code[i + 2 :]
        if swapped != code:
            assert not verhoeff_valid(swapped)


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("22298006", None),
        ("22298007", "the Verhoeff check digit of 2229800 is 6 (22298006 would be well-formed)"),
        ("22298010", "it is a SNOMED CT description id (partition 01), not a concept id"),
        ("22298023", "it is a SNOMED CT relationship id (partition 02), not a concept id"),
        ("1234567890", "its partition 89 (the two digits before the check digit) is none"),
        ("12345", "has 6 to 18 digits, not 5"),
        ("1" * 19, "has 6 to 18 digits, not 19"),
        ("022298006", "does not start with 0"),
        ("2229800x", "has only the digits 0-9"),
        ("２２２９８００６", "has only the digits 0-9"),  # full-width digits
        ("", "has only the digits 0-9"),
    ],
)
def test_sctid_problem(code: str, problem: str | None) -> None:
    found = sctid_problem(code)
    assert found is None if problem is None else problem in str(found), found


def test_extension_namespace() -> None:
    code = "9" + "1000003" + "10"  # namespace 1000003, long format (partition 10)
    code += verhoeff_digit(code)
    assert sctid_problem(code) is None
    assert sctid_namespace(code) == "1000003"
    assert sctid_namespace("22298006") is None


@pytest.mark.parametrize(
    ("code", "problem", "kind"),
    [
        ("2345-7", None, "term"),
        ("15074-8", None, "term"),
        ("100000-9", None, "term"),
        ("LP14635-4", None, "part"),
        ("la15920-4", None, "answer"),
        ("LL2201-3", None, "answer list"),
        ("2345-8", "the mod 10 check digit of LOINC number 2345 is 7 (2345-7 would be", None),
        ("99999-9", "is 5 (99999-5 would be well-formed)", None),
        ("2345", "ends in a hyphen and its mod 10 check digit (2345-7 perhaps)", None),
        ("2345-", "a LOINC code is a number, a hyphen and a check digit", None),
        ("LX123-4", "a LOINC code is a number, a hyphen and a check digit", None),
        ("", "a LOINC code is a number, a hyphen and a check digit", None),
    ],
)
def test_loinc_problem(code: str, problem: str | None, kind: str | None) -> None:
    found = loinc_problem(code)
    assert found is None if problem is None else problem in str(found), found
    if kind is not None:
        assert loinc_kind(code) == kind


@pytest.mark.parametrize(("number", "digit"), [("2345", "7"), ("15074", "8"), ("2823", "3")])
def test_mod10_digit(number: str, digit: str) -> None:
    assert mod10_digit(number) == digit
