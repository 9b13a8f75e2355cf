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


def _filtered(name: str, op: str, value: str) -> dict[str, Any]:
    """A value set ``VS + name`` of one filter on CS's codes."""
    vs = valueset(name, "")
    vs["compose"]["include"] = [
        {
            "system": CS,
            "filter": [
                {"property": "concept" if op != "regex" else "code", "op": op, "value": value}
            ],
        }
    ]
    return vs


def _empty_and_whole() -> list[dict[str, Any]]:
    """Pairs of value sets with the same definition under two urls: empty ones (a code CS
    lacks; everything excluded) and ones that hold codes (all of CS; a filter)."""
    found: list[dict[str, Any]] = []
    for suffix in ("", "2"):
        whole = valueset("whole" + suffix, "")
        whole["compose"]["include"] = [{"system": CS}]
        excluded = valueset("all-excluded" + suffix, "", exclude=[{"system": CS}])
        excluded["compose"]["include"] = [{"system": CS}]
        found += [
            valueset("empty-listed" + suffix, "z"),
            excluded,
            whole,
            _filtered("in-ab" + suffix, "in", "a,b"),
            _filtered("regex-ab" + suffix, "regex", "[ab]"),
        ]
    return found


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
        *_empty_and_whole(),
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
    ("empty", "empty", "empty", True, "", "", ""),  # itself: empty, not the same
    ("empty-listed", "empty-listed2", "empty", True, "", "", ""),  # one definition
    ("all-excluded", "all-excluded2", "empty", True, "", "", ""),
    ("whole", "whole2", "same", False, "", "", ""),  # it holds codes: no expansion
    ("in-ab", "in-ab2", "same", False, "", "", ""),
    ("regex-ab", "regex-ab2", "same", True, "a,b", "", ""),  # expanded to know it is not empty
    ("unknown-system", "unknown-system", "same", False, "", "", ""),
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


# --- versions: the shapes of HL7's compare suite (fhir-tx-ecosystem-ig tests/compare) ----

CS1 = "http://hl7.org/fhir/test/CodeSystem/compare-cs1"
CS_VN = "http://hl7.org/fhir/test/CodeSystem/compare-version-needed"
HL7 = "http://hl7.org/fhir/test/ValueSet/"


def compare_cs1(version: str) -> dict[str, Any]:
    """HL7's compare-cs1: root > A (A1, A2), B (B1, B2), C; version 2.0.0 adds A3 and B3."""

    def node(code: str, *children: dict[str, Any]) -> dict[str, Any]:
        return {"code": code, "display": code, **({"concept": list(children)} if children else {})}

    added = version != "1.0.0"
    a = [node("A1"), node("A2"), *([node("A3")] if added else [])]
    b = [node("B1"), node("B2"), *([node("B3")] if added else [])]
    return {
        "resourceType": "CodeSystem",
        "url": CS1,
        "version": version,
        "status": "active",
        "content": "complete",
        "hierarchyMeaning": "is-a",
        "concept": [node("root", node("A", *a), node("B", *b), node("C"))],
    }


def version_needed_cs(version: str) -> dict[str, Any]:
    """A code system whose versions must be told apart (``versionNeeded``): a, b in each."""
    return {
        "resourceType": "CodeSystem",
        "url": CS_VN,
        "version": version,
        "versionNeeded": True,
        "status": "active",
        "content": "complete",
        "concept": [{"code": c, "display": c.upper()} for c in "ab"],
    }


def _hl7(name: str, *include: dict[str, Any], version: str = "1.0.0") -> dict[str, Any]:
    """A value set ``HL7 + name`` of the given includes."""
    return {
        "resourceType": "ValueSet",
        "url": HL7 + name,
        "version": version,
        "status": "active",
        "compose": {"include": list(include)},
    }


def _cs1(version: str | None = None, isa: str | None = None, codes: str = "") -> dict[str, Any]:
    """An include of compare-cs1: whole, ``is-a`` one code, or listed codes (space-separated)."""
    include: dict[str, Any] = {"system": CS1}
    if version:
        include["version"] = version
    if isa:
        include["filter"] = [{"property": "concept", "op": "is-a", "value": isa}]
    if codes:
        include["concept"] = [{"code": c} for c in codes.split()]
    return include


#: Every resource the version cases draw on (loaded, or sent as tx-resource).
VERSION_RESOURCES: list[dict[str, Any]] = [
    compare_cs1("1.0.0"),
    compare_cs1("2.0.0"),
    version_needed_cs("1"),
    version_needed_cs("2"),
    _hl7("compare-ver-1a", _cs1("1.0.0", "A")),
    _hl7("compare-ver-1b", _cs1("2.0.0", "A")),
    _hl7("compare-ver-2a", _cs1("1.0.0")),
    _hl7("compare-ver-2b", _cs1("2.0.0")),
    _hl7("compare-ver-3a", _cs1("1.0.0", "B")),
    _hl7("compare-ver-3b", _cs1("2.0.0", "B")),
    _hl7("compare-ver-4a", _cs1(isa="A")),
    _hl7("compare-ver-4b", _cs1("1.0.0", "A")),
    _hl7("compare-ver-5", _cs1(isa="A")),
    _hl7("compare-ver-5", _cs1(isa="A"), _cs1(codes="B1"), version="2.0.0"),
    _hl7("compare-ver-6a", {"valueSet": [HL7 + "compare-ver-5|1.0.0"]}),
    _hl7("compare-ver-6b", {"valueSet": [HL7 + "compare-ver-5|2.0.0"]}),
    _hl7("two-versions", _cs1("1.0.0", codes="A1"), _cs1("2.0.0", codes="A3")),
    _hl7("unversioned-a1-a3", _cs1(codes="A1 A3")),
    _hl7("import-v1-and-v2", {"valueSet": [HL7 + "compare-ver-1a"]}, _cs1("2.0.0", codes="A3")),
    _hl7("needed-v1", {"system": CS_VN, "version": "1"}),
    _hl7("needed-v2", {"system": CS_VN, "version": "2"}),
    _hl7("needed-v1-a", {"system": CS_VN, "version": "1", "concept": [{"code": "a"}]}),
]

#: (this, other, result, performed-expansion, common, missing, extra): HL7's six version
#: cases (names as in its suite, expected relation as in its descriptions), then the cases
#: where tx.fhir.org compares codes across versions (system and code; the version too only
#: when the code system says ``versionNeeded``).
VERSION_CASES = [
    ("compare-ver-1a", "compare-ver-1b", "subset", True, "A,A1,A2", "", "A3"),
    ("compare-ver-2a", "compare-ver-2b", "subset", True, "A,A1,A2,B,B1,B2,C,root", "", "A3,B3"),
    ("compare-ver-3a", "compare-ver-3b", "subset", True, "B,B1,B2", "", "B3"),
    ("compare-ver-4a", "compare-ver-4b", "superset", True, "A,A1,A2", "A3", ""),
    ("compare-ver-5|1.0.0", "compare-ver-5|2.0.0", "subset", True, "A,A1,A2,A3", "", "B1"),
    ("compare-ver-6a", "compare-ver-6b", "subset", True, "A,A1,A2,A3", "", "B1"),
    ("two-versions", "unversioned-a1-a3", "same", True, "A1,A3", "", ""),
    ("import-v1-and-v2", "compare-ver-1b", "same", True, "A,A1,A2,A3", "", ""),
    ("needed-v1", "needed-v2", "disjoint", True, "", "a,b", "a,b"),
    ("needed-v1-a", "needed-v1", "subset", True, "a", "", "b"),
]


def versions_workbench() -> Workbench:
    """A Workbench with every resource of the version cases loaded."""
    wb = Workbench()
    for resource in VERSION_RESOURCES:
        wb.load(resource)
    return wb
