"""SNOMED CT RF2 import: reading, the store and its cache, the closure, versions, bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import snomed_rf2
from snomed_rf2 import opened

from workbench.errors import InvalidRequestError, ReleaseFormatError
from workbench.releases.closure import Closure
from workbench.releases.snomed import rf2
from workbench.releases.snomed.codesystem import SnomedCT
from workbench.releases.snomed.loader import KIND


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return snomed_rf2.write(tmp_path_factory.mktemp("rf2"))


@pytest.fixture(scope="module")
def sct(release: Path, tmp_path_factory: pytest.TempPathFactory) -> SnomedCT:
    cs, built = opened(KIND.load(release, tmp_path_factory.mktemp("cache")))
    assert built
    return cs


def test_files_are_found_by_kind(release: Path) -> None:
    kinds = sorted(f.kind for f in rf2.find_files(release))
    assert kinds == [
        "association",
        "concept",
        "concrete",
        "dependency",
        "description",
        "language",
        "mrcm_domain",
        "mrcm_range",
        "refset",
        "relationship",
    ]


def test_import_then_reopen_from_the_cache(release: Path, tmp_path: Path) -> None:
    first, built = opened(KIND.load(release, tmp_path))
    assert built and len(first) == len(snomed_rf2.CONCEPTS)
    stores = [p.name for p in tmp_path.iterdir()]
    assert len(stores) == 1 and stores[0].startswith("snomed-")
    again, built = opened(KIND.load(release, tmp_path))
    assert not built
    assert again.store.path == first.store.path
    assert again.lookup("22298006").display == "Myocardial infarction"


def test_zip_and_folder_give_the_same_release(tmp_path: Path, sct: SnomedCT) -> None:
    archive = snomed_rf2.write(tmp_path / "z", as_zip=True)
    assert KIND.detect(archive)
    zipped, _ = opened(KIND.load(archive, tmp_path / "cache"))
    assert zipped.version == sct.version
    assert zipped.concepts_frame().equals(sct.concepts_frame())


def test_version_from_the_module_dependency_refset(sct: SnomedCT) -> None:
    assert sct.version == snomed_rf2.VERSION
    assert sct.store.meta["module"] == snomed_rf2.CORE


def test_version_override_and_its_check(release: Path, tmp_path: Path) -> None:
    xsct = "http://snomed.info/xsct/31000003106/version/20250909"
    cs, _ = opened(KIND.load(release, tmp_path, version=xsct))
    assert cs.version == xsct
    with pytest.raises(InvalidRequestError, match="not a SNOMED CT version URI"):
        KIND.load(release, tmp_path, version="20250131")


def test_closure_of_a_polyhierarchy() -> None:
    # 0 <- 1, 0 <- 2, {1, 2} <- 3, 3 <- 4 ; 5 stands alone
    c = Closure.build(6, np.array([1, 2, 3, 3, 4]), np.array([0, 0, 1, 2, 3]))
    assert c.ancestors(4).tolist() == [0, 1, 2, 3]
    assert c.descendants(0).tolist() == [1, 2, 3, 4]
    assert c.parents[3].tolist() == [1, 2] and c.children[0].tolist() == [1, 2]
    assert c.is_below(4, 0) and not c.is_below(0, 4) and not c.is_below(5, 0)
    assert c.ancestors(5).tolist() == [] and c.descendants(5).tolist() == []


def test_the_hierarchy_comes_from_active_inferred_is_a(sct: SnomedCT) -> None:
    mi = sct.row("57054005")
    ancestors = {str(sct.store.ids[r]) for r in sct.store.closure.ancestors(mi)}
    assert ancestors == {"22298006", "56265001", "49601007", "64572001", "404684003", "138875005"}
    assert sct.subsumes("404684003", "57054005") == "subsumes"
    assert sct.subsumes("57054005", "404684003") == "subsumed-by"
    assert sct.subsumes("195967001", "57054005") == "not-subsumed"
    assert sct.subsumes("22298006", "22298006") == "equivalent"


def test_frames_come_from_the_store(sct: SnomedCT) -> None:
    concepts = sct.concepts_frame()
    assert len(concepts) == len(snomed_rf2.CONCEPTS)
    row = concepts.set_index("code").loc["22298006"]
    assert row["display"] == "Myocardial infarction"
    assert row["fsn"] == "Myocardial infarction (disorder)"
    assert bool(row["sufficientlyDefined"]) and not row["inactive"]
    assert list(row["parents"]) == ["56265001"] and row["status"] == "active"
    assert concepts.set_index("code").loc["307530000", "inactive"]
    designations = sct.designations_frame()
    mi = designations[designations["code"] == "22298006"]
    assert set(mi["value"]) == {
        "Myocardial infarction",
        "Myocardial infarction (disorder)",
        "Heart attack",
        "Cardiac infarction",
    }
    assert set(designations[designations["value"] == "Tumour mass"]["active"]) == {False}


# --- bad input: precise errors, nothing half-loaded -----------------------------------------

CONCEPT_PATH = f"Snapshot/Terminology/sct2_Concept_Snapshot_INT_{snomed_rf2.TIME}.txt"
HEADER = "id\teffectiveTime\tactive\tmoduleId\tdefinitionStatusId\r\n"


@pytest.mark.parametrize(
    ("edit", "message", "file_part", "line"),
    [
        (
            {CONCEPT_PATH: "id\teffectiveTime\tactive\tmoduleId\r\n1\t2\t3\t4\r\n"},
            "wrong header for a concept file",
            "sct2_Concept_Snapshot",
            1,
        ),
        (
            {
                CONCEPT_PATH: HEADER + "138875005\t20250131\t1\t900000000000207008\t9000\r\n"
                "404684003\t20250131\t1\r\n"
            },
            "expected 5 tab-separated columns, found 3",
            "sct2_Concept_Snapshot",
            3,
        ),
        (
            {
                CONCEPT_PATH: HEADER + "138875005\t20250131\t1\t900000000000207008\t9000\r\n"
                "40468400x\t20250131\t1\t900000000000207008\t9000\r\n"
            },
            "column id should be a number",
            "sct2_Concept_Snapshot",
            3,
        ),
    ],
)
def test_a_broken_file_names_the_file_and_line(
    tmp_path: Path, edit: dict[str, str], message: str, file_part: str, line: int
) -> None:
    release = snomed_rf2.write(tmp_path / "rel", edit=edit)
    cache = tmp_path / "cache"
    with pytest.raises(ReleaseFormatError, match=message) as caught:
        KIND.load(release, cache)
    assert file_part in str(caught.value.file)
    assert caught.value.line == line
    assert f"line {line}" in str(caught.value)
    assert not cache.exists() or not any(cache.iterdir())


def test_a_duplicate_concept_is_refused(tmp_path: Path) -> None:
    row = "138875005\t20250131\t1\t900000000000207008\t900000000000074008\r\n"
    release = snomed_rf2.write(tmp_path / "rel", edit={CONCEPT_PATH: HEADER + row + row})
    with pytest.raises(ReleaseFormatError, match="138875005 appears twice"):
        KIND.load(release, tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


def test_not_a_release(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert not KIND.detect(tmp_path)
    with pytest.raises(ReleaseFormatError, match=r"no sct2_Concept_…Snapshot… file"):
        KIND.load(tmp_path, tmp_path / "cache")
    with pytest.raises(ReleaseFormatError, match="no such file or folder"):
        KIND.load(tmp_path / "missing", tmp_path / "cache")


def test_a_truncated_zip(tmp_path: Path) -> None:
    archive = snomed_rf2.write(tmp_path / "z", as_zip=True)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReleaseFormatError, match=r"truncated|damaged"):
        KIND.load(archive, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_failed_import_leaves_the_cache_as_it_was(
    release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    good, _ = opened(KIND.load(release, cache))
    before = sorted(p.name for p in cache.iterdir())
    broken = snomed_rf2.write(
        tmp_path / "broken",
        edit={CONCEPT_PATH: HEADER + "1\t2\r\n"},
    )
    with pytest.raises(ReleaseFormatError):
        KIND.load(broken, cache)
    assert sorted(p.name for p in cache.iterdir()) == before
    assert good.lookup("57054005").display == "Acute myocardial infarction"
    # an import interrupted half-way leaves no store behind either
    from workbench.releases.snomed import importer

    def boom(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    other = snomed_rf2.write(tmp_path / "other", edit={"Snapshot/Refset/extra.txt": "x"})
    shutil.copy(release / CONCEPT_PATH, other / CONCEPT_PATH)
    with open(other / CONCEPT_PATH, "a", encoding="utf-8") as f:
        f.write("999999001\t20250131\t1\t900000000000207008\t900000000000074008\r\n")
    monkeypatch.setattr(importer, "_displays", boom)
    with pytest.raises(KeyboardInterrupt):
        KIND.load(other, cache)
    assert sorted(p.name for p in cache.iterdir()) == before
    assert os.listdir(cache) == before


def test_pickles_as_its_store_folder(sct: SnomedCT) -> None:
    import pickle

    data = pickle.dumps(sct)
    assert len(data) < 2000
    again = pickle.loads(data)
    assert again.version == sct.version
    assert again.lookup("57054005").display == "Acute myocardial infarction"


def test_other_refsets_keep_their_extra_columns_as_text(tmp_path: Path) -> None:
    header = (
        "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\tmapGroup\t"
        "mapPriority\tmapRule\tmapAdvice\tmapTarget\tcorrelationId\tmapCategoryId\r\n"
    )
    row = (
        "60000000-0000-4000-8000-000000000001\t20250131\t1\t449080006\t447562003\t22298006\t1\t1"
        "\tTRUE\tALWAYS I21.9\tI21.9\t447561005\tNOT-A-NUMBER\r\n"
    )
    release = snomed_rf2.write(
        tmp_path / "rel",
        edit={
            "Snapshot/Refset/Map/der2_iisssccRefset_ExtendedMapSnapshot_INT_20250131.txt": header
            + row
        },
    )
    cs, _ = opened(KIND.load(release, tmp_path / "cache"))
    assert {str(cs.store.ids[r]) for r in np.flatnonzero(cs.evaluate("^ 447562003"))} == {
        "22298006"
    }


def test_a_damaged_store_is_imported_again(release: Path, tmp_path: Path) -> None:
    first, _ = opened(KIND.load(release, tmp_path))
    (first.store.path / "up.npy").unlink()
    again, built = opened(KIND.load(release, tmp_path))
    assert built and again.lookup("57054005").display == "Acute myocardial infarction"
    (again.store.path / "concepts.arrow").write_bytes(b"not arrow")
    third, built = opened(KIND.load(release, tmp_path))
    assert built and third.subsumes("404684003", "57054005") == "subsumes"
