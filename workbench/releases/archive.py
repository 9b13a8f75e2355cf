"""The files of a release as distributed: a folder, or a zip archive (checked for damage)."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import ReleaseFormatError
from workbench.releases.hashing import tracked


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release: its kind and where it is (a path, or a member of a zip)."""

    kind: str
    name: str
    archive: Path | None = None

    def open(self) -> io.BufferedIOBase | Any:
        """Open the file for binary reading (hashed as it is read during an import:
        ``hashing.tracked``)."""
        if self.archive is None:
            return tracked(self.name, open(self.name, "rb"))
        with zipfile.ZipFile(self.archive) as zf:
            return tracked(label(self), io.BytesIO(zf.read(self.name)))

    def read(self) -> bytes:
        """The whole file's bytes."""
        with self.open() as stream:
            data: bytes = stream.read()
        return data


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
    path is missing, or is a file that is not a readable zip (truncated or corrupt).
    """
    root = Path(path)
    if root.is_dir():
        return [(str(f), None) for f in sorted(root.rglob("*")) if f.is_file()]
    if root.is_file() and zipfile.is_zipfile(root):
        try:
            with zipfile.ZipFile(root) as zf:
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
