"""ICD-10-CM loaded from the CMS tabular XML shipped in ``simple-icd-10-cm``."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from workbench import Workbench
from workbench.errors import ReleaseFormatError

ICD = "http://hl7.org/fhir/sid/icd-10-cm"
ISA_VS = "http://example.org/vs/cholera"


@pytest.fixture(scope="module")
def xml() -> Path:
    # located without importing the package (its import warns about a deprecated API)
    spec = importlib.util.find_spec("simple_icd_10_cm")
    assert spec is not None and spec.submodule_search_locations
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    found = sorted(data.glob("*tabular*.xml"))
    assert found, "simple-icd-10-cm ships no tabular XML"
    return found[0]


@pytest.fixture(scope="module")
def wb(xml: Path) -> Workbench:
    bench = Workbench()
    bench.load_release(xml, progress=False)
    bench.load(
        {
            "resourceType": "ValueSet",
            "url": ISA_VS,
            "status": "active",
            "compose": {
                "include": [
                    {
                        "system": ICD,
                        "filter": [{"property": "concept", "op": "is-a", "value": "A00"}],
                    }
                ]
            },
        }
    )
    return bench


def test_loaded_and_listed(wb: Workbench) -> None:
    listed = wb.codesystems
    row = listed[listed["url"] == ICD]
    assert len(row) == 1 and row.iloc[0]["version"] == "2026"


@pytest.mark.parametrize(
    ("url", "code", "result"),
    [
        (f"{ICD}?fhir_vs", "A00.0", True),
        (f"{ICD}?fhir_vs", "A00.7", False),
        (f"{ICD}?fhir_vs", "1", False),
        (f"{ICD}?fhir_vs", "A00-A09", False),
        (ISA_VS, "A00.1", True),
        (ISA_VS, "A00", True),
        (ISA_VS, "A01.0", False),
    ],
)
def test_validate_code(wb: Workbench, url: str, code: str, result: bool) -> None:
    assert wb.validate_code(url, code=code, system=ICD).result is result


def test_lookup_and_subsumes(wb: Workbench) -> None:
    found = wb.lookup(ICD, "A00.0")
    assert found.display.startswith("Cholera due to Vibrio cholerae 01")
    assert ("parent", "A00") in found.properties
    assert ("billable", True) in found.properties
    assert wb.subsumes(ICD, "A00-A09", "A00.0") == "subsumes"
    assert wb.subsumes(ICD, "A00.0", "A00") == "subsumed-by"


def test_validate_column_matches_rows(wb: Workbench) -> None:
    codes = pd.Series(["A00.0", "A00.9", "A01.0", "nope"])
    report = wb.validate_column(codes, ISA_VS, system=ICD)
    singles = [wb.validate_code(ISA_VS, code=c, system=ICD).result for c in codes]
    assert list(report["result"]) == singles == [True, True, False, False]


def test_bad_releases_change_nothing(tmp_path: Path) -> None:
    bench = Workbench()
    bad = tmp_path / "icd10cm_tabular_bad.xml"
    bad.write_text("<ICD10CM.tabular><version>2026</version><chapter>")
    with pytest.raises(ReleaseFormatError, match=r"icd10cm_tabular_bad\.xml"):
        bench.load_release(bad, kind="icd10cm")
    truncated = tmp_path / "icd.zip"
    with zipfile.ZipFile(truncated, "w") as z:
        z.writestr("icd10cm_tabular_2026.xml", "<ICD10CM.tabular>" + "x" * 5000)
    truncated.write_bytes(truncated.read_bytes()[:200])
    with pytest.raises(ReleaseFormatError):
        bench.load_release(truncated)
    with pytest.raises(ReleaseFormatError):
        bench.load_release(tmp_path / "missing.xml")
    assert ICD not in set(bench.codesystems.get("url", pd.Series(dtype=str)))


@pytest.mark.parametrize("grouper", ["1", "A00-A09"])
def test_grouper_valid_only_when_abstract_allowed(wb: Workbench, grouper: str) -> None:
    url = f"{ICD}?fhir_vs"
    assert not wb.validate_code(url, code=grouper, system=ICD).result
    assert wb.validate_code(url, code=grouper, system=ICD, abstract=True).result
