"""Loading files, Bundles, folders and packages; bad inputs leave the Workbench unchanged."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench import (
    InvalidResourceError,
    LoadError,
    LoadSummary,
    PackageNotFoundError,
    Workbench,
)

CS_URL = "http://example.org/fhir/CodeSystem/load"


def cs(name: str = "load", version: str = "1.0.0") -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "id": name,
        "url": f"http://example.org/fhir/CodeSystem/{name}",
        "version": version,
        "status": "active",
        "content": "complete",
        "concept": [{"code": "a", "display": "A"}],
    }


def vs(name: str = "load-vs", **compose: Any) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "id": name,
        "url": f"http://example.org/fhir/ValueSet/{name}",
        "version": "1.0.0",
        "status": "active",
        "compose": compose or {"include": [{"system": CS_URL}]},
    }


PATIENT = {"resourceType": "Patient", "id": "p1"}


def bundle(kind: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return {"resourceType": "Bundle", "type": kind, "entry": list(entries)}


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return path


def package_files(name: str = "example.pkg", version: str = "1.0.0") -> dict[str, Any]:
    return {
        "package/package.json": {"name": name, "version": version},
        "package/.index.json": {"index-version": 1, "files": []},
        "package/CodeSystem-load.json": cs(),
        "package/ValueSet-load-vs.json": vs(),
        "package/other/CodeSystem-extra.json": cs("extra"),
    }


def make_tgz(path: Path, files: dict[str, Any]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, content in files.items():
            data = json.dumps(content).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def extract(folder: Path, files: dict[str, Any]) -> Path:
    for name, content in files.items():
        write(folder / name, content)
    return folder


def single_file(tmp: Path) -> str:
    return str(write(tmp / "CodeSystem-load.json", cs()))


def collection(tmp: Path) -> Path:
    return write(
        tmp / "bundle.json",
        bundle("collection", {"resource": cs()}, {"resource": vs()}, {"resource": PATIENT}),
    )


def searchset(tmp: Path) -> Path:
    return write(
        tmp / "search.json",
        bundle(
            "searchset",
            {"resource": vs(), "search": {"mode": "match"}},
            {"resource": cs(), "search": {"mode": "include"}},
        ),
    )


def transaction(tmp: Path) -> Path:
    return write(
        tmp / "tx.json",
        bundle(
            "transaction",
            {"resource": cs(), "request": {"method": "PUT", "url": "CodeSystem/load"}},
            {"request": {"method": "DELETE", "url": "ValueSet/gone"}},
            {"resource": vs("gone"), "request": {"method": "DELETE", "url": "ValueSet/gone"}},
            {"resource": vs(), "request": {"method": "POST", "url": "ValueSet"}},
        ),
    )


def nested_bundle(tmp: Path) -> Path:
    inner = bundle("collection", {"resource": vs()})
    return write(tmp / "outer.json", bundle("collection", {"resource": cs()}, {"resource": inner}))


def folder(tmp: Path) -> Path:
    root = tmp / "defs"
    write(root / "CodeSystem-load.json", cs())
    write(root / "deeper" / "more" / "ValueSet-load-vs.json", vs())
    write(root / "deeper" / "Patient.json", PATIENT)
    write(root / "notes.txt", b"not json, not read")
    write(root / ".hidden.json", b"{broken")
    write(root / "package.json", {"name": "not-a-package-folder"})
    return root


def tgz(tmp: Path) -> Path:
    return make_tgz(tmp / "example.pkg-1.0.0.tgz", package_files())


def extracted(tmp: Path) -> Path:
    return extract(tmp / "pkg", package_files())


def inner_package_folder(tmp: Path) -> Path:
    return extract(tmp / "pkg", package_files()) / "package"


def cached_ref(tmp: Path) -> str:
    extract(tmp / "example.pkg#1.0.0", package_files())
    return "example.pkg#1.0.0"


def dict_list(tmp: Path) -> list[dict[str, Any]]:
    return [cs(), vs(), PATIENT]


@pytest.mark.parametrize(
    ("make", "files", "valuesets", "codesystems", "skipped"),
    [
        pytest.param(single_file, 1, 0, 1, {}, id="json-file"),
        pytest.param(collection, 1, 1, 1, {"Patient": 1}, id="bundle-collection"),
        pytest.param(searchset, 1, 1, 1, {}, id="bundle-searchset"),
        pytest.param(transaction, 1, 1, 1, {}, id="bundle-transaction-skips-delete"),
        pytest.param(nested_bundle, 1, 1, 1, {}, id="bundle-in-bundle"),
        pytest.param(folder, 3, 1, 1, {"Patient": 1}, id="folder-recursive"),
        pytest.param(tgz, 2, 1, 1, {}, id="tgz-package"),
        pytest.param(extracted, 2, 1, 1, {}, id="extracted-package"),
        pytest.param(inner_package_folder, 2, 1, 1, {}, id="package-subfolder"),
        pytest.param(cached_ref, 2, 1, 1, {}, id="cache-reference"),
        pytest.param(dict_list, 3, 1, 1, {"Patient": 1}, id="dicts"),
    ],
)
def test_load_sources(
    tmp_path: Path,
    make: Callable[[Path], Any],
    files: int,
    valuesets: int,
    codesystems: int,
    skipped: dict[str, int],
) -> None:
    wb = Workbench(package_cache=tmp_path)
    summary = wb.load(make(tmp_path), progress=False)
    assert (summary.files, len(summary.valuesets), len(summary.codesystems)) == (
        files,
        valuesets,
        codesystems,
    )
    assert dict(summary.skipped) == skipped
    assert summary.codesystems == (f"{CS_URL}|1.0.0",)
    assert len(wb.registry) == valuesets + codesystems
    if valuesets:
        expansion = wb.expand("http://example.org/fhir/ValueSet/load-vs")
        assert expansion.frame["code"].tolist() == ["a"]
    assert wb.registry.get("ValueSet", "http://example.org/fhir/ValueSet/gone") is None
    assert wb.registry.get("CodeSystem", "http://example.org/fhir/CodeSystem/extra") is None


def test_single_resource_dict() -> None:
    wb = Workbench()
    summary = wb.load(cs())
    assert (summary.source, summary.files, summary.codesystems) == (
        "CodeSystem",
        1,
        (f"{CS_URL}|1.0.0",),
    )


def test_summary_repr(tmp_path: Path) -> None:
    summary = Workbench().load(collection(tmp_path), progress=False)
    path = str(tmp_path / "bundle.json")
    assert repr(summary) == (
        f"<LoadSummary {path}: 1 ValueSet, 1 CodeSystem, 0 ConceptMaps from 1 file; "
        "1 other resource skipped (1 Patient)>"
    )
    assert str(summary) == f"Loaded {repr(summary)[len('<LoadSummary ') : -1]}"
    assert summary == LoadSummary(
        source=path,
        files=1,
        valuesets=("http://example.org/fhir/ValueSet/load-vs|1.0.0",),
        codesystems=(f"{CS_URL}|1.0.0",),
        skipped={"Patient": 1},
    )
    assert "<br>1 other resource skipped (1 Patient).</p>" in summary._repr_html_()


def bad_file(content: Any) -> Callable[[Path], tuple[Path, str]]:
    def make(tmp: Path) -> tuple[Path, str]:
        path = write(tmp / "bad.json", content)
        return path, str(path)

    return make


def bad_in_folder(tmp: Path) -> tuple[Path, str]:
    root = tmp / "mixed"
    write(root / "a" / "CodeSystem-one.json", cs("one"))
    write(root / "a" / "CodeSystem-two.json", cs("two"))
    write(root / "b" / "ValueSet-three.json", vs("three"))
    bad = write(root / "b" / "broken.json", b'{"resourceType": "ValueSet",')
    return root, str(bad)


def bad_bundle_entry(tmp: Path) -> tuple[Path, str]:
    path = write(
        tmp / "bundle.json",
        bundle("collection", {"resource": cs()}, {"resource": {"id": "no-type"}}),
    )
    return path, f"{path} (Bundle.entry[1])"


def truncated_tgz(tmp: Path) -> tuple[Path, str]:
    path = make_tgz(tmp / "broken.tgz", package_files())
    path.write_bytes(path.read_bytes()[:-40])
    return path, str(path)


def bad_member_tgz(tmp: Path) -> tuple[Path, str]:
    files = {**package_files(), "package/CodeSystem-bad.json": {"no": "type"}}
    path = make_tgz(tmp / "bad-member.tgz", files)
    return path, f"{path}:package/CodeSystem-bad.json"


def not_gzip_tgz(tmp: Path) -> tuple[Path, str]:
    path = write(tmp / "fake.tgz", b"this is not a tarball")
    return path, str(path)


def unknown_ref(tmp: Path) -> tuple[str, str]:
    return "no.such.package#1.0.0", "Package no.such.package#1.0.0"


def missing_path(tmp: Path) -> tuple[Path, str]:
    return tmp / "nowhere.json", str(tmp / "nowhere.json")


VSD = "ValueSet http://example.org/fhir/ValueSet/load-vs|1.0.0: compose.include[0]"


@pytest.mark.parametrize(
    ("make", "error", "text"),
    [
        pytest.param(bad_file(b"{not json"), LoadError, ": not valid JSON (", id="not-json"),
        pytest.param(
            bad_file([cs()]),
            LoadError,
            ": not a FHIR resource (a JSON object is needed)",
            id="json-array",
        ),
        pytest.param(
            bad_file({"id": "x"}),
            LoadError,
            ": not a FHIR resource (no resourceType)",
            id="no-type",
        ),
        pytest.param(
            bad_file(vs(include=[{"concept": [{"code": "a"}]}])),
            InvalidResourceError,
            f": {VSD} breaks vsd-1: it needs a system or a valueSet",
            id="vsd-1",
        ),
        pytest.param(
            bad_file(vs(include=[{"valueSet": ["http://x"], "concept": [{"code": "a"}]}])),
            InvalidResourceError,
            f": {VSD} breaks vsd-2: concepts and filters need a system",
            id="vsd-2",
        ),
        pytest.param(
            bad_file(
                vs(
                    include=[
                        {
                            "system": CS_URL,
                            "concept": [{"code": "a"}],
                            "filter": [{"property": "concept", "op": "is-a", "value": "a"}],
                        }
                    ]
                )
            ),
            InvalidResourceError,
            f": {VSD} breaks vsd-3: it cannot have both concepts and filters",
            id="vsd-3",
        ),
        pytest.param(
            bad_file(vs(include=[])),
            InvalidResourceError,
            ": ValueSet http://example.org/fhir/ValueSet/load-vs|1.0.0: compose has no include",
            id="no-include",
        ),
        pytest.param(bad_in_folder, LoadError, ": not valid JSON (", id="bad-file-in-folder"),
        pytest.param(
            bad_bundle_entry,
            LoadError,
            ": not a FHIR resource (no resourceType)",
            id="bad-bundle-entry",
        ),
        pytest.param(
            truncated_tgz, LoadError, ": truncated or corrupt package archive (", id="truncated-tgz"
        ),
        pytest.param(
            bad_member_tgz,
            LoadError,
            ": not a FHIR resource (no resourceType)",
            id="bad-member-in-tgz",
        ),
        pytest.param(
            not_gzip_tgz, LoadError, ": truncated or corrupt package archive (", id="not-a-tgz"
        ),
        pytest.param(
            unknown_ref,
            PackageNotFoundError,
            " is not in the FHIR package cache (",
            id="unknown-package",
        ),
        pytest.param(missing_path, LoadError, ": no such file or folder", id="missing-path"),
    ],
)
def test_bad_inputs_change_nothing(
    wb: Workbench,
    tmp_path: Path,
    make: Callable[[Path], tuple[Any, str]],
    error: type[Exception],
    text: str,
) -> None:
    wb.package_cache = tmp_path
    source, origin = make(tmp_path)
    before = (len(wb.registry), wb.registry.generation)
    with pytest.raises(error) as info:
        wb.load(source, progress=False)
    assert str(info.value).startswith(origin + text)
    assert (len(wb.registry), wb.registry.generation) == before


def test_bad_folder_loads_none_of_its_good_files(tmp_path: Path) -> None:
    wb = Workbench()
    root, _ = bad_in_folder(tmp_path)
    with pytest.raises(LoadError):
        wb.load(root, progress=False)
    assert len(wb.registry) == 0
    assert wb.registry.get("CodeSystem", "http://example.org/fhir/CodeSystem/one") is None
    (root / "b" / "broken.json").unlink()
    assert wb.load(root, progress=False).files == 3
    assert len(wb.registry) == 3


@pytest.mark.parametrize(
    ("progress", "shown"),
    [pytest.param(False, False, id="off"), pytest.param(True, True, id="on")],
)
def test_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], progress: bool, shown: bool
) -> None:
    root = folder(tmp_path)
    capsys.readouterr()
    Workbench().load(root, progress=progress)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert ("defs:   0%|" in captured.err) is shown
    assert ("0/3 [" in captured.err) is shown
    if not shown:
        assert captured.err == ""


@pytest.mark.parametrize(("progress", "shown"), [(None, False), (True, True), (False, False)])
def test_progress_bar_only_where_someone_sees_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], progress: bool | None, shown: bool
) -> None:
    """Before: a large load drew its bar into logs and pipes, one redraw after another."""
    for i in range(510):
        vs = {"resourceType": "ValueSet", "url": f"http://example.org/vs/{i}", "status": "active"}
        (tmp_path / f"vs{i}.json").write_text(json.dumps(vs))
    summary = Workbench().load(tmp_path, progress=progress)
    assert len(summary.valuesets) == 510
    assert ("file" in capsys.readouterr().err) is shown
