"""The kept classification of one pair of versions, and a column counted against it
(``wb.impact``).

What a code does from one version to another depends on the code and the two versions
alone, so each distinct code is classified once (``impact_codes.classify_codes``) and kept
in an ``ImpactTable``, one per pair of loaded versions (the code system objects, held by
weak reference: a reload or a new version is another object, and starts afresh). A
column is then looked up the way ``validate_column``'s answer tables look one up: Arrow's
hash look-up (``index_in``) of the column's strings against the table's codes, the codes
it does not have yet classified and added; the rows per code are one ``bincount`` of the
positions, and the frame takes its rows from the table's columns (no Python object per
row, and none per distinct code but the tuples).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench import collector
from workbench.bulk.impact_codes import CHANGES, Classes, Headers, classify_codes
from workbench.bulk.table import filled
from workbench.terminology.provider import CodeSystemProvider

MAX_CODES = 2_000_000  # codes kept per table; beyond that new codes are classified per call
MAX_PAIRS = 8  # pairs of versions whose tables are kept
#: The columns of ``Impact.frame``: the code, its change and its rows first (what people look
#: for), the wide system after the displays, the one-to-one replacement last.
COLUMNS = [
    "code",
    "change",
    "rows",
    "from_display",
    "to_display",
    "system",
    "children",
    "replacements",
    "replacement",
    "relation",
]
_CHANGES = pd.CategoricalDtype(list(CHANGES))
_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)  # pandas' own dtype for a str column
_LOCK = threading.Lock()


class ImpactTable:
    """The classification of the distinct codes seen so far, from one version to another
    (``classes``: replaced, never changed, as codes are added)."""

    def __init__(self) -> None:
        self.classes = Classes.empty()
        self.headers = Headers()

    def positions(
        self, old: CodeSystemProvider, new: CodeSystemProvider, values: pa.Array
    ) -> tuple[Classes, np.ndarray]:
        """Each value's entry in the returned classes (-1 for a null), the codes the table
        did not have classified and added (kept unless the table is full)."""
        classes = self.classes
        if pa.types.is_string_view(values.type):
            values = values.cast(pa.large_string())
        position = filled(pc.index_in(values, value_set=classes.codes_as(values.type)))
        lost = position < 0
        if values.null_count:
            lost &= np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        at = np.flatnonzero(lost)
        if len(at):
            missed = values if len(at) == len(values) else values.take(pa.array(at))
            if isinstance(missed, pa.ChunkedArray):
                missed = missed.combine_chunks()
            encoded = pc.dictionary_encode(missed)  # the distinct new codes
            with collector.paused():  # a few objects per code, kept with the table
                found = classify_codes(old, new, encoded.dictionary, self.headers.of(old, new))
            grown = Classes.concat(classes, found)
            with _LOCK:
                if len(grown) <= MAX_CODES and len(self.classes) < len(grown):
                    self.classes = grown
            position[at] = len(classes) + filled(encoded.indices)
            classes = grown
        return classes, position

    def column(
        self, old: CodeSystemProvider, new: CodeSystemProvider, values: pa.Array
    ) -> tuple[pd.DataFrame, int]:
        """The impact frame of a column of Arrow strings (``COLUMNS``, most frequent code
        first) and its rows without a code (null, empty or whitespace)."""
        classes, position = self.positions(old, new, values)
        counts = np.bincount(position + 1, minlength=len(classes) + 1)
        missing, counts = int(counts[0]), counts[1:]
        missing += int(counts[classes.blank].sum())
        present = np.flatnonzero((counts > 0) & ~classes.blank)
        return frame(classes, present, counts[present], new.url), missing

    def counted(
        self, old: CodeSystemProvider, new: CodeSystemProvider, codes: list[str], rows: Any
    ) -> pd.DataFrame:
        """The impact frame of distinct codes (none missing) already counted (``rows``)."""
        classes, position = self.positions(old, new, pa.array(codes, pa.large_string()))
        return frame(classes, position, np.asarray(rows, dtype=np.int64), new.url)


def frame(classes: Classes, entries: np.ndarray, rows: np.ndarray, system: str) -> pd.DataFrame:
    """The frame of ``COLUMNS`` for the classes' ``entries`` with their ``rows``, most
    rows first, then by code."""
    order = _order(classes.rank().take(entries), rows, len(classes))
    entries, rows = entries.take(order), rows.take(order)
    taken = pa.array(entries, pa.int64())
    n = len(entries)
    data = {
        "system": _strings(pa.repeat(system, n).cast(pa.large_string())),
        "code": _texts(classes.codes.take(taken)),
        "rows": rows,
        "change": pd.Categorical.from_codes(
            classes.change.take(entries), dtype=_CHANGES, validate=False
        ),
        "from_display": _texts(classes.from_display.take(taken)),
        "to_display": _texts(classes.to_display.take(taken)),
        "children": pd.Series(classes.children.take(entries), dtype=object, copy=False),
        "replacements": pd.Series(classes.replacements.take(entries), dtype=object, copy=False),
        "replacement": _texts(classes.replacement.take(taken)),
        "relation": _texts(classes.relation.take(taken)),
    }
    return pd.DataFrame(data, columns=COLUMNS, copy=False)


def _order(rank: np.ndarray, rows: np.ndarray, ranks: int) -> np.ndarray:
    """Most rows first, then by rank (below ``ranks``; equal ones in the order given): one
    stable sort of one integer key where it fits in 63 bits, else ``lexsort`` of both."""
    if not len(rank) or int(rows.max()) < (1 << 62) // max(ranks, 1):
        return np.argsort(rank - rows * ranks, kind="stable")
    return np.lexsort((rank, -rows))


def _strings(values: pa.Array) -> Any:
    """Arrow strings as pandas' ``str`` column, without a copy."""
    return pd.arrays.ArrowStringArray(values, dtype=_TEXT)  # type: ignore[call-arg]


def _texts(values: pa.Array) -> Any:
    """A text column as pandas makes one of Python texts: ``str`` when it holds a text,
    else an ``object`` column of None (an empty one included)."""
    if values.null_count == len(values):
        return np.full(len(values), None, dtype=object)
    return _strings(values)


# --- one table per pair of versions ------------------------------------------------------

_KEPT: OrderedDict[tuple[int, int], tuple[Callable[[], Any], Callable[[], Any], ImpactTable]]
_KEPT = OrderedDict()


def _weak(provider: CodeSystemProvider) -> Callable[[], Any]:
    """A reference that does not keep ``provider`` alive (held, if it has no weak ones)."""
    try:
        return weakref.ref(provider)
    except TypeError:
        return lambda: provider


def table_for(old: CodeSystemProvider, new: CodeSystemProvider) -> ImpactTable:
    """The kept table of the versions ``old`` → ``new`` (these very objects), made the
    first time; up to ``MAX_PAIRS`` pairs are kept, the least recently used dropped."""
    key = (id(old), id(new))
    with _LOCK:
        found = _KEPT.get(key)
        if found is not None and found[0]() is old and found[1]() is new:
            _KEPT.move_to_end(key)
            return found[2]
        for stale in [k for k, (a, b, _) in _KEPT.items() if a() is None or b() is None]:
            del _KEPT[stale]
        table = ImpactTable()
        _KEPT[key] = (_weak(old), _weak(new), table)
        while len(_KEPT) > MAX_PAIRS:
            _KEPT.popitem(last=False)
        return table
