"""``workbench validate``'s streamed count (workbench/cli/distinct.py): the rows counted per
distinct key across batches, each key decided once, give the summary ``validate_column``
gives on the whole frame, in small batches and with the distinct keys decided in parts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench import Workbench
from workbench.cli import distinct, reading, validate

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
CORE = Path(__file__).resolve().parents[1] / "valuesets" / "r4-core"
CODES = ["male", "female", "other", "unknown", "bogus", " male", "male ", "", None]
SYSTEMS = [GENDER_CS, GENDER_CS, "http://example.org/elsewhere", None]
DISPLAYS = ["Male", "Female", "male", "Wrong", None, " Male"]


@pytest.fixture(scope="module")
def wb() -> Workbench:
    """The gender value set and code system (as the shipped content has them)."""
    found = Workbench()
    for name in ("CodeSystem-administrative-gender.json", "ValueSet-administrative-gender.json"):
        found.load(CORE / name, progress=False)
    return found


def rows(count: int) -> pd.DataFrame:
    """Codes, systems and displays drawn at random (fixed seed): later rows repeat the
    keys of earlier ones and add new ones."""
    rng = np.random.default_rng(40)
    pick = [rng.integers(0, len(values), count) for values in (CODES, SYSTEMS, DISPLAYS)]
    return pd.DataFrame(
        {
            "code": [CODES[i] for i in pick[0]],
            "system": [SYSTEMS[i] for i in pick[1]],
            "display": [DISPLAYS[i] for i in pick[2]],
        }
    )


def write(path: Path, frame: pd.DataFrame) -> Path:
    """``frame`` as Parquet (row groups of 500) or NDJSON (by ``path``'s extension)."""
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=500)
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


@pytest.mark.parametrize("suffix", [".parquet", ".ndjson"])
@pytest.mark.parametrize(
    ("valueset", "system", "system_column", "display_column"),
    [
        (GENDER, None, None, None),
        (
            {"resourceType": "ValueSet", "compose": {"include": [{"system": GENDER_CS}]}},
            GENDER_CS,
            None,
            None,
        ),
        (GENDER, None, "system", None),
        (GENDER, None, None, "display"),
        (GENDER, None, "system", "display"),
    ],
)
@pytest.mark.parametrize("kept", [7, distinct.KEPT_KEYS])
def test_the_streamed_count_is_validate_column_on_the_whole_frame(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wb: Workbench,
    suffix: str,
    valueset: object,
    system: str | None,
    system_column: str | None,
    display_column: str | None,
    kept: int,
) -> None:
    monkeypatch.setattr(reading, "BATCH_ROWS", 97)
    monkeypatch.setattr(reading, "ARROW_BATCH_ROWS", 97)
    monkeypatch.setattr(validate, "KEPT_KEYS", kept)
    frame = rows(2000)
    table = reading.open_table(write(tmp_path / f"data{suffix}", frame))
    job = validate.Job(table, "code", valueset, system, system_column, display_column)
    streamed = validate.run(wb, job)

    expected = validate.Tally()
    expected.add(
        wb.validate_column(
            frame.astype(object).where(frame.notna(), None),
            valueset,  # type: ignore[arg-type]
            code="code",
            system=system,
            system_column=system_column,
            display=display_column,
        )
    )
    assert streamed.to_json() == expected.to_json()
    assert list(streamed.invalid.items()) == list(expected.invalid.items())
    assert streamed.messages == expected.messages
    assert streamed.lines() == expected.lines()
    assert streamed.rows == 2000 and len(streamed.invalid) >= 3


def test_keys_of_several_columns_tell_missing_from_empty_and_never_run_together() -> None:
    batch = pa.record_batch(
        [pa.array(["a", "a", "ab", "a", None, ""]), pa.array(["bc", "b", "c", None, "", None])],
        names=["code", "system"],
    )
    keys = distinct.keys_of(batch, ["code", "system"]).to_pylist()
    assert len(set(keys)) == 6  # ("a","bc") and ("ab","c") differ; None and "" differ


def test_distinct_counts_rows_per_key_in_order_of_first_appearance() -> None:
    counter = distinct.Distinct(["code"])
    for values in (["b", "a", "b", None], ["c", "a", None, None]):
        counter.add(pa.record_batch([pa.array(values)], names=["code"]))
    values, counts = counter.take()
    assert values.column("code").to_pylist() == ["b", "a", None, "c"]
    assert counts.tolist() == [2, 2, 3, 1]
    assert len(counter) == 0
