"""The release cache's bookkeeping: content keys, imports in private folders, locks.

- **Content key.** A store is named ``{kind}-{key}``, the key a SHA-256 over the content of
  every release file the import read (with the kind and its store format). The files are
  hashed *while the import reads them*: readers open release files through ``tracked``, which
  feeds the bytes to a digest on their way (``reading`` collects them), so a first import
  costs no extra pass. Each store records, in ``meta.json`` under ``release``, a cheap
  ``signature`` of the release (file names and sizes) and the digest of every file. A load
  whose signature matches a store's hashes the release once (``digests``) to find the store
  of that content; no match means the release changed (``changed`` says which file). The
  store also notes where the files were and their status (device, inode, size, modification
  and *change* time, which no tool can set back): while these hold, the key holds and
  reopening reads no release file (``seen_in``), as git trusts its index. ``verify=True``
  hashes the release again whatever the status says.
- **Private import folders.** An import writes into ``{kind}-{signature}.tmp-{pid}-{token}``,
  whose ``.owner`` file its process holds locked (``flock``) until the folder is renamed into
  place or removed. ``sweep`` removes the folders whose owner is gone (a lock nobody holds,
  or, without an ``.owner`` file, a process id that is not running): killed imports leave
  nothing behind for longer than the next load.
- **One import per release at a time.** ``exclusive`` holds a lock file per release
  signature, so a second process importing the same release waits and then reopens what the
  first one made; ``place`` renames a finished store into place, keeping an intact store that
  is already there (and replacing a damaged one).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from workbench.errors import ReleaseFormatError
from workbench.releases import integrity
from workbench.releases.archive import ReleaseFile, label
from workbench.releases.hashing import Digest, Reads

if sys.platform != "win32":
    import fcntl

_CHUNK = 1 << 20
#: Release files whose status changed less than this many seconds before they were looked at
#: are hashed again on the next load (their times may not tell a later change apart yet).
RACY = 2.0
_SEEN = 8
_TMP = re.compile(r"\.tmp-(\d+)(?:-[0-9a-f]+)?$")


def complete(reads: Reads, files: list[ReleaseFile]) -> dict[str, Digest]:
    """The digest of every file: as the import read it, else hashed now (a file the import
    did not read to its end). Raises ReleaseFormatError when a file changed while it was
    imported."""
    out: dict[str, Digest] = {}
    for file in files:
        name = label(file)
        seen = reads.found.get(name)
        found = seen or hash_file(file)
        if name in reads.changed or found != (seen or found):
            raise ReleaseFormatError("the file changed while it was imported", file=name)
        out[name] = found
    return out


def _open(file: ReleaseFile) -> IO[bytes]:
    """A release file's bytes as a stream (a zip member decompressed as it is read)."""
    if file.archive is None:
        return open(file.name, "rb")
    archive = zipfile.ZipFile(file.archive)
    try:
        return archive.open(file.name)
    finally:
        archive.close()  # the member keeps the archive's file open until it is closed


def hash_file(file: ReleaseFile) -> Digest:
    """The digest of one release file, read once in chunks."""
    digest, size = hashlib.sha256(), 0
    try:
        with _open(file) as stream:
            while chunk := stream.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ReleaseFormatError(f"unreadable ({exc})", file=label(file)) from exc
    return Digest(size, digest.hexdigest())


def digests(files: list[ReleaseFile]) -> dict[str, Digest]:
    """The digest of every release file (one pass over their bytes)."""
    return {label(file): hash_file(file) for file in files}


def _base(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def key_of(found: dict[str, Digest], salt: str) -> str:
    """The content key: the files' base names and digests (in name order), with ``salt``."""
    digest = hashlib.sha256(salt.encode())
    for name, one in sorted(found.items(), key=lambda item: (_base(item[0]), item[1].sha256)):
        digest.update(f"\0{_base(name)}\0{one.size}\0{one.sha256}".encode())
    return digest.hexdigest()[:20]


def signature(files: list[ReleaseFile], salt: str) -> str:
    """A cheap name of a release: its files' base names and sizes, with ``salt`` (what finds
    the stores a load hashes the release against)."""
    digest = hashlib.sha256(salt.encode())
    archives: dict[Path, dict[str, int]] = {}
    for file in files:
        if file.archive is None:
            size = Path(file.name).stat().st_size
        else:
            if file.archive not in archives:
                with zipfile.ZipFile(file.archive) as zf:
                    archives[file.archive] = {i.filename: i.file_size for i in zf.infolist()}
            size = archives[file.archive].get(file.name, -1)
        digest.update(f"\0{_base(file.name)}\0{size}".encode())
    return digest.hexdigest()[:12]


def identities(files: list[ReleaseFile]) -> dict[str, list[int]] | None:
    """Where each file is and its status (device, inode, size, modification and change times
    in nanoseconds; a zip member's are its archive's). None when one is missing, or changed
    less than ``RACY`` seconds ago: a change within the clock's tick could then go unseen."""
    now = time.time_ns()
    out: dict[str, list[int]] = {}
    for file in files:
        try:
            st = Path(file.name if file.archive is None else file.archive).stat()
        except OSError:
            return None
        if now - max(st.st_ctime_ns, st.st_mtime_ns) < RACY * 1e9:
            return None
        out[label(file)] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return out


def release_record(
    found: dict[str, Digest], sig: str, key: str, seen: dict[str, list[int]] | None
) -> dict[str, Any]:
    """What a store keeps of the release it was imported from (``meta.json``'s ``release``):
    the signature, the content key, every file's digest, where the files were (``places``)
    and their status when they were read there (``seen``)."""
    return {
        "signature": sig,
        "key": key,
        "files": files_record(found),
        "places": [sorted(found)],
        "seen": [seen] if seen else [],
    }


def seen_in(stores: list[Path], seen: dict[str, list[int]]) -> Path | None:
    """The store whose release files were read where they are now, their status unchanged
    since (its content key holds without reading them again), or None."""
    for store in stores:
        record = recorded_release(store).get("seen")
        if isinstance(record, list) and seen in record:
            return store
    return None


def remember(store: Path, files: list[ReleaseFile], seen: dict[str, list[int]] | None) -> None:
    """Note in a store's record that its release is also at the place of ``files``, with the
    status ``seen`` (kept: the last ``_SEEN`` of each)."""
    release = recorded_release(store)
    places, statuses = release.get("places"), release.get("seen")
    if not isinstance(places, list) or not isinstance(statuses, list):
        return
    place = sorted(label(f) for f in files)
    if place in places and (seen is None or seen in statuses):
        return
    if place not in places:
        places = [*places, place][-_SEEN:]
    if seen is not None and seen not in statuses:
        statuses = [*statuses, seen][-_SEEN:]
    with contextlib.suppress(OSError, ValueError):
        annotate(store, {**release, "places": places, "seen": statuses})


def recorded_release(folder: Path) -> dict[str, Any]:
    """A store's ``release`` record (empty when it has none or is unreadable)."""
    try:
        found = json.loads((folder / "meta.json").read_text()).get("release")
    except (OSError, ValueError, AttributeError):
        return {}
    return found if isinstance(found, dict) else {}


def files_record(found: dict[str, Digest]) -> dict[str, dict[str, Any]]:
    """The size and SHA-256 of every file, by base name (a ``release`` record's ``files``)."""
    return {_base(n): {"size": d.size, "sha256": d.sha256} for n, d in sorted(found.items())}


def changed(before: dict[str, Any], now: dict[str, Any]) -> str:
    """Which files differ between two ``release`` records' ``files``."""
    files = before.get("files")
    was: dict[str, Any] = files if isinstance(files, dict) else {}
    differ = sorted(n for n in now.keys() | was.keys() if now.get(n) != was.get(n))
    return ", ".join(differ) if differ else "its content"


def previous(stores: list[Path], places: list[str], made: Path) -> Path | None:
    """The last store (but ``made``) imported from files at these places, or None: what a
    release with other file sizes replaces."""
    found = [
        store
        for store in stores
        if store != made and sorted(places) in (recorded_release(store).get("places") or [])
    ]
    return max(found, key=lambda p: p.stat().st_mtime_ns, default=None)


def annotate(store: Path, release: dict[str, Any]) -> None:
    """Add the ``release`` record to a finished store's ``meta.json`` (rewritten atomically)."""
    meta = json.loads((store / "meta.json").read_text())
    meta["release"] = release
    (store / "meta.json.new").write_text(json.dumps(meta, indent=1))
    os.replace(store / "meta.json.new", store / "meta.json")
    integrity.sync_folder(store)


# --- locks, private import folders, the sweep ----------------------------------------------------


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` (waiting for another holder: process or thread); it is
    removed when released. Without ``flock`` (Windows), or in a cache this process cannot
    write, nothing is locked, and ``place`` alone keeps stores whole."""
    if sys.platform == "win32":
        yield
        return
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError:  # a cache this process may not write: reopening needs no lock
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            mine = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:  # its holder removed it as we waited: take a new one
            mine = False
        if mine:
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


class ImportFolder:
    """A private folder for one import, ``{stem}.tmp-{pid}-{token}`` in the cache, with an
    ``.owner`` file this process holds locked until the folder is removed (``with``)."""

    def __init__(self, cache: Path, stem: str) -> None:
        self.path = cache / f"{stem}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        self._fd: int | None = None

    def __enter__(self) -> ImportFolder:
        self.path.mkdir(parents=True)
        owner = self.path / ".owner"
        self._fd = os.open(owner, os.O_CREAT | os.O_RDWR, 0o644)
        if sys.platform != "win32":
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(self._fd, f"{os.getpid()}\n".encode())
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _running(pid: int) -> bool:
    """True when a process of that id runs (or may: one of another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs, as someone else
        return True
    return True


def _owned(folder: Path, pid: int) -> bool:
    """True when the import that made ``folder`` may still run: its ``.owner`` lock is held,
    or, without one, its process id runs."""
    owner = folder / ".owner"
    if sys.platform == "win32" or not owner.is_file():
        return _running(pid)
    try:
        fd = os.open(owner, os.O_RDWR)
    except OSError:
        return _running(pid)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: the import runs
        return True
    finally:
        os.close(fd)  # releases the lock taken just now
    return False


def sweep(cache: Path) -> list[str]:
    """Remove the temporary folders of imports whose process is gone; say which."""
    notes: list[str] = []
    try:
        entries = list(cache.iterdir())
    except OSError:
        return notes
    for entry in entries:
        found = _TMP.search(entry.name)
        if found is None or not entry.is_dir() or _owned(entry, int(found.group(1))):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            notes.append(
                f"removed {entry.name}: the temporary folder of an import that did not "
                f"finish (its process {found.group(1)} is gone)"
            )
    return notes


def place(store: Path, dest: Path, store_format: int) -> str | None:
    """Rename the finished ``store`` to ``dest``. An intact store already at ``dest``
    (another process imported the same release) is kept and ``store`` dropped; a damaged
    one is replaced, and then what was wrong with it is returned."""
    replaced = None
    for _attempt in range(3):
        try:
            os.replace(store, dest)
            return replaced
        except OSError:
            if not dest.exists():
                raise
        why = integrity.problem(dest, store_format)
        if why is None:
            shutil.rmtree(store, ignore_errors=True)
            return None
        replaced = why
        discard(dest)
    raise OSError(f"could not put the store in place at {dest}")


def discard(store: Path) -> None:
    """Remove a store that cannot be trusted: renamed aside first (a temporary folder of
    this process, which ``sweep`` removes should this one die), then deleted."""
    aside = store.with_name(f"{store.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    with contextlib.suppress(FileNotFoundError):
        os.replace(store, aside)
    shutil.rmtree(aside, ignore_errors=True)
