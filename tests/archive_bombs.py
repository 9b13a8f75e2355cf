"""Archives that unpack to far more than they weigh, written by the tests and by
``benchmarks/bench_archives.py`` (which runs them at full size): a LOINC release zip whose
``Loinc.csv`` is padded, a SNOMED CT RF2 zip whose description file is padded, a FHIR package
tarball holding one big resource, an RxNorm zip with a padded member the loader never reads,
an ICD-10-CM zip whose tabular XML is padded.

The padding is blank lines in the CSV files (which a CSV reader skips: the release is valid
whatever its size, so only the limits or the memory tell) and spaces inside the JSON
resource (valid JSON). Every builder writes its big member in chunks, so it needs no memory
in proportion to it.
"""

from __future__ import annotations

import io
import itertools
import json
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import snomed_rf2

DATA = Path(__file__).resolve().parent / "data"
LOINC_TOP = "Loinc_2.80"
LOINC_MEMBER = f"{LOINC_TOP}/LoincTable/Loinc.csv"
SNOMED_TOP = f"SnomedCT_Test_{snomed_rf2.TIME}"
SNOMED_MEMBER = (
    f"{SNOMED_TOP}/Snapshot/Terminology/sct2_Description_Snapshot-en_INT_{snomed_rf2.TIME}.txt"
)
PACKAGE_MEMBER = "package/CodeSystem-big.json"
RXNORM_MEMBER = "rrf/PADDING.RRF"
ICD10CM_MEMBER = "icd10cm_tabular_2026.xml"
PIECE = 256 << 10  # one member of a bomb spread over many
_CHUNK = 1 << 20


def _padding(size: int, fill: bytes) -> Iterator[bytes]:
    """``size`` bytes of ``fill`` repeated, in chunks."""
    block = fill * (_CHUNK // len(fill))
    while size > 0:
        piece = block[: min(size, len(block))]
        size -= len(piece)
        yield piece


def _deflated(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _zip_folder(zf: zipfile.ZipFile, folder: Path, top: str, skip: str | None = None) -> None:
    for file in sorted(folder.rglob("*")):
        name = "/".join(part for part in (top, file.relative_to(folder).as_posix()) if part)
        if file.is_file() and name != skip:
            zf.writestr(_deflated(name), file.read_bytes())


def loinc_zip(dest: Path, padding: int) -> Path:
    """The test LOINC release as a zip, ``Loinc.csv`` followed by ``padding`` blank lines'
    bytes."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        _zip_folder(zf, DATA / "loinc-release", LOINC_TOP, skip=LOINC_MEMBER)
        head = (DATA / "loinc-release" / "LoincTable" / "Loinc.csv").read_bytes()
        with zf.open(_deflated(LOINC_MEMBER), "w", force_zip64=True) as out:
            out.write(head)
            for piece in _padding(padding, b"\n"):
                out.write(piece)
    return dest


def loinc_zip_spread(dest: Path, padding: int) -> Path:
    """The test LOINC release as a zip, with ``padding`` bytes of blank lines spread over
    extra members of ``PIECE`` bytes each (every one too small to count alone)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        _zip_folder(zf, DATA / "loinc-release", LOINC_TOP)
        for i in range(padding // PIECE):
            zf.writestr(_deflated(f"{LOINC_TOP}/Padding/piece{i:05d}.txt"), b"\n" * PIECE)
    return dest


def snomed_zip(dest: Path, padding: int) -> Path:
    """The test SNOMED CT release (``tests/snomed_rf2.py``) as a zip, its English description
    file followed by ``padding`` bytes of blank lines."""
    files = snomed_rf2.files()
    member = SNOMED_MEMBER.removeprefix(f"{SNOMED_TOP}/")
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            if name != member:
                zf.writestr(_deflated(f"{SNOMED_TOP}/{name}"), text.encode("utf-8"))
        with zf.open(_deflated(SNOMED_MEMBER), "w", force_zip64=True) as out:
            out.write(files[member].encode("utf-8"))
            for piece in _padding(padding, b"\r\n"):
                out.write(piece)
    return dest


def rxnorm_zip(dest: Path, padding: int) -> Path:
    """The test RxNorm release as a zip, with one more member of ``padding`` zero bytes that
    the loader never reads."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        _zip_folder(zf, DATA / "rxnorm-release", "")
        with zf.open(_deflated(RXNORM_MEMBER), "w", force_zip64=True) as out:
            for piece in _padding(padding, b"\0"):
                out.write(piece)
    return dest


def icd10cm_zip(dest: Path, padding: int) -> Path:
    """A zip of an ICD-10-CM tabular XML (one chapter, one code) with ``padding`` blank lines
    before its closing tag."""
    head = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<ICD10CM.tabular><version>2026</version>'
        b"<chapter><name>1</name><desc>Certain infectious diseases (A00-B99)</desc>"
        b'<section id="A00-A09"><desc>Intestinal infectious diseases (A00-A09)</desc>'
        b"<diag><name>A00</name><desc>Cholera</desc></diag></section></chapter>\n"
    )
    with (
        zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open(_deflated(ICD10CM_MEMBER), "w", force_zip64=True) as out,
    ):
        out.write(head)
        for piece in _padding(padding, b"\n"):
            out.write(piece)
        out.write(b"</ICD10CM.tabular>\n")
    return dest


class _Stream(io.RawIOBase):
    """Bytes made on demand: ``head``, ``size`` spaces, ``tail`` (a big member's content)."""

    def __init__(self, head: bytes, size: int, tail: bytes) -> None:
        self._parts = itertools.chain([head], _padding(size, b" "), [tail])
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._left:
            part = next(self._parts, None)
            if part is None:
                return 0
            self._left = part
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def _add(archive: tarfile.TarFile, name: str, data: bytes | _Stream, size: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = 499162500
    archive.addfile(info, io.BytesIO(data) if isinstance(data, bytes) else io.BufferedReader(data))


def package_tgz(dest: Path, padding: int, *, extra: int = 0, spread: bool = False) -> Path:
    """A FHIR package tarball: ``package.json``, ``extra`` small ValueSets, and
    ``package/CodeSystem-big.json``, a CodeSystem with ``padding`` spaces in it (``spread``:
    ``padding`` zero bytes over members ``package/other/piece….bin`` of ``PIECE`` bytes
    each instead)."""
    head = json.dumps(
        {
            "resourceType": "CodeSystem",
            "url": "http://example.org/CodeSystem/big",
            "status": "active",
            "content": "complete",
            "concept": [{"code": "a", "display": "A"}],
        }
    ).encode()[:-1]
    with tarfile.open(dest, "w:gz") as archive:
        manifest = json.dumps({"name": "example.bombs", "version": "1.0.0"}).encode()
        _add(archive, "package/package.json", manifest, len(manifest))
        for i in range(extra):
            vs = json.dumps(
                {"resourceType": "ValueSet", "url": f"http://example.org/vs/{i}", "status": "draft"}
            ).encode()
            _add(archive, f"package/ValueSet-{i}.json", vs, len(vs))
        if spread:
            for i in range(padding // PIECE):
                _add(archive, f"package/other/piece{i:05d}.bin", b"\0" * PIECE, PIECE)
        elif padding:
            _add(archive, PACKAGE_MEMBER, _Stream(head, padding, b"}"), len(head) + padding + 1)
    return dest
