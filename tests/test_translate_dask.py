"""Column translation on Dask (a real two-process cluster on 127.0.0.1, and the local
scheduler) and on polars: exactly what the pandas path gives, row for row.

The Client is made with ``set_as_default=False`` and entered with ``client.as_current()``
(how ``translate_column`` finds it), as in ``test_bulk_dask.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import polars as pl
import psutil
import pytest
from distributed import Client, LocalCluster

from tests.test_conceptmap import ALL, MAIN, A
from workbench import ColumnNotFoundError, Workbench
from workbench.bulk.translate import COLUMNS
from workbench.terminology.conceptmap import ConceptMapNotFoundError

GENDER = "http://hl7.org/fhir/administrative-gender"
GENDER_V2 = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2"
ROWS = 6_000


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """Two worker processes, one thread each, on 127.0.0.1; checked gone at the end."""
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
        cluster = LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        )
    found = Client(cluster, set_as_default=False)
    pids = list(found.run(os.getpid).values())
    try:
        yield found
    finally:
        found.close()
        cluster.close()
        deadline = time.monotonic() + 20
        while any(psutil.pid_exists(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if psutil.pid_exists(p)], "worker processes left running"


@pytest.fixture(scope="module")
def mwb() -> Workbench:
    w = Workbench()
    w.registry.add_many([dict(m) for m in ALL])
    return w


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """Codes of the project's test map and of the R4 gender map, with a system column
    (missing systems, other systems), missing and empty codes, on a shuffled index."""
    rng = np.random.default_rng(11)
    codes = np.array(
        ["1", "2", "3", "4", "5", "zz", "male", "female", "other", "unknown", "", None],
        dtype=object,
    )
    systems = np.array([A, GENDER, None, "http://ex/other"], dtype=object)
    return pd.DataFrame(
        {
            "code": codes[rng.integers(0, len(codes), ROWS)],
            "system": systems[rng.integers(0, len(systems), ROWS)],
        },
        index=pd.Index(rng.permutation(ROWS) + 500, name="row"),
    )


CASES = [
    # (map url, system argument)
    (MAIN["url"], "system"),
    (MAIN["url"], A),
    (GENDER_V2, "system"),
    (GENDER_V2, GENDER),
    (None, "system"),
]


def _workbench(mwb: Workbench, r4_wb: Workbench, url: str | None) -> Workbench:
    return r4_wb if url == GENDER_V2 else mwb


def rows_of(system: str) -> dict[str, str]:
    """The keyword that says what ``system`` is: the column ``system``, else a URI."""
    return {"system_column": system} if system == "system" else {"system": system}


@pytest.mark.parametrize(("url", "system"), CASES[::2])
def test_distributed_equals_pandas(
    client: Client,
    mwb: Workbench,
    r4_wb: Workbench,
    frame: pd.DataFrame,
    url: str | None,
    system: str,
) -> None:
    wb = _workbench(mwb, r4_wb, url)
    expected = wb.translate_column(frame, url, code="code", **rows_of(system))
    with client.as_current():
        lazy = wb.translate_column(
            dd.from_pandas(frame, npartitions=4), url, code="code", **rows_of(system)
        )
        assert isinstance(lazy, dd.DataFrame)
        assert list(lazy.columns) == list(COLUMNS)
        got = lazy.compute(scheduler=client)
    pd.testing.assert_frame_equal(got.loc[expected.index], expected)


def test_series_on_the_local_scheduler(r4_wb: Workbench, frame: pd.DataFrame) -> None:
    series = frame["code"]
    expected = r4_wb.translate_column(series, GENDER_V2, system=GENDER)
    got = r4_wb.translate_column(
        dd.from_pandas(series, npartitions=3), GENDER_V2, system=GENDER
    ).compute(scheduler="synchronous")
    pd.testing.assert_frame_equal(got.loc[expected.index], expected)
    assert expected["target_code"].value_counts().to_dict() == {
        "M": (series == "male").sum(),
        "F": (series == "female").sum(),
        "A": (series == "other").sum(),
        "U": (series == "unknown").sum(),
    }


def test_meta_matches_partitions(mwb: Workbench, frame: pd.DataFrame) -> None:
    lazy = mwb.translate_column(
        dd.from_pandas(frame, npartitions=2), MAIN["url"], code="code", system_column="system"
    )
    got = lazy.compute(scheduler="synchronous")
    assert dict(lazy.dtypes) == dict(got.dtypes)
    assert str(got["result"].dtype) == "boolean" and str(got["matches"].dtype) == "int64"


@pytest.mark.parametrize(
    ("url", "code", "error", "text"),
    [
        ("http://ex/none", "code", ConceptMapNotFoundError, "http://ex/none"),
        (MAIN["url"], "nope", ColumnNotFoundError, "The code column .nope. is not in the data"),
    ],
)
def test_errors_like_pandas(
    mwb: Workbench,
    frame: pd.DataFrame,
    url: str,
    code: str,
    error: type[Exception],
    text: str,
) -> None:
    with pytest.raises(error, match=text):
        mwb.translate_column(frame, url, code=code, system_column="system")
    with pytest.raises(error, match=text):
        mwb.translate_column(
            dd.from_pandas(frame, npartitions=2), url, code=code, system_column="system"
        )


@pytest.mark.parametrize(("url", "system"), CASES)
def test_polars_equals_pandas(
    mwb: Workbench, r4_wb: Workbench, frame: pd.DataFrame, url: str | None, system: str
) -> None:
    wb = _workbench(mwb, r4_wb, url)
    expected = wb.translate_column(
        frame.reset_index(drop=True), url, code="code", **rows_of(system)
    )
    got = wb.translate_column(pl.from_pandas(frame), url, code="code", **rows_of(system))
    assert isinstance(got, pl.DataFrame)
    assert got.columns == list(COLUMNS)
    assert got["result"].to_list() == [None if v is pd.NA else v for v in expected["result"]]
    for name in COLUMNS[1:]:
        assert got[name].to_list() == expected[name].tolist(), name
    series = wb.translate_column(pl.from_pandas(frame)["code"], url, system=A)
    assert isinstance(series, pl.DataFrame) and series.height == len(frame)
