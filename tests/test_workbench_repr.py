"""``repr(wb)`` counts everything a Workbench holds: packages, value sets, code systems,
concept maps and the terminologies (releases and built-in ones) with their versions."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import orjson
import pytest
import snomed_rf2

from workbench import Workbench
from workbench.releases import kinds

LOINC_RELEASE = Path(__file__).parent / "data" / "loinc-release"
UCUM = "Unified Code for Units of Measure (UCUM) 2.2"
#: The built-in terminologies, as the repr shows them (UCUM first).
BUILT_IN = ", ".join(
    f"{p.resource['title']} {p.version or '(no version)'}"
    for p in (kind.provider() for kind in kinds.builtin_kinds())
)
CS = {"resourceType": "CodeSystem", "url": "http://x/cs", "content": "complete", "concept": []}
VS = {"resourceType": "ValueSet", "url": "http://x/vs", "compose": {"include": [{"system": "x"}]}}
CM = {"resourceType": "ConceptMap", "url": "http://x/cm"}


def _package(folder: Path, name: str, resources: list[dict[str, Any]]) -> Path:
    root = folder / name / "package"
    root.mkdir(parents=True)
    (root / "package.json").write_bytes(orjson.dumps({"name": name, "version": "1.0.0"}))
    for i, resource in enumerate(resources):
        (root / f"r{i}.json").write_bytes(orjson.dumps(resource))
    return root.parent


def _tarball(folder: Path, resources: list[dict[str, Any]]) -> Path:
    path = folder / "example.pkg-2.0.0.tgz"
    with tarfile.open(path, "w:gz") as archive:
        for i, resource in enumerate(resources):
            data = orjson.dumps(resource)
            info = tarfile.TarInfo(f"package/r{i}.json")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        pytest.param(
            [], f"0 ValueSets, 0 CodeSystems, 0 ConceptMaps; terminologies: {BUILT_IN}>", id="empty"
        ),
        pytest.param(
            [[CS, VS, CM]],
            f"1 ValueSet, 1 CodeSystem, 1 ConceptMap; terminologies: {BUILT_IN}>",
            id="resources",
        ),
        pytest.param(
            ["package:a.pkg", "package:b.pkg"],
            "2 packages (a.pkg#1.0.0, b.pkg#1.0.0), 1 ValueSet, 1 CodeSystem, 1 ConceptMap",
            id="two-packages",
        ),
        pytest.param(["tarball"], "1 package (example.pkg-2.0.0.tgz), 1 ValueSet", id="tgz"),
        pytest.param(
            ["snomed", "loinc"],
            f"terminologies: {BUILT_IN}, SNOMED CT {snomed_rf2.VERSION}, LOINC Code System 2.80>",
            id="releases",
        ),
    ],
)
def test_repr_counts_every_kind_of_content(tmp_path: Path, load: list[Any], expected: str) -> None:
    wb = Workbench()
    for item in load:
        if isinstance(item, list):
            wb.load(item, progress=False)
        elif item.startswith("package:"):
            wb.load(_package(tmp_path, item.split(":")[1], [CS, VS, CM]), progress=False)
        elif item == "tarball":
            wb.load(_tarball(tmp_path, [CS, VS, CM]), progress=False)
        elif item == "snomed":
            rf2 = snomed_rf2.write(tmp_path / "rf2")
            wb.load_release(rf2, cache_dir=tmp_path / "cache", progress=False)
        else:
            wb.load_release(LOINC_RELEASE, cache_dir=tmp_path / "cache", progress=False)
    text = repr(wb)
    assert text.startswith(f"<Workbench #{wb.serial}: ")
    assert expected in text, text
