"""Distinct codes classified against two versions of a code system (``wb.impact``'s
``change``, displays, children and replacements), column-wise where a store can.

``classify_codes`` answers a batch of distinct codes as ``Classes``: one entry per code,
Arrow strings for the texts and object arrays for the tuples, so that the kept table
(``impact_table``) can grow by concatenation and a result takes its rows with ``take``.
Which codes have children in a version (``Headers``) is read once from the store's
parent column and kept with the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.terminology.provider import CodeSystemProvider, Successor

CHANGES = ("unchanged", "retired", "display-changed", "became-header", "new", "unknown")
_CHANGE = {name: i for i, name in enumerate(CHANGES)}


@dataclass(frozen=True)
class Classes:
    """Distinct codes with their classification, entry by entry: ``codes`` (large
    strings), ``blank`` (an empty or whitespace code: a missing one, not classified),
    ``change`` (int8, the position in ``CHANGES``), both displays, ``children`` and
    ``replacements`` (tuples), ``replacement`` and ``relation``. Never changed once made."""

    codes: pa.Array
    blank: np.ndarray
    change: np.ndarray
    from_display: pa.Array
    to_display: pa.Array
    children: np.ndarray
    replacements: np.ndarray
    replacement: pa.Array
    relation: pa.Array
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.codes)

    @classmethod
    def empty(cls) -> Classes:
        """No codes."""
        text = pa.array([], pa.large_string())
        none = np.empty(0, dtype=object)
        return cls(
            text, np.zeros(0, bool), np.zeros(0, np.int8), text, text, none, none, text, text
        )

    @classmethod
    def concat(cls, first: Classes, then: Classes) -> Classes:
        """``first``'s entries, then ``then``'s."""
        if not len(first):
            return then
        parts: dict[str, Any] = {}
        for name in ("codes", "from_display", "to_display", "replacement", "relation"):
            joined = pa.concat_arrays([getattr(first, name), getattr(then, name)])
            parts[name] = joined
        for name in ("blank", "change", "children", "replacements"):
            parts[name] = np.concatenate([getattr(first, name), getattr(then, name)])
        return cls(**parts)

    def codes_as(self, kind: pa.DataType) -> pa.Array:
        """The codes as Arrow strings of ``kind`` (for ``index_in``), made once per kind."""
        key = f"codes:{kind}"
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = self.codes.cast(kind)
        return found

    def rank(self) -> np.ndarray:
        """Each entry's place in code order (by code point, as Python sorts str), made
        once per ``Classes``."""
        found = self.cache.get("rank")
        if found is None:
            found = np.empty(len(self), dtype=np.int64)
            found[pc.sort_indices(self.codes).to_numpy()] = np.arange(len(self))
            self.cache["rank"] = found
        return found


@dataclass
class Headers:
    """Which codes have children in each version (Arrow arrays of parent codes, or None
    for a provider without a parent column, whose concepts are asked), read once."""

    old: Any = None
    new: Any = None
    read: bool = False

    def of(self, old: CodeSystemProvider, new: CodeSystemProvider) -> Headers:
        """Read both versions' parent codes the first time."""
        if not self.read:
            self.old, self.new, self.read = _parent_codes(old), _parent_codes(new), True
        return self


def classify_codes(
    old: CodeSystemProvider, new: CodeSystemProvider, codes: pa.Array, headers: Headers
) -> Classes:
    """The ``Classes`` of distinct ``codes`` (Arrow strings, no null) from version ``old``
    to ``new``: column-wise, with a Python object only for the few codes that changed."""
    codes = _text(codes)
    blank = _blank(codes)
    known_a, inactive_a, display_a = _known(old, codes)
    known_b, inactive_b, display_b = _known(new, codes)
    active_a, active_b = known_a & ~inactive_a, known_b & ~inactive_b
    change = np.full(len(codes), _CHANGE["unchanged"], dtype=np.int8)
    children = _tuples(len(codes))
    both = pa.array(np.flatnonzero(active_a & active_b & ~blank))
    shared = codes.take(both)
    grown = _parents(new, shared, headers.new) & ~_parents(old, shared, headers.old)
    grew = both.to_numpy()[grown]
    names = codes.take(pa.array(grew)).to_pylist()
    found = _children(new, names)
    for i, code in zip(grew, names, strict=True):
        change[i], children[i] = _CHANGE["became-header"], found.get(code, ())
    shown = _differ(display_a, display_b)
    change[(change == _CHANGE["unchanged"]) & active_a & active_b & shown] = _CHANGE[
        "display-changed"
    ]
    change[active_a & ~active_b] = _CHANGE["retired"]
    change[~known_a & known_b] = _CHANGE["new"]
    change[~known_a & ~known_b] = _CHANGE["unknown"]
    replacements = _tuples(len(codes))
    replacement: list[str | None] = [None] * len(codes)
    relation: list[str | None] = [None] * len(codes)
    for i in np.flatnonzero(known_b & inactive_b & ~blank):
        successors = new.successors(codes[int(i)].as_py())
        replacements[i] = tuple(s.code for s in successors)
        strongest = _one_to_one(successors)
        if strongest is not None:
            replacement[i], relation[i] = strongest.code, strongest.relation
    return Classes(
        codes,
        blank,
        change,
        display_a,
        display_b,
        children,
        replacements,
        _text(replacement),
        _text(relation),
    )


def _blank(codes: pa.Array) -> np.ndarray:
    """Which codes are empty or whitespace (as Python's ``str.strip`` has it): asked of
    Python only for the codes that do not start with an ASCII letter or digit."""
    first = pc.utf8_slice_codeunits(codes, 0, 1)
    plain = pc.fill_null(pc.ascii_is_alnum(first), False).to_numpy(zero_copy_only=False)
    blank = np.zeros(len(codes), dtype=bool)
    others = np.flatnonzero(~plain)
    if len(others):
        texts = codes.take(pa.array(others)).to_pylist()
        blank[others] = [not t.strip() for t in texts]
    return blank


def _differ(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Entry by entry, whether two texts differ (None equals None alone)."""
    different = pc.fill_null(pc.not_equal(a, b), False)
    one_missing = pc.not_equal(pc.is_null(a), pc.is_null(b))
    return np.asarray(pc.or_(different, one_missing).to_numpy(zero_copy_only=False), dtype=bool)


def _tuples(n: int) -> np.ndarray:
    """An object array of ``n`` empty tuples."""
    found = np.empty(n, dtype=object)
    found.fill(())
    return found


def _text(values: Any) -> pa.Array:
    """Texts (Arrow strings, or str and None) as large Arrow strings."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values.cast(pa.large_string())
    return pa.array(values, pa.large_string(), from_pandas=True)


def _known(provider: CodeSystemProvider, codes: pa.Array) -> tuple[Any, Any, pa.Array]:
    """Known, inactive and display of each code: by Arrow's hash look-up in a store's
    columns when it has them, else ``describe``, else concept by concept."""
    columns = provider.concept_columns()
    if columns is not None:
        store = columns.column("code")
        at = pc.index_in(codes.cast(store.type), value_set=store)
        known = pc.is_valid(at).to_numpy(zero_copy_only=False)
        inactive = pc.fill_null(columns.column("inactive").take(at), False)
        display = _text(columns.column("display").take(at))
        return known, inactive.to_numpy(zero_copy_only=False), display
    texts = codes.to_pylist()
    described = provider.describe(texts)
    if described is not None:
        return described[0], described[1], _text(described[2])
    concepts = [provider.get(c) for c in texts]
    known = np.array([c is not None for c in concepts], dtype=bool)
    inactive = np.array([c is not None and c.inactive for c in concepts], dtype=bool)
    return known, inactive, _text([c.display if c is not None else None for c in concepts])


def _parent_pairs(provider: CodeSystemProvider) -> tuple[Any, Any] | None:
    """(child code, parent code) of every parent link, straight from a store's columns
    (``parents_column``), or None when the provider has no such columns."""
    columns, parents = provider.concept_columns(), provider.parents_column()
    if columns is None or parents is None:
        return None
    lists = pc.split_pattern(parents, ", ")
    flat = pc.list_flatten(lists)
    child = columns.column("code").take(pc.list_parent_indices(lists))
    keep = pc.not_equal(flat, "")
    return child.filter(keep), flat.filter(keep)


def _parent_codes(provider: CodeSystemProvider) -> Any:
    """The distinct codes that are some concept's parent (None without a parent column)."""
    pairs = _parent_pairs(provider)
    return None if pairs is None else _text(pc.unique(pairs[1]))


def _parents(provider: CodeSystemProvider, codes: pa.Array, parent_codes: Any) -> np.ndarray:
    """Which of ``codes`` (large Arrow strings) have children in ``provider``
    (``parent_codes``: its ``_parent_codes``; None: asked concept by concept)."""
    if parent_codes is None:
        concepts = [provider.get(c) for c in codes.to_pylist()]
        return np.array([c is not None and bool(c.children) for c in concepts], dtype=bool)
    return np.asarray(
        pc.is_in(codes, value_set=parent_codes).to_numpy(zero_copy_only=False), dtype=bool
    )


def _children(provider: CodeSystemProvider, codes: list[str]) -> dict[str, tuple[str, ...]]:
    """The children of ``codes`` in ``provider``, sorted."""
    if not codes:
        return {}
    pairs = _parent_pairs(provider)
    if pairs is None:
        made = {c: provider.get(c) for c in codes}
        return {c: tuple(sorted(m.children)) for c, m in made.items() if m is not None}
    keep = pc.is_in(pairs[1], value_set=pa.array(codes, pa.string()))
    found: dict[str, list[str]] = {}
    for child, parent in zip(
        pairs[0].filter(keep).to_pylist(), pairs[1].filter(keep).to_pylist(), strict=True
    ):
        found.setdefault(parent, []).append(child)
    return {parent: tuple(sorted(kids)) for parent, kids in found.items()}


def _one_to_one(found: list[Successor]) -> Successor | None:
    """The one successor that replaces a code one to one (None when there are several,
    or only weaker ones)."""
    strong = [s for s in found if s.replaces]
    return strong[0] if len(strong) == 1 else None
