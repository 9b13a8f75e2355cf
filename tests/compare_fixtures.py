"""The value sets the $compare tests (Python and HTTP) compare: one code system a..e and
value sets over it, each named for what it holds."""

from __future__ import annotations

from typing import Any

from workbench import Workbench

CS = "http://ex/compare/cs"
VS = "http://ex/compare/vs/"


def valueset(name: str, codes: str, version: str = "1", **compose: Any) -> dict[str, Any]:
    """A value set ``VS + name`` listing ``codes`` (one letter each) of CS."""
    include: dict[str, Any] = {"system": CS, "concept": [{"code": c} for c in codes]}
    return {
        "resourceType": "ValueSet",
        "url": VS + name,
        "version": version,
        "status": "active",
        "compose": {"include": [include], **compose},
    }


def two_includes(name: str, first: str, second: str) -> dict[str, Any]:
    """A value set of two includes of CS, listing ``first`` then ``second``."""
    vs = valueset(name, first)
    vs["compose"]["include"].append({"system": CS, "concept": [{"code": c} for c in second]})
    return vs


def compare_workbench() -> Workbench:
    """A Workbench with CS, the value sets and two versions of ``abc``."""
    wb = Workbench()
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": CS,
            "version": "1",
            "status": "active",
            "content": "complete",
            "concept": [{"code": c, "display": c.upper()} for c in "abcde"],
        }
    )
    for vs in (
        valueset("abc", "abc"),
        valueset("abc", "cab", version="2"),
        valueset("cba", "cba"),
        two_includes("ab+c", "ab", "c"),
        two_includes("c+ab", "c", "ab"),
        valueset("ab", "ab"),
        {
            **valueset("ab-pinned", "ba"),
            "compose": {
                "include": [
                    {"system": CS, "version": "1", "concept": [{"code": "b"}, {"code": "a"}]}
                ]
            },
        },
        valueset("cd", "cd"),
        valueset("de", "de"),
        valueset("ab-c-excluded", "abc", exclude=[{"system": CS, "concept": [{"code": "c"}]}]),
        {
            "resourceType": "ValueSet",
            "url": VS + "empty",
            "version": "1",
            "status": "active",
            "compose": {
                "include": [
                    {"system": CS, "filter": [{"property": "concept", "op": "in", "value": "zz"}]}
                ]
            },
        },
        {
            "resourceType": "ValueSet",
            "url": VS + "empty2",
            "version": "1",
            "status": "active",
            "compose": {
                "include": [
                    {"system": CS, "filter": [{"property": "concept", "op": "in", "value": "yy"}]}
                ]
            },
        },
        {
            "resourceType": "ValueSet",
            "url": VS + "unknown-system",
            "version": "1",
            "status": "active",
            "compose": {"include": [{"system": "http://ex/not-loaded"}]},
        },
    ):
        wb.load(vs)
    return wb


#: (this, other, result, performed-expansion, common, missing, extra)
CASES = [
    ("abc", "abc", "same", False, "", "", ""),  # itself
    ("abc", "cba", "same", False, "", "", ""),  # codes in another order
    ("ab+c", "c+ab", "same", False, "", "", ""),  # includes in another order
    ("abc|1", "abc|2", "same", False, "", "", ""),  # two versions with the same codes
    ("abc", "ab+c", "same", True, "a,b,c", "", ""),
    (
        "ab",
        "ab-pinned",
        "same",
        False,
        "",
        "",
        "",
    ),  # pinned to the version it takes anyway  # one include, or two: expanded
    ("ab", "abc", "subset", True, "a,b", "", "c"),
    ("abc", "ab", "superset", True, "a,b", "c", ""),
    ("abc", "cd", "overlapping", True, "c", "a,b", "d"),
    ("ab", "de", "disjoint", True, "", "a,b", "d,e"),
    ("ab", "empty", "disjoint", True, "", "a,b", ""),  # with an empty one
    ("empty", "empty2", "empty", True, "", "", ""),
    ("ab-c-excluded", "ab", "same", True, "a,b", "", ""),
    ("unknown-system", "ab", "indeterminate", True, "", "", ""),
]


def codesystem_version(version: str, displays: dict[str, str]) -> dict[str, Any]:
    """Version ``version`` of a small code system ``http://example.org/cs`` (code: display),
    for the tests that compare versions (diff, impact)."""
    return {
        "resourceType": "CodeSystem",
        "url": "http://example.org/cs",
        "version": version,
        "status": "active",
        "content": "complete",
        "concept": [{"code": c, "display": d} for c, d in displays.items()],
    }
