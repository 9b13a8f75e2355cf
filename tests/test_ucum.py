"""UCUM (http://unitsofmeasure.org): always present, codes checked by the UCUM grammar and
the unit table of ucum-essence.xml, in Python and over HTTP."""

from __future__ import annotations

import csv
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from http_support import TOKEN, assert_outcome, client, values

from workbench import TooCostlyError, Workbench
from workbench.errors import UnknownCodeError, UnsupportedFilterError
from workbench.releases.ucum import units
from workbench.server.embedded import ServerHandle

UCUM = "http://unitsofmeasure.org"
LISTED = "http://example.org/vs/lab-units"
MASS = "http://example.org/vs/mass-units"
ALL = "http://example.org/vs/all-ucum"


def _listed() -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": LISTED,
        "status": "active",
        "compose": {
            "include": [
                {
                    "system": UCUM,
                    "concept": [
                        {"code": "mL"},
                        {"code": "mg/dL", "display": "milligram per deciliter"},
                        {"code": "10*3/uL"},
                        {"code": "Cel"},
                        {"code": "{cells}/uL"},
                        {"code": "mmHg"},  # not UCUM: listed by mistake, never a member
                    ],
                }
            ]
        },
    }


@pytest.fixture(scope="module")
def wb() -> Workbench:
    bench = Workbench()
    bench.load(
        [
            _listed(),
            {
                "resourceType": "ValueSet",
                "url": MASS,
                "status": "active",
                "compose": {
                    "include": [
                        {
                            "system": UCUM,
                            "filter": [{"property": "property", "op": "=", "value": "mass"}],
                        }
                    ]
                },
            },
            {
                "resourceType": "ValueSet",
                "url": ALL,
                "status": "active",
                "compose": {"include": [{"system": UCUM}]},
            },
        ]
    )
    return bench


# --- the grammar and the unit table ------------------------------------------------------


def _spec_examples() -> list[str]:
    """UCUM's own table of example codes (as shipped by ucumvert's vendored copy)."""
    spec = importlib.util.find_spec("ucumvert")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "vendor" / "ucum_examples.tsv"
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))[1:]
    return [r[1].strip() for r in rows if len(r) > 1 and r[1].strip()]


def test_every_example_of_the_ucum_table_is_valid() -> None:
    examples = _spec_examples()
    assert len(examples) > 800
    # 'Torr' is in UCUM's example table, but not defined in ucum-essence.xml
    invalid = [c for c in examples if units.check(c) is not None]
    assert invalid == ["Torr"]


@pytest.mark.parametrize(
    "code",
    [
        "m",
        "mg/dL",
        "mg/dl",
        "10*3/uL",
        "10^3/uL",
        "[arb'U]",
        "/min",
        "min-1",
        "m+2",
        "%",
        "{cells}/uL",
        "{score}",
        "g/(8.h){shift}",
        "100/{cells}",
        "kg.m/s2",
        "[in_i]",
        "[IU]/L",
        "mm[Hg]",
        "Cel",
        "[degF]",
        "[pH]",
        "meq/L",
        "g%",
        "MG",  # megagauss: case matters, and this is a real unit
        "4.[pi].10*-7.N/A2",
        "1",
    ],
)
def test_valid_units(code: str) -> None:
    assert units.check(code) is None


@pytest.mark.parametrize(
    ("code", "where"),
    [
        ("Kg", "unexpected character 'g' at position 2"),
        ("mmHg", "unexpected character 'H' at position 3"),
        ("sec", "unexpected character 'e' at position 2"),
        ("hr", "unexpected character 'r' at position 2"),
        ("mcg", "unexpected character 'c' at position 2"),
        ("°C", "unexpected character '°' at position 1"),
        ("k[in_i]", "unexpected character '[' at position 2"),  # inch takes no prefix
        ("m/", "ends too early"),
        ("(m", "ends too early"),
        ("mg/dL)", "unexpected character ')' at position 6"),
        ("mg dL", "contain no spaces"),
        ("", "empty"),
    ],
)
def test_invalid_units_say_where(code: str, where: str) -> None:
    message = units.check(code)
    assert message is not None and where in message


@pytest.mark.parametrize(
    ("code", "canonical", "factor", "dimension"),
    [
        ("mg/dL", "g.m-3", 10.0, "L-3.M"),
        ("mL", "m3", 1e-6, "L3"),
        ("10*3/uL", "m-3", 1e12, "L-3"),
        ("/min", "s-1", 1 / 60, "T-1"),
        ("N", "g.m.s-2", 1000.0, "L.T-2.M"),
        ("mm[Hg]", "g.m-1.s-2", 133322.0, "L-1.T-2.M"),
        ("[in_i]", "m", 0.0254, "L"),
        ("%", "1", 0.01, "1"),
        ("Cel", "K", 1.0, "C"),
        ("[IU]/L", "[iU].m-3", 1000.0, "L-3.[iU]"),
    ],
)
def test_canonical_forms(code: str, canonical: str, factor: float, dimension: str) -> None:
    unit = units.parse(code)
    assert unit.canonical == canonical
    assert unit.factor == pytest.approx(factor, rel=1e-12)
    assert unit.dimension == dimension


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("mL", "ml", True),
        ("mL", "cm3", True),
        ("10*3/uL", "10*9/L", True),
        ("/min", "min-1", True),
        ("g/dL", "g.dL-1", True),
        ("mg", "g", False),
        ("{cells}/uL", "/uL", False),  # annotations are kept apart
        ("Cel", "K", False),  # a special unit is only itself
        ("[IU]", "[iU]", True),
    ],
)
def test_same_unit(a: str, b: str, same: bool) -> None:
    assert units.parse(a).equals(units.parse(b)) is same


# --- the workbench -----------------------------------------------------------------------


def _plain(frame: pd.DataFrame, column: str) -> list[Any]:
    return frame[column].astype(object).where(frame[column].notna(), None).tolist()


def test_always_listed_without_loading_anything() -> None:
    listed = Workbench().codesystems
    row = listed[listed["url"] == UCUM]
    assert len(row) == 1
    assert row.iloc[0]["version"] == "2.2"
    assert row.iloc[0]["content"] == "not-present"


@pytest.mark.parametrize(
    ("code", "result", "reason", "normalized"),
    [
        ("mL", True, None, None),
        ("ml", True, None, "mL"),
        ("cm3", True, None, "mL"),
        ("10*9/L", True, None, "10*3/uL"),
        ("mg/dL", True, None, None),
        ("{cells}/uL", True, None, None),
        ("Cel", True, None, None),
        ("K", False, "not-in-vs", None),
        ("g/L", False, "not-in-vs", None),
        ("mmHg", False, "unknown-code", None),
    ],
)
def test_validate_against_a_value_set_that_lists_units(
    wb: Workbench, code: str, result: bool, reason: str | None, normalized: str | None
) -> None:
    found = wb.validate_code(valueset=LISTED, code=code, system=UCUM)
    assert (found.result, found.issue, found.normalized_code) == (result, reason, normalized)


def test_an_invalid_unit_says_where_it_fails(wb: Workbench) -> None:
    found = wb.validate_code(valueset=LISTED, code="mmHg", system=UCUM)
    assert found.issues[0].text == (
        f"Unknown code 'mmHg' in the CodeSystem '{UCUM}|2.2': 'mmHg' is not a valid UCUM "
        "unit: unexpected character 'H' at position 3"
    )
    assert found.message == f"{found.issues[0].text}; {found.issues[1].text}"  # + not-in-vs


def test_display_is_the_code_or_its_print_name(wb: Workbench) -> None:
    assert wb.validate_code(valueset=ALL, code="mg/dL", system=UCUM).display == "mg/dL"
    named = wb.validate_code(
        valueset=ALL, code="mg/dL", system=UCUM, display="milligram per deciliter"
    )
    assert named.result is True
    wrong = wb.validate_code(valueset=ALL, code="mg/dL", system=UCUM, display="grams")
    assert (wrong.result, wrong.issue) == (False, "invalid-display")


@pytest.mark.parametrize(
    ("url", "code", "result"),
    [
        (ALL, "kg/m2", True),
        (ALL, "kg/m^2", False),
        (f"{UCUM}/vs", "umol/L", True),
        (f"{UCUM}/vs", "umol/l/", False),
        (MASS, "mg", True),
        (MASS, "[lb_av]", True),
        (MASS, "mL", False),
    ],
)
def test_whole_ucum_and_filters_validate(wb: Workbench, url: str, code: str, result: bool) -> None:
    assert wb.validate_code(valueset=url, code=code, system=UCUM).result is result


def test_validate_against_the_code_system(wb: Workbench) -> None:
    assert wb.validate_in_codesystem(UCUM, "mmol/L").result is True
    bad = wb.validate_in_codesystem(UCUM, "mmol/LL")
    assert bad.result is False and bad.issue == "unknown-code"
    assert "position 7" in (bad.message or "")


def test_expand_a_value_set_that_lists_units(wb: Workbench) -> None:
    expansion = wb.expand(LISTED)
    assert [(e.code, e.display) for e in expansion.entries] == [
        ("mL", "mL"),
        ("mg/dL", "milligram per deciliter"),
        ("10*3/uL", "10*3/uL"),
        ("Cel", "Cel"),
        ("{cells}/uL", "{cells}/uL"),
    ]


@pytest.mark.parametrize("url", [ALL, MASS, f"{UCUM}/vs", f"{UCUM}?fhir_vs"])
def test_all_of_ucum_cannot_be_expanded(wb: Workbench, url: str) -> None:
    with pytest.raises(TooCostlyError, match="infinitely many codes"):
        wb.expand(url)


def test_lookup_gives_canonical_unit_and_dimension(wb: Workbench) -> None:
    found = wb.lookup(UCUM, "mg/dL")
    assert found.display == "mg/dL"
    props = dict(found.properties)
    assert props["canonical"] == "g.m-3"
    assert props["dimension"] == "L-3.M"
    assert props["factor"] == pytest.approx(10.0)
    assert props["name"] == "milligram per deciliter"
    assert dict(wb.lookup(UCUM, "g").properties)["property"] == "mass"
    with pytest.raises(UnknownCodeError, match="unexpected character 'H' at position 3"):
        wb.lookup(UCUM, "mmHg")


def test_subsumes_says_equivalent_for_the_same_unit(wb: Workbench) -> None:
    assert wb.subsumes(UCUM, "mL", "cm3") == "equivalent"
    assert wb.subsumes(UCUM, "mL", "L") == "not-subsumed"


def test_unsupported_filter_is_a_clear_error(wb: Workbench) -> None:
    vs = {
        "resourceType": "ValueSet",
        "compose": {
            "include": [
                {"system": UCUM, "filter": [{"property": "concept", "op": "is-a", "value": "g"}]}
            ]
        },
    }
    with pytest.raises(UnsupportedFilterError, match="not supported on UCUM"):
        wb.validate_code(valueset=vs, code="g", system=UCUM)


def test_unit_table_frames(wb: Workbench) -> None:
    frame = wb.concepts(UCUM)
    assert len(frame) > 300
    gram = frame[frame["code"] == "g"].iloc[0]
    assert (gram["name"], gram["property"], gram["canonical"]) == ("gram", "mass", "g")
    names = wb.designations(UCUM)
    assert "kilogram" not in set(names["value"]) and "gram" in set(names["value"])


def test_validate_column_per_distinct_unit(wb: Workbench) -> None:
    column = pd.Series(["mg/dL", "ml", "mL", "mmHg", None, "Cel", "g", "10*9/L"] * 50)
    frame = wb.validate_column(column, LISTED, system=UCUM)
    expected = [True, True, True, False, pd.NA, True, False, True] * 50
    assert frame["result"].tolist() == expected
    assert _plain(frame, "issue")[:8] == [
        None,
        None,
        None,
        "unknown-code",
        "missing",
        None,
        "not-in-vs",
        None,
    ]
    one_by_one = [
        wb.validate_code(valueset=LISTED, code=c, system=UCUM).message
        for c in ["mg/dL", "ml", "mmHg", "g"]
    ]
    shown = [m if isinstance(m, str) else None for m in frame["message"].iloc[[0, 1, 3, 6]]]
    assert shown == one_by_one


def test_validate_column_against_all_of_ucum(wb: Workbench) -> None:
    column = pd.Series(["kg", "Kg", "umol/L", "IU"] * 25)
    frame = wb.validate_column(column, ALL, system=UCUM)
    assert frame["result"].tolist() == [True, False, True, False] * 25


# --- HTTP ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(wb: Workbench) -> Iterator[ServerHandle]:
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def http(server: ServerHandle) -> Iterator[httpx.Client]:
    with client(server.url) as c:
        yield c


@pytest.mark.parametrize(
    ("url", "code", "result"),
    [
        (LISTED, "ml", True),
        (LISTED, "g", False),
        (ALL, "mmol/L", True),
        (f"{UCUM}/vs", "mmol/L", True),
        (ALL, "mmHg", False),
    ],
)
def test_http_validate_code(http: httpx.Client, url: str, code: str, result: bool) -> None:
    body = http.get(
        "/ValueSet/$validate-code", params={"url": url, "code": code, "system": UCUM}
    ).json()
    assert values(body, "result") == [result]


def test_http_invalid_unit_message(http: httpx.Client) -> None:
    body = http.get("/CodeSystem/$validate-code", params={"url": UCUM, "code": "kg/m^2"}).json()
    assert values(body, "result") == [False]
    assert "'kg/m^2' is not a valid UCUM unit" in values(body, "message")[0]


def test_http_lookup(http: httpx.Client) -> None:
    body = http.get("/CodeSystem/$lookup", params={"system": UCUM, "code": "mmol/L"}).json()
    assert values(body, "display") == ["mmol/L"]
    props = {
        p["part"][0]["valueCode"]: next(v for k, v in p["part"][1].items() if k != "name")
        for p in body["parameter"]
        if p["name"] == "property"
    }
    assert props["canonical"] == "m-3" and props["dimension"] == "L-3"


def test_http_lookup_of_an_invalid_unit_is_not_found(http: httpx.Client) -> None:
    response = http.get("/CodeSystem/$lookup", params={"system": UCUM, "code": "mmHg"})
    assert_outcome(response, 404, "not-found", "position 3")


def test_http_expand(http: httpx.Client) -> None:
    body = http.get("/ValueSet/$expand", params={"url": LISTED}).json()
    assert [c["code"] for c in body["expansion"]["contains"]] == [
        "mL",
        "mg/dL",
        "10*3/uL",
        "Cel",
        "{cells}/uL",
    ]


@pytest.mark.parametrize("url", [ALL, f"{UCUM}/vs"])
def test_http_expand_all_of_ucum_is_too_costly(http: httpx.Client, url: str) -> None:
    response = http.get("/ValueSet/$expand", params={"url": url})
    assert_outcome(response, 422, "too-costly", "infinitely many codes")


@pytest.mark.parametrize("url", [LISTED, ALL])
def test_bulk_validation_on_dask_equals_pandas(wb: Workbench, url: str) -> None:
    import dask.dataframe as dd

    units = pd.Series(["mL", "ml", "cm3", "mmHg", None, "g", "10*9/L", "Kg", "{cells}/uL"] * 3)
    on_pandas = wb.validate_column(units, url, system=UCUM)
    on_dask = wb.validate_column(dd.from_pandas(units, npartitions=3), url, system=UCUM).compute()
    for column in ("result", "issue", "message", "display"):
        assert _plain(on_dask, column) == _plain(on_pandas, column), column
