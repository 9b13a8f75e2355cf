"""The terminology kinds the workbench knows, and the registry of them.

A *release kind* (``ReleaseKind``) says how its release files are found (``locate``) and
recognised (``detect``), which of them the import reads (``files``: their content names its
store in the cache; else ``fingerprint`` does), how they are imported into a
``ColumnarStore`` (``build``) and how the store opens as a provider (``open``);
``ReleaseKind.load`` runs the same steps for every kind (``release_cache``): reopen the
cached store of this content once it checks, else import it (a changed release or a damaged
store is imported again, saying why), with the version claimed as soon as it is known. A
*built-in kind* (``BuiltinKind``, UCUM) has no release files: its provider is always there.

Kinds are registered here (``BUILT_IN`` names the modules of this package's kinds, each of
which defines ``KIND``; ``register`` adds another). ``detect`` asks every release kind
whether it reads a path, and ``release_kind`` finds one by name; both raise a precise error.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import threading
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import pyarrow as pa

from workbench.errors import InvalidRequestError, ReleaseFormatError
from workbench.releases import archive, hashing, integrity, release_cache
from workbench.releases.storage import ColumnarStore
from workbench.terminology.provider import CodeSystemProvider

Progress = Callable[[str], None]
#: ``claim(system, version)`` raises to refuse a system and version (one already loaded).
Claim = Callable[[str, str | None], None]
Source = TypeVar("Source")
#: Where release files are and their status (``release_cache.identities``).
Seen = dict[str, list[int]] | None

#: The modules of the kinds this package brings, in detection order; each defines ``KIND``.
BUILT_IN = (
    "workbench.releases.snomed.loader",
    "workbench.releases.loinc.loader",
    "workbench.releases.icd10cm.loader",
    "workbench.releases.rxnorm.loader",
    "workbench.releases.ucum.loader",
    "workbench.releases.codes.bcp47",
    "workbench.releases.codes.bcp13",
    "workbench.releases.codes.iso_country",
    "workbench.releases.codes.iso_subdivision",
    "workbench.releases.codes.iso_currency",
)
#: What opening a damaged store (a file deleted or truncated by hand) raises.
_DAMAGED = (OSError, ValueError, KeyError, TypeError, pa.ArrowException)


@dataclass(frozen=True)
class Loaded:
    """What loading a release gives, for every kind: the provider, the store folder it
    reads, whether the release was imported now (False: reopened from the cache), and why."""

    provider: CodeSystemProvider
    store: Path
    imported: bool
    #: Why a release that had been imported before was imported again (None: it was not,
    #: or never had been): the release changed, or its store was damaged.
    reason: str | None = None
    #: What else the load did or found (temporary folders of killed imports removed).
    notes: tuple[str, ...] = ()


class TerminologyKind(ABC):
    """A kind of terminology: its name (``load_release(kind=…)``), title and system."""

    name: ClassVar[str]
    title: ClassVar[str]
    system: ClassVar[str]
    #: True for a kind that is always loaded (no release files).
    builtin: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}: {self.title}>"


class BuiltinKind(TerminologyKind):
    """A terminology that is always there: its provider needs no release files."""

    builtin = True

    @abstractmethod
    def provider(self) -> CodeSystemProvider:
        """A new provider of the terminology."""


class ReleaseKind(TerminologyKind, Generic[Source]):
    """A terminology imported from its release files into a store in the release cache.

    ``Source`` is what ``locate`` finds (the release's files), handed to ``files`` (or
    ``fingerprint``) and ``build``.
    """

    #: The store class the kind imports into (its format names a store's layout).
    store_class: ClassVar[type[ColumnarStore]]

    @abstractmethod
    def locate(self, path: Path) -> Source:
        """The release's files at ``path``. Raises ReleaseFormatError when ``path`` is
        missing, unreadable or not a release of this kind (saying what is missing)."""

    @abstractmethod
    def detect(self, path: Path) -> bool:
        """True when ``path`` looks like a release of this kind (cheap: names or a file's
        first bytes; ``locate`` says what is wrong with it)."""

    def files(self, source: Source) -> list[archive.ReleaseFile] | None:
        """The release files the import reads: their content names the store (hashed as
        the import reads them through ``hashing.tracked``). None: ``fingerprint``
        names it."""
        return None

    def fingerprint(self, source: Source) -> str:
        """A short hash of the release's content (with the store's format): its store's
        name, for a kind whose ``files`` is None (a kind that lists its files needs none)."""
        files = self.files(source)
        if files is None:
            raise NotImplementedError(f"{type(self).__name__} defines no files nor fingerprint")
        return release_cache.key_of(release_cache.digests(files), self._salt())

    @abstractmethod
    def build(self, source: Source, folder: Path, progress: Progress) -> None:
        """Import the release into the store folder ``folder`` (atomically).

        Raises ReleaseFormatError naming the file (and line) of a broken release."""

    @abstractmethod
    def open(self, folder: Path, version: str | None) -> CodeSystemProvider:
        """The provider over the store at ``folder`` (``version`` overrides the release's)."""

    def check_version(self, version: str) -> str:
        """A version given by the caller, checked (InvalidRequestError when it cannot be a
        version of this kind)."""
        return version

    def version_before_import(self, source: Source, version: str | None) -> str | None:
        """The version the release will be loaded as when it can be known before importing
        it (the given one, or one the release's files name); None when only the import
        tells."""
        return version

    def load(
        self,
        path: str | Path,
        cache_dir: str | Path,
        *,
        version: str | None = None,
        progress: Progress | None = None,
        claim: Claim | None = None,
        verify: bool = False,
    ) -> Loaded:
        """Import (unless cached) and open a release.

        A cached store is reopened when it holds this release's content (its files' SHA-256,
        ``release_cache``) and checks (``integrity.problem``: sizes and digests of the ends
        of its files; every byte with ``verify=True``, and after temporary folders of killed
        imports were found); otherwise the release is imported again and ``Loaded.reason``
        says why. ``claim(system, version)`` is called before anything is imported when the
        version is known then, and again once the provider is open; it may raise to refuse
        them, and then a store imported just now is removed again (and the cache folder,
        when this made it and it is empty). Raises ReleaseFormatError for a broken release;
        no store is left of it.
        """
        if version is not None:
            version = self.check_version(version)
        source = self.locate(Path(path))
        cache = Path(cache_dir)
        early = self.version_before_import(source, version)
        if claim is not None and early is not None:
            claim(self.system, early)
        created = not cache.exists()
        cache.mkdir(parents=True, exist_ok=True)
        files = self.files(source)
        sig = self.fingerprint(source) if files is None else self._signature(files)
        with release_cache.exclusive(cache / f".{self.name}-{sig}.lock"):
            notes = tuple(release_cache.sweep(cache))  # after a wait, too: the holder may have died
            found, reason, seen = self._cached(files, cache, sig, verify or bool(notes))
            if found is not None:
                try:
                    provider = self.open(found, version)
                except _DAMAGED as exc:
                    reason = f"the cached store {found.name} did not open ({exc})"
                    release_cache.discard(found)
                else:
                    if claim is not None:
                        claim(provider.url, provider.version)
                    if files is not None:  # found here: the next load need not read it
                        release_cache.remember(found, files, seen)
                    return Loaded(provider, found, imported=False, notes=notes)
            folder, replaced = self._import(source, files, cache, sig, progress)
            if reason is None and replaced is not None:
                reason = f"the cached store {folder.name} cannot be trusted: {replaced}"
            if reason is None and files is not None:
                reason = self._replaced(files, cache, folder)
            refused: BaseException | None = None
            try:
                return self._opened(folder, version, claim, reason, notes)
            except BaseException as exc:  # refused once its version is known
                refused = exc
        if created:
            with contextlib.suppress(OSError):
                cache.rmdir()  # only when empty (the lock file is gone by now)
        raise refused

    def _salt(self) -> str:
        return f"{self.name}-format{self.store_class.FORMAT}"

    def _signature(self, files: list[archive.ReleaseFile]) -> str:
        try:
            return release_cache.signature(files, self._salt())
        except (OSError, zipfile.BadZipFile, EOFError) as exc:
            raise ReleaseFormatError(f"unreadable release ({exc})") from exc

    def _cached(
        self,
        files: list[archive.ReleaseFile] | None,
        cache: Path,
        sig: str,
        full: bool,
    ) -> tuple[Path | None, str | None, Seen]:
        """The cached store of this release when there is one to trust; else None and why
        the release is imported again (None: it never was). And the status of the release
        files taken before they were hashed (what the store may remember), else None."""
        folder = cache / f"{self.name}-{sig}"
        seen: Seen = None
        if files is not None:
            before = [
                d
                for d in sorted(cache.glob(f"{self.name}-*"))
                if ".tmp-" not in d.name
                and release_cache.recorded_release(d).get("signature") == sig
            ]
            if not before:
                return None, None, None  # never imported: the import hashes it as it reads
            seen = release_cache.identities(files)
            hit = None if full or seen is None else release_cache.seen_in(before, seen)
            if hit is not None:
                folder, seen = hit, None  # the files are where and as they were when read
            else:
                found = release_cache.digests(files)
                folder = cache / f"{self.name}-{release_cache.key_of(found, self._salt())}"
                if not folder.exists():
                    was = release_cache.recorded_release(before[0])
                    what = release_cache.changed(was, release_cache.files_record(found))
                    since = f"the release changed since it was imported into {before[0].name}"
                    return None, f"{since}: other content in {what}", None
        if not folder.exists():
            return None, None, None
        why = integrity.problem(folder, self.store_class.FORMAT, full=full)
        if why is not None:
            release_cache.discard(folder)
            return None, f"the cached store {folder.name} cannot be trusted: {why}", None
        return folder, None, seen

    def _replaced(self, files: list[archive.ReleaseFile], cache: Path, made: Path) -> str | None:
        """How the release at this place differs from the one imported from there before
        (other file sizes), or None when none was."""
        stores = [d for d in cache.glob(f"{self.name}-*") if ".tmp-" not in d.name]
        before = release_cache.previous(stores, [archive.label(f) for f in files], made)
        if before is None:
            return None
        what = release_cache.changed(
            release_cache.recorded_release(before),
            release_cache.recorded_release(made).get("files") or {},
        )
        return (
            f"the release changed since it was imported into {before.name}: other content in {what}"
        )

    def _import(
        self,
        source: Source,
        files: list[archive.ReleaseFile] | None,
        cache: Path,
        sig: str,
        progress: Progress | None,
    ) -> tuple[Path, str | None]:
        """Import the release in a private folder, hashing its files as they are read, and
        put the store in place under its content key; returns it and what was wrong with a
        damaged store it replaced there."""
        with release_cache.ImportFolder(cache, f"{self.name}-{sig}") as work:
            store = work.path / "store"
            seen = None if files is None else release_cache.identities(files)
            with hashing.reading() as reads:
                self.build(source, store, progress or (lambda _message: None))
            key, record = sig, {"signature": sig}
            if files is not None:
                found = release_cache.complete(reads, files)
                key = release_cache.key_of(found, self._salt())
                record = release_cache.release_record(found, sig, key, seen)
            release_cache.annotate(store, record)
            folder = cache / f"{self.name}-{key}"
            replaced = release_cache.place(store, folder, self.store_class.FORMAT)
        return folder, replaced

    def _opened(
        self,
        folder: Path,
        version: str | None,
        claim: Claim | None,
        reason: str | None,
        notes: tuple[str, ...],
    ) -> Loaded:
        """The provider of a store imported just now (removed again when refused)."""
        try:
            provider = self.open(folder, version)
            if claim is not None:
                claim(provider.url, provider.version)
        except BaseException:  # refused once its version is known: the store goes too
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return Loaded(provider, folder, imported=True, reason=reason, notes=notes)


# --- the registry ----------------------------------------------------------------------------

_KINDS: dict[str, TerminologyKind] = {}
_LOCK = threading.Lock()
_LOADED: list[bool] = []


def _kinds() -> dict[str, TerminologyKind]:
    """The registry, with this package's kinds in it (imported on first use)."""
    if not _LOADED:
        with _LOCK:
            if not _LOADED:
                for module in BUILT_IN:
                    kind = importlib.import_module(module).KIND
                    _KINDS.setdefault(kind.name, kind)
                _LOADED.append(True)
    return _KINDS


def register(kind: TerminologyKind) -> TerminologyKind:
    """Add a kind to the registry (after those registered before it); returns it.

    Raises ValueError when another kind already has its name."""
    if not isinstance(kind, ReleaseKind | BuiltinKind):
        raise TypeError(f"not a ReleaseKind or BuiltinKind: {kind!r}")
    kinds = _kinds()
    with _LOCK:
        found = kinds.get(kind.name)
        if found is not None and found is not kind:
            raise ValueError(f"a terminology kind named '{kind.name}' is registered already")
        kinds[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind from the registry (nothing happens when there is none of that name)."""
    kinds = _kinds()
    with _LOCK:
        kinds.pop(name, None)


def release_kinds() -> list[ReleaseKind[Any]]:
    """The kinds loaded from release files, in detection order."""
    return [k for k in _kinds().values() if isinstance(k, ReleaseKind)]


def builtin_kinds() -> list[BuiltinKind]:
    """The kinds that are always loaded (UCUM)."""
    return [k for k in _kinds().values() if isinstance(k, BuiltinKind)]


def names() -> tuple[str, ...]:
    """The names of the release kinds (what ``load_release(kind=…)`` accepts)."""
    return tuple(k.name for k in release_kinds())


def release_kind(name: str) -> ReleaseKind[Any]:
    """The release kind of that name. Raises InvalidRequestError for an unknown one, or a
    built-in kind (which has no release files)."""
    found = _kinds().get(name)
    if isinstance(found, ReleaseKind):
        return found
    if isinstance(found, BuiltinKind):
        raise InvalidRequestError(
            f"'{name}' ({found.title}) is built in and always loaded: it has no release files"
        )
    raise InvalidRequestError(f"Unknown release kind '{name}' (known: {', '.join(names())})")


def detect(path: str | Path) -> ReleaseKind[Any]:
    """The kind of release at ``path``.

    Raises ReleaseFormatError when the path is missing, a damaged zip, no release this
    workbench can read, or claimed by more than one kind (then ``kind=`` says which)."""
    archive.check_zip(path)
    found = [kind for kind in release_kinds() if kind.detect(Path(path))]
    if len(found) == 1:
        return found[0]
    if found:
        both = " and ".join(f"{k.name} ({k.title})" for k in found)
        raise ReleaseFormatError(
            f"this could be a release of more than one kind: {both}; say which with kind=",
            file=str(path),
        )
    if not Path(path).exists():
        raise ReleaseFormatError("no such file or folder", file=str(path))
    raise ReleaseFormatError(
        f"not a terminology release this workbench can read (known kinds: {', '.join(names())})",
        file=str(path),
    )
