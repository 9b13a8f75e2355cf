"""The polars lookup compares a row with its code by their Arrow string views: codes longer
than a view holds, near misses that share a view's head, and views that break the format."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from tests.test_bulk_polars import (
    BIG,
    BIG_CODES,
    BIG_VS,
    KINDS,
    codes_column,
    mixed_codes,
    one_system,
    rows_of,
)
from workbench import Workbench

LONG = "http://example.org/long"
LONG_VS = "http://example.org/long-vs"
# 4 to 30 bytes: inline in a view (<= 12) and not; pairs share their length and first four
# bytes (a view's head) and differ after it
LONG_CODES = [
    *(f"CODE-{i:03d}" for i in range(200)),  # 8 bytes
    *(f"CODE-{i:03d}-ABC" for i in range(200)),  # 12 bytes: the longest inline
    *(f"CODE-{i:03d}-ABCD" for i in range(200)),  # 13 bytes: the shortest in a buffer
    *(f"CODE-{i:03d}-{'x' * 18}" for i in range(200)),  # 27 bytes
]


@pytest.fixture(scope="module")
def long_wb() -> Workbench:
    return one_system(LONG, LONG_VS, LONG_CODES, 3)


@pytest.fixture(scope="module")
def big() -> Workbench:
    return one_system(BIG, BIG_VS, BIG_CODES, 2)


def near_misses() -> list[str | None]:
    """The codes, and strings of their length and head that are no code: another last
    byte, another byte past the head, a space; "" and None."""
    rows: list[str | None] = []
    for code in LONG_CODES[::7]:
        rows += [code, code[:-1] + "#", code[:5] + "_" + code[6:], f"{code} ", code]
    return [*rows, "", None, "CODE", "CODE-000-ABCDE"]


@pytest.mark.parametrize("kind", KINDS)
def test_long_codes_and_near_misses_equal_pandas(long_wb: Workbench, kind: str) -> None:
    values = near_misses()
    expected = rows_of(
        long_wb.validate_column(pd.Series(values, dtype=object), LONG_VS, system=LONG)
    )
    column = codes_column(kind, values)
    for _ in range(2):  # the new strings answered and kept, then found in the table
        assert rows_of(long_wb.validate_column(column, LONG_VS, system=LONG)) == expected


def test_the_lookup_finds_long_codes_by_their_views(long_wb: Workbench) -> None:
    """Every code, inline or not, is found in the table; a near miss of a long code (the
    same head) is compared whole, and lost."""
    from workbench.bulk import checker, polars_lookup

    long_wb.validate_column(pl.Series(LONG_CODES), LONG_VS, system=LONG)
    state = checker.make_checker(long_wb.terminology, LONG_VS, None).table(LONG).state
    found = polars_lookup.lookup(state)
    assert found.views.long
    position, lost = polars_lookup.locate(found, pl.Series(list(state.codes[1:])))
    assert len(lost) == 0
    assert position.tolist() == list(range(1, len(state.codes)))
    misses = pl.Series([LONG_CODES[-1][:-1] + "#", LONG_CODES[500][:-1] + "#"])
    assert polars_lookup.locate(found, misses)[1].tolist() == [0, 1]
    # a near miss whose hash is a long code's (a collision): the views' heads agree, the
    # strings do not
    miss = misses.head(1)
    target = list(state.codes).index(LONG_CODES[-1])
    slots = found.table.slots.copy()
    slots[found.table.slot_of(miss.hash(polars_lookup.HASH_SEED).to_numpy())] = target
    colliding = dataclasses.replace(found, table=dataclasses.replace(found.table, slots=slots))
    position, lost = polars_lookup.locate(colliding, miss)
    assert lost.tolist() == [0]
    assert position.tolist() == [0]  # not the long code's


def test_views_whose_padding_is_not_zero_are_still_answered(long_wb: Workbench) -> None:
    """Arrow pads an inline string's view with zeros, and polars compares views as they
    are: a producer that leaves other bytes there makes polars' own ``==`` fail. Such a row
    is not found by its view, and is answered by its string instead."""
    codes = [LONG_CODES[0], LONG_CODES[3], ""]
    views = np.zeros((len(codes), 16), dtype=np.uint8)
    for i, code in enumerate(codes):
        data = code.encode()
        views[i, :4] = np.frombuffer(len(data).to_bytes(4, "little"), dtype=np.uint8)
        views[i, 4 : 4 + len(data)] = np.frombuffer(data, dtype=np.uint8)
    views[:, 15] = 0xAB
    array = pa.Array.from_buffers(pa.string_view(), len(codes), [None, pa.py_buffer(views)])
    column = pl.from_arrow(array)
    assert isinstance(column, pl.Series)
    assert column.to_list() == codes
    expected = rows_of(long_wb.validate_column(pd.Series(codes), LONG_VS, system=LONG))
    for _ in range(2):
        assert rows_of(long_wb.validate_column(column, LONG_VS, system=LONG)) == expected


def test_string_views_of_a_column_polars_exports_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Should polars export a String column as offsets and bytes, the views are made."""
    from workbench.bulk import polars_lookup

    values = ["a", "x" * 20, ""]
    monkeypatch.setattr(
        pl.Series, "to_arrow", lambda self, **_: pa.array(values, type=pa.large_string())
    )
    words = polars_lookup.string_views(pl.Series(values))
    assert words.view(np.uint32)[:, 0].tolist() == [1, 20, 0]


def test_a_column_of_several_chunks_is_read_across_them(
    big: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A String column made of several Arrow chunks (``pl.concat`` without a rechunk): a
    step's rows may span two of them, and their views are read as one."""
    from workbench.bulk import polars_backend as bulk_polars

    monkeypatch.setattr(bulk_polars, "CHUNK", 64)
    first, second = mixed_codes(500, seed=3), mixed_codes(300, seed=4)
    column = pl.concat([pl.Series(first), pl.Series(second)], rechunk=False)
    assert column.n_chunks() == 2
    plain = pd.Series(first + second, dtype=object)
    expected = rows_of(big.validate_column(plain, BIG_VS, system=BIG))
    for _ in range(2):
        assert rows_of(big.validate_column(column, BIG_VS, system=BIG)) == expected
