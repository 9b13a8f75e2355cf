"""The ICD-10-CM store: the tabular list's rows as Arrow files in the release cache.

Built once per release (its folder is named by a hash of the tabular XML's bytes) into a
temporary folder renamed into place only when complete, so a failed import leaves nothing
behind; reopened by reading ``concepts.arrow`` and ``designations.arrow`` (memory-mapped).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa

from workbench.releases.icd10cm import tabular

FORMAT = 1
FILES = ("concepts.arrow", "designations.arrow", "meta.json")


def fingerprint(path: str | Path) -> str:
    """A short hash of the release's tabular XML (its bytes, also inside a zip)."""
    _name, opener = tabular.find_xml(path)
    digest = hashlib.sha256(f"icd10cm-format{FORMAT}".encode())
    with opener() as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def is_store(folder: Path) -> bool:
    """True when ``folder`` holds a complete store of this format."""
    if not all((folder / name).is_file() for name in FILES):
        return False
    try:
        return json.loads((folder / "meta.json").read_text()).get("format") == FORMAT
    except (OSError, ValueError):
        return False


def _write(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def build(path: str | Path, dest: Path) -> dict[str, Any]:
    """Read the tabular XML at ``path`` and write its store at ``dest`` (atomically)."""
    found = tabular.read(path)
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        rows = found.rows
        _write(
            pa.table(
                {
                    "code": pa.array([r.code for r in rows], pa.string()),
                    "display": pa.array([r.display for r in rows], pa.string()),
                    "parent": pa.array([r.parent for r in rows], pa.string()),
                    "kind": pa.array([r.kind for r in rows], pa.string()).dictionary_encode(),
                    "abstract": pa.array([r.abstract for r in rows], pa.bool_()),
                    "billable": pa.array([r.billable for r in rows], pa.bool_()),
                }
            ),
            tmp / "concepts.arrow",
        )
        pairs = [(r.code, term) for r in rows for term in r.designations]
        _write(
            pa.table(
                {
                    "code": pa.array([c for c, _ in pairs], pa.string()),
                    "value": pa.array([t for _, t in pairs], pa.string()),
                }
            ),
            tmp / "designations.arrow",
        )
        meta = {
            "format": FORMAT,
            "system": tabular.SYSTEM,
            "version": found.version,
            "concepts": len(rows),
            "source": found.source,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        return meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def open_tables(folder: Path) -> tuple[dict[str, Any], pa.Table, pa.Table]:
    """The store's metadata, concepts and designations tables."""
    meta = json.loads((folder / "meta.json").read_text())
    tables = []
    for name in ("concepts", "designations"):
        source = pa.memory_map(str(folder / f"{name}.arrow"), "r")
        tables.append(pa.ipc.open_file(source).read_all())
    return meta, tables[0], tables[1]


def load(path: str | Path, cache_dir: Path) -> tuple[Path, bool]:
    """The store folder of a release (imported now unless cached) and whether it was
    imported now. A damaged store is imported again."""
    folder = cache_dir / f"icd10cm-{fingerprint(path)}"
    if is_store(folder):
        return folder, False
    shutil.rmtree(folder, ignore_errors=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    build(path, folder)
    return folder, True
