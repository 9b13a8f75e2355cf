"""Executable documentation: the ```python blocks of a Markdown file (the README, or a page
of the documentation site under ``docs/``), and the working folder they run in.

A page's blocks run as written, in order, in one namespace, from a folder laid out like the
repository (``valuesets/``), with the release files the pages name made there first (a
synthetic SNOMED CT RF2 release, the ICD-10-CM tabular XML that ``simple-icd-10-cm`` ships,
the RxNorm and LOINC test fixtures zipped).

A block that needs a cluster or cloud storage says so in an HTML comment on the line before
its fence, ``<!-- docs-test: skip (reason) -->`` (``readme-test`` in the README); exactly
those blocks are skipped, and each skip gives its reason.
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
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SKIP = re.compile(r"<!-- (?:readme|docs)-test: skip \((?P<reason>[^)]+)\) -->\s*$")
SNOMED_ZIP = "SnomedCT_InternationalRF2_PRODUCTION_20250101T120000Z.zip"
ICD_XML = "icd10cm_tabular_2026.xml"
# the hand-made release fixtures in tests/data, zipped under the names the pages load
ZIPPED = {
    "RxNorm_full_01062025.zip": (ROOT / "tests" / "data" / "rxnorm-release", ""),
    "Loinc_2.80.zip": (ROOT / "tests" / "data" / "loinc-release", "Loinc_2.80/"),
}


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, skip reason)`` for each python block of a Markdown file."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.match(before)
        found.append((line, match.group(1), skip.group("reason") if skip else None))
    return found


def icd10cm_xml() -> Path:
    """The ICD-10-CM tabular XML shipped by ``simple-icd-10-cm``."""
    spec = importlib.util.find_spec("simple_icd_10_cm")  # located, not imported (it warns)
    assert spec is not None and spec.submodule_search_locations
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    [found, *_] = sorted(data.glob("*tabular*.xml"))
    return found


def make_workspace(base: Path) -> Path:
    """``base/work``: a folder like the repository root, with the release files the pages
    load."""
    work = base / "work"
    work.mkdir()
    (work / "valuesets").symlink_to(ROOT / "valuesets")
    release = snomed_rf2.write(base / "rf2", as_zip=True)
    shutil.move(release, work / SNOMED_ZIP)
    shutil.copy(icd10cm_xml(), work / ICD_XML)
    for name, (folder, top) in ZIPPED.items():
        with zipfile.ZipFile(work / name, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted(folder.rglob("*")):
                if f.is_file():
                    zf.write(f, top + f.relative_to(folder).as_posix())
    return work


def run_blocks(page: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the page's blocks in order in one namespace, as in a fresh interpreter (the
    other tests' Workbenches are not there); return how many ran."""
    import workbench.workbench

    monkeypatch.setattr(workbench.workbench, "_LIVE", weakref.WeakValueDictionary())
    namespace: dict[str, Any] = {"__name__": page.stem}
    name = page.relative_to(ROOT).as_posix()
    ran = 0
    try:
        for line, code, skip in blocks(page):
            if skip:
                continue
            try:
                exec(compile(code, f"{name}:{line}", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(
                    f"the {name} block at line {line} fails: {type(exc).__name__}: {exc}"
                ) from exc
            ran += 1
    finally:  # a page that leaves a server running (wb.serve() without `with`)
        for value in namespace.values():
            if isinstance(value, workbench.workbench.Workbench):
                for ref in value.__dict__.get("_servers", []):
                    if (server := ref()) is not None:
                        server.stop()
    return ran
