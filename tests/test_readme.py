"""The README is executable: every ```python block runs as written, in order, in one
namespace, from a working folder laid out like the repository (``valuesets/``), with the
release files the README names made there first (a synthetic SNOMED CT RF2 release, the
ICD-10-CM tabular XML that ``simple-icd-10-cm`` ships, the RxNorm and LOINC test
fixtures zipped).

A block that needs a cluster or cloud storage says so in an HTML comment on the line before
its fence, ``<!-- readme-test: skip (reason) -->``; this test skips exactly those blocks and
checks that each skip gives its reason.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import weakref
import zipfile
from pathlib import Path
from typing import Any

import pytest
import snomed_rf2

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SKIP = re.compile(r"<!-- readme-test: skip \((?P<reason>[^)]+)\) -->\s*$")
SNOMED_ZIP = "SnomedCT_InternationalRF2_PRODUCTION_20250101T120000Z.zip"
ICD_XML = "icd10cm_tabular_2026.xml"
# the hand-made release fixtures in tests/data, zipped under the names the README loads
ZIPPED = {
    "RxNorm_full_01062025.zip": (ROOT / "tests" / "data" / "rxnorm-release", ""),
    "Loinc_2.80.zip": (ROOT / "tests" / "data" / "loinc-release", "Loinc_2.80/"),
}


def blocks() -> list[tuple[int, str, str | None]]:
    """``(line, code, skip reason)`` for each python block of the README."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.match(before)
        found.append((line, match.group(1), skip.group("reason") if skip else None))
    return found


def icd10cm_xml() -> Path:
    spec = importlib.util.find_spec("simple_icd_10_cm")  # located, not imported (it warns)
    assert spec is not None and spec.submodule_search_locations
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    [found, *_] = sorted(data.glob("*tabular*.xml"))
    return found


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder like the repository root, with the release files the README loads."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "valuesets").symlink_to(ROOT / "valuesets")
    release = snomed_rf2.write(tmp_path / "rf2", as_zip=True)
    shutil.move(release, work / SNOMED_ZIP)
    shutil.copy(icd10cm_xml(), work / ICD_XML)
    for name, (folder, top) in ZIPPED.items():
        with zipfile.ZipFile(work / name, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted(folder.rglob("*")):
                if f.is_file():
                    zf.write(f, top + f.relative_to(folder).as_posix())
    monkeypatch.chdir(work)
    monkeypatch.setenv("WORKBENCH_RELEASE_CACHE", str(tmp_path / "release-cache"))
    return work


def test_readme_has_python_blocks() -> None:
    found = blocks()
    assert len(found) >= 8
    skipped = [(line, reason) for line, _, reason in found if reason]
    # only what needs a cluster or cloud storage is skipped
    assert all(re.search(r"cluster|cloud", reason) for _, reason in skipped), skipped


def test_readme_blocks_run_in_order(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a fresh interpreter: the other tests' Workbenches are not there."""
    import workbench.workbench

    monkeypatch.setattr(workbench.workbench, "_LIVE", weakref.WeakValueDictionary())
    namespace: dict[str, Any] = {"__name__": "readme"}
    ran = 0
    for line, code, skip in blocks():
        if skip:
            continue
        try:
            exec(compile(code, f"README.md:{line}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(
                f"the README block at line {line} fails: {type(exc).__name__}: {exc}"
            ) from exc
        ran += 1
    assert ran == len(blocks()) - sum(1 for _, _, skip in blocks() if skip)
    for server in namespace.get("_servers", []):
        server.stop()
