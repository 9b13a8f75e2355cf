"""The release cache cannot lie (issue 25, point 3), on the small synthetic releases:

- a release changed in place (one text replaced by another of the same length, the file's
  time kept) is imported again, saying which file changed, and serves the new text;
- a damaged store (random bytes, a file cut or gone, a broken meta.json) is imported again,
  saying which file and why; a change the cheap check cannot see is found by ``verify=True``
  and after an unclean shutdown;
- the temporary folder of an import killed with SIGKILL is removed by the next load (one of a
  running import is kept);
- two processes importing the same release at once both succeed, with one store left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import snomed_rf2
from http_support import TOKEN, client, values
from test_release_kinds import RELEASES, _zip

from workbench import Workbench
from workbench.releases import integrity, kinds, release_cache
from workbench.releases.archive import ReleaseFile, label
from workbench.releases.snomed.loader import KIND as SNOMED

ROOT = Path(__file__).resolve().parent.parent
SCT = "http://snomed.info/sct"
MAKERS = dict(RELEASES)
DESCRIPTIONS = f"sct2_Description_Snapshot-en_INT_{snomed_rf2.TIME}.txt"

# kind, file (a glob under the release), text before, after (same length), system, code, display
CHANGES = [
    ("snomed", f"**/{DESCRIPTIONS}", "\tDisease\t", "\tAilment\t", SCT, "64572001", "Ailment"),
    (
        "loinc",
        "**/Loinc.csv",
        '"Glucose [Mass/volume] in Serum or Plasma"',
        '"Glukose [Mass/volume] in Serum or Plasma"',
        "http://loinc.org",
        "2345-7",
        "Glukose [Mass/volume] in Serum or Plasma",
    ),
    (
        "rxnorm",
        "**/RXNCONSO.RRF",
        "|acetaminophen|",
        "|acetaminophem|",
        "http://www.nlm.nih.gov/research/umls/rxnorm",
        "161",
        "acetaminophem",
    ),
    (
        "icd10cm",
        "*.xml",
        "<desc>Cholera</desc>",
        "<desc>Kholera</desc>",
        "http://hl7.org/fhir/sid/icd-10-cm",
        "A00",
        "Kholera",
    ),
]


def _replace_keeping_time(path: Path, before: str, after: str) -> None:
    """Replace a text by another of the same length, the file's size and times kept."""
    assert len(before.encode()) == len(after.encode())
    stat = path.stat()
    data = path.read_bytes()
    assert before.encode() in data
    path.write_bytes(data.replace(before.encode(), after.encode(), 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size


@pytest.mark.parametrize("racy", [0.0, 3600.0], ids=["status trusted", "status too recent"])
@pytest.mark.parametrize(
    ("kind", "pattern", "before", "after", "system", "code", "display"),
    CHANGES,
    ids=[c[0] for c in CHANGES],
)
def test_a_release_changed_in_place_is_imported_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    racy: float,
    kind: str,
    pattern: str,
    before: str,
    after: str,
    system: str,
    code: str,
    display: str,
) -> None:
    monkeypatch.setattr(release_cache, "RACY", racy)  # 0: reopening trusts the files' status
    path = MAKERS[kind](tmp_path / "release")
    cache = tmp_path / "cache"
    first = Workbench().load_release(path, cache_dir=cache, progress=False)
    assert first.imported and first.reason is None
    again = Workbench().load_release(path, cache_dir=cache, progress=False)
    assert (again.imported, again.reason, again.cache) == (False, None, first.cache)
    assert "reopened" in repr(again)
    root = path if path.is_dir() else path.parent
    changed = next(root.glob(pattern))
    _replace_keeping_time(changed, before, after)
    wb = Workbench()
    third = wb.load_release(path, cache_dir=cache, progress=False)
    assert third.imported and third.cache != first.cache
    assert third.reason == (
        f"the release changed since it was imported into {Path(first.cache).name}: "
        f"other content in {changed.name}"
    )
    assert f"imported again ({third.reason})" in repr(third)
    assert wb.lookup(system, code).display == display
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [Path(first.cache).name, Path(third.cache).name]
    )  # both contents stay cached, nothing else is left


# kind, file, before, after (another length), system, code, display
RESIZED = [
    ("snomed", f"**/{DESCRIPTIONS}", "\tDisease\t", "\tDiseases\t", SCT, "64572001", "Diseases"),
    (
        "rxnorm",
        "**/RXNCONSO.RRF",
        "|acetaminophen|",
        "|paracetamol|",
        "http://www.nlm.nih.gov/research/umls/rxnorm",
        "161",
        "paracetamol",
    ),
]


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
@pytest.mark.parametrize(
    ("kind", "pattern", "before", "after", "system", "code", "display"),
    RESIZED,
    ids=[c[0] for c in RESIZED],
)
def test_a_release_changed_in_size_is_imported_again_saying_so(
    tmp_path: Path,
    as_zip: bool,
    kind: str,
    pattern: str,
    before: str,
    after: str,
    system: str,
    code: str,
    display: str,
) -> None:
    folder = MAKERS[kind](tmp_path / "release")
    path = _zip(folder) if as_zip else folder
    cache = tmp_path / "cache"
    first = Workbench().load_release(path, cache_dir=cache, progress=False)
    changed = next(folder.glob(pattern))
    changed.write_bytes(changed.read_bytes().replace(before.encode(), after.encode(), 1))
    if as_zip:
        path.unlink()
        _zip(folder)
    wb = Workbench()
    again = wb.load_release(path, cache_dir=cache, progress=False)
    assert again.imported and again.cache != first.cache
    assert again.reason == (
        f"the release changed since it was imported into {Path(first.cache).name}: "
        f"other content in {changed.name}"
    )
    assert wb.lookup(system, code).display == display


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
@pytest.mark.parametrize("kind", list(MAKERS))
def test_a_first_import_hashes_the_files_as_it_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, as_zip: bool
) -> None:
    path = MAKERS[kind](tmp_path / "release")
    if as_zip:
        path = _zip(path)
    hashed: list[str] = []
    monkeypatch.setattr(release_cache, "hash_file", lambda file: hashed.append(file.name))
    summary = Workbench().load_release(path, cache_dir=tmp_path / "cache", progress=False)
    assert summary.imported and hashed == []  # no second pass: every digest came from the read
    record = release_cache.recorded_release(Path(summary.cache))
    files = kinds.release_kind(kind).files(kinds.release_kind(kind).locate(path))
    assert files is not None and len(record["files"]) == len(files)
    digests = {label(f): release_cache.Digest(*_sha256(f)) for f in files}
    assert record["key"] == release_cache.key_of(digests, f"{kind}-format{_format(kind)}")
    assert Path(summary.cache).name == f"{kind}-{record['key']}"


def _sha256(file: ReleaseFile) -> tuple[int, str]:
    with file.open() as stream:
        data = stream.read()
    return len(data), hashlib.sha256(data).hexdigest()


def _format(kind: str) -> int:
    return kinds.release_kind(kind).store_class.FORMAT


def test_reopening_reads_no_release_file_while_their_status_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release_cache, "RACY", 0.0)
    release = snomed_rf2.write(tmp_path / "release", as_zip=True)
    first = Workbench().load_release(release, cache_dir=tmp_path / "cache", progress=False)
    hashed: list[str] = []
    real = release_cache.hash_file

    def counted(file: Any) -> Any:
        hashed.append(file.name)
        return real(file)

    monkeypatch.setattr(release_cache, "hash_file", counted)
    again = Workbench().load_release(release, cache_dir=tmp_path / "cache", progress=False)
    assert (again.imported, again.cache, hashed) == (False, first.cache, [])
    verified = Workbench().load_release(
        release, cache_dir=tmp_path / "cache", progress=False, verify=True
    )
    assert (verified.imported, verified.cache) == (False, first.cache)
    assert len(hashed) == len(SNOMED.files(SNOMED.locate(release)))  # every file, once
    moved = release.rename(tmp_path / "moved.zip")  # another place: hashed once, then known
    hashed.clear()
    for _ in range(2):
        Workbench().load_release(moved, cache_dir=tmp_path / "cache", progress=False)
    assert len(hashed) == len(SNOMED.files(SNOMED.locate(moved)))


def _flip(offset: Callable[[int], int]) -> Callable[[Path], None]:
    def damage(file: Path) -> None:
        data = bytearray(file.read_bytes())
        at = offset(len(data))
        data[at] ^= 0xFF
        file.write_bytes(bytes(data))

    return damage


def _random_same_size(file: Path) -> None:
    file.write_bytes(os.urandom(file.stat().st_size))


# id, file, damage, verify, imported again, reason (after "cannot be trusted: ")
DAMAGE: list[tuple[str, str, Callable[[Path], None], bool, bool, str | None]] = [
    (
        "random bytes, same size",
        "children.npy",
        _random_same_size,
        False,
        True,
        "children.npy differs from what the import wrote (its first or last bytes changed)",
    ),
    (
        "random bytes, other size",
        "children.npy",
        lambda f: f.write_bytes(os.urandom(100)),
        False,
        True,
        "children.npy has 100 bytes, the import wrote {size}",
    ),
    ("file deleted", "up.npy", lambda f: f.unlink(), False, True, "up.npy is missing"),
    (
        "meta.json broken",
        "meta.json",
        lambda f: f.write_bytes(b"\x00{not json"),
        False,
        True,
        "its meta.json is unreadable",
    ),
    ("a byte past the checked ends", "children.npy", _flip(lambda n: n - 40), False, False, None),
    (
        "the same byte, verify=True",
        "children.npy",
        _flip(lambda n: n - 40),
        True,
        True,
        "children.npy differs from what the import wrote (its SHA-256 changed)",
    ),
]


@pytest.mark.parametrize(
    ("file", "damage", "verify", "imported", "reason"),
    [row[1:] for row in DAMAGE],
    ids=[row[0] for row in DAMAGE],
)
def test_a_damaged_store_is_imported_again_saying_why(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    file: str,
    damage: Callable[[Path], None],
    verify: bool,
    imported: bool,
    reason: str | None,
) -> None:
    monkeypatch.setattr(integrity, "EDGE", 32)  # the cheap check reads 32 bytes at each end
    release = snomed_rf2.write(tmp_path / "release")
    store = Path(Workbench().load_release(release, cache_dir=tmp_path, progress=False).cache)
    size = (store / file).stat().st_size
    damage(store / file)
    wb = Workbench()
    summary = wb.load_release(release, cache_dir=tmp_path, progress=False, verify=verify)
    assert summary.imported is imported and summary.cache == str(store)
    if reason is None:
        assert summary.reason is None
    else:
        want = f"the cached store {store.name} cannot be trusted: {reason.format(size=size)}"
        assert summary.reason is not None and summary.reason.startswith(want)
        assert wb.lookup(SCT, "57054005").display == "Acute myocardial infarction"
        assert wb.subsumes(SCT, "404684003", "57054005") == "subsumes"
        assert integrity.problem(store, SNOMED.store_class.FORMAT, full=True) is None


def _child(script: str, cache: Path, release: Path, *extra: str) -> subprocess.Popen[str]:
    """A Python process running ``script`` with the worktree's package."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(cache), str(release), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


KILLED = """
    import os, signal, sys
    from workbench.releases.snomed.loader import KIND

    def progress(message):
        if message == "transitive closure":  # halfway through writing the store
            os.kill(os.getpid(), signal.SIGKILL)

    KIND.load(sys.argv[2], sys.argv[1], progress=progress)
"""


def _killed_import(cache: Path, release: Path) -> Path:
    """The temporary folder an import killed with SIGKILL left in ``cache``."""
    child = _child(KILLED, cache, release)
    _out, err = child.communicate(timeout=120)
    assert child.returncode == -9, err
    (left,) = [p for p in cache.iterdir() if ".tmp-" in p.name]
    assert (left / ".owner").read_text() == f"{child.pid}\n"
    return left


def test_the_folder_of_a_killed_import_is_removed_by_the_next(tmp_path: Path) -> None:
    release = snomed_rf2.write(tmp_path / "release")
    cache = tmp_path / "cache"
    left = _killed_import(cache, release)
    assert any(left.rglob("*.arrow"))  # what the import had written
    summary = Workbench().load_release(release, cache_dir=cache, progress=False)
    assert summary.imported and summary.reason is None
    assert summary.notes == (
        f"removed {left.name}: the temporary folder of an import that did not finish "
        f"(its process {left.name.split('.tmp-')[1].split('-')[0]} is gone)",
    )
    assert f"; removed {left.name}" in repr(summary)
    assert [p.name for p in cache.iterdir()] == [Path(summary.cache).name]


def test_an_unclean_shutdown_makes_the_next_load_verify_every_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(integrity, "EDGE", 32)
    release = snomed_rf2.write(tmp_path / "release")
    cache = tmp_path / "cache"
    store = Path(Workbench().load_release(release, cache_dir=cache, progress=False).cache)
    _flip(lambda n: n - 40)(store / "children.npy")  # beyond what the cheap check reads
    other = snomed_rf2.write(tmp_path / "other", edit=snomed_rf2.concept_file(_one_concept()))
    _killed_import(cache, other)
    summary = Workbench().load_release(release, cache_dir=cache, progress=False)
    assert summary.imported and len(summary.notes) == 1
    assert summary.reason == (
        f"the cached store {store.name} cannot be trusted: children.npy differs from what "
        "the import wrote (its SHA-256 changed)"
    )


def _one_concept() -> str:
    header = "id\teffectiveTime\tactive\tmoduleId\tdefinitionStatusId\r\n"
    return (
        header + f"138875005\t{snomed_rf2.TIME}\t1\t{snomed_rf2.CORE}\t{snomed_rf2.PRIMITIVE}\r\n"
    )


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


# id, the folder (made in the cache, while the stack is open), removed by the sweep
SWEPT: list[tuple[str, Callable[[Path, contextlib.ExitStack], Path], bool]] = [
    (
        "running import (its owner lock held)",
        lambda cache, stack: (
            stack.enter_context(release_cache.ImportFolder(cache, "snomed-x")).path
        ),
        False,
    ),
    (
        "no owner file, its process alive",
        lambda cache, _: cache / f"x.tmp-{os.getpid()}-0a1b",
        False,
    ),
    ("no owner file, its process gone", lambda cache, _: cache / f"x.tmp-{_dead_pid()}-0a1b", True),
    ("older name, its process gone", lambda cache, _: cache / f"x.tmp-{_dead_pid()}", True),
]


@pytest.mark.parametrize(("make", "removed"), [r[1:] for r in SWEPT], ids=[r[0] for r in SWEPT])
def test_the_sweep_removes_only_folders_of_dead_imports(
    tmp_path: Path, make: Callable[[Path, contextlib.ExitStack], Path], removed: bool
) -> None:
    with contextlib.ExitStack() as stack:
        folder = make(tmp_path, stack)
        folder.mkdir(exist_ok=True)
        (folder / "part.npy").write_bytes(b"half")
        notes = release_cache.sweep(tmp_path)
        assert folder.exists() is not removed
        assert [n.split(":")[0] for n in notes] == ([f"removed {folder.name}"] if removed else [])


CONCURRENT = """
    import contextlib, json, os, sys, time
    from pathlib import Path
    from workbench.releases import release_cache
    from workbench.releases.snomed.loader import KIND

    if sys.argv[4] == "nolock":  # as on a system without flock: only the atomic rename
        release_cache.exclusive = lambda path: contextlib.nullcontext()
    go = Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.01)
    loaded = KIND.load(sys.argv[2], sys.argv[1])
    print(json.dumps({"imported": loaded.imported, "store": str(loaded.store),
                      "concepts": len(loaded.provider)}))
"""


@pytest.mark.parametrize("mode", ["lock", "nolock"], ids=["file lock", "no lock (rename only)"])
def test_two_processes_importing_one_release_both_succeed(tmp_path: Path, mode: str) -> None:
    release = snomed_rf2.write(tmp_path / "release", as_zip=True)
    cache, go = tmp_path / "cache", tmp_path / "go"
    children = [_child(CONCURRENT, cache, release, str(go), mode) for _ in range(2)]
    time.sleep(0.5)
    go.touch()
    results: list[dict[str, Any]] = []
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err
        results.append(json.loads(out))
    assert {r["store"] for r in results} == {str(cache / Path(results[0]["store"]).name)}
    assert [r["concepts"] for r in results] == [26, 26]
    if mode == "lock":
        assert sorted(r["imported"] for r in results) == [False, True]
    else:
        assert any(r["imported"] for r in results)
    assert [p.name for p in cache.iterdir()] == [Path(results[0]["store"]).name]
    assert (
        integrity.problem(Path(results[0]["store"]), SNOMED.store_class.FORMAT, full=True) is None
    )


def test_a_store_damaged_by_random_bytes_serves_after_the_reimport(tmp_path: Path) -> None:
    """Before: random bytes in children.npy were "reopened", then every lookup, validation and
    expansion over HTTP was a 500."""
    release = snomed_rf2.write(tmp_path / "release")
    store = Path(Workbench().load_release(release, cache_dir=tmp_path, progress=False).cache)
    _random_same_size(store / "children.npy")
    wb = Workbench()
    summary = wb.load_release(release, cache_dir=tmp_path, progress=False)
    assert summary.imported and "children.npy differs" in str(summary.reason)
    with wb.serve(port=0, token=TOKEN) as server, client(server.url) as http:
        lookup = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": "57054005"})
        assert lookup.status_code == 200
        assert values(lookup.json(), "display") == ["Acute myocardial infarction"]
        subsumes = http.get(
            "/CodeSystem/$subsumes",
            params={"system": SCT, "codeA": "404684003", "codeB": "57054005"},
        )
        assert (subsumes.status_code, values(subsumes.json(), "outcome")) == (200, ["subsumes"])
        expand = http.get("/ValueSet/$expand", params={"url": f"{SCT}?fhir_vs=ecl/<< 64572001"})
        assert expand.status_code == 200
        codes = {c["code"] for c in expand.json()["expansion"]["contains"]}
        assert {"64572001", "57054005"} <= codes
        check = http.get(
            "/ValueSet/$validate-code",
            params={"url": f"{SCT}?fhir_vs=ecl/<< 404684003", "system": SCT, "code": "57054005"},
        )
        assert (check.status_code, values(check.json(), "result")) == (200, [True])
