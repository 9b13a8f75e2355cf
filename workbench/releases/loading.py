"""Load a terminology from its release files (``Workbench.load_release``).

The release's kind (one of the ``kinds`` registry) is detected from its files when not
given; each release is imported once into a store in the cache folder
(``$WORKBENCH_RELEASE_CACHE``, else the user's cache directory,
``~/.cache/workbench/releases``; the ``cache_dir`` argument overrides both) and reopened from
there afterwards."""

from __future__ import annotations

import html
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.loading import OneLine, interactive, progress_bar
from workbench.releases import archive, kinds
from workbench.releases.kinds import Claim
from workbench.terminology.provider import CodeSystemProvider

_LOG = logging.getLogger("workbench.releases")


@dataclass(frozen=True, repr=False)
class ReleaseSummary(OneLine):
    """What ``load_release`` loaded: system, version, concept count, time, the store."""

    kind: str
    system: str
    version: str | None
    concepts: int
    seconds: float
    cache: str
    imported: bool
    #: Why a release imported before was imported again: it changed, or its store was
    #: damaged (None: reopened, or imported for the first time).
    reason: str | None = None
    #: What else the load did: temporary folders of killed imports removed.
    notes: tuple[str, ...] = ()

    @property
    def how(self) -> str:
        """``reopened``, ``imported`` or ``imported again (why)``."""
        if not self.imported:
            return "reopened"
        return f"imported again ({self.reason})" if self.reason else "imported"

    def line(self) -> str:
        """The summary as one line of text (``OneLine``)."""
        notes = "".join(f"; {note}" for note in self.notes)
        return (
            f"{self.kind} {self.system}|{self.version}: {self.concepts:,} "
            f"concepts, {self.how} in {self.seconds:.2f} s, cached in {self.cache}{notes}"
        )

    def _repr_html_(self) -> str:
        notes = "".join(f"<br>{html.escape(note)}" for note in self.notes)
        return (
            f"<p>Loaded <code>{html.escape(self.system)}</code> version "
            f"<code>{html.escape(str(self.version))}</code>: <b>{self.concepts:,}</b> "
            f"concepts, {html.escape(self.how)} in {self.seconds:.2f} s (cache: "
            f"<code>{html.escape(self.cache)}</code>).{notes}</p>"
        )


def default_cache() -> Path:
    """``$WORKBENCH_RELEASE_CACHE``, else ``$XDG_CACHE_HOME/workbench/releases``
    (``~/.cache/workbench/releases``)."""
    env = os.environ.get("WORKBENCH_RELEASE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "workbench" / "releases"


def downloads(cache_dir: str | Path | None = None) -> Path:
    """The release cache's download folder (``downloads`` in ``cache_dir``, by default
    ``default_cache()``): where release files are put as they are fetched (for example
    ``python -m pip download --no-deps simple-icd-10-cm==1.4.0 -d <this folder>``), to be
    loaded from there with ``Workbench.load_release``."""
    return (Path(cache_dir) if cache_dir is not None else default_cache()) / "downloads"


def open_release(
    path: str | Path,
    *,
    kind: str | None = None,
    version: str | None = None,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    claim: Claim | None = None,
    verify: bool = False,
) -> tuple[CodeSystemProvider, ReleaseSummary]:
    """Import (unless cached) and open a release; returns its provider and a summary.

    The kind is the registered release kind of that name (``kinds.release_kind``: an
    InvalidRequestError for an unknown or built-in one), else the one that recognises the
    files (``kinds.detect``: a ReleaseFormatError for a missing path, a damaged zip, no
    release or one more than one kind claims). ``claim(system, version)`` is called as soon
    as the system and version are known — before the import when they can be known then —
    and raises to refuse them (a version already loaded); then nothing more happens.
    ``verify=True`` checks every byte of a cached store before reopening it (by default:
    sizes and the digests of the ends of its files). Why a release was imported again, and
    what else the load did, are in the summary and logged (``workbench.releases``).
    """
    started = time.perf_counter()
    archive.check_zip(path)
    chosen = kinds.detect(path) if kind is None else kinds.release_kind(kind)
    cache = Path(cache_dir) if cache_dir is not None else default_cache()
    shown = interactive() if progress is None else progress
    bar = progress_bar(shown, desc=f"importing {Path(path).name}", unit=" step")
    try:

        def step(message: str) -> None:
            if bar is not None:
                bar.set_postfix_str(message.rsplit("/", 1)[-1][:60])
                bar.update(1)

        loaded = chosen.load(
            path, cache, version=version, progress=step, claim=claim, verify=verify
        )
    finally:
        if bar is not None:
            bar.close()
    provider = loaded.provider
    summary = ReleaseSummary(
        kind=chosen.name,
        system=provider.url,
        version=provider.version,
        concepts=len(provider),
        seconds=round(time.perf_counter() - started, 3),
        cache=str(loaded.store),
        imported=loaded.imported,
        reason=loaded.reason,
        notes=loaded.notes,
    )
    for note in (*loaded.notes, *([f"{summary.how}: {path}"] if loaded.reason else [])):
        _LOG.warning("%s", note)
    return provider, summary


def detect(path: str | Path) -> str:
    """The name of the kind of release at ``path`` (``kinds.detect``)."""
    return kinds.detect(path).name
