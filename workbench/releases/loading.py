"""Load a terminology from its release files (``Workbench.load_release``).

The release's kind is detected from its files when not given; each kind is imported once
into a store in the cache folder (``$WORKBENCH_RELEASE_CACHE``, else the user's cache
directory, ``~/.cache/workbench/releases``; the ``cache_dir`` argument overrides both) and
reopened from there afterwards.
"""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from workbench.errors import InvalidRequestError, ReleaseFormatError
from workbench.loading import interactive
from workbench.terminology.provider import CodeSystemProvider

KINDS = ("snomed", "loinc", "icd10cm", "rxnorm")


@dataclass(frozen=True)
class ReleaseSummary:
    """What ``load_release`` loaded: system, version, concept count, time, the store."""

    kind: str
    system: str
    version: str | None
    concepts: int
    seconds: float
    cache: str
    imported: bool

    def __repr__(self) -> str:
        how = "imported" if self.imported else "reopened"
        return (
            f"<ReleaseSummary {self.kind} {self.system}|{self.version}: {self.concepts:,} "
            f"concepts, {how} in {self.seconds:.2f} s, cached in {self.cache}>"
        )

    def _repr_html_(self) -> str:
        how = "imported" if self.imported else "reopened"
        return (
            f"<p>Loaded <code>{html.escape(self.system)}</code> version "
            f"<code>{html.escape(str(self.version))}</code>: <b>{self.concepts:,}</b> "
            f"concepts, {how} in {self.seconds:.2f} s (cache: "
            f"<code>{html.escape(self.cache)}</code>).</p>"
        )


def default_cache() -> Path:
    """``$WORKBENCH_RELEASE_CACHE``, else ``$XDG_CACHE_HOME/workbench/releases``
    (``~/.cache/workbench/releases``)."""
    env = os.environ.get("WORKBENCH_RELEASE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "workbench" / "releases"


def check_archive(path: str | Path) -> None:
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


def detect(path: str | Path) -> str:
    """The kind of release at ``path``; ReleaseFormatError when it is none we know."""
    from workbench.releases.icd10cm import tabular
    from workbench.releases.loinc import loader as loinc
    from workbench.releases.snomed import loader as snomed

    check_archive(path)
    if snomed.detect(path):
        return "snomed"
    if loinc.detect(path):
        return "loinc"
    if tabular.detect(path):
        return "icd10cm"
    from workbench.releases.rxnorm import loader as rxnorm

    if rxnorm.detect(path):
        return "rxnorm"
    if not Path(path).exists():
        raise ReleaseFormatError("no such file or folder", file=str(path))
    raise ReleaseFormatError(
        f"not a terminology release this workbench can read (known kinds: {', '.join(KINDS)})",
        file=str(path),
    )


def open_release(
    path: str | Path,
    *,
    kind: str | None = None,
    version: str | None = None,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    claim: Callable[[str, str | None], None] | None = None,
) -> tuple[Any, ReleaseSummary]:
    """Import (unless cached) and open a release; returns its provider and a summary.

    ``claim(system, version)`` is called as soon as the system and version are known — before
    the import when they can be known then — and raises to refuse them (a version already
    loaded); then nothing more happens.
    """
    started = time.perf_counter()
    check_archive(path)
    if kind is None:
        kind = detect(path)
    if kind not in KINDS:
        raise InvalidRequestError(f"Unknown release kind '{kind}' (known: {', '.join(KINDS)})")
    cache = Path(cache_dir) if cache_dir is not None else default_cache()
    if kind == "icd10cm":
        return _open_icd10cm(path, version, cache, started, claim)
    cache_existed = cache.exists()
    shown = interactive() if progress is None else progress
    bar = tqdm(desc=f"importing {Path(path).name}", disable=not shown, unit=" step")
    try:

        def step(message: str) -> None:
            bar.set_postfix_str(message.rsplit("/", 1)[-1][:60])
            bar.update(1)

        provider, store, imported = _open_store(kind, path, cache, version, step, claim)
    finally:
        bar.close()
    if claim is not None:
        try:
            claim(provider.url, provider.version)
        except BaseException:
            if imported:  # refused once its version is known: the store made now goes too
                del provider
                shutil.rmtree(store, ignore_errors=True)
                if not cache_existed:
                    with contextlib.suppress(OSError):
                        cache.rmdir()  # only when empty
            raise
    summary = ReleaseSummary(
        kind=kind,
        system=provider.url,
        version=provider.version,
        concepts=len(provider),
        seconds=round(time.perf_counter() - started, 3),
        cache=str(store),
        imported=imported,
    )
    return provider, summary


def _open_store(
    kind: str,
    path: str | Path,
    cache: Path,
    version: str | None,
    step: Any,
    claim: Callable[[str, str | None], None] | None,
) -> tuple[CodeSystemProvider, Path, bool]:
    """A release kind that lives in a cache store: its provider, the store, and whether it
    was imported now."""
    if kind == "rxnorm":
        from workbench.releases.rxnorm import loader as rxnorm
        from workbench.releases.rxnorm.provider import RxNormProvider

        rx_store, found, imported = rxnorm.load(path, cache, progress=step)
        return RxNormProvider(rx_store, version=version or found), rx_store.path, imported
    if kind == "loinc":
        from workbench.releases.loinc import loader as loinc
        from workbench.releases.loinc.provider import LoincProvider

        store, imported = loinc.load(path, cache, progress=step)
        return LoincProvider(store, version=version), store.path, imported
    from workbench.releases.snomed import loader as snomed
    from workbench.releases.snomed.provider import SnomedProvider

    sct, imported = snomed.load(path, cache, version=version, progress=step, claim=claim)
    return SnomedProvider(sct), sct.store.path, imported


def _open_icd10cm(
    path: str | Path,
    version: str | None,
    cache: Path,
    started: float,
    claim: Callable[[str, str | None], None] | None,
) -> tuple[Any, ReleaseSummary]:
    """ICD-10-CM: the tabular XML imported once into an Arrow store in the cache, reopened."""
    import pyarrow as pa

    from workbench.releases.icd10cm import store, tabular
    from workbench.releases.icd10cm.provider import Icd10cmProvider

    if claim is not None:
        claim(tabular.SYSTEM, version or tabular.peek_version(path))
    folder, imported = store.load(path, cache)
    try:
        provider = Icd10cmProvider(folder, version=version)
    except (OSError, ValueError, KeyError, pa.ArrowException):
        # a damaged store (a file truncated by hand): import it again
        store.build(path, folder)
        provider, imported = Icd10cmProvider(folder, version=version), True
    if claim is not None:
        claim(provider.url, provider.version)
    summary = ReleaseSummary(
        kind="icd10cm",
        system=provider.url,
        version=provider.version,
        concepts=len(provider.concepts),
        seconds=round(time.perf_counter() - started, 3),
        cache=str(folder),
        imported=imported,
    )
    return provider, summary
