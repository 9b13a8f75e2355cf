"""The binding check on the real example resources of FHIR R4 and of the International
Patient Summary 2.0.0 (both packages' definitions and terminology loaded), and on copies
of them with a defect of each kind put in at a known element: each defect is found exactly
there, and nothing else changes."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.binding_examples import example_resources
from tests.conftest import EXAMPLES
from workbench import Workbench, packages
from workbench.bindings.report import BindingReport

pytestmark = pytest.mark.slow

IPS = ("hl7.fhir.uv.ips", "2.0.0")
ABSENT = "http://hl7.org/fhir/StructureDefinition/data-absent-reason"
Mutation = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def ips_folder() -> Path:
    return packages.install_package(*IPS)


@pytest.fixture(scope="module")
def wb(package_dirs: dict[str, Path], ips_folder: Path) -> Workbench:
    wb = Workbench()
    wb.load(package_dirs[EXAMPLES[0]], progress=False)
    wb.load(ips_folder, progress=False)
    return wb


@pytest.fixture(scope="module")
def examples(package_dirs: dict[str, Path], ips_folder: Path) -> list[dict[str, Any]]:
    return example_resources(
        package_dirs[EXAMPLES[0]] / "package", ips_folder / "package" / "example"
    )


@pytest.fixture(scope="module")
def baseline(wb: Workbench, examples: list[dict[str, Any]]) -> BindingReport:
    return wb.check_bindings(examples)


def test_the_examples_are_checked_with_every_problem_named(baseline: BindingReport) -> None:
    s = baseline.summary()["count"]
    assert s["resources"] == 1511
    assert s["bound values"] == s["valid"] + s["not valid"] + s["unchecked"]
    assert s["bound values"] > 6000 and s["valid"] > 0.9 * s["bound values"]
    kinds = Counter(p.kind for p in baseline.problems)
    # SDC profiles the R4 examples declare, and two R4 definitions published without a snapshot
    assert kinds == {"profile-not-loaded": 2, "unusable-definition": 2}
    assert {p.name for p in baseline.problems if p.kind == "unusable-definition"} == {
        "http://hl7.org/fhir/StructureDefinition/example-composition",
        "http://hl7.org/fhir/StructureDefinition/example-section-library",
    }
    ips = baseline.frame[baseline.frame["profile"].astype(str).str.contains("/uv/ips/")]
    assert len(ips) > 0  # IPS profiles' own bindings applied to the IPS examples


def test_the_examples_take_under_a_second_once_loaded(
    wb: Workbench, examples: list[dict[str, Any]]
) -> None:
    """(Not a timing test: the figure is benchmarks/bench_bindings.py's; this says the check
    over the examples is cheap enough to run in the suite again and gives the same rows.)"""
    again = wb.check_bindings(examples)
    assert len(again.frame) == len(wb.check_bindings(examples).frame)


def _set(path: str, value: Any) -> Mutation:
    def mutate(resource: dict[str, Any]) -> None:
        target: Any = resource
        parts = path.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        last = parts[-1]
        if last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def _append(key: str, value: Any) -> Mutation:
    def mutate(resource: dict[str, Any]) -> None:
        resource.setdefault(key, []).append(value)

    return mutate


def _profile(url: str) -> Mutation:
    def mutate(resource: dict[str, Any]) -> None:
        resource.setdefault("meta", {}).setdefault("profile", []).append(url)

    return mutate


def _big(resource: dict[str, Any]) -> None:
    resource["text"] = {"status": "generated", "div": "<div>" + "x" * 10_000_000 + "</div>"}
    resource["gender"] = "boy"


DEFECTS: list[tuple[str, str, str, Mutation, list[tuple[Any, ...]]]] = [
    ("a code outside a required value set", "Patient", "example", _set("gender", "boy"),
     [("Patient.gender", "unknown-code", "error", False)]),
    ("a wrong display", "Condition", "example",
     _set("clinicalStatus.coding.0.display", "Aktive"),
     [("Condition.clinicalStatus.coding[0]", "invalid-display", "error", False)]),
    ("a coded element of the wrong JSON type", "Observation", "example", _set("status", 5),
     [("Observation.status", "structure", "error", False)]),
    ("a Quantity's code", "Observation", "example", _set("valueQuantity.comparator", "<<"),
     [("Observation.value.ofType(Quantity).comparator", "unknown-code", "error", False)]),
    ("an extension, by its url", "Patient", "example",
     _append("extension", {"url": ABSENT, "valueCode": "no-idea"}),
     [("Patient.extension[{n}].value.ofType(code)", "unknown-code", "error", False)]),
    ("a contained resource", "Observation", "example",
     _append("contained", {"resourceType": "Patient", "id": "p", "gender": "boy"}),
     [("Observation.contained[0].gender", "unknown-code", "error", False)]),
    ("a slice of an IPS profile", "Composition", "composition-minimal",
     _set("section.0.mode", "bogus"),
     [("Composition.section[0].mode", "unknown-code", "error", False)]),
    ("a binding to a value set that is not loaded", "ImagingStudy", "example",
     _append("procedureCode", {"coding": [{"system": "http://www.radlex.org", "code": "RPID"}]}),
     [("ImagingStudy.procedureCode[0].coding[0]", "not-found", "warning", None)]),
    ("a profile that is not loaded", "Observation", "example",
     _profile("http://example.org/StructureDefinition/not-loaded"), []),
    ("a 10 MB resource", "Patient", "example", _big,
     [("Patient.gender", "unknown-code", "error", False)]),
]  # fmt: skip


def _issues(frame: pd.DataFrame) -> Counter[tuple[Any, ...]]:
    found = frame[frame["severity"].notna()]
    return Counter(
        (r.location, r.issue, r.severity, None if pd.isna(r.result) else bool(r.result))
        for r in found.itertuples()
    )


@pytest.fixture(scope="module")
def defective(
    wb: Workbench, examples: list[dict[str, Any]]
) -> tuple[BindingReport, dict[str, Any]]:
    """The examples with a defective copy (id ``<id>-defect-<n>``) of one per defect, and
    an unknown resource type; the report and the originals by copy id."""
    copies, originals = [], {}
    for n, (_, kind, rid, mutate, _) in enumerate(DEFECTS):
        original = next(r for r in examples if r["resourceType"] == kind and r.get("id") == rid)
        bad = copy.deepcopy(original)
        bad["id"] = f"{rid}-defect-{n}"
        mutate(bad)
        copies.append(bad)
        originals[bad["id"]] = original
    unknown = {"resourceType": "Frobnication", "id": "x"}
    return wb.check_bindings([*examples, *copies, unknown]), originals


@pytest.mark.parametrize(("n", "defect"), list(enumerate(DEFECTS)), ids=[d[0] for d in DEFECTS])
def test_each_defect_is_found_exactly_where_it_was_put(
    defective: tuple[BindingReport, dict[str, Any]], baseline: BindingReport, n: int,
    defect: tuple[Any, ...],
) -> None:  # fmt: skip
    report, originals = defective
    _, kind, rid, _, expected = defect
    original = originals[f"{rid}-defect-{n}"]
    frame = report.frame
    mine = frame[(frame["resource_type"] == kind) & (frame["id"] == f"{rid}-defect-{n}")]
    base = baseline.frame[(baseline.frame["resource_type"] == kind) & (baseline.frame["id"] == rid)]
    base = base.drop_duplicates(subset=["location", "valueset", "code"])
    n_ext = len(original.get("extension", []))
    wanted = Counter((e[0].format(n=n_ext), *e[1:]) for e in expected)
    assert _issues(mine) - _issues(base) == wanted
    assert _issues(base) - _issues(mine) <= Counter(
        {k: v for k, v in _issues(base).items() if k[0] in {e[0] for e in expected}}
    )


def test_nothing_else_changes(
    defective: tuple[BindingReport, dict[str, Any]], baseline: BindingReport
) -> None:
    report, _ = defective
    frame = report.frame
    kept = frame[~frame["id"].astype(str).str.contains("-defect-")].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        kept.astype(object), baseline.frame.reset_index(drop=True).astype(object)
    )
    new = Counter(p.kind for p in report.problems) - Counter(p.kind for p in baseline.problems)
    assert new == {"read": 1, "profile-not-loaded": 1}
    read = next(p for p in report.problems if p.kind == "read")
    assert "Frobnication" in read.message
    missing = next(p for p in report.problems if p.name.endswith("/not-loaded"))
    assert missing.resources == 1
