"""Column validation on Dask collections: a real two-process ``distributed`` cluster on
127.0.0.1, a partitioned Parquet dataset, and the local (no client) scheduler.

The dask path must give exactly what the pandas path gives on the same data, lazily, with
the value set compiled once on the client and the engine itself (``ShippedChecker``)
shipped to the workers once, not once per partition.

The cluster's Client is made with ``set_as_default=False``: the distributed tests enter it
with ``client.as_current()`` (that is how ``validate_column`` finds it) and compute with
``scheduler=client``, so the tests of the local path never see it, whatever their order.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
import pytest
from distributed import Client, LocalCluster

from workbench import InvalidRequestError, ValueSetNotFoundError, Workbench
from workbench.bulk.shipping import ShippedChecker
from workbench.terminology.engine import Terminology

ACT_CODE = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
# a subset of v3-ActCode picked by the hierarchy (is-a _ActCoverageTypeCode)
COVERAGE = "http://terminology.hl7.org/ValueSet/v3-ActCoverageTypeCode"
UNKNOWN_SYSTEM = "http://unknown.example.org/CodeSystem/nothing"
COLUMNS = ["result", "message", "display", "issue", "system"]
DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
DEMO_ALL = "http://example.org/fhir/ValueSet/workbench-demo-all"
ROWS = 40_000
PARTITIONS = 4


# --- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A two-worker, one-thread-each process cluster on 127.0.0.1; closed (and its worker
    processes checked gone) at the end of the module.

    The scheduler's active memory manager is off: every two seconds it drops replicas that no
    waiting task needs, which on a loaded machine removed the broadcast copy that
    ``test_checker_is_shipped_once`` counts before the test could look.
    """
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
        cluster = LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # a free port: never clash on 8787
        )
    found = Client(cluster, set_as_default=False)
    pids = list(found.run(os.getpid).values())
    assert len(pids) == 2
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
def frame(r4_wb: Workbench) -> pd.DataFrame:
    """Tens of thousands of rows against a hierarchy-based value set: members, other
    ActCode codes (not in the value set, abstract and inactive ones among them), unknown
    codes, unknown and missing systems, missing codes, whitespace, and displays."""
    members = r4_wb.expand(COVERAGE).frame
    concepts = r4_wb.concepts(ACT_CODE)
    outside = concepts[~concepts["code"].isin(members["code"])]
    assert outside["abstract"].any() and outside["inactive"].any()
    rng = np.random.default_rng(20240501)
    kind = rng.choice(
        ["member", "outside", "unknown", "unknown-system", "missing", "whitespace"],
        size=ROWS,
        p=[0.45, 0.25, 0.08, 0.05, 0.10, 0.07],
    )
    member_codes = members["code"].to_numpy(dtype=object)
    member_displays = members["display"].to_numpy(dtype=object)
    pick = rng.integers(0, len(member_codes), ROWS)
    codes = member_codes[pick].copy()
    displays = np.full(ROWS, None, dtype=object)
    show = rng.random(ROWS)
    displays[show < 0.2] = member_displays[pick][show < 0.2]
    displays[(show >= 0.2) & (show < 0.25)] = "Wrong display"
    outside_codes = outside["code"].to_numpy(dtype=object)
    is_outside = kind == "outside"
    codes[is_outside] = outside_codes[rng.integers(0, len(outside_codes), is_outside.sum())]
    is_unknown = kind == "unknown"
    codes[is_unknown] = [f"NOPE{i % 97}" for i in range(is_unknown.sum())]
    is_missing = kind == "missing"
    codes[is_missing] = np.where(rng.random(is_missing.sum()) < 0.5, None, "")
    is_space = kind == "whitespace"
    codes[is_space] = [f" {c}" for c in codes[is_space]]
    systems = np.full(ROWS, ACT_CODE, dtype=object)
    systems[kind == "unknown-system"] = UNKNOWN_SYSTEM
    systems[rng.random(ROWS) < 0.05] = None  # inferred from the value set
    order = rng.permutation(ROWS) + 1_000_000  # a shuffled, non-default index
    data = pd.DataFrame(
        {"dx_code": codes, "dx_system": systems, "dx_display": displays},
        index=pd.Index(order, name="row_id"),
    )
    return data


@pytest.fixture(scope="module")
def dataset(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The frame as a Parquet dataset of PARTITIONS files, written with pandas/pyarrow."""
    folder = tmp_path_factory.mktemp("bulk-dask") / "visits"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(frame)), PARTITIONS)):
        frame.iloc[part].to_parquet(folder / f"part-{i:02d}.parquet", engine="pyarrow")
    return folder


@pytest.fixture(scope="module")
def demo_frame(default_wb: Workbench) -> pd.DataFrame:
    """Eight thousand rows of the demo code system (abstract, inactive, designations)."""
    rng = np.random.default_rng(7)
    codes = [*default_wb.concepts(DEMO)["code"], "bogus", " office", "", None]
    displays = [None, "Praxisbesuch", "Office visit", "Wrong"]
    systems = [DEMO, DEMO, DEMO, UNKNOWN_SYSTEM, None]
    n = 8000
    return pd.DataFrame(
        {
            "dx_code": rng.choice(np.array(codes, dtype=object), n),
            "dx_system": rng.choice(np.array(systems, dtype=object), n),
            "dx_display": rng.choice(np.array(displays, dtype=object), n),
        },
        index=pd.Index(rng.permutation(n), name="visit"),
    )


def plain(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows (index first) as tuples of plain values, missing values as None, by index."""
    frame = frame.sort_index()
    columns = [frame.index.tolist()] + [frame[c].astype(object).tolist() for c in COLUMNS]

    def norm(v: Any) -> Any:
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            return None
        return v

    return [tuple(norm(v) for v in row) for row in zip(*columns, strict=True)]


def partition_tasks(graph: dict[Any, Any]) -> list[Any]:
    """The tasks that validate one partition each."""
    return [t for k, t in graph.items() if isinstance(k, tuple) and k[0].startswith("_partition")]


def shared_keys(graph: dict[Any, Any], data: Any) -> set[Any]:
    """What the partition tasks depend on besides the input's own partitions: the keys
    through which the checker reaches them."""
    inputs = set(dict(data.__dask_graph__()))
    return {d for t in partition_tasks(graph) for d in t.dependencies} - inputs


# --- the distributed path -----------------------------------------------------------------


# dask's read_parquet calls DataFrame.set_index/reset_index(inplace=True), which pandas 3.1
# deprecates (Pandas4Warning); nothing the test or the workbench can change
@pytest.mark.filterwarnings(
    r"ignore:The inplace keyword in DataFrame\.(set_index|reset_index) is deprecated"
    ":pandas.errors.Pandas4Warning"
)
def test_parquet_dataset_equals_pandas(
    r4_wb: Workbench, client: Client, dataset: Path, frame: pd.DataFrame
) -> None:
    ddf = dd.read_parquet(dataset)
    assert ddf.npartitions == PARTITIONS
    assert ddf.index.name == "row_id"
    kwargs = {"code": "dx_code", "system_column": "dx_system", "display": "dx_display"}
    kwargs["abstract"] = False  # (the data has abstract codes: refused, to hit that reason)
    with client.as_current():
        lazy = r4_wb.validate_column(ddf, COVERAGE, **kwargs)
        assert isinstance(lazy, dd.DataFrame)
        assert lazy.npartitions == PARTITIONS
        got = lazy.compute(scheduler=client)
    assert len(got) == ROWS
    # the pandas path on the very same data: as dask read it, and as pandas reads it
    expected = r4_wb.validate_column(ddf.compute(scheduler=client), COVERAGE, **kwargs)
    assert plain(got) == plain(expected)
    from_pandas = r4_wb.validate_column(pd.read_parquet(dataset), COVERAGE, **kwargs)
    assert plain(got) == plain(from_pandas)
    on_frame = r4_wb.validate_column(frame, COVERAGE, **kwargs)
    assert plain(got) == plain(on_frame)
    # the data hits every reason
    issues = set(got["issue"].dropna().astype(str))
    assert {"not-in-vs", "unknown-code", "unknown-system", "invalid-display"} <= issues
    assert {"missing", "abstract"} <= issues
    assert got["result"].isna().sum() == (frame["dx_code"].isna() | (frame["dx_code"] == "")).sum()


def test_checker_is_shipped_once(
    r4_wb: Workbench, client: Client, frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine (``ShippedChecker``) is serialised once on the client and held once by
    each worker, however many partitions there are.

    Three independent observations:

    1. Pickling on the client: ``Terminology.__getstate__`` is wrapped to count calls.
       One ``validate_column`` plus ``compute`` pickles the engine exactly once, with 4
       and with 16 partitions - it is not re-serialised per partition or per task. (A
       count alone could miss a checker embedded in every task of one pickled graph,
       since pickle memoises repeated objects; hence 2.)
    2. The graph: every partition task depends on one and the same key, which is not a
       task of the graph (a scattered Future), and no task's arguments embed the checker.
    3. The workers: after the compute, that key is on both workers (``who_has``), and
       the only ShippedChecker a worker's data store holds for this call is the one under
       it.
    """
    pickled = {"n": 0}
    real = Terminology.__getstate__

    def counting_getstate(self: Terminology) -> dict[str, Any]:
        pickled["n"] += 1
        return real(self)

    monkeypatch.setattr(Terminology, "__getstate__", counting_getstate)
    kwargs = {"code": "dx_code", "system_column": "dx_system"}
    results = []
    earlier: list[Any] = []
    for partitions in (4, 16):
        pickled["n"] = 0
        ddf = dd.from_pandas(frame, npartitions=partitions)
        with client.as_current():
            lazy = r4_wb.validate_column(ddf, COVERAGE, **kwargs)
            graph = dict(lazy.__dask_graph__())
            shared = shared_keys(graph, ddf)
            assert len(shared) == 1, shared
            (key,) = shared
            assert key not in graph  # a Future: the data was scattered, not put in the graph
            tasks = partition_tasks(graph)
            assert len(tasks) == partitions
            assert all(key in t.dependencies for t in tasks)
            for task in graph.values():
                assert not any(isinstance(a, ShippedChecker) for a in getattr(task, "args", ()))
            computed = client.compute(lazy)
            results.append(computed.result())
            holders = client.who_has()
            assert len(holders[key]) == 2  # broadcast: one copy on each worker

            def checker_keys(dask_worker: Any) -> list[Any]:
                from workbench.bulk.shipping import ShippedChecker as Shipped

                return [k for k, v in dask_worker.data.items() if isinstance(v, Shipped)]

            # each worker holds this call's checker once; any other is an earlier call's,
            # on its way out (releasing a Future is asynchronous)
            for held in client.run(checker_keys).values():
                assert key in held
                assert set(held) - {key} <= set(earlier)
            earlier.append(key)
            del computed, lazy
        assert pickled["n"] == 1, f"pickled {pickled['n']} times for {partitions} partitions"
    assert plain(results[0]) == plain(results[1])


def test_dask_series(r4_wb: Workbench, client: Client, frame: pd.DataFrame) -> None:
    series = dd.from_pandas(frame["dx_code"], npartitions=3)
    with client.as_current():
        for system in (ACT_CODE, None):
            lazy = r4_wb.validate_column(series, COVERAGE, system=system)
            assert list(lazy.columns) == COLUMNS
            got = lazy.compute(scheduler=client)
            expected = r4_wb.validate_column(frame["dx_code"], COVERAGE, system=system)
            assert plain(got) == plain(expected)


def test_coding_column_as_dask_series(default_wb: Workbench, client: Client) -> None:
    """Coding dicts survive in an object column (dask turns object columns into strings
    unless dataframe.convert-string is off, and then they are no Codings any more)."""
    cells = [{"system": DEMO, "code": c} for c in ("office", "bogus", "in-person")] + [None]
    data = pd.Series(cells * 5, index=range(100, 120))
    with dask.config.set({"dataframe.convert-string": False}):
        series = dd.from_pandas(data, npartitions=2)
        with client.as_current():
            got = default_wb.validate_column(series, DEMO_ALL).compute(scheduler=client)
    assert plain(got) == plain(default_wb.validate_column(data, DEMO_ALL))


def test_progress(
    r4_wb: Workbench, client: Client, frame: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    ddf = dd.from_pandas(frame.head(5000), npartitions=PARTITIONS)
    kwargs = {"code": "dx_code", "system_column": "dx_system", "display": "dx_display"}
    with client.as_current():
        lazy = r4_wb.validate_column(ddf, COVERAGE, progress=True, **kwargs)
        assert isinstance(lazy, dd.DataFrame)
        got = lazy.compute(scheduler=client)
    assert plain(got) == plain(r4_wb.validate_column(frame.head(5000), COVERAGE, **kwargs))
    assert "100% Completed" in capsys.readouterr().out


def test_meta(r4_wb: Workbench, client: Client, frame: pd.DataFrame) -> None:
    ddf = dd.from_pandas(frame.head(2000), npartitions=2)
    with client.as_current():
        lazy = r4_wb.validate_column(ddf, COVERAGE, code="dx_code", system_column="dx_system")
    meta = lazy._meta
    assert isinstance(meta, pd.DataFrame)
    assert list(meta.columns) == COLUMNS
    assert len(meta) == 0
    assert str(meta["result"].dtype) == "boolean"
    assert list(lazy.columns) == COLUMNS
    assert lazy.divisions == ddf.divisions


def test_meta_matches_partitions(r4_wb: Workbench, client: Client, frame: pd.DataFrame) -> None:
    ddf = dd.from_pandas(frame.head(2000), npartitions=2)
    with client.as_current():
        lazy = r4_wb.validate_column(ddf, COVERAGE, code="dx_code", system_column="dx_system")
        first = lazy.partitions[0].compute(scheduler=client)
    assert first.dtypes.astype(str).to_dict() == lazy.dtypes.astype(str).to_dict()


# --- errors, before any work ----------------------------------------------------------------

DASK_ERRORS = [
    pytest.param("http://example.org/no-such-vs", {"code": "dx_code"}, id="unknown-valueset"),
    pytest.param(DEMO_ALL, {"code": "dx_cod"}, id="bad-code-column"),
    pytest.param(
        DEMO_ALL,
        {"code": "dx_code", "system_column": "dx_sys"},
        id="bad-system-column",
    ),
    pytest.param(DEMO_ALL, {"code": "dx_code", "display": "dx_disp"}, id="bad-display-column"),
    pytest.param(
        DEMO_ALL,
        {},
        id="no-code-column",
    ),
]


@pytest.mark.parametrize(("valueset", "kwargs"), DASK_ERRORS)
def test_errors_like_pandas(
    default_wb: Workbench, demo_frame: pd.DataFrame, valueset: str, kwargs: dict[str, Any]
) -> None:
    """The dask path raises what the pandas path raises, at the call, before any task runs
    (the local path: no client is current here)."""
    small = demo_frame.head(50)
    with pytest.raises((KeyError, InvalidRequestError, ValueSetNotFoundError)) as on_pandas:
        default_wb.validate_column(small, valueset, **kwargs)
    with pytest.raises(type(on_pandas.value)) as on_dask:
        default_wb.validate_column(dd.from_pandas(small, npartitions=2), valueset, **kwargs)
    if isinstance(on_dask.value, KeyError):
        text = str(on_dask.value)
        assert str(next(iter(v for v in kwargs.values() if v not in small.columns))) in text
        assert all(c in text for c in small.columns)
    if isinstance(on_dask.value, ValueSetNotFoundError):
        assert str(on_dask.value) == f"ValueSet {valueset} not found"


# --- the local scheduler (no distributed client) ---------------------------------------------


def test_local_scheduler(default_wb: Workbench, demo_frame: pd.DataFrame) -> None:
    """Without a client the checker goes into the graph once, as one shared task."""
    from distributed import get_client

    with pytest.raises(ValueError):
        get_client()  # no client is current: the local path
    ddf = dd.from_pandas(demo_frame, npartitions=PARTITIONS)
    kwargs = {"code": "dx_code", "system_column": "dx_system", "display": "dx_display"}
    lazy = default_wb.validate_column(ddf, DEMO_ALL, **kwargs)
    graph = dict(lazy.__dask_graph__())
    shared = shared_keys(graph, ddf)
    assert len(shared) == 1
    (key,) = shared
    holders = [k for k, t in graph.items() if isinstance(getattr(t, "value", None), ShippedChecker)]
    assert holders == [key]
    tasks = partition_tasks(graph)
    assert len(tasks) == PARTITIONS
    assert all(key in t.dependencies for t in tasks)
    expected = plain(default_wb.validate_column(demo_frame, DEMO_ALL, **kwargs))
    for scheduler in ("sync", "threads"):
        assert plain(lazy.compute(scheduler=scheduler)) == expected


NOT_EXPANDABLE = {
    "resourceType": "ValueSet",
    "url": "http://example.org/fhir/ValueSet/bulk-dask-not-expandable",
    "compose": {"include": [{"system": DEMO}, {"system": "http://snomed.info/sct"}]},
}


def test_value_set_that_cannot_be_expanded(default_wb: Workbench, demo_frame: pd.DataFrame) -> None:
    small = demo_frame.head(200)
    kwargs = {"code": "dx_code", "system_column": "dx_system"}
    expected = default_wb.validate_column(small, NOT_EXPANDABLE, **kwargs)
    assert "unknown-system" in set(expected["issue"].dropna())
    lazy = default_wb.validate_column(
        dd.from_pandas(small, npartitions=2), NOT_EXPANDABLE, **kwargs
    )
    assert plain(lazy.compute(scheduler="sync")) == plain(expected)


def test_local_scheduler_progress(
    default_wb: Workbench, demo_frame: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    ddf = dd.from_pandas(demo_frame, npartitions=2)
    lazy = default_wb.validate_column(ddf, DEMO_ALL, code="dx_code", system=DEMO, progress=True)
    got = lazy.compute(scheduler="sync")
    assert plain(got) == plain(
        default_wb.validate_column(demo_frame, DEMO_ALL, code="dx_code", system=DEMO)
    )
    assert "100% Completed" in capsys.readouterr().out
