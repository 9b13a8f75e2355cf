"""Column translation agrees with wb.translate on every row (tables and a property test)."""

from __future__ import annotations

import pandas as pd
import polars
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_conceptmap import ALL, MAIN, A, B
from workbench import Workbench
from workbench.bulk.translate import COLUMNS, strongest


@pytest.fixture(scope="module")
def mwb() -> Workbench:
    w = Workbench()
    w.registry.add_many([dict(m) for m in ALL])
    return w


def test_column_table(mwb: Workbench) -> None:
    data = pd.DataFrame({"c": ["1", "2", None, "3", "zz", "1"]}, index=list("abcdef"))
    out = mwb.translate_column(data, MAIN["url"], code="c", system=A)
    assert list(out.columns) == list(COLUMNS)
    assert list(out.index) == list("abcdef")
    assert out["result"].tolist() == [True, True, pd.NA, False, True, True]
    assert out["target_code"].tolist() == ["x", "y", None, None, "zz", "x"]
    assert out["equivalence"].tolist() == [
        "equivalent",
        "wider",
        None,
        "unmatched",
        "equal",
        "equivalent",
    ]
    assert out["matches"].tolist() == [1, 2, 0, 1, 1, 1]
    assert out["message"].isna().tolist() == [True, True, True, False, True, True]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["1", "2", "3", "4", "5", "zz", None]), max_size=20))
def test_agrees_with_translate(mwb: Workbench, codes: list[str | None]) -> None:
    out = mwb.translate_column(pd.Series(codes, dtype=object), MAIN["url"], system=A)
    for i, c in enumerate(codes):
        row = tuple(out.iloc[i])
        if c is None:
            assert row[0] is pd.NA
            continue
        expected = strongest(mwb.translate(c, system=A, url=MAIN["url"]))
        assert tuple(None if v is pd.NA or v != v else v for v in row) == tuple(
            None if v != v else v for v in expected
        )


def test_accessor_delegates(mwb: Workbench) -> None:
    data = pd.DataFrame({"c": ["1", "2"]})
    direct = mwb.translate_column(data, MAIN["url"], code="c", system=A)
    pd.testing.assert_frame_equal(
        data.fhir.translate(MAIN["url"], code="c", system=A, workbench=mwb), direct
    )
    pd.testing.assert_frame_equal(
        data["c"].fhir.translate(MAIN["url"], system=A, workbench=mwb), direct
    )


@pytest.mark.parametrize("dtype", [object, "string[pyarrow]", "category"])
def test_system_column_and_dtypes_agree_with_translate(mwb: Workbench, dtype: object) -> None:
    codes = ["1", "1", "2", None, "zz", "x", "1", ""]
    systems = [A, "http://ex/b", A, A, None, None, None, A]
    index = pd.RangeIndex(10, 18)
    data = pd.DataFrame(
        {"c": pd.Series(codes, index, dtype=dtype), "s": pd.Series(systems, index, dtype=dtype)}
    )
    out = mwb.translate_column(data, MAIN["url"], code="c", system_column="s")
    assert list(out.index) == list(range(10, 18))
    assert str(out["result"].dtype) == "boolean"
    for i, (c, s) in enumerate(zip(codes, systems, strict=True)):
        row = tuple(None if v is pd.NA else v for v in out.iloc[i])
        if not c:
            assert row == (None, None, None, None, None, 0, None)
        else:
            assert row == strongest(mwb.translate(c, system=s, url=MAIN["url"]))


def test_unknown_map_raises_even_for_an_empty_column(mwb: Workbench) -> None:
    from workbench.terminology.conceptmap import ConceptMapNotFoundError

    with pytest.raises(ConceptMapNotFoundError, match="http://ex/none"):
        mwb.translate_column(pd.Series([], dtype=object), "http://ex/none")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["x", "y", "w", "zz", "1", None]), max_size=20))
def test_reverse_agrees_with_translate(mwb: Workbench, codes: list[str | None]) -> None:
    """``reverse=True`` maps target codes back, row for row as ``wb.translate(reverse=True)``."""
    series = pd.Series(codes, dtype=object)
    out = mwb.translate_column(series, MAIN["url"], system=B, reverse=True)
    for i, c in enumerate(codes):
        row = tuple(None if v is pd.NA else v for v in out.iloc[i])
        if c is None:
            assert row == (None, None, None, None, None, 0, None)
            continue
        assert row == strongest(mwb.translate(c, system=B, url=MAIN["url"], reverse=True))
    lazy = mwb.translate_column(
        polars.Series(codes, dtype=polars.String), MAIN["url"], system=B, reverse=True
    )
    assert lazy["target_code"].to_list() == out["target_code"].tolist()


def test_reverse_finds_the_source_codes(mwb: Workbench) -> None:
    out = mwb.translate_column(pd.Series(["x", "y"]), MAIN["url"], system=B, reverse=True)
    assert out["target_system"].tolist() == [A, A]
    assert out["target_code"].tolist() == ["1", "2"]


@pytest.mark.parametrize("backend", ["pandas", "dask", "polars"])
def test_reverse_with_a_system_column_agrees_with_translate(mwb: Workbench, backend: str) -> None:
    """``reverse=True`` with a system column (targets, sources, none, missing codes), on
    each backend: every row as ``wb.translate(reverse=True)`` on that row."""
    codes = ["x", "y", "x", "1", "w", None, "", "y", "zz"]
    systems = [B, B, A, A, B, B, None, None, B]
    data = pd.DataFrame({"c": codes, "s": systems}, dtype=object)
    if backend == "dask":
        import dask.dataframe as dd

        out = mwb.translate_column(
            dd.from_pandas(data, npartitions=2),
            MAIN["url"],
            code="c",
            system_column="s",
            reverse=True,
        ).compute()
    elif backend == "polars":
        frame = polars.DataFrame(
            {"c": codes, "s": systems}, schema={"c": polars.String, "s": polars.String}
        )
        out = mwb.translate_column(frame, MAIN["url"], code="c", system_column="s", reverse=True)
        out = out.to_pandas()
    else:
        out = mwb.translate_column(data, MAIN["url"], code="c", system_column="s", reverse=True)
    assert list(out.columns) == list(COLUMNS)
    for i, (c, s) in enumerate(zip(codes, systems, strict=True)):
        row = tuple(None if v is pd.NA or v != v else v for v in out.iloc[i])
        if not c:
            assert row == (None, None, None, None, None, 0, None)
        else:
            expected = strongest(mwb.translate(c, system=s, url=MAIN["url"], reverse=True))
            assert row == tuple(None if v != v else v for v in expected), (c, s)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("url", [m["url"] for m in ALL])
def test_the_shipped_translator_is_plain_data_and_answers_alike(
    mwb: Workbench, url: str, reverse: bool
) -> None:
    """What Spark's executors get (issue 38, point 6): a pickled ``ShippedTranslator``
    answers every code as the engine's ``ColumnTranslator`` does."""
    import pickle

    from workbench.bulk.jobs import TranslateColumn
    from workbench.bulk.translate import shipped

    translator = TranslateColumn(mwb.service, url, reverse=reverse).translator()
    plain = shipped(translator)
    assert plain is not None  # (no map here provides into a loaded code system)
    copy = pickle.loads(pickle.dumps(plain))
    system = B if reverse else A
    for code in ["1", "2", "3", "4", "5", "9", "x", "y", "UNK", "nope"]:
        assert copy(system, code) == translator(system, code), code


def test_a_map_providing_into_a_loaded_code_system_is_not_shipped() -> None:
    """``unmapped`` ``provided`` shows the display of the column's own code in the target
    system: only the engine knows it, so the translator stays on the driver."""
    from workbench.bulk.jobs import TranslateColumn
    from workbench.bulk.translate import shipped

    w = Workbench()
    w.registry.add_many([dict(MAIN)])
    assert shipped(TranslateColumn(w.service, MAIN["url"]).translator()) is not None
    target = {"resourceType": "CodeSystem", "url": B, "status": "active", "content": "complete"}
    w.load({**target, "concept": [{"code": "7", "display": "Seven"}]})
    assert shipped(TranslateColumn(w.service, MAIN["url"]).translator()) is None
