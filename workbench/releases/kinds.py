"""The terminology kinds the workbench knows, and the registry of them.

A *release kind* (``ReleaseKind``) says how its release files are found (``locate``) and
recognised (``detect``), what names its store in the cache (``fingerprint``), how they are
imported into a ``ColumnarStore`` (``build``) and how the store opens as a provider
(``open``); ``ReleaseKind.load`` runs the same steps for every kind: reopen the cached store,
else import it (a damaged store is imported again), with the version claimed as soon as it
is known. A *built-in kind* (``BuiltinKind``, UCUM) has no release files: its provider is
always there.

Kinds are registered here (``BUILT_IN`` names the modules of this package's kinds, each of
which defines ``KIND``; ``register`` adds another). ``detect`` asks every release kind
whether it reads a path, and ``release_kind`` finds one by name; both raise a precise error.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import pyarrow as pa

from workbench.errors import InvalidRequestError, ReleaseFormatError
from workbench.releases import archive
from workbench.releases.storage import ColumnarStore
from workbench.terminology.provider import CodeSystemProvider

Progress = Callable[[str], None]
#: ``claim(system, version)`` raises to refuse a system and version (one already loaded).
Claim = Callable[[str, str | None], None]
Source = TypeVar("Source")

#: The modules of the kinds this package brings, in detection order; each defines ``KIND``.
BUILT_IN = (
    "workbench.releases.snomed.loader",
    "workbench.releases.loinc.loader",
    "workbench.releases.icd10cm.loader",
    "workbench.releases.rxnorm.loader",
    "workbench.releases.ucum.loader",
)
#: What opening a damaged store (a file deleted or truncated by hand) raises.
_DAMAGED = (OSError, ValueError, KeyError, TypeError, pa.ArrowException)


@dataclass(frozen=True)
class Loaded:
    """What loading a release gives, for every kind: the provider, the store folder it
    reads, and whether the release was imported now (False: reopened from the cache)."""

    provider: CodeSystemProvider
    store: Path
    imported: bool


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

    ``Source`` is what ``locate`` finds (the release's files), handed to ``fingerprint``
    and ``build``.
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

    @abstractmethod
    def fingerprint(self, source: Source) -> str:
        """A short hash of the release (with the store's format): its store's name."""

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
    ) -> Loaded:
        """Import (unless cached) and open a release.

        ``claim(system, version)`` is called before anything is imported when the version
        is known then, and again once the provider is open; it may raise to refuse them,
        and then a store imported just now is removed again (and the cache folder, when
        this made it and it is empty). Raises ReleaseFormatError for a broken release; no
        store is left of it.
        """
        if version is not None:
            version = self.check_version(version)
        source = self.locate(Path(path))
        cache = Path(cache_dir)
        folder = cache / f"{self.name}-{self.fingerprint(source)}"
        early = self.version_before_import(source, version)
        if claim is not None and early is not None:
            claim(self.system, early)
        if self.store_class.is_store(folder):
            try:
                provider = self.open(folder, version)
            except _DAMAGED:  # damaged by hand: import it again
                pass
            else:
                if claim is not None:
                    claim(provider.url, provider.version)
                return Loaded(provider, folder, imported=False)
        shutil.rmtree(folder, ignore_errors=True)  # damaged, or of another format
        created = not cache.exists()
        cache.mkdir(parents=True, exist_ok=True)
        self.build(source, folder, progress or (lambda _message: None))  # atomic
        try:
            provider = self.open(folder, version)
            if claim is not None:
                claim(provider.url, provider.version)
        except BaseException:  # refused once its version is known: the store goes too
            shutil.rmtree(folder, ignore_errors=True)
            if created:
                with contextlib.suppress(OSError):
                    cache.rmdir()  # only when empty
            raise
        return Loaded(provider, folder, imported=True)


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
