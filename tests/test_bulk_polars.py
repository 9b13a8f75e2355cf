"""validate_column on polars data: a polars DataFrame back, row for row equal to pandas."""

from __future__ import annotations

import dataclasses
import gc
import os
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

from workbench import Workbench

SYSTEM = "http://example.org/cs"
OTHER = "http://example.org/other"
VS = "http://example.org/vs"


@pytest.fixture(scope="module")
def wb() -> Workbench:
    wb = Workbench()
    for url in (SYSTEM, OTHER):
        wb.load(
            {
                "resourceType": "CodeSystem",
                "url": url,
                "content": "complete",
                "concept": [{"code": "a", "display": "A"}, {"code": "b", "display": "B"}],
            }
        )
    wb.load(
        {
            "resourceType": "ValueSet",
            "url": VS,
            "compose": {
                "include": [{"system": SYSTEM}, {"system": OTHER, "concept": [{"code": "a"}]}]
            },
        }
    )
    return wb


CODES = ["a", "b", "zz", None, "", " a ", "a"]
SYSTEMS = [SYSTEM, OTHER, SYSTEM, SYSTEM, OTHER, SYSTEM, "http://unknown"]


@pytest.mark.parametrize("dtype", [pl.Utf8, pl.Categorical])
def test_polars_frame_with_system_column_matches_pandas(wb: Workbench, dtype: object) -> None:
    frame = pl.DataFrame({"code": CODES, "system": SYSTEMS}).with_columns(
        pl.col("code").cast(dtype)
    )
    got = wb.validate_column(frame, VS, code="code", system_column="system")
    assert isinstance(got, pl.DataFrame)
    expected = wb.validate_column(
        pd.DataFrame({"code": CODES, "system": SYSTEMS}), VS, code="code", system_column="system"
    )
    assert got.height == len(CODES)
    assert got.columns == list(pd.DataFrame(expected).columns)
    assert got["result"].to_list() == [None if pd.isna(v) else bool(v) for v in expected["result"]]
    assert got["issue"].cast(pl.Utf8).to_list() == [
        None if pd.isna(v) else v for v in expected["issue"]
    ]
    for row, (c, s) in enumerate(zip(CODES, SYSTEMS, strict=True)):
        single = wb.validate_code(VS, code=c or "", system=s)
        assert got["message"].cast(pl.Utf8)[row] == single.message
        assert got["issue"].cast(pl.Utf8)[row] == single.issue
        assert got["result"][row] == (single.result if c else None)


def test_polars_series_with_one_system(wb: Workbench) -> None:
    got = wb.validate_column(pl.Series("code", ["a", "b", None]), VS, system=OTHER)
    assert isinstance(got, pl.DataFrame)
    assert got["result"].to_list() == [True, False, None]


@pytest.mark.parametrize("kind", ["String", "Categorical", "Enum"])
@pytest.mark.parametrize("form", ["series", "frame"])
def test_polars_codes_without_a_system_are_answered_natively(
    wb: Workbench, kind: str, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No system given, a value set of several systems: each row as validate_code infers
    its system (the system column too), without going through pandas."""
    from workbench.bulk import polars_backend as bulk_polars

    def refuse(data: Any) -> Any:
        raise AssertionError("went through pandas")

    monkeypatch.setattr(bulk_polars, "to_pandas", refuse)
    codes = [*CODES, "zz", "b"]
    column = codes_column(kind, codes)
    data = column if form == "series" else pl.DataFrame({"code": column})
    for _ in range(2):  # cold, then from the value set's kept table
        got = wb.validate_column(data, VS, code=None if form == "series" else "code")
        expected = [
            (
                None if not c else single.result,
                single.message,
                single.display,
                single.issue,
                single.system,
            )
            for c in codes
            for single in [wb.validate_code(VS, code=c or "")]
        ]
        assert rows_of(got) == expected


# --- the native path: one system, String / Categorical / Enum codes -----------------------

BIG = "http://example.org/big"
BIG_VS = "http://example.org/big-vs"
BIG_CODES = [f"C{i:04d}" for i in range(3000)]  # enough codes that some share hash slots


def one_system(system: str, value_set: str, codes: list[str], step: int) -> Workbench:
    """A workbench with a code system of ``codes`` (each with a display) and a value set of
    every ``step``-th of them."""
    wb = Workbench()
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": system,
            "content": "complete",
            "concept": [{"code": c, "display": f"Display {c}"} for c in codes],
        }
    )
    members = [{"code": c} for c in codes[::step]]
    wb.load(
        {
            "resourceType": "ValueSet",
            "url": value_set,
            "compose": {"include": [{"system": system, "concept": members}]},
        }
    )
    return wb


@pytest.fixture(scope="module")
def big() -> Workbench:
    return one_system(BIG, BIG_VS, BIG_CODES, 2)


def rows_of(frame: Any) -> list[tuple[Any, ...]]:
    """The rows of a result frame (pandas or polars), texts as str, NA as None."""
    if isinstance(frame, pl.DataFrame):
        plain = frame.with_columns(pl.col(pl.Enum, pl.Categorical).cast(pl.String))
        return [tuple(row) for row in plain.rows()]
    frame = pd.DataFrame(frame)[list(frame.columns)]
    return [
        tuple(None if pd.isna(v) else (bool(v) if k == "result" else v) for k, v in row.items())
        for _, row in frame.iterrows()
    ]


def codes_column(kind: str, values: list[str | None]) -> pl.Series:
    series = pl.Series("code", values, dtype=pl.String)
    if kind == "Categorical":
        return series.cast(pl.Categorical)
    if kind == "Enum":
        return series.cast(pl.Enum(sorted({v for v in values if v is not None})))
    return series


def mixed_codes(count: int, seed: int) -> list[str | None]:
    """Members, non-members, made-up and padded codes, "" and None, with repeats."""
    rng = np.random.default_rng(seed)
    pool: list[str | None] = [
        *BIG_CODES,
        *(f"Z{i}" for i in range(50)),
        *(f" {c}" for c in BIG_CODES[:20]),
        *(f"{c} " for c in BIG_CODES[20:40]),
        "",
        None,
    ]
    return [pool[i] for i in rng.integers(0, len(pool), count)]


KINDS = ["String", "Categorical", "Enum"]


@pytest.mark.parametrize("chunk", [None, 64])
@pytest.mark.parametrize("kind", KINDS)
def test_polars_series_equals_pandas_row_for_row(
    big: Workbench, kind: str, chunk: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.bulk import polars_backend as bulk_polars

    if chunk is not None:  # many chunks (and a last short one) per lookup and result
        monkeypatch.setattr(bulk_polars, "CHUNK", chunk)
    values = mixed_codes(5000, seed=1)
    column = codes_column(kind, values)
    expected = rows_of(big.validate_column(pd.Series(values, dtype=object), BIG_VS, system=BIG))
    for _ in range(2):  # cold (the codes are answered and kept), then warm
        got = big.validate_column(column, BIG_VS, system=BIG)
        assert isinstance(got, pl.DataFrame)
        assert got.columns == ["result", "message", "display", "issue", "system"]
        assert got.schema["result"] == pl.Boolean
        assert all(isinstance(got.schema[c], pl.Enum) for c in got.columns[1:])
        assert rows_of(got) == expected


@pytest.mark.parametrize("start", [3, 64, 131])
@pytest.mark.parametrize("kind", KINDS)
def test_polars_slice_with_nulls_equals_pandas_row_for_row(
    big: Workbench, kind: str, start: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slice of a column holding nulls starts inside its validity bitmap (bit ``start``):
    each chunk's null rows are read from the right bits."""
    from workbench.bulk import polars_backend as bulk_polars

    monkeypatch.setattr(bulk_polars, "CHUNK", 64)
    values = mixed_codes(1000, seed=7)
    values[start] = values[start + 65] = values[-1] = None  # a chunk's first and last row
    column = codes_column(kind, values).slice(start)
    expected = rows_of(
        big.validate_column(pd.Series(values[start:], dtype=object), BIG_VS, system=BIG)
    )
    for _ in range(2):
        assert rows_of(big.validate_column(column, BIG_VS, system=BIG)) == expected


@pytest.mark.parametrize("chunk", [3, 8, 13, 64, 1 << 18])
def test_ids_read_null_rows_from_their_bits(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Ids`` gives a null row ``null_id`` whatever value polars left under it, chunk by
    chunk (chunks that start inside a byte of the validity bitmap too), from any bit of the
    bitmap: in bytes all null, all valid or mixed."""
    from workbench.bulk import polars_backend as bulk_polars

    monkeypatch.setattr(bulk_polars, "CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    values: list[int | None] = [int(v) for v in rng.integers(0, 50, 300)]
    for at in [*range(0, 16), *range(100, 140), *rng.integers(0, 300, 40).tolist()]:
        values[at] = None  # two bytes all null, then a run across bytes, then scattered
    raw = pl.Series(values, dtype=pl.UInt32)
    for start in [*range(0, 10), 17, 99]:
        ids = bulk_polars.Ids.of(raw.slice(start), null_id=99)
        chunks = [ids.chunk(at) for at in range(0, len(ids), bulk_polars.CHUNK)]
        expected = raw.slice(start).fill_null(99).to_list()
        assert np.concatenate(chunks).tolist() == expected
        assert ids.any_of(np.arange(100) == 99) == (None in raw.slice(start).to_list())
        null = np.flatnonzero(raw.slice(start).is_null().to_numpy())
        assert ids.nulls(0, len(ids)).tolist() == null.tolist()
    assert bulk_polars.Ids.of(pl.Series([1, 2], dtype=pl.UInt8), null_id=300).valid is None
    narrow = bulk_polars.Ids.of(pl.Series([1, None, 2], dtype=pl.UInt8), null_id=300)
    assert narrow.chunk(0).tolist() == [1, 300, 2]  # an id wider than the column's


@pytest.mark.parametrize("kind", KINDS)
def test_polars_series_answers_each_kind_of_row(big: Workbench, kind: str) -> None:
    values = [BIG_CODES[0], BIG_CODES[1], "Z-made-up", f" {BIG_CODES[0]}", "", None, BIG_CODES[0]]
    got = big.validate_column(codes_column(kind, values), BIG_VS, system=BIG)
    assert got["result"].to_list() == [True, False, False, False, None, None, True]
    assert got["issue"].cast(pl.String).to_list() == [
        None,
        "not-in-vs",
        "unknown-code",
        "unknown-code",
        "missing",
        "missing",
        None,
    ]
    assert got["display"].cast(pl.String).to_list()[:2] == ["Display C0000", "Display C0001"]
    assert got["system"].cast(pl.String).to_list() == [BIG] * len(values)


def test_polars_new_codes_after_warm_calls_are_answered(big: Workbench) -> None:
    big.validate_column(pl.Series(BIG_CODES), BIG_VS, system=BIG)
    fresh = [f"NEW{i}" for i in range(30)] + BIG_CODES[:4]
    got = big.validate_column(pl.Series(fresh), BIG_VS, system=BIG)
    assert got["issue"].cast(pl.String).to_list() == ["unknown-code"] * 30 + [
        None,
        "not-in-vs",
        None,
        "not-in-vs",
    ]
    again = big.validate_column(pl.Series(fresh).cast(pl.Categorical), BIG_VS, system=BIG)
    assert rows_of(again) == rows_of(got)


@pytest.mark.parametrize("codes", ["String", "Categorical"])
@pytest.mark.parametrize("systems", ["String", "Categorical"])
def test_polars_frame_with_one_system_in_its_column(
    big: Workbench, codes: str, systems: str
) -> None:
    values = mixed_codes(2000, seed=2)
    frame = pl.DataFrame(
        {"code": codes_column(codes, values), "system": pl.Series([BIG] * len(values))}
    ).with_columns(pl.col("system").cast(getattr(pl, systems)))
    got = big.validate_column(frame, BIG_VS, code="code", system_column="system")
    expected = big.validate_column(
        pd.DataFrame({"code": values, "system": [BIG] * len(values)}),
        BIG_VS,
        code="code",
        system_column="system",
    )
    assert rows_of(got) == rows_of(expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("odd", ["http://example.org/other", None, ""])
def test_polars_frame_whose_system_differs_in_one_late_row(
    big: Workbench, odd: str | None, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The system column is compared chunk by chunk over threads: one other value in a
    late chunk sends the frame to the pandas algorithm, whose rows it must equal (for
    Categorical codes, after a warm call too: their answers are kept per id)."""
    from workbench.bulk import polars_backend as bulk_polars

    monkeypatch.setattr(bulk_polars, "CHUNK", 64)
    values = mixed_codes(2000, seed=3)
    systems: list[str | None] = [BIG] * len(values)
    frame = pl.DataFrame({"code": codes_column(kind, values), "system": systems})
    big.validate_column(frame, BIG_VS, code="code", system_column="system")  # warm
    systems[1900] = odd
    frame = frame.with_columns(pl.Series("system", systems, dtype=pl.String))
    got = big.validate_column(frame, BIG_VS, code="code", system_column="system")
    expected = big.validate_column(
        pd.DataFrame({"code": values, "system": systems}),
        BIG_VS,
        code="code",
        system_column="system",
    )
    assert rows_of(got) == rows_of(expected)
    assert got["system"].cast(pl.String)[1900] == (odd or BIG)  # no system: the only one


@pytest.mark.parametrize("kind", KINDS)
def test_a_frame_of_several_systems_asks_nothing_under_the_first_one(kind: str) -> None:
    """A frame whose system column holds several systems goes to the pandas algorithm:
    its codes are not first answered under the first row's system (a cold Categorical's
    answers per id are read only once the system column holds one system)."""
    from workbench.bulk import checker

    wb = one_system(BIG, BIG_VS, BIG_CODES[:50], 2)
    codes = [f"fresh-{kind}-{i}" for i in range(200)]
    systems = [BIG] + [OTHER] * 199
    frame = pl.DataFrame({"code": codes_column(kind, codes), "system": systems})
    got = wb.validate_column(frame, BIG_VS, code="code", system_column="system")
    expected = wb.validate_column(
        pd.DataFrame({"code": codes, "system": systems}),
        BIG_VS,
        code="code",
        system_column="system",
    )
    assert rows_of(got) == rows_of(expected)
    held = set(checker.make_checker(wb.terminology, BIG_VS, None).table(BIG).state.codes)
    assert held & set(codes) == {codes[0]}  # only the row of that system


def test_polars_categorical_with_ids_beyond_its_length(big: Workbench) -> None:
    """Categories shared with a larger column: the ids of a short column are sparse."""
    categories = pl.Categories("workbench-test-sparse")
    dtype = pl.Categorical(categories)
    every = pl.Series(BIG_CODES, dtype=dtype)  # the categories now hold every code
    short = pl.Series([BIG_CODES[2999], None, BIG_CODES[1500], BIG_CODES[2999]], dtype=dtype)
    assert short.to_physical().to_list() == [2999, None, 1500, 2999]
    got = big.validate_column(short, BIG_VS, system=BIG)
    assert got["result"].to_list() == [False, None, True, False]
    assert every.len() == len(BIG_CODES)
    long = pl.Series(BIG_CODES[:100] * 40, dtype=dtype)  # ids below the column's length
    expected = rows_of(big.validate_column(pd.Series(BIG_CODES[:100] * 40), BIG_VS, system=BIG))
    assert rows_of(big.validate_column(long, BIG_VS, system=BIG)) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_polars_empty_and_all_missing(big: Workbench, kind: str) -> None:
    empty = big.validate_column(codes_column(kind, []), BIG_VS, system=BIG)
    assert empty.height == 0
    assert empty.columns == ["result", "message", "display", "issue", "system"]
    nulls = big.validate_column(codes_column(kind, [None, None]), BIG_VS, system=BIG)
    assert nulls["result"].to_list() == [None, None]
    assert nulls["issue"].cast(pl.String).to_list() == ["missing", "missing"]


def test_polars_lookup_finds_every_code_of_its_table(big: Workbench) -> None:
    """Every code the table holds has a slot of its own and is found there, none through
    the fallback; a code it does not hold (a padded one too) is lost, a null and "" are the
    missing answer."""
    from workbench.bulk import checker
    from workbench.bulk import polars_backend as bulk_polars

    big.validate_column(pl.Series(BIG_CODES), BIG_VS, system=BIG)
    state = checker.make_checker(big.terminology, BIG_VS, None).table(BIG).state
    found = bulk_polars.lookup(state)
    assert len(found.table.unplaced) == 0
    codes = pl.Series(list(state.codes[1:]), dtype=pl.String)
    position, lost = bulk_polars.find(found, codes)
    assert len(lost) == 0
    assert position.to_list() == list(range(1, len(state.codes)))
    unseen = ["never seen", f"\t{BIG_CODES[0]}\t", None, ""]  # padded: another string
    position, lost = bulk_polars.find(found, pl.Series(unseen))
    assert lost.tolist() == [0, 1]
    assert position.to_list() == [0, 0, 0, 0]
    # most slots of codes not held propose some code's position: a lost row is at 0
    made_up = pl.Series([f"made-up {i}" for i in range(500)])
    position, lost = bulk_polars.find(found, made_up)
    assert lost.tolist() == list(range(500))
    assert set(position.to_list()) == {0}


def test_a_code_without_a_slot_is_still_answered(
    big: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A code whose hash another code has gets no slot (a hash proposes one position): its
    rows are lost to the lookup and answered through Arrow, like pandas answers them. (Two
    codes' polars hashes are made equal for the table only: the rows keep their own.)"""
    from workbench.bulk import checker, polars_lookup
    from workbench.bulk.perfect_hash import PerfectHash

    rows = [BIG_CODES[3], BIG_CODES[40], "never seen", None, BIG_CODES[3]] * 30
    expected = rows_of(big.validate_column(pd.Series(rows), BIG_VS, system=BIG))
    big.validate_column(pl.Series(rows), BIG_VS, system=BIG)
    state = checker.make_checker(big.terminology, BIG_VS, None).table(BIG).state
    found = polars_lookup.lookup(state)
    twin, first = list(state.codes).index(BIG_CODES[3]), list(state.codes).index(BIG_CODES[40])
    hashes = found.codes.hash(polars_lookup.HASH_SEED).to_numpy().copy()
    hashes[twin] = hashes[first]
    table = PerfectHash.of(hashes)
    assert table.unplaced.tolist() == [max(twin, first)]
    monkeypatch.setitem(state.cache, "polars:lookup", dataclasses.replace(found, table=table))
    lost = polars_lookup.locate(state.cache["polars:lookup"], pl.Series(state.codes[1:]))[1]
    assert max(twin, first) - 1 in lost.tolist()
    for kind in KINDS:
        assert (
            rows_of(big.validate_column(codes_column(kind, rows), BIG_VS, system=BIG)) == expected
        )


@pytest.mark.parametrize("kind", ["Categorical", "Enum"])
def test_polars_categories_no_row_holds_are_not_answered(big: Workbench, kind: str) -> None:
    """Categories shared with other columns (or an Enum's unused ones) are not validated
    nor kept as codes: only what the rows hold."""
    from workbench.bulk import checker

    junk = [f"junk {kind} {i}" for i in range(50)]
    rows = [BIG_CODES[7], BIG_CODES[8], None] * 100
    if kind == "Categorical":
        dtype: Any = pl.Categorical(pl.Categories(f"workbench-test-junk-{kind}"))
        other = pl.Series(junk, dtype=dtype)  # ids 0-49 are junk, the column's ids follow
    else:
        dtype = pl.Enum([*junk, BIG_CODES[7], BIG_CODES[8]])
    got = big.validate_column(pl.Series(rows, dtype=dtype), BIG_VS, system=BIG)
    assert got["result"].to_list() == [False, True, None] * 100
    kept = set(checker.make_checker(big.terminology, BIG_VS, None).table(BIG).state.codes)
    assert not kept & set(junk)
    if kind == "Categorical":  # the junk was there all along, sharing the categories
        assert other.to_physical().to_list() == list(range(50))


@pytest.mark.parametrize(
    "values",
    [[1, 2, None], [1.0, 2.5, None], [True, False, None]],
    ids=["Int64", "Float64", "Boolean"],
)
def test_polars_non_text_codes_are_read_as_pandas_reads_them(
    big: Workbench, values: list[Any]
) -> None:
    got = big.validate_column(pl.Series("code", values), BIG_VS, system=BIG)
    assert isinstance(got, pl.DataFrame)
    expected = big.validate_column(pd.Series(values), BIG_VS, system=BIG)
    assert rows_of(got) == rows_of(expected)


def _doubled_in_a_child() -> list[int]:
    from workbench.bulk.polars_backend import in_parallel

    return in_parallel(lambda start: start * 2, range(0, 50, 10))


def test_the_thread_pool_is_kept_and_a_forked_child_starts_its_own() -> None:
    """Work is spread over kept threads, results in order; a child forked after that
    (the server forks for long scans) does not wait on threads it does not have."""
    import multiprocessing

    from workbench.bulk import polars_backend as bulk_polars

    assert bulk_polars.in_parallel(lambda start: start * 2, range(0, 50, 10)) == [0, 20, 40, 60, 80]
    if bulk_polars._cores() > 1:
        pool = bulk_polars._POOL[os.getpid()]
        bulk_polars.in_parallel(lambda start: start, range(3))
        assert bulk_polars._POOL[os.getpid()] is pool
    with multiprocessing.get_context("fork").Pool(1) as children:
        assert children.apply_async(_doubled_in_a_child).get(timeout=60) == [0, 20, 40, 60, 80]


def test_polars_categorical_among_many_other_categories(big: Workbench) -> None:
    """polars' categories are shared by every Categorical column of the process: only the
    ids this column's rows hold are looked up, however many others there are."""
    from workbench.bulk import polars_backend as bulk_polars

    others = pl.Series([f"elsewhere {i}" for i in range(20_000)], dtype=pl.Categorical)
    values = [BIG_CODES[5], None, "made-up", BIG_CODES[5], BIG_CODES[6]]
    column = pl.Series(values, dtype=pl.Categorical)
    strings, ids = bulk_polars._categories(column)
    assert sorted(strings.to_list()) == sorted({BIG_CODES[5], BIG_CODES[6], "made-up"})
    assert ids.null_count() == 1
    got = big.validate_column(column, BIG_VS, system=BIG)
    expected = big.validate_column(pd.Series(values, dtype=object), BIG_VS, system=BIG)
    assert rows_of(got) == rows_of(expected)
    assert len(others) == 20_000  # still alive: its categories stay in the mapping


def test_in_parallel_does_not_wait_for_threads_that_never_start() -> None:
    """The calling thread takes every chunk no helper thread has taken: with the kept
    threads all busy (as on a machine whose other cores are taken), the work still finishes,
    in order; an error in a chunk is raised in the caller."""
    import threading

    from workbench.bulk import polars_backend as bulk_polars

    if bulk_polars._cores() < 2:
        pytest.skip("one core: no helper threads to wait for")
    bulk_polars.in_parallel(lambda start: start, range(3))  # the kept pool exists
    pool = bulk_polars._POOL[os.getpid()]
    release = threading.Event()
    busy = [pool.submit(release.wait, 60) for _ in range(3)]
    try:
        assert bulk_polars.in_parallel(lambda start: start * 2, range(0, 50, 10)) == [
            0,
            20,
            40,
            60,
            80,
        ]

        def fails(start: int) -> int:
            if start == 20:
                raise ValueError("chunk 20")
            return start

        with pytest.raises(ValueError, match="chunk 20"):
            bulk_polars.in_parallel(fails, range(0, 50, 10))
    finally:
        release.set()
        for waiting in busy:
            waiting.result(timeout=60)


def test_polars_categorical_answers_are_kept_per_categories(
    big: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Categorical column's per-id answers are read once per table state and size of its
    ``Categories`` (which only ever add strings): a warm call reads no string. An id no
    row held then, or one added since, is read when a column holds it."""
    from workbench.bulk import polars_backend as bulk_polars

    dtype = pl.Categorical(pl.Categories("workbench-test-known"))
    shared = pl.Series(["made-up known 1", BIG_CODES[11]], dtype=dtype)  # ids 0 and 1

    def check(values: list[str | None]) -> None:
        got = big.validate_column(pl.Series(values, dtype=dtype), BIG_VS, system=BIG)
        expected = big.validate_column(pd.Series(values, dtype=object), BIG_VS, system=BIG)
        assert rows_of(got) == rows_of(expected)

    first = [BIG_CODES[7], None, BIG_CODES[8], ""] * 100  # ids 2 to 4
    check(first)
    held = ["made-up known 1", BIG_CODES[7]] * 100  # id 0: in the categories, unanswered
    check(held)
    grown = ["made-up known 2", BIG_CODES[9], None] * 100  # ids 5 and 6: added since
    check(grown)

    def no_strings(*args: object, **kwargs: object) -> None:
        raise AssertionError("a warm call read the category strings again")

    monkeypatch.setattr(bulk_polars, "_strings", no_strings)
    for values in (first, held, grown):  # warm: every id they hold is answered
        check(values)
    assert shared.to_physical().to_list() == [0, 1]


def test_polars_categorical_answers_survive_the_column_being_dropped(big: Workbench) -> None:
    """polars frees a ``Categories``' strings when no Categorical of it is alive, and gives
    their ids to new strings: the kept answers pin theirs, so a later column's new strings
    get new ids and their own answers."""
    dtype = pl.Categorical(pl.Categories("workbench-test-freed"))

    def check(values: list[str | None]) -> pl.Series:
        column = pl.Series(values, dtype=dtype)
        got = big.validate_column(column, BIG_VS, system=BIG)
        expected = big.validate_column(pd.Series(values, dtype=object), BIG_VS, system=BIG)
        assert rows_of(got) == rows_of(expected)
        return column.to_physical()

    assert check([BIG_CODES[3], BIG_CODES[4]] * 50).to_list()[:2] == [0, 1]
    gc.collect()  # the first column is gone
    assert check(["made-up freed", BIG_CODES[5]] * 50).to_list()[:2] == [2, 3]


def test_polars_categories_of_one_name_and_two_physical_types_are_apart(big: Workbench) -> None:
    """Two ``Categories`` may share a name and differ in their physical type: each keeps
    its own answers (the ids 0 and 1 are other strings in each)."""
    wide = pl.Categorical(pl.Categories("workbench-test-twins"))
    narrow = pl.Categorical(pl.Categories("workbench-test-twins", physical=pl.UInt8))
    for dtype, values in ((wide, [BIG_CODES[0], BIG_CODES[1]]), (narrow, ["twin", BIG_CODES[2]])):
        column = pl.Series(values * 50, dtype=dtype)
        assert column.to_physical().to_list()[:2] == [0, 1]
        got = big.validate_column(column, BIG_VS, system=BIG)
        expected = big.validate_column(pd.Series(values * 50, dtype=object), BIG_VS, system=BIG)
        assert rows_of(got) == rows_of(expected)


def test_polars_nulls_of_a_full_one_byte_categories_are_missing(big: Workbench) -> None:
    """A ``Categories`` of one-byte ids that holds as many strings as polars allows: a
    null row's id (the one after the last) is the largest a byte holds, and is still the
    missing answer, cold and warm."""
    dtype = pl.Categorical(pl.Categories("workbench-test-full-byte", physical=pl.UInt8))
    values: list[str | None] = [*(f"byte-{i}" for i in range(254)), BIG_CODES[0]]
    values += [None, *values[:40], None]
    column = pl.Series(values, dtype=dtype)
    assert column.to_physical().dtype == pl.UInt8
    assert column.to_physical().max() == 254
    expected = rows_of(big.validate_column(pd.Series(values, dtype=object), BIG_VS, system=BIG))
    for _ in range(2):
        assert rows_of(big.validate_column(column, BIG_VS, system=BIG)) == expected
