"""The release kind registry (``workbench.releases.kinds``): detection per kind, from a folder
or a zip; an unrecognised file; two kinds claiming one file; unknown and built-in kinds by
name; a kind registered from outside loaded end to end through ``Workbench.load_release``."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import snomed_rf2
from test_release_bad_input import ICD_XML

from workbench import Workbench
from workbench.errors import InvalidRequestError, ReleaseFormatError
from workbench.releases import kinds
from workbench.releases.kinds import BuiltinKind, Progress, ReleaseKind
from workbench.releases.storage import ColumnarStore, write_table
from workbench.terminology.codesystem import CodeSystemIndex
from workbench.terminology.provider import CodeSystemProvider

DATA = Path(__file__).resolve().parent / "data"


def _snomed(folder: Path) -> Path:
    return snomed_rf2.write(folder / "snomed")


def _loinc(folder: Path) -> Path:
    return Path(shutil.copytree(DATA / "loinc-release", folder / "loinc"))


def _rxnorm(folder: Path) -> Path:
    return Path(shutil.copytree(DATA / "rxnorm-release", folder / "rxnorm"))


def _icd10cm(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "icd10cm_tabular_2026.xml"
    path.write_text(ICD_XML, encoding="utf-8")
    return path


def _zip(path: Path) -> Path:
    archive = path.with_name(path.name + ".zip")
    with zipfile.ZipFile(archive, "w") as zf:
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file():
                    zf.write(file, file.relative_to(path).as_posix())
        else:
            zf.write(path, path.name)
    return archive


RELEASES: list[tuple[str, Callable[[Path], Path]]] = [
    ("snomed", _snomed),
    ("loinc", _loinc),
    ("rxnorm", _rxnorm),
    ("icd10cm", _icd10cm),
]


def test_the_registry_lists_every_kind() -> None:
    assert kinds.names() == ("snomed", "loinc", "icd10cm", "rxnorm")
    assert [k.name for k in kinds.builtin_kinds()] == [
        "ucum",
        "bcp47",
        "bcp13",
        "iso-country",
        "iso-subdivision",
        "iso-currency",
    ]
    assert all(isinstance(k, ReleaseKind) and not k.builtin for k in kinds.release_kinds())
    assert all(k.builtin for k in kinds.builtin_kinds())


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
@pytest.mark.parametrize(("name", "make"), RELEASES, ids=[n for n, _ in RELEASES])
def test_each_kind_is_detected(
    tmp_path: Path, name: str, make: Callable[[Path], Path], as_zip: bool
) -> None:
    path = make(tmp_path)
    if as_zip:
        path = _zip(path)
    assert kinds.detect(path).name == name
    others = [k.name for k in kinds.release_kinds() if k.name != name and k.detect(path)]
    assert others == []


@pytest.mark.parametrize(("name", "make"), RELEASES, ids=[n for n, _ in RELEASES])
def test_each_kind_loads_into_one_shape(
    tmp_path: Path, name: str, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path / "release")
    kind = kinds.release_kind(name)
    first = kind.load(path, tmp_path / "cache")
    assert first.imported and first.store.parent == tmp_path / "cache"
    assert first.store.name.startswith(f"{name}-")
    assert isinstance(first.provider, CodeSystemProvider)
    assert first.provider.url == kind.system and len(first.provider) > 0
    again = kind.load(path, tmp_path / "cache")
    assert not again.imported and again.store == first.store


@pytest.mark.parametrize(("name", "make"), RELEASES, ids=[n for n, _ in RELEASES])
def test_a_store_of_another_format_or_damaged_is_imported_again(
    tmp_path: Path, name: str, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path / "release")
    kind = kinds.release_kind(name)
    store = kind.load(path, tmp_path / "cache").store
    meta = json.loads((store / "meta.json").read_text())
    (store / "meta.json").write_text(json.dumps({**meta, "format": meta["format"] - 1}))
    again = kind.load(path, tmp_path / "cache")
    assert again.imported and again.store == store and kind.store_class.is_store(store)
    (store / "concepts.arrow").write_bytes(b"not arrow")
    third = kind.load(path, tmp_path / "cache")
    assert third.imported and len(third.provider) == len(again.provider)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda t: t / "missing", "no such file or folder"),
        (lambda t: _write(t / "notes.txt", "hello"), "not a terminology release"),
        (lambda t: _write(t / "empty" / "notes.csv", "a,b\n"), "not a terminology release"),
        (lambda t: _write(t / "other.xml", "<root/>"), "not a terminology release"),
        (lambda t: _write(t / "cut.zip", "PK\x03\x04 truncated"), "damaged zip archive"),
    ],
    ids=["missing", "text-file", "folder", "other-xml", "truncated-zip"],
)
def test_an_unrecognised_path(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    path = make(tmp_path)
    with pytest.raises(ReleaseFormatError, match=message) as caught:
        kinds.detect(path)
    assert caught.value.file is not None and Path(caught.value.file).name == path.name


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path if path.name != "notes.csv" else path.parent


def test_two_kinds_claiming_one_folder(tmp_path: Path) -> None:
    both = tmp_path / "both"
    _snomed(both)
    _loinc(both)
    with pytest.raises(ReleaseFormatError, match=r"more than one kind: snomed .* and loinc"):
        kinds.detect(both)
    with pytest.raises(ReleaseFormatError, match="more than one kind"):
        Workbench().load_release(both, cache_dir=tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()
    summary = Workbench().load_release(
        both, kind="loinc", cache_dir=tmp_path / "cache", progress=False
    )
    assert summary.kind == "loinc" and summary.imported


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("cpt", r"Unknown release kind 'cpt' \(known: snomed, loinc, icd10cm, rxnorm\)"),
        ("", "Unknown release kind ''"),
        ("ucum", "'ucum' .* is built in and always loaded: it has no release files"),
    ],
)
def test_a_kind_by_name_that_cannot_be_loaded(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        kinds.release_kind(name)
    with pytest.raises(InvalidRequestError, match=message):
        Workbench().load_release(
            _icd10cm(tmp_path), kind=name, cache_dir=tmp_path / "c", progress=False
        )
    assert not (tmp_path / "c").exists()


# --- a kind from outside the package: one class, one registration -------------------------


class _CsvStore(ColumnarStore):
    FORMAT = 1


class _CsvKind(ReleaseKind[Path]):
    """A made-up terminology: ``codes.tiny`` with one ``code,display`` pair a line."""

    name = "tiny"
    title = "Tiny codes"
    system = "http://example.org/tiny"
    store_class = _CsvStore

    def locate(self, path: Path) -> Path:
        if path.suffix != ".tiny" or not path.is_file():
            raise ReleaseFormatError("not a .tiny file", file=str(path))
        return path

    def detect(self, path: Path) -> bool:
        return path.suffix == ".tiny"

    def fingerprint(self, source: Path) -> str:
        return hashlib.sha256(source.read_bytes()).hexdigest()[:12]

    def build(self, source: Path, folder: Path, progress: Progress) -> None:
        def write(tmp: Path) -> dict[str, str]:
            pairs = [line.split(",", 1) for line in source.read_text().splitlines()]
            table = pa.table(
                {
                    "code": [c for c, _ in pairs],
                    "display": [d for _, d in pairs],
                    "active": [True] * len(pairs),
                }
            )
            write_table(table, tmp / "concepts.arrow")
            return {"version": "1"}

        _CsvStore.build(folder, write)

    def open(self, folder: Path, version: str | None) -> CodeSystemProvider:
        store = _CsvStore(folder)
        displays = store.column("display", np.arange(store.n))
        concepts = [
            {"code": c, "display": d}
            for c, d in zip(store.codes.to_pylist(), displays, strict=True)
        ]
        meta = json.loads((folder / "meta.json").read_text())
        return CodeSystemIndex(
            {
                "resourceType": "CodeSystem",
                "url": self.system,
                "version": version or meta["version"],
                "content": "complete",
                "concept": concepts,
            }
        )


@pytest.fixture
def tiny() -> Iterator[_CsvKind]:
    kind = _CsvKind()
    kinds.register(kind)
    try:
        yield kind
    finally:
        kinds.unregister(kind.name)


def test_a_registered_kind_is_detected_and_loaded(tmp_path: Path, tiny: _CsvKind) -> None:
    path = tmp_path / "codes.tiny"
    path.write_text("a,Alpha\nb,Beta\n")
    assert kinds.detect(path) is tiny and "tiny" in kinds.names()
    wb = Workbench()
    summary = wb.load_release(path, cache_dir=tmp_path / "cache", progress=False)
    assert (summary.kind, summary.concepts, summary.imported) == ("tiny", 2, True)
    assert wb.lookup(tiny.system, "b").display == "Beta"
    again = Workbench().load_release(path, cache_dir=tmp_path / "cache", progress=False)
    assert not again.imported


def test_a_name_is_registered_once(tiny: _CsvKind) -> None:
    kinds.register(tiny)  # the same kind again: nothing changes
    with pytest.raises(ValueError, match="'tiny' is registered already"):
        kinds.register(_CsvKind())
    with pytest.raises(TypeError, match="not a ReleaseKind or BuiltinKind"):
        kinds.register(object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("system", "code"),
    [
        ("http://unitsofmeasure.org", "mg/dL"),
        ("urn:ietf:bcp:47", "en-US"),
        ("urn:ietf:bcp:13", "text/plain"),
        ("urn:iso:std:iso:3166", "US"),
        ("urn:iso:std:iso:3166:-2", "US-CA"),
        ("urn:iso:std:iso:4217", "EUR"),
    ],
)
def test_a_builtin_kind_gives_a_provider(system: str, code: str) -> None:
    (kind,) = [k for k in kinds.builtin_kinds() if k.system == system]
    assert isinstance(kind, BuiltinKind)
    provider = kind.provider()
    assert provider.url == kind.system
    assert Workbench().lookup(kind.system, code).display
