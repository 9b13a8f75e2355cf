"""Where read resources wait: per resource type, NDJSON bytes in memory up to a bound and in
a temporary folder beyond it.

Each type keeps newline-terminated chunks of about ``batch_bytes``: a chunk passed through
whole from an NDJSON file, or single lines gathered until a chunk is full. When the chunks
of all types hold more than ``memory_bytes``, the types holding the most are written out
(appended, so their order stays) to ``<Type>.ndjson`` in a temporary folder, which goes when
the store is closed or garbage-collected.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_SPILL_PREFIX = "workbench-fhirdata-"


@dataclass
class TypeChunks:
    """The NDJSON of one resource type: what was spilled to ``path``, then ``chunks`` in
    memory, then ``pending`` pieces of a chunk still being filled."""

    count: int = 0
    size: int = 0
    chunks: list[bytes] = field(default_factory=list)
    memory: int = 0
    pending: list[bytes] = field(default_factory=list)
    pending_size: int = 0
    path: Path | None = None


class ChunkStore:
    """NDJSON chunks per resource type, bounded in memory (see the module docstring)."""

    def __init__(
        self, *, batch_bytes: int, memory_bytes: int, spill_dir: str | Path | None = None
    ) -> None:
        self.batch_bytes = max(1, batch_bytes)
        self.memory_bytes = max(0, memory_bytes)
        self._spill_parent = spill_dir
        self._types: dict[str, TypeChunks] = {}
        self._memory = 0
        self._folder: Path | None = None
        self._cleanup: weakref.finalize | None = None

    # --- writing ------------------------------------------------------------------------

    def _of(self, resource_type: str) -> TypeChunks:
        found = self._types.get(resource_type)
        if found is None:
            found = self._types[resource_type] = TypeChunks()
        return found

    def add_chunk(self, resource_type: str, chunk: bytes, count: int) -> None:
        """Keep ``chunk`` (``count`` newline-terminated lines, all of ``resource_type``)."""
        kept = self._of(resource_type)
        if len(chunk) < self.batch_bytes // 2:
            self._add_pending(kept, (chunk,), len(chunk))
        else:
            self._seal(kept)
            kept.chunks.append(chunk)
            kept.memory += len(chunk)
            self._memory += len(chunk)
        kept.count += count
        kept.size += len(chunk)
        self._bound()

    def add_line(self, resource_type: str, line: bytes) -> None:
        """Keep one resource's JSON (``line``, without its newline)."""
        kept = self._of(resource_type)
        self._add_pending(kept, (line, b"\n"), len(line) + 1)
        kept.count += 1
        kept.size += len(line) + 1
        self._bound()

    def _add_pending(self, kept: TypeChunks, pieces: tuple[bytes, ...], size: int) -> None:
        kept.pending.extend(pieces)
        kept.pending_size += size
        self._memory += size
        if kept.pending_size >= self.batch_bytes:
            self._seal(kept)

    def _seal(self, kept: TypeChunks) -> None:
        if kept.pending:
            chunk = b"".join(kept.pending)
            kept.chunks.append(chunk)
            kept.memory += len(chunk)
            kept.pending.clear()
            kept.pending_size = 0

    def finish(self) -> None:
        """Seal every type's last chunk (reading is over)."""
        for kept in self._types.values():
            self._seal(kept)

    def _bound(self) -> None:
        if self._memory <= self.memory_bytes:
            return
        for name, kept in sorted(self._types.items(), key=lambda item: -item[1].memory):
            if self._memory <= self.memory_bytes // 2:
                break
            self._spill(name, kept)

    def _spill(self, name: str, kept: TypeChunks) -> None:
        self._seal(kept)
        if not kept.chunks:
            return
        if kept.path is None:
            kept.path = self._spill_folder() / f"{name}.ndjson"
        with kept.path.open("ab") as out:
            for chunk in kept.chunks:
                out.write(chunk)
        self._memory -= kept.memory
        kept.chunks.clear()
        kept.memory = 0

    def _spill_folder(self) -> Path:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix=_SPILL_PREFIX, dir=self._spill_parent))
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, True)
        return self._folder

    # --- reading ------------------------------------------------------------------------

    @property
    def spill_folder(self) -> Path | None:
        """The temporary folder holding spilled chunks (``None`` while all are in memory)."""
        return self._folder

    def counts(self) -> dict[str, int]:
        """Resources per type, by type name."""
        return {name: self._types[name].count for name in sorted(self._types)}

    def sizes(self) -> dict[str, int]:
        """NDJSON bytes per type, by type name."""
        return {name: self._types[name].size for name in sorted(self._types)}

    def chunks(self, resource_type: str) -> Iterator[bytes]:
        """The type's newline-terminated chunks in the order read, each about
        ``batch_bytes`` (a single longer line makes a longer chunk)."""
        kept = self._types.get(resource_type)
        if kept is None:
            return
        if kept.path is not None:
            yield from _file_chunks(kept.path, self.batch_bytes)
        yield from list(kept.chunks)
        if kept.pending:
            yield b"".join(kept.pending)

    def close(self) -> None:
        """Drop every chunk and remove the temporary folder."""
        if self._cleanup is not None:
            self._cleanup()
        self._types.clear()
        self._memory = 0


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    """``path``'s bytes in newline-terminated pieces of about ``size``."""
    rest = b""
    with path.open("rb") as source:
        while block := source.read(size):
            block = rest + block if rest else block
            end = block.rfind(b"\n") + 1
            if end == 0:
                rest = block
                continue
            rest = block[end:]
            yield block[:end]
    if rest:
        yield rest
