"""Archives are unpacked as streams and under limits (``workbench.unpacking``).

A table of archive bombs (the inputs of issue 25, small, with limits lowered through
``UnpackLimits`` where the defaults would let a small input through): each is refused with an
ArchiveLimitError (413 ``too-long``) whose text names the archive, the member and the limit,
within a time bound, and leaves nothing in the release cache. Then the memory bound: a
release whose member unpacks to 128 MiB of blank lines (a valid file, so only memory tells),
loaded with the ratio limit out of the way in a child process, peaks far below the member's
size over the child's baseline (``ru_maxrss``). ``benchmarks/bench_archives.py`` runs the
full-size inputs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import archive_bombs as bombs
import pytest

import server as server_script
from workbench import Workbench, unpacking
from workbench.errors import ArchiveLimitError
from workbench.releases.loading import ReleaseSummary
from workbench.unpacking import UnpackLimits

MIB = 1 << 20
DEFAULTS = UnpackLimits()


def load_release(path: Path) -> ReleaseSummary:
    return Workbench().load_release(path, cache_dir=path.parent / "cache", progress=False)


def load_package(path: Path) -> object:
    return Workbench().load(path)


def members(path: Path) -> list[str]:
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            return zf.namelist()
    with tarfile.open(path) as archive:
        return archive.getnames()


# id, builder, padding (bytes), limits, loader, limit refused, member named (None: any)
ROWS = [
    pytest.param(
        bombs.loinc_zip, 4 * MIB, DEFAULTS, load_release, "ratio", bombs.LOINC_MEMBER,
        id="loinc-Loinc.csv-bomb",
    ),
    pytest.param(
        bombs.snomed_zip, 2 * MIB, UnpackLimits(member_bytes=MIB, ratio=10**6), load_release,
        "member_bytes", bombs.SNOMED_MEMBER, id="snomed-padded-description",
    ),
    pytest.param(
        bombs.package_tgz, 2 * MIB, UnpackLimits(member_bytes=MIB, ratio=10**6), load_package,
        "member_bytes", bombs.PACKAGE_MEMBER, id="tgz-big-member",
    ),
    pytest.param(
        bombs.package_tgz, 2 * MIB, UnpackLimits(resource_bytes=MIB, ratio=10**6), load_package,
        "resource_bytes", bombs.PACKAGE_MEMBER, id="tgz-big-resource",
    ),
    pytest.param(
        bombs.package_tgz, 4 * MIB, DEFAULTS, load_package, "ratio", bombs.PACKAGE_MEMBER,
        id="tgz-ratio-bomb",
    ),
    pytest.param(
        bombs.rxnorm_zip, 4 * MIB, DEFAULTS, load_release, "ratio", bombs.RXNORM_MEMBER,
        id="rxnorm-unread-member-bomb",
    ),
    pytest.param(
        bombs.icd10cm_zip, 4 * MIB, DEFAULTS, load_release, "ratio", bombs.ICD10CM_MEMBER,
        id="icd10cm-tabular-bomb",
    ),
    pytest.param(
        bombs.loinc_zip_spread, 8 * MIB, DEFAULTS, load_release, "ratio", None,
        id="zip-bomb-spread-over-members",
    ),
    pytest.param(
        lambda dest, padding: bombs.package_tgz(dest, padding, spread=True), 8 * MIB,
        DEFAULTS, load_package, "ratio", None, id="tgz-bomb-spread-over-members",
    ),
    pytest.param(
        bombs.loinc_zip, 0, UnpackLimits(total_bytes=10_000), load_release, "total_bytes", None,
        id="zip-total",
    ),
    pytest.param(
        lambda dest, padding: bombs.package_tgz(dest, padding, extra=100), 0,
        UnpackLimits(total_bytes=4_000), load_package, "total_bytes", None, id="tgz-total",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("build", "padding", "limits", "load", "limit", "member"), ROWS)
def test_an_archive_over_the_limits_is_refused_naming_the_member(
    tmp_path: Path,
    build: Callable[[Path, int], Path],
    padding: int,
    limits: UnpackLimits,
    load: Callable[[Path], object],
    limit: str,
    member: str | None,
) -> None:
    archive = build(tmp_path / ("bomb.tgz" if load is load_package else "bomb.zip"), padding)
    started = time.perf_counter()
    with unpacking.limits_in_force(limits), pytest.raises(ArchiveLimitError) as caught:
        load(archive)
    assert time.perf_counter() - started < 5
    error = caught.value
    assert error.limit == limit
    assert error.member == member if member is not None else error.member in members(archive)
    assert error.maximum == getattr(limits, limit) and error.found > error.maximum
    text = str(error)
    assert text.startswith(f"{archive}: the member {error.member!r} ")
    assert f"the limit {limit} is {getattr(limits, limit):,}" in text
    outcome = error.to_outcome()["issue"][0]
    assert (error.status, outcome["code"], outcome["details"]["text"]) == (413, "too-long", text)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_zip_bomb_is_refused_before_any_member_is_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By the sizes in the zip's central directory: no member is read at all."""
    archive = bombs.loinc_zip(tmp_path / "bomb.zip", 64 * MIB)
    reads: list[int] = []
    real = zipfile.ZipExtFile.read

    def counted(self: zipfile.ZipExtFile, n: int = -1) -> bytes:
        reads.append(n)
        return real(self, n)

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counted)
    with pytest.raises(ArchiveLimitError, match=r"'Loinc_2\.80/LoincTable/Loinc\.csv' unpacks to"):
        load_release(archive)
    assert reads == []


CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from workbench import Workbench, unpacking
    unpacking.configure(unpacking.UnpackLimits(ratio=10**6))
    wb = Workbench()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    path = Path(sys.argv[1])
    if path.suffix == ".zip":
        summary = wb.load_release(path, cache_dir=path.parent / "cache", progress=False)
        loaded = summary.concepts
    else:
        loaded = len(wb.load(path).codesystems)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"loaded": loaded, "over_baseline": (peak - base) * 1024}))
    """
)


@pytest.mark.parametrize("build", [bombs.loinc_zip, bombs.snomed_zip], ids=["loinc", "snomed"])
def test_a_member_is_streamed_not_held(tmp_path: Path, build: Callable[[Path, int], Path]) -> None:
    """A valid member of 128 MiB (blank lines) is read in a child process whose peak memory
    grows by well under the member's size (about 50 MB: a few of the reader's 4 MiB blocks;
    it grew by twice the size when a member was read whole: its bytes, then a copy)."""
    size = 128 * MIB
    archive = build(tmp_path / "padded.zip", size)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(archive)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    figures = json.loads(done.stdout)
    (tmp_path / "plain").mkdir()
    plain = load_release(build(tmp_path / "plain" / "release.zip", 0))
    assert figures["loaded"] == plain.concepts  # the padding is blank lines: the same release
    assert figures["over_baseline"] < size * 0.6, figures


# --- configuration ---------------------------------------------------------------------------


def test_configuration() -> None:
    limits = UnpackLimits.from_options(["member_bytes=64M", "ratio=50", "total_bytes=1_000"])
    assert (limits.member_bytes, limits.ratio, limits.total_bytes) == (64 * MIB, 50, 1000)
    assert UnpackLimits.from_options(["total_bytes=2GiB"]).total_bytes == 2 << 30
    assert unpacking.configured() == DEFAULTS
    with unpacking.limits_in_force(limits):
        assert unpacking.configured() is limits
    assert unpacking.configured() == DEFAULTS
    for bad in ("member=3", "ratio=x", "ratio=0", "member_bytes=-1", "total_bytes=1.5G"):
        with pytest.raises(ValueError, match="unpack limit"):
            UnpackLimits.from_options([bad])


def test_the_server_takes_the_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``server.py --unpack-limit`` applies to the releases it loads at start: one over the
    limits stops the start with the error (exit status 2)."""
    archive = bombs.snomed_zip(tmp_path / "bomb.zip", 2 * MIB)
    args = ["--unpack-limit", "member_bytes=1M", "--unpack-limit", "ratio=1000000"]
    assert server_script.parse_args(args).unpack_limit == ["member_bytes=1M", "ratio=1000000"]
    previous = unpacking.configured()
    try:
        status = server_script.main(
            [*args, "--no-default-content", "--release", str(archive), "--release-cache",
             str(tmp_path / "cache")]
        )  # fmt: skip
    finally:
        unpacking.configure(previous)
    assert status == 2
    error = capsys.readouterr().err
    assert f"the member {bombs.SNOMED_MEMBER!r} unpacks to" in error
    assert "the limit member_bytes is 1,048,576" in error
    assert server_script.main(["--unpack-limit", "ratio=lots", "--no-default-content"]) == 2
    assert unpacking.configured() == previous
