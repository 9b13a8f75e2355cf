"""What a store records of the files it wrote, and the check of a store against it.

When a store is built (``storage.build_atomically``), every file it wrote is recorded in its
``meta.json`` under ``files``: the size, a digest of its first and last 64 KiB (``head``) and
a SHA-256 of the whole file (``sha256``). Then the files are flushed to disk (``fsync``) before
the folder is renamed into place, so that a store is either complete or absent even after a
power cut.

``problem(folder)`` checks a store before it is opened: cheaply (every recorded file there,
with its size and ``head`` digest: a few hundred KiB read however big the store) or, with
``full=True``, every byte against ``sha256``. It returns why the store cannot be trusted, or
None.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     folder = Path(tmp)
...     _ = (folder / "a.npy").write_bytes(b"x" * 100)
...     record = {"files": record_files(folder), "format": 1}
...     _ = (folder / "meta.json").write_text(json.dumps(record))
...     ok = problem(folder, 1)
...     _ = (folder / "a.npy").write_bytes(b"y" * 100)
...     (ok, problem(folder, 1))
(None, 'a.npy differs from what the import wrote (its first or last bytes changed)')
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

#: How much of each end of a file the cheap check reads.
EDGE = 1 << 16
_CHUNK = 1 << 20


def _edges(path: Path, size: int) -> str:
    """A digest of a file's size and its first and last ``EDGE`` bytes."""
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as fh:
        digest.update(fh.read(EDGE))
        if size > EDGE:
            fh.seek(max(EDGE, size - EDGE))
            digest.update(fh.read(EDGE))
    return digest.hexdigest()


def _whole(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def store_files(folder: Path) -> list[Path]:
    """The files of a store folder that are recorded: all but ``meta.json`` and dotfiles."""
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.name != "meta.json" and p.name[0] != "."
    )


def record_files(folder: Path) -> dict[str, dict[str, Any]]:
    """Size, ``head`` digest and SHA-256 of every file of a store folder, each flushed to
    disk first (``fsync``)."""
    out: dict[str, dict[str, Any]] = {}
    for path in store_files(folder):
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())
        size = path.stat().st_size
        out[path.name] = {"size": size, "head": _edges(path, size), "sha256": _whole(path)}
    return out


def sync_folder(folder: Path) -> None:
    """Flush a folder's entries (and ``meta.json``) to disk, where the system allows it."""
    for target in (folder / "meta.json", folder):
        if not target.exists():
            continue
        try:
            fd = os.open(target, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:  # some systems cannot fsync a directory
            pass
        finally:
            os.close(fd)


def problem(folder: Path, store_format: int, *, full: bool = False) -> str | None:
    """Why the store at ``folder`` cannot be trusted, or None when it checks.

    Cheap by default (sizes and the ``head`` digests); ``full=True`` reads every byte."""
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return "it has no meta.json (an unfinished import)"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as exc:
        return f"its meta.json is unreadable ({exc})"
    if not isinstance(meta, dict):
        return "its meta.json is not an object"
    if meta.get("format") != store_format:
        return f"it is of format {meta.get('format')}, this workbench writes {store_format}"
    files = meta.get("files")
    if not isinstance(files, dict) or not files:
        return "it does not record its files' digests (made by an older workbench)"
    for name, want in sorted(files.items()):
        why = _file_problem(folder / name, want, full)
        if why is not None:
            return f"{name} {why}"
    return None


def _file_problem(path: Path, want: Any, full: bool) -> str | None:
    """What is wrong with one recorded file, or None."""
    if not isinstance(want, dict):
        return "has a broken record in meta.json"
    try:
        size = path.stat().st_size
    except OSError:
        return "is missing"
    if size != want.get("size"):
        return f"has {size:,} bytes, the import wrote {want.get('size')}"
    try:
        if _edges(path, size) != want.get("head"):
            return "differs from what the import wrote (its first or last bytes changed)"
        if full and _whole(path) != want.get("sha256"):
            return "differs from what the import wrote (its SHA-256 changed)"
    except OSError as exc:
        return f"is unreadable ({exc})"
    return None
