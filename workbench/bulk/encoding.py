"""How a column of codes is read, in its own encoding, with one rule for what is missing.

Validation and translation read their columns here:

* what counts as a missing code or system: None, NaN, NA and ``""`` (``is_missing``,
  ``missing_mask``), the same in every backend and in translation;
* numbers as the text the user had (``code_column``): ``1`` and ``1.0`` are ``"1"``;
* an ``object`` column is grouped by object identity (``Objects``; a string read from a CSV
  is one object for all its equal rows), or read as Arrow strings when equal strings are
  different objects (``shares_objects``, ``object_strings``);
* Arrow strings (``str``, ``string[pyarrow]``, ``ArrowDtype``) are taken as they are
  (``arrow_strings``); a ``category`` column by its categories;
* a column as each row's id among its distinct values (``column_ids``), and the single value
  of a column that holds one (``uniform_value``).
"""

from __future__ import annotations

import ctypes
from _ctypes import PyObj_FromPtr  # (CPython's: an object from its address)
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def is_missing(value: Any) -> bool:
    """A missing code or system: None, NaN, NA or ""."""
    return (
        value is None
        or value is pd.NA
        or (isinstance(value, str) and value == "")
        or (isinstance(value, float) and value != value)
    )


def missing_mask(values: np.ndarray) -> np.ndarray:
    """None, NaN, NA and "" (an object array)."""
    missing = np.asarray(pd.isna(values), dtype=bool)
    present = ~missing
    missing[present] = values[present] == ""
    return missing


def arrow_strings(values: pd.Series) -> pa.Array | None:
    """The Arrow array behind a pandas string column (``str``, ``string[pyarrow]``,
    ``ArrowDtype`` of strings), without a copy; None for anything else."""
    dtype = values.dtype
    arrow_backed = isinstance(dtype, pd.ArrowDtype) or (
        isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"
    )
    if not arrow_backed:
        return None
    found = pa.array(values.array)
    kind = found.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return found
    return None


@dataclass(frozen=True)
class Objects:
    """An object column grouped by object identity: each row's group (``ids``) and one
    value per group (``values``). Equal objects may land in different groups; looking the
    groups' values up by equality follows. A caller may replace the values by their texts
    (a number by its code text), group by group."""

    ids: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> Objects:
        """Group an object array's rows by identity (no element is dereferenced)."""
        return cls(*identity_values(values))


SAMPLE = 16_384  # rows looked at to decide how an object column is encoded


def shares_objects(values: np.ndarray) -> bool:
    """Whether equal values of a (contiguous) object array are mostly one object, so that
    grouping the rows by identity groups them by value (a column built from a list of
    codes, most CSV readers). Decided on up to ``SAMPLE`` evenly spread rows: of the rows
    that repeat a value, at least half repeat an object. False for fresh objects per row
    (``.str`` methods, ``astype(str)``, ``apply``) and for samples without repeats, where
    grouping by identity would cost a group per row."""
    if len(values) <= SAMPLE:
        return True  # small: either way is cheap
    part = np.ascontiguousarray(values[:: len(values) // SAMPLE][:SAMPLE])
    try:
        repeats = len(part) - len(pd.unique(part))
    except TypeError:  # unhashable values (Coding dicts): grouping by identity copes
        return True
    same_object = len(part) - len(pd.unique(pointers(part)))
    return repeats > 0 and 2 * same_object >= repeats


def object_strings(values: np.ndarray) -> pa.Array | None:
    """An object array of strings (missing values: None, NaN, NA) as an Arrow string
    array; None when it holds anything else (numbers, bytes, dicts)."""
    try:
        found = pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return found if pa.types.is_string(found.type) or pa.types.is_large_string(found.type) else None


def pointers(values: np.ndarray) -> np.ndarray:
    """The element addresses of a contiguous object array, read as integers (nothing is
    dereferenced; the caller keeps ``values`` alive while it uses them)."""
    address = values.__array_interface__["data"][0]
    view = memoryview((ctypes.c_size_t * len(values)).from_address(address)).cast("B")
    return np.frombuffer(view, dtype=np.uintp)


def _address_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group by object identity, and each group's address (in order of first
    appearance); ``values`` is contiguous and kept alive by the caller."""
    addresses = pointers(values)
    keys, low, shift = _compact(addresses)
    # a bounded size hint: the table grows with the distinct objects (the default sizes it
    # for every row, which costs more than the hashing; 2**17 slots measured fastest for 10
    # to 500,000 distinct objects in a million rows, 1.6x faster than 1,024 at 100,000)
    ids, uniques = pd.factorize(keys, size_hint=min(len(keys), 1 << 17))
    uniques = np.asarray(uniques)
    if keys is not addresses:
        uniques = (uniques.astype(np.uintp) << np.uintp(shift)) + low
    return np.asarray(ids, dtype=np.int64), uniques


def _compact(addresses: np.ndarray) -> tuple[np.ndarray, np.uintp, int]:
    """The addresses as 32-bit keys (each one's distance from the lowest, in units of the
    alignment they share) when they fit, which hash in two thirds of the time of the
    64-bit addresses; else the addresses. Also the lowest address and the shift."""
    if len(addresses) < 1 << 16:  # small: not worth the passes
        return addresses, np.uintp(0), 0
    low, high = addresses.min(), addresses.max()
    bits = int(np.bitwise_or.reduce(addresses & np.uintp(15)))  # the alignment they share
    shift = 4 if bits == 0 else 3 if bits & 7 == 0 else 0
    if (int(high) - int(low)) >> shift >= 1 << 32:
        return addresses, np.uintp(0), 0
    keys = ((addresses - low) >> np.uintp(shift)).astype(np.uint32)
    return keys, low, shift


#: Few groups for the rows (at most one per this many rows): each group's object is read
#: from its address (about 0.1 µs each) rather than from a row found by a pass over all.
FEW_GROUPS = 64


def identity_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group by object identity, and one object per group (that of any of its
    rows). With few groups the objects come from their addresses, with no pass over the
    rows: the rows of ``values`` (kept alive here) hold a reference to each."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    values = np.ascontiguousarray(values)
    ids, addresses = _address_groups(values)
    if len(addresses) * FEW_GROUPS > len(values):
        kind: type[np.signedinteger[Any]] = np.int32 if len(ids) < 1 << 31 else np.int64
        first: np.ndarray[Any, np.dtype[np.signedinteger[Any]]] = np.empty(
            len(addresses), dtype=kind
        )
        first[ids] = np.arange(len(ids), dtype=kind)
        return ids, values.take(first)
    found = np.empty(len(addresses), dtype=object)
    found[:] = [PyObj_FromPtr(address) for address in addresses.tolist()]
    return ids, found


UNIFORM_PROBE = 1_024  # rows compared first to tell a column of several values


def uniform_value(values: pd.Series) -> str | None:
    """The single value of a column that holds one non-empty string in every row."""
    n = len(values)
    if n == 0:
        return None
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        if codes.min() < 0 or codes.min() != codes.max():
            return None
        found = values.cat.categories[codes[0]]
        return found if isinstance(found, str) and found != "" else None
    probe = np.arange(0, n, max(1, n // UNIFORM_PROBE))  # a column of several systems
    arrow = arrow_strings(values)
    if arrow is not None:
        if arrow.null_count:
            return None
        first = arrow[0].as_py()
        if not first:
            return None
        scalar = pa.scalar(first, arrow.type)
        for part in (arrow.take(pa.array(probe)), arrow):  # most often ends at the probe
            if not pc.all(pc.equal(part, scalar)).as_py():
                return None
        return str(first)
    array = np.ascontiguousarray(np.asarray(values, dtype=object))
    first = array[0]
    if not isinstance(first, str) or first == "":
        return None
    addresses = pointers(array)
    if bool((addresses == addresses[0]).all()):  # one object in every row: no compare needed
        return first
    try:  # one string compare per row (a few rows first); NA (not a bool) ends it
        for part in (array.take(probe), array):
            same = part == first
            if same.dtype != bool or not bool(same.all()):
                return None
        return str(first)
    except TypeError:
        return None


def arrow_ids(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow column's dictionary: each row's id (-1 for null) and the distinct values."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    encoded = pc.dictionary_encode(values)
    ids = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(), dtype=np.int64)
    distinct = np.asarray(encoded.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    return ids, distinct


def column_ids(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's id among the column's distinct values (-1: missing) and those values,
    in the column's own encoding (equal values may have several ids): category codes,
    an Arrow dictionary, object identity groups when equal values are mostly one object,
    else equal values by hashing."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(), np.asarray(values.cat.categories, dtype=object)
    arrow = arrow_strings(values)
    if arrow is None and pd.api.types.is_object_dtype(values.dtype):
        array = np.ascontiguousarray(np.asarray(values, dtype=object))
        if shares_objects(array):
            grouped = Objects.of(array)
            return grouped.ids, grouped.values
        arrow = object_strings(array)  # fresh strings per row: as Arrow strings
    if arrow is not None:
        return arrow_ids(arrow)
    ids, uniques = pd.factorize(values)
    return np.asarray(ids, dtype=np.int64), np.asarray(uniques, dtype=object)


def factorize(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and each row's index into them; missing values share one last slot."""
    codes, uniques = pd.factorize(values)
    ids = np.asarray(codes, dtype=np.int64)
    distinct = np.asarray(uniques, dtype=object)
    missing = ids < 0
    if missing.any():
        ids[missing] = len(distinct)
        distinct = np.concatenate([distinct, np.array([None], dtype=object)])
    return ids, distinct


def factorize_objects(objects: Objects) -> tuple[np.ndarray, np.ndarray]:
    """``factorize`` of a column grouped by identity: the groups' values made distinct by
    equality, missing values in one last slot."""
    ids, distinct = factorize(pd.Series(objects.values, dtype=object))
    return ids.take(objects.ids), distinct


def code_text(values: pd.Series) -> pd.Series:
    """Codes as the text the user had: an integer column (also a nullable ``Int64`` one, or a
    float column that holds whole numbers because of missing values) gives ``"1"``, never
    ``"1.0"``; missing values stay missing; strings, categoricals and Coding dicts are kept.

    >>> code_text(pd.Series([1, None, 20])).tolist()
    ['1', None, '20']
    >>> code_text(pd.Series([1, 2], dtype="Int64")).tolist()
    ['1', '2']
    """
    return code_column(values)[0]


def code_column(values: pd.Series) -> tuple[pd.Series, Objects | pa.Array | None]:
    """``code_text``, and for an ``object`` column also how the lookup takes it: its rows
    grouped by identity with each group's text (only one value per group is looked at, so
    the column is never scanned row by row), or, when equal codes are not one object
    (fresh strings per row), the column as Arrow strings if it holds nothing else."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if pd.api.types.is_numeric_dtype(dtype.categories.dtype):
            renamed = code_text(pd.Series(dtype.categories))
            return values.cat.rename_categories(renamed.tolist()), None
        return values, None
    if pd.api.types.is_bool_dtype(dtype):
        return values, None
    if pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype):
        present = values.notna().to_numpy()
        numbers = np.asarray(values.astype(object), dtype=object)
        out = np.full(len(values), None, dtype=object)
        out[present] = [_number_text(n) for n in numbers[present]]
        return pd.Series(out, index=values.index, name=values.name, dtype=object), None
    if pd.api.types.is_object_dtype(dtype):
        array = np.ascontiguousarray(np.asarray(values, dtype=object))
        if not shares_objects(array):
            strings = object_strings(array)
            if strings is not None:
                return values, strings
        objects = Objects.of(array)
        kind = pd.api.types.infer_dtype(objects.values, skipna=True)
        if kind not in ("integer", "floating", "mixed-integer", "mixed-integer-float", "mixed"):
            return values, objects
        texts = np.empty(len(objects.values), dtype=object)
        for k, v in enumerate(objects.values):  # once per distinct object
            number = isinstance(v, (int, float, np.number)) and not is_missing(v)
            texts[k] = _number_text(v) if number else v
        rows = pd.Series(
            texts.take(objects.ids), index=values.index, name=values.name, dtype=object
        )
        return rows, Objects(objects.ids, texts)
    return values, None


def _number_text(value: Any) -> Any:
    """``1`` and ``1.0`` as ``"1"``; other numbers as their shortest exact text."""
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (float, np.floating)):
        if value != value:
            return None
        if float(value).is_integer():
            return str(int(value))
        return repr(float(value))
    return str(int(value))


def is_structured(values: pd.Series) -> bool:
    """True when a column holds Coding or CodeableConcept dicts rather than codes (decided
    by its first value that is not missing)."""
    for value in values:
        if isinstance(value, Mapping):
            return True
        if not is_missing(value):
            return False
    return False


def checked_codes(values: pd.Series) -> pd.Series:
    """The codes a result's rows are about, for reports: a Coding's code, the codes of a
    CodeableConcept joined with commas; plain codes as they are."""
    if values.dtype != object or not is_structured(values):
        return values

    def code_of(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return None
        codings = value.get("coding") if "coding" in value else [value]
        codes = [str(c.get("code")) for c in codings or [] if isinstance(c, Mapping)]
        return ", ".join(codes) or None

    return pd.Series([code_of(v) for v in values], index=values.index, dtype=object)
