"""wb.compare(a, b): the relation of two value sets, by definition or by expansion."""

from __future__ import annotations

import pytest
from compare_fixtures import (
    CASES,
    CS,
    HL7,
    VERSION_CASES,
    VS,
    compare_workbench,
    valueset,
    versions_workbench,
)

from workbench import Workbench
from workbench.errors import ValueSetDefinitionNotFoundError, ValueSetVersionNotFoundError
from workbench.terminology.compare.result import Comparison, relation


@pytest.fixture(scope="module")
def wb() -> Workbench:
    return compare_workbench()


def _canonical(name: str) -> str:
    return VS + name


@pytest.mark.parametrize(
    ("this", "other", "result", "expanded", "common", "missing", "extra"), CASES
)
def test_compare(
    wb: Workbench,
    this: str,
    other: str,
    result: str,
    expanded: bool,
    common: str,
    missing: str,
    extra: str,
) -> None:
    got = wb.compare(_canonical(this), _canonical(other))
    _check(got, VS, this, other, result, expanded, (common, missing, extra))


def _check(
    got: Comparison,
    prefix: str,
    this: str,
    other: str,
    result: str,
    expanded: bool,
    codes: tuple[str, str, str],
) -> None:
    """The comparison's result, frames, message, Parameters and reprs."""
    common, missing, extra = codes
    assert isinstance(got, Comparison)
    assert (got.result, got.performed_expansion) == (result, expanded), got.message
    assert ",".join(sorted(got.both["code"])) == common  # in the order of *this*
    assert ",".join(sorted(got.only_in_a["code"])) == missing
    assert ",".join(sorted(got.only_in_b["code"])) == extra
    assert list(got.both.columns) == ["code", "display", "system", "version"]
    assert prefix + this.partition("|")[0] in got.message
    assert prefix + other.partition("|")[0] in got.message
    outputs = {p["name"]: p for p in got.to_parameters()["parameter"]}
    assert outputs["result"] == {"name": "result", "valueCode": result}
    assert outputs["performed-expansion"]["valueBoolean"] is expanded
    for name, codes in (
        ("common-codes", common),
        ("missing-codes", missing),
        ("extra-codes", extra),
    ):
        listed = outputs.get(name, {}).get("valueString", "")
        assert ",".join(sorted(filter(None, listed.split(",")))) == codes
    assert result in got._repr_html_() and result in repr(got)


@pytest.fixture(scope="module")
def versions() -> Workbench:
    return versions_workbench()


@pytest.mark.parametrize(
    ("this", "other", "result", "expanded", "common", "missing", "extra"), VERSION_CASES
)
def test_compare_versions(
    versions: Workbench,
    this: str,
    other: str,
    result: str,
    expanded: bool,
    common: str,
    missing: str,
    extra: str,
) -> None:
    got = versions.compare(HL7 + this, HL7 + other)
    _check(got, HL7, this, other, result, expanded, (common, missing, extra))


def test_displays_travel_in_the_frames(wb: Workbench) -> None:
    got = wb.compare(_canonical("ab"), _canonical("abc"))
    assert got.only_in_b.to_dict("records") == [
        {"system": CS, "version": "1", "code": "c", "display": "C"}
    ]


def test_inline_value_sets_and_an_unevaluable_filter(wb: Workbench) -> None:
    inline = valueset("inline", "ba")
    assert wb.compare(inline, _canonical("ab")).result == "same"
    bad = valueset("bad", "")
    bad["compose"]["include"][0] = {
        "system": CS,
        "filter": [{"property": "concept", "op": "bogus", "value": "a"}],
    }
    got = wb.compare(bad, _canonical("ab"))
    assert got.result == "indeterminate" and "bogus" in got.message


def test_too_costly_is_indeterminate() -> None:
    wb = Workbench()
    big = "http://ex/compare/big"
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": big,
            "status": "active",
            "content": "complete",
            "concept": [{"code": str(i)} for i in range(100_001)],
        }
    )
    whole = {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {"include": [{"system": big}]},
    }
    some = {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {"include": [{"system": big, "concept": [{"code": "1"}]}]},
    }
    got = wb.compare(whole, some)
    assert got.result == "indeterminate" and "100001 codes" in got.message


@pytest.mark.parametrize(
    ("this", "error", "text"),
    [
        ("nowhere", ValueSetDefinitionNotFoundError, "nowhere"),
        ("abc|9", ValueSetVersionNotFoundError, "the loaded versions are '1', '2'"),
    ],
)
def test_bad_input(wb: Workbench, this: str, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        wb.compare(_canonical(this), _canonical("ab"))


@pytest.mark.parametrize(
    ("a", "b", "common", "result"),
    [
        (0, 0, 0, "empty"),
        (2, 0, 0, "disjoint"),
        (2, 2, 2, "same"),
        (1, 2, 1, "subset"),
        (2, 1, 1, "superset"),
        (2, 2, 1, "overlapping"),
        (2, 2, 0, "disjoint"),
    ],
)
def test_relation(a: int, b: int, common: int, result: str) -> None:
    assert relation(a, b, common) == result
