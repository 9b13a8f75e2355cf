"""Helpers shared by the release stores: Arrow and numpy files written once into a cache
folder that appears atomically, then memory-mapped when the store is reopened."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa


def write_table(table: pa.Table, path: Path) -> None:
    """Write an Arrow IPC file, one record batch, so that every column maps to one
    zero-copy array when it is read back."""
    table = table.combine_chunks()
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def read_table(path: Path) -> pa.Table:
    """An Arrow IPC file, memory-mapped (pages come in as they are touched)."""
    source = pa.memory_map(str(path), "r")
    return pa.ipc.open_file(source).read_all()


def mapped(path: Path) -> np.ndarray:
    """A memory-mapped .npy file as a plain ndarray view (np.memmap's own indexing costs
    microseconds per call; the view shares the same mapped pages)."""
    return np.load(path, mmap_mode="r").view(np.ndarray)


def is_store(path: Path, store_format: int) -> bool:
    """True when ``path`` holds a complete store (its ``meta.json``) of that format."""
    meta = path / "meta.json"
    if not meta.is_file():
        return False
    try:
        return bool(json.loads(meta.read_text()).get("format") == store_format)
    except (OSError, ValueError):
        return False


def open_store(
    path: Path, files: tuple[str, ...], tables: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, pa.Table]]:
    """A store's ``meta.json`` and its Arrow tables (``{name}.arrow``), mapped.

    Raises FileNotFoundError when one of ``files`` is missing (a damaged store)."""
    meta: dict[str, Any] = json.loads((path / "meta.json").read_text())
    missing = [name for name in files if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"the store {path} lacks {', '.join(missing)}")
    return meta, {name: read_table(path / f"{name}.arrow") for name in tables}


def build_atomically(dest: Path, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Run ``build`` on a temporary folder beside ``dest`` and rename it into place once
    complete, with ``meta.json`` (what ``build`` returns, plus the import time) written last.

    When ``build`` raises, nothing is left at ``dest`` or beside it.
    """
    started = time.perf_counter()
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        meta = build(tmp)
        meta["importSeconds"] = round(time.perf_counter() - started, 2)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        if dest.exists():
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, dest)
        return meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
