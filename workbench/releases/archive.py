"""The files of a release as distributed: a folder, or a zip archive (checked for damage)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from workbench import unpacking
from workbench.errors import ReleaseFormatError
from workbench.releases.hashing import tracked


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release: its kind and where it is (a path, or a member of a zip)."""

    kind: str
    name: str
    archive: Path | None = None

    def open(self) -> IO[bytes]:
        """Open the file for binary reading, as a stream: a zip member is unpacked as it is
        read (never whole), and ends at the size the zip declares for it (checked against
        the unpack limits by ``list_files``). During an import the stream is hashed as it is
        read (``hashing.tracked``)."""
        if self.archive is None:
            return tracked(self.name, open(self.name, "rb"))
        with zipfile.ZipFile(self.archive) as zf:
            return tracked(label(self), zf.open(self.name))  # keeps the archive open


#: The bytes a CSV reader parses at a time (streamed files: memory holds a few blocks, not
#: the file), and the longest line the line-by-line readers take: a longer one is an error,
#: never read whole.
BLOCK_SIZE = LINE_LIMIT = 1 << 22


def first_line(file: ReleaseFile) -> bytes:
    """The file's first line, read alone (without a byte-order mark or the line end)."""
    with file.open() as stream:
        line = stream.readline(LINE_LIMIT)
    return line.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r\n")


def lines(file: ReleaseFile) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` for every line of the file (without the line end), streamed; a
    line longer than ``LINE_LIMIT`` raises ReleaseFormatError naming the file and line."""
    with file.open() as stream:
        number = 0
        while raw := stream.readline(LINE_LIMIT + 1):
            number += 1
            if len(raw) > LINE_LIMIT:
                raise ReleaseFormatError(
                    f"a line longer than {LINE_LIMIT:,} bytes", file=label(file), line=number
                )
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            yield number, raw.rstrip(b"\r\n")


def check_zip(path: str | Path) -> None:
    """ReleaseFormatError when ``path`` is a zip archive (by its first bytes) that cannot be
    read: truncated, or its central directory missing."""
    p = Path(path)
    if not p.is_file():
        return
    with open(p, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PK\x03\x04" and not zipfile.is_zipfile(p):
        raise ReleaseFormatError(
            "a damaged zip archive (truncated?): its central directory is missing", file=str(p)
        )


def label(file: ReleaseFile) -> str:
    """A name for messages: the path, or ``archive.zip!member``."""
    return f"{file.archive}!{file.name}" if file.archive is not None else file.name


def list_files(path: str | Path, what: str) -> list[tuple[str, Path | None]]:
    """Every file of a release folder or zip as ``(name, archive)`` (``archive`` is None for
    a folder's files, whose names are paths), sorted by name.

    Raises ReleaseFormatError (``what`` names the kind of release in the message) when the
    path is missing, or is a file that is not a readable zip (truncated or corrupt), and
    ArchiveLimitError when a zip's member is over the unpack limits (``workbench.unpacking``),
    before any member is unpacked.
    """
    root = Path(path)
    if root.is_dir():
        return [(str(f), None) for f in sorted(root.rglob("*")) if f.is_file()]
    if root.is_file() and zipfile.is_zipfile(root):
        try:
            with zipfile.ZipFile(root) as zf:
                unpacking.check_zip(str(root), zf.infolist())  # before unpacking anything
                names = zf.namelist()
                bad = zf.testzip()
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ReleaseFormatError(f"the zip archive is damaged ({exc})", file=str(root)) from exc
        if bad is not None:
            raise ReleaseFormatError(f"the zip member {bad} is damaged", file=str(root))
        return [(name, root) for name in sorted(names) if not name.endswith("/")]
    if root.is_file():
        raise ReleaseFormatError(
            f"not {what}: neither a folder nor a readable zip archive (truncated?)",
            file=str(root),
        )
    raise ReleaseFormatError("no such file or folder", file=str(root))


def names(path: str | Path) -> list[str]:
    """The file names of a folder or zip, cheaply (for detecting a release's kind): no
    member is checked, and anything unreadable or missing has none."""
    root = Path(path)
    if root.is_dir():
        return [str(f) for f in sorted(root.rglob("*")) if f.is_file()]
    try:
        with zipfile.ZipFile(root) as zf:
            return [name for name in zf.namelist() if not name.endswith("/")]
    except (zipfile.BadZipFile, OSError, EOFError):
        return []
