"""ECL 2.x and compositional grammar: parsing, evaluation over the fixture release, errors."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import snomed_rf2
from snomed_rf2 import opened

from workbench.errors import ExpressionSyntaxError
from workbench.releases.snomed import ecl, scg
from workbench.releases.snomed.codesystem import SnomedCT
from workbench.releases.snomed.loader import KIND

FINDINGS = {"404684003", "64572001", "49601007", "56265001", "22298006", "57054005"} | {
    "195967001",
    "271737000",
}


@pytest.fixture(scope="module")
def sct(tmp_path_factory: pytest.TempPathFactory) -> SnomedCT:
    root = tmp_path_factory.mktemp("ecl")
    cs, _ = opened(KIND.load(snomed_rf2.write(root / "rel"), root / "cache"))
    return cs


def codes(sct: SnomedCT, text: str) -> set[str]:
    return {str(sct.store.ids[r]) for r in np.flatnonzero(sct.evaluate(text))}


#: Every ECL feature, with its members in the fixture release (also checked over HTTP)
ECL_CASES: list[tuple[str, set[str]]] = [
    ("22298006", {"22298006"}),
    ("22298006 |Myocardial infarction|", {"22298006"}),
    ("< 404684003", FINDINGS - {"404684003"}),
    ("<< 404684003", FINDINGS),
    ("<! 64572001", {"49601007", "195967001", "271737000"}),
    ("<<! 64572001", {"64572001", "49601007", "195967001", "271737000"}),
    ("> 22298006", {"56265001", "49601007", "64572001", "404684003", "138875005"}),
    (">> 22298006", {"22298006", "56265001", "49601007", "64572001", "404684003", "138875005"}),
    (">! 22298006", {"56265001"}),
    (">>! 22298006", {"22298006", "56265001"}),
    ("^ 723264001", {"39607008", "80891009"}),
    ("^ 900000000000526001", {"307530000"}),
    ("< 64572001 AND < 49601007", {"56265001", "22298006", "57054005"}),
    ("< 64572001 , < 49601007", {"56265001", "22298006", "57054005"}),
    ("<! 64572001 OR 80891009", {"49601007", "195967001", "271737000", "80891009"}),
    ("<< 64572001 MINUS << 49601007", {"64572001", "195967001", "271737000"}),
    ("(<< 64572001 MINUS << 49601007) AND < 404684003", {"64572001", "195967001", "271737000"}),
    ("< 404684003 : 363698007 = << 80891009", {"56265001", "22298006", "57054005"}),
    ("< 404684003 : 363698007 = 39607008", {"195967001"}),
    ("< 404684003 : 363698007 != << 80891009", {"195967001"}),
    ("< 404684003 : << 410662002 = << 55641003", {"22298006", "57054005"}),
    ("< 404684003 : { 363698007 = *, 116676008 = << 49755003 }", {"22298006", "57054005"}),
    ("< 404684003 : [2..2] { 363698007 = * }", set()),
    ("< 404684003 : [1..1] { 363698007 = *, 116676008 = * }", {"22298006", "57054005"}),
    ("< 404684003 : [0..0] 363698007 = *", {"64572001", "49601007", "271737000"}),
    ("< 404684003 : [1..*] 363698007 = *", {"56265001", "22298006", "57054005", "195967001"}),
    (
        "< 404684003 : 363698007 = * AND 116676008 = *",
        {"22298006", "57054005"},
    ),
    (
        "< 404684003 : 363698007 = 39607008 OR 116676008 = *",
        {"195967001", "22298006", "57054005"},
    ),
    ("< 123037004 : R 363698007 = *", {"80891009", "39607008"}),
    ("* : R 363698007 = << 22298006", {"80891009"}),
    ("< 404684003 . 363698007", {"80891009", "39607008"}),
    ("(< 404684003 : 116676008 = *) . 116676008", {"55641003"}),
    ("* : 1142135004 = #500", {"322236009"}),
    ("* : 1142135004 >= #100", {"322236009"}),
    ("* : 1142135004 < #100", set()),
    ('<< 64572001 {{ term = "heart" }}', {"56265001", "22298006"}),
    ('<< 64572001 {{ term = "heart att" }}', {"22298006"}),
    ('<< 64572001 {{ term = wild:"*infarction" }}', {"22298006", "57054005"}),
    ('<< 64572001 {{ term = ("asth" "anaem") }}', {"195967001", "271737000"}),
    ('<< 64572001 {{ term = "anaemia", dialect = en-gb (prefer) }}', {"271737000"}),
    ('<< 64572001 {{ term = "anaemia", dialect = en-us (prefer) }}', set()),
    (
        '<< 64572001 {{ D term = "disorder", type = fsn }}',
        {"64572001", "49601007", "56265001", "22298006", "57054005", "195967001", "271737000"},
    ),
    ('<< 64572001 {{ term = "disorder", type = syn }}', {"49601007"}),
    (
        '<< 64572001 {{ language = en, typeId = 900000000000013009, term = "asthma" }}',
        {"195967001"},
    ),
    (
        "<< 404684003 {{ C definitionStatus = defined }}",
        {"49601007", "56265001", "22298006", "57054005"},
    ),
    ("307530000 {{ C active = false }}", {"307530000"}),
    ('<< 404684003 {{ C effectiveTime >= "20250101" }}', FINDINGS),
    ('<< 404684003 {{ C effectiveTime < "20250131" }}', set()),
    ('<< 404684003 {{ C effectiveTime = ("20240101" "20250131") }}', FINDINGS),
    ('<< 404684003 {{ C effectiveTime != "20250131" }}', set()),
    ("* {{ C active = false }}", set()),
    ("/* a comment */ < 49601007", {"56265001", "22298006", "57054005"}),
    ("!!> (<< 49601007 OR << 195967001)", {"49601007", "195967001"}),
    ("!!< (<< 49601007)", {"57054005"}),
    ("<< 22298006 {{ +HISTORY-MIN }}", {"22298006", "57054005", "307530000"}),
    ("<< 22298006 {{ +HISTORY }}", {"22298006", "57054005", "307530000"}),
    ("64572001 {{ +HISTORY }}", {"64572001"}),
]


@pytest.mark.parametrize(("text", "expected"), ECL_CASES)
def test_ecl(sct: SnomedCT, text: str, expected: set[str]) -> None:
    assert codes(sct, text) == expected


def test_wildcard_is_every_active_concept(sct: SnomedCT) -> None:
    assert codes(sct, "*") == set(snomed_rf2.CONCEPTS) - {"307530000"}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("<< 404684003 AND", "the end of the text"),
        ("<< 4046", "line 1, column 4"),
        ("< 404684003 : 363698007 =", "the end of the text"),
        ("< 404684003 AND < 64572001 OR < 195967001", "column 28 (at 'OR < 195967001')"),
        ("heart", "line 1, column 1"),
        ("< 404684003 : [3..1] 363698007 = *", "maximum below its minimum"),
        ('<< 404684003 {{ C effectiveTime >= "2025" }}', "dates as \"yyyymmdd\", not '2025'"),
        ('<< 404684003 {{ C effectiveTime ~ "20250101" }}', "line 1, column 33"),
        ("", "empty"),
    ],
)
def test_malformed_ecl_says_where(text: str, where: str) -> None:
    with pytest.raises(ExpressionSyntaxError) as caught:
        ecl.parse(text)
    assert where in str(caught.value)
    assert caught.value.status == 400 and caught.value.code == "invalid"


@pytest.mark.parametrize(
    ("text", "focus", "attributes"),
    [
        ("22298006", (22298006,), []),
        (
            "64572001 |Disease| : 363698007 |Finding site| = 80891009",
            (64572001,),
            [(363698007, 80891009)],
        ),
        (
            "=== 64572001 + 404684003 : { 363698007 = 80891009, 116676008 = 55641003 }",
            (64572001, 404684003),
            [(363698007, 80891009), (116676008, 55641003)],
        ),
        ("322236009 : 1142135004 = #500", (322236009,), [(1142135004, 500.0)]),
        (
            "64572001 : 363698007 = 80891009, { 116676008 = 55641003 } { 363698007 = 39607008 }",
            (64572001,),
            [(363698007, 80891009), (116676008, 55641003), (363698007, 39607008)],
        ),
        (
            '322236009 : 1142135004 = "x", 1142135004 = true',
            (322236009,),
            [(1142135004, "x"), (1142135004, True)],
        ),
    ],
)
def test_compositional_grammar(text: str, focus: tuple[int, ...], attributes: list[object]) -> None:
    parsed = scg.parse(text)
    assert parsed.focus == focus
    assert [(a.name, a.value) for a in parsed.attributes()] == attributes


def test_nested_expression_values() -> None:
    parsed = scg.parse("71388002 : 405815000 = (49062001 : 733930001 = 2151004)")
    value = parsed.attributes()[0].value
    assert isinstance(value, scg.Expression)
    assert value.focus == (49062001,) and parsed.concepts() == [
        71388002,
        405815000,
        49062001,
        733930001,
        2151004,
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("64572001 :", "the end of the text"),
        ("64572001 : 363698007 80891009", "line 1, column 22"),
        ("12", "line 1, column 1"),
        ("64572001 : { 363698007 = 80891009 }, 116676008 = 55641003", "comes after an attribute"),
    ],
)
def test_malformed_expressions_say_where(text: str, where: str) -> None:
    with pytest.raises(ExpressionSyntaxError) as caught:
        scg.parse(text)
    assert where in str(caught.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("64572001 : 363698007 = 80891009", None),
        ("64572001 : { 363698007 = 80891009, 116676008 = 55641003 }", None),
        ("322236009 : 1142135004 = #250", None),
        ("322236009 : 1142135004 = #0", "outside its MRCM range dec(>#0..)"),
        (
            "64572001 : { 363698007 = 80891009, 363698007 = 39607008 }",
            "appears 2 times in one group; its MRCM in-group cardinality allows at most 1",
        ),
        ("64572001 : { 363698007 = 80891009 }, { 363698007 = 39607008 }", None),
        ('322236009 : 1142135004 = "ten"', "outside its MRCM range dec(>#0..)"),
        ("64572001 : 363698007 = 322236009", "outside its MRCM range << 123037004"),
        ("322236009 : 363698007 = 80891009", "not allowed on the focus concept(s) 322236009"),
        ("64572001 : 80891009 = 80891009", "is not an attribute"),
        ("80891009 : 1142135004 = #5", None),  # a member of the domain refset 723264001
        (
            "64572001 : 1142135004 = #5",
            "its MRCM domain is 373873005 |Pharmaceutical / biologic product|, 723264001 "
            "|Lateralizable body structure reference set|",
        ),
        ("322236009 : 116676008 = 55641003", None),  # one domain unknown: undecided
        ("64572001 : 363698007 = 123456789", "The concept 123456789 is not in"),
        (
            "307530000 : 363698007 = 80891009",
            "inactive (REPLACED BY 22298006 |Myocardial infarction|)",
        ),
    ],
)
def test_expression_checks(sct: SnomedCT, text: str, problem: str | None) -> None:
    checked = sct.check_expression(text)
    assert checked.ok is (problem is None)
    if problem:
        assert any(problem in p for p in checked.problems), checked.problems


def test_mrcm_rules_are_read_once_per_code_system_and_not_pickled(sct: SnomedCT) -> None:
    text = "64572001 : { 363698007 = 80891009, 363698007 = 39607008 }"
    first = sct.check_expression(text)
    assert not first.ok and sct.mrcm is sct.mrcm
    domains, ranges = sct.mrcm.domains, sct.mrcm.ranges
    assert sct.mrcm.domains is domains and sct.mrcm.ranges is ranges
    assert domains[363698007] and ranges[1142135004] == ["dec(>#0..)"]
    back = pickle.loads(pickle.dumps(sct))
    assert "mrcm" not in back.__dict__  # pickled as store and version only
    assert back.check_expression(text) == first
    assert back.mrcm is not sct.mrcm and back.mrcm.domains == domains


def test_parsing_is_cached_and_fast_enough(sct: SnomedCT, tmp_path: Path) -> None:
    assert ecl.parse("<< 404684003") is ecl.parse("<< 404684003")
    first = sct.evaluate("<< 404684003")
    assert sct.evaluate("<< 404684003") is first and not first.flags.writeable
