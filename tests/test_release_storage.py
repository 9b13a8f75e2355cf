"""The columnar store base (``workbench.releases.storage.ColumnarStore``): an atomic build,
reopening, pickling, rows by code (integer and string codes), long tables, the ``active``
convention and the format check that makes an older store be imported again."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pytest

from workbench.releases.closure import Closure
from workbench.releases.storage import ColumnarStore, write_table


class Strings(ColumnarStore):
    FORMAT = 3
    TABLES = ("concepts", "terms")
    HIERARCHY = True
    LONG: ClassVar[dict[str, str]] = {"terms": "row"}


class Numbers(ColumnarStore):
    FORMAT = 1
    CODE = "id"
    NUMERIC = True


def _strings(tmp: Path) -> dict[str, Any]:
    write_table(
        pa.table({"code": ["b", "a", "c"], "display": ["B", "A", "C"], "active": [1, 0, 1]}),
        tmp / "concepts.arrow",
    )
    write_table(pa.table({"row": [0, 0, 2], "value": ["b1", "b2", "c1"]}), tmp / "terms.arrow")
    Closure.build(3, np.array([1, 2]), np.array([0, 1])).save(tmp)
    return {"version": "v1"}


def _numbers(tmp: Path) -> dict[str, Any]:
    ids = pa.array([5, 17, 40_000_000_001], pa.int64())
    write_table(pa.table({"id": ids, "active": [True, False, True]}), tmp / "concepts.arrow")
    return {}


@pytest.fixture
def strings(tmp_path: Path) -> Strings:
    meta = Strings.build(tmp_path / "s", _strings)
    assert meta["format"] == 3 and meta["version"] == "v1" and "importSeconds" in meta
    return Strings(tmp_path / "s")


@pytest.fixture
def numbers(tmp_path: Path) -> Numbers:
    Numbers.build(tmp_path / "n", _numbers)
    return Numbers(tmp_path / "n")


def test_the_build_is_atomic(tmp_path: Path) -> None:
    def broken(tmp: Path) -> dict[str, Any]:
        write_table(pa.table({"code": ["a"], "active": [True]}), tmp / "concepts.arrow")
        raise ValueError("the release is broken")

    with pytest.raises(ValueError, match="broken"):
        Strings.build(tmp_path / "s", broken)
    assert list(tmp_path.iterdir()) == []  # neither the store nor its temporary folder
    Strings.build(tmp_path / "s", _strings)
    assert [p.name for p in tmp_path.iterdir()] == ["s"]
    assert Strings.is_store(tmp_path / "s")
    assert json.loads((tmp_path / "s" / "meta.json").read_text())["format"] == 3


def test_rows_by_string_code(strings: Strings) -> None:
    assert strings.n == 3 and strings.codes.to_pylist() == ["b", "a", "c"]
    assert [strings.row(c) for c in ("a", "b", "c", "d", "", 1, None)] == [1, 0, 2, -1, -1, -1, -1]
    assert strings.rows(["c", "x", "b"]).tolist() == [2, -1, 0]
    assert strings.value("display", 1) == "A"
    assert strings.column("display", np.array([2, 0])) == ["C", "B"]
    with pytest.raises(TypeError, match="string codes"):
        _ = strings.ids


def test_rows_by_integer_code(numbers: Numbers) -> None:
    assert numbers.codes.to_pylist() == ["5", "17", "40000000001"]
    found = [numbers.row(c) for c in ("5", "17", "40000000001", "6", "x", "-5", 17, "1" * 19)]
    assert found == [0, 1, 2, -1, -1, -1, -1, -1]
    assert numbers.rows(np.array([17, 3, 5], dtype=np.int64)).tolist() == [1, -1, 0]
    assert numbers.rows(["40000000001", "nope"]).tolist() == [2, -1]
    with pytest.raises(TypeError, match="no hierarchy"):
        _ = numbers.closure


def test_the_active_convention(strings: Strings, numbers: Numbers, tmp_path: Path) -> None:
    assert strings.active.dtype == np.bool_ and strings.active.tolist() == [True, False, True]
    assert numbers.active.tolist() == [True, False, True]

    def inactive_only(tmp: Path) -> dict[str, Any]:  # an old layout: 'inactive', no 'active'
        write_table(pa.table({"code": ["a"], "inactive": [True]}), tmp / "concepts.arrow")
        return {}

    Numbers.build(tmp_path / "old", inactive_only)
    with pytest.raises(ValueError, match="no concept column 'id'"):
        Numbers(tmp_path / "old")

    class Plain(ColumnarStore):
        pass

    with pytest.raises(ValueError, match="no concept column 'active'"):
        Plain(tmp_path / "old")


def test_long_tables_and_the_hierarchy(strings: Strings) -> None:
    assert strings.rows_of("terms", 0).column("value").to_pylist() == ["b1", "b2"]
    assert strings.rows_of("terms", 1).num_rows == 0
    assert strings.rows_of("terms", 2).column("value").to_pylist() == ["c1"]
    assert strings.closure.descendants(0).tolist() == [1, 2]
    assert strings.closure.children[1].tolist() == [2]


def test_reopen_and_pickle(strings: Strings) -> None:
    again = Strings(strings.path)
    assert again.meta == strings.meta and again.codes.equals(strings.codes)
    copy = pickle.loads(pickle.dumps(strings))
    assert isinstance(copy, Strings) and copy.path == strings.path
    assert copy.row("c") == 2 and copy.active.tolist() == [True, False, True]
    assert len(pickle.dumps(strings)) < 200  # the folder, not the data


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda p: (p / "terms.arrow").unlink(), FileNotFoundError),
        (lambda p: (p / "up.npy").unlink(), FileNotFoundError),
        (lambda p: (p / "concepts.arrow").write_bytes(b"not arrow"), pa.ArrowInvalid),
    ],
    ids=["table", "closure", "truncated"],
)
def test_a_damaged_store_does_not_open(strings: Strings, damage: Any, error: type) -> None:
    damage(strings.path)
    with pytest.raises(error):
        Strings(strings.path)


def test_another_format_is_not_a_store(strings: Strings, tmp_path: Path) -> None:
    class Newer(Strings):
        FORMAT = 4

    assert Strings.is_store(strings.path) and not Newer.is_store(strings.path)
    assert not Strings.is_store(tmp_path / "nothing")
    (strings.path / "meta.json").write_text("{broken")
    assert not Strings.is_store(strings.path)
