"""workbench.read_fhir: folders, files, NDJSON (plain and gzipped), JSON files, Bundles and
dicts; counts per type, lossless round trips, bounded chunks, and every kind of bad input
as a record (never a traceback)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.json as pajson
import pytest

import workbench
from workbench import FhirData, LoadError, read_fhir
from workbench.fhirdata import ReadError

OBS = {
    "resourceType": "Observation",
    "id": "o1",
    "status": "final",
    "valueQuantity": {"value": 1.5},
}
PAT = {"resourceType": "Patient", "id": "p1", "_gender": {"extension": [{"url": "x"}]}}
BUNDLE = {"resourceType": "Bundle", "type": "collection", "entry": [{"resource": OBS}] * 2}


def ndjson(*resources: Any) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in resources)


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def problems(data: FhirData) -> list[tuple[str, int | None, str]]:
    return [(Path(r.source).name, r.line, r.severity) for r in data.errors]


# --- sources -------------------------------------------------------------------------


def test_the_public_names() -> None:
    assert workbench.read_fhir is read_fhir
    assert workbench.FhirData is FhirData


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("Observation.ndjson", ndjson(OBS, OBS)),
        ("Observation.ndjson.gz", ndjson(OBS, OBS)),
        ("x.jsonl", ndjson(OBS, OBS)),
        ("gzipped-without-the-name.ndjson", gzip.compress(ndjson(OBS, OBS))),
        ("crlf.ndjson", ndjson(OBS, OBS).replace(b"\n", b"\r\n")),
        ("no-final-newline.ndjson", ndjson(OBS, OBS).rstrip(b"\n")),
        ("bom.ndjson", b"\xef\xbb\xbf" + ndjson(OBS, OBS)),
        ("blank-lines.ndjson", b"\n  \n" + ndjson(OBS) + b"\n\n" + ndjson(OBS)),
        ("bundle.json", orjson.dumps(BUNDLE)),
        ("bundle.json.gz", orjson.dumps(BUNDLE)),
        ("lines.json", ndjson(OBS, OBS)),  # NDJSON named .json: read as NDJSON
    ],
)
def test_file_kinds(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    read = read_fhir(path)
    assert read.counts == {"Observation": 2}
    assert read.errors == []
    assert list(read.resources()) == [OBS, OBS]


def test_a_folder_recursively_a_list_of_paths_and_dicts(tmp_path: Path) -> None:
    write(tmp_path, "Observation.ndjson", ndjson(OBS))
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "Patient.ndjson.gz", ndjson(PAT, PAT))
    write(tmp_path / "sub", "p.json", orjson.dumps(PAT))
    write(tmp_path / "sub", "notes.txt", b"not read")
    write(tmp_path / "sub", ".hidden.ndjson", b"not read")
    assert read_fhir(tmp_path).counts == {"Observation": 1, "Patient": 3}
    assert read_fhir(str(tmp_path)).sources == 3
    paths = [tmp_path / "Observation.ndjson", str(tmp_path / "sub" / "p.json")]
    assert read_fhir(paths).counts == {"Observation": 1, "Patient": 1}
    assert read_fhir([OBS, PAT, OBS]).counts == {"Observation": 2, "Patient": 1}
    assert read_fhir(iter([OBS])).counts == {"Observation": 1}
    assert read_fhir(OBS).counts == {"Observation": 1}


def test_mixed_types_in_one_file(tmp_path: Path) -> None:
    path = write(tmp_path, "export.ndjson", ndjson(OBS, PAT, OBS, PAT, PAT))
    read = read_fhir(path)
    assert read.counts == {"Observation": 2, "Patient": 3}
    assert list(read.resources("Patient")) == [PAT] * 3
    assert read.errors == []


# --- round trips and chunks ----------------------------------------------------------


def test_ndjson_lines_are_kept_byte_for_byte(tmp_path: Path) -> None:
    lines = [b'{"resourceType":"Observation", "id" : "a", "valueDecimal": 1.50, "x": [ ]}']
    lines.append(b'{"resourceType":"Observation","id":"b","_status":{"extension":[{"url":"u"}]}}')
    path = write(tmp_path, "Observation.ndjson", b"\n".join(lines) + b"\n")
    read = read_fhir(path)
    assert b"".join(read.ndjson_batches("Observation")) == b"\n".join(lines) + b"\n"
    exact = list(read.resources("Observation", exact_decimals=True))
    assert str(exact[0]["valueDecimal"]) == "1.50"


def test_bundle_entries_keep_decimals_digit_for_digit(tmp_path: Path) -> None:
    text = b'{"resourceType":"Bundle","entry":[{"resource":{"resourceType":"Observation",'
    text += b'"valueQuantity":{"value":1.50}}}]}'
    read = read_fhir(write(tmp_path, "b.json", text))
    assert b"".join(read.ndjson_batches("Observation")) == (
        b'{"resourceType":"Observation","valueQuantity":{"value":1.50}}\n'
    )


@pytest.mark.parametrize("memory_bytes", [0, 10_000, 1 << 30])
def test_batches_are_bounded_and_spill_to_a_temporary_folder(
    tmp_path: Path, memory_bytes: int
) -> None:
    resources = [{**OBS, "id": f"o{i}"} for i in range(3000)]
    resources += [{**PAT, "id": f"p{i}"} for i in range(500)]
    path = write(tmp_path, "all.ndjson", ndjson(*resources))
    read = read_fhir(path, batch_bytes=20_000, memory_bytes=memory_bytes, spill_dir=tmp_path)
    batches = list(read.ndjson_batches("Observation"))
    assert len(batches) > 5
    assert all(b.endswith(b"\n") and len(b) < 20_000 + 200 for b in batches)
    table = pa.concat_tables(pajson.read_json(io.BytesIO(b)) for b in batches)
    assert table.column("id").to_pylist() == [f"o{i}" for i in range(3000)]
    assert list(read.resources("Patient")) == resources[3000:]
    folder = read._store.spill_folder
    assert (folder is not None) == (memory_bytes < 1 << 30)
    read.close()
    assert folder is None or not folder.exists()


def test_the_temporary_folder_goes_with_the_object(tmp_path: Path) -> None:
    with read_fhir(write(tmp_path, "o.ndjson", ndjson(OBS) * 50), memory_bytes=0) as read:
        folder = read._store.spill_folder
        assert folder is not None and folder.exists()
        assert len(read) == 50
    assert not folder.exists()
    read = read_fhir(write(tmp_path, "o.ndjson", ndjson(OBS) * 50), memory_bytes=0)
    folder = read._store.spill_folder
    del read
    assert folder is not None and not folder.exists()


def test_shows_types_counts_and_problems(tmp_path: Path) -> None:
    read = read_fhir(write(tmp_path, "Observation.ndjson", ndjson(OBS, PAT) + b"{\n"))
    assert repr(read) == (
        "<FhirData 2 resources of 2 types (Observation 1, Patient 1); 1 error, 1 warning>"
    )
    assert "Patient" in read._repr_html_() and "line 3" in read._repr_html_()
    assert read.summary().to_dict("list") == {
        "resource_type": ["Observation", "Patient"],
        "count": [1, 1],
        "bytes": [len(ndjson(OBS)), len(ndjson(PAT))],
    }
    frame = read.errors_frame()
    assert list(frame.columns) == ["source", "line", "severity", "reason"]
    assert frame["line"].tolist() == [3, 2]


def test_asking_for_a_type_that_is_not_one() -> None:
    read = read_fhir([OBS])
    assert list(read.ndjson_batches("Patient")) == []
    with pytest.raises(workbench.InvalidRequestError, match="Observations"):
        read.ndjson_batches("Observations")


# --- bad input ------------------------------------------------------------------------

DEEP = b'{"resourceType":"Observation","x":' + b"[" * 1000 + b"]" * 1000 + b"}"
NESTED_BUNDLE: dict[str, Any] = {"resourceType": "Patient", "id": "innermost"}
for _ in range(6):
    NESTED_BUNDLE = {"resourceType": "Bundle", "entry": [{"resource": NESTED_BUNDLE}]}

BAD_LINES = [
    pytest.param(b'{"resourceType": "Observation", ', "not valid JSON", id="malformed"),
    pytest.param(DEEP, "nest more than 100 levels", id="1000-levels"),
    pytest.param(b'{"resourceType":"Observation","v":NaN}', "not valid JSON", id="nan"),
    pytest.param(b'{"resourceType":"Observation","v":-Inf}', "not valid JSON", id="inf"),
    pytest.param(b'{"resourceType":"Observation","v":"\xff"}', "not valid JSON", id="utf-8"),
    pytest.param(b'{"resourceType":"Observations"}', "not a FHIR R4 resource type", id="unknown"),
    pytest.param(b'{"resourceType":"Resource"}', "not a FHIR R4 resource type", id="abstract"),
    pytest.param(b'{"id":"x"}', "without resourceType", id="no-type"),
    pytest.param(b'{"resourceType":7}', "not a FHIR R4 resource type", id="type-number"),
    pytest.param(b"[1, 2]", "a JSON array, not an object", id="array"),
    pytest.param(b'"Observation"', "a JSON string, not an object", id="string"),
    pytest.param(b"null", "a JSON null, not an object", id="null"),
    pytest.param(
        b'{"resourceType":"Observation"} {"resourceType":"Observation"}',
        "not valid JSON",
        id="two-on-a-line",
    ),
    pytest.param(orjson.dumps(NESTED_BUNDLE), "a Bundle inside 4 Bundles", id="bundle-depth"),
]


@pytest.mark.parametrize(("line", "reason"), BAD_LINES)
@pytest.mark.parametrize("batch_bytes", [64, 1 << 20])
def test_a_bad_line_is_a_record_and_the_rest_is_read(
    tmp_path: Path, line: bytes, reason: str, batch_bytes: int
) -> None:
    path = write(tmp_path, "Observation.ndjson", ndjson(OBS, OBS) + line + b"\n" + ndjson(OBS))
    read = read_fhir(path, batch_bytes=batch_bytes)
    assert read.counts["Observation"] == 3
    assert len(read.errors) == 1, read.errors
    record = read.errors[0]
    assert (record.source, record.line, record.severity) == (str(path), 3, "error")
    assert reason in record.reason


def test_a_line_over_the_limit_is_skipped_as_it_streams(tmp_path: Path) -> None:
    long = b'{"resourceType":"Observation","note":"' + b"x" * 50_000_000 + b'"}'
    path = write(tmp_path, "Observation.ndjson", ndjson(OBS) + long + b"\n" + ndjson(OBS))
    read = read_fhir(path)
    assert read.counts == {"Observation": 2}
    assert problems(read) == [("Observation.ndjson", 2, "error")]
    assert "longer than 16,777,216 bytes" in read.errors[0].reason
    small = read_fhir(path, max_line_bytes=1000, batch_bytes=300)
    assert small.counts == {"Observation": 2} and len(small.errors) == 1
    last = write(tmp_path, "last.ndjson", ndjson(OBS) + long)  # no newline at the end
    assert problems(read_fhir(last, max_line_bytes=1000)) == [("last.ndjson", 2, "error")]


def test_another_type_than_the_file_name_declares_is_kept_with_one_warning(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "1.Observation.000.ndjson", ndjson(OBS, PAT, OBS, PAT))
    read = read_fhir(path)
    assert read.counts == {"Observation": 2, "Patient": 2}
    assert problems(read) == [("1.Observation.000.ndjson", 2, "warning")]
    assert "2 lines of another type than Observation" in read.errors[0].reason
    whole = read_fhir(write(tmp_path, "Observation.ndjson", ndjson(PAT) * 3))
    assert whole.counts == {"Patient": 3}
    assert problems(whole) == [("Observation.ndjson", 1, "warning")]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty.ndjson", b""),
        ("blank.ndjson", b"\n\n  \n"),
        ("empty.json", b""),
        ("empty.ndjson.gz", b""),
    ],
)
def test_an_empty_file_is_no_problem(tmp_path: Path, name: str, data: bytes) -> None:
    read = read_fhir(write(tmp_path, name, data))
    assert (len(read), read.errors) == (0, [])


def test_a_file_that_is_not_json_is_one_record(tmp_path: Path) -> None:
    text = b"".join(b"name,code,%d\n" % i for i in range(10_000))
    read = read_fhir(write(tmp_path, "Patient.ndjson", text))
    assert problems(read) == [("Patient.ndjson", None, "error")]
    assert read.errors[0].reason.startswith("not JSON: none of its first 100 lines parsed")
    binary = read_fhir(write(tmp_path, "Patient.json", bytes(range(256)) * 10))
    assert problems(binary) == [("Patient.json", None, "error")]
    one = read_fhir(write(tmp_path, "one.ndjson", b"garbage\n"))
    assert problems(one) == [("one.ndjson", 1, "error")]


def test_a_broken_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    data = gzip.compress(ndjson(*[{**OBS, "id": f"o{i}"} for i in range(20_000)]))
    path = tmp_path / "Observation.ndjson.gz"
    path.write_bytes(data[: len(data) // 2])
    read = read_fhir(path, batch_bytes=10_000)
    assert 0 < len(read) < 20_000
    assert problems(read) == [("Observation.ndjson.gz", None, "error")]
    assert "could not be read to the end" in read.errors[0].reason


@pytest.mark.parametrize(
    "source",
    [
        "no/such/folder",
        ["no/such/file.ndjson"],
        Path("no/such/file.ndjson"),
    ],
)
def test_a_missing_path_raises_at_once(source: Any) -> None:
    with pytest.raises(LoadError, match="no such file or folder"):
        read_fhir(source)


def test_a_file_of_another_kind_named_explicitly_raises(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="not a FHIR data file"):
        read_fhir(write(tmp_path, "notes.txt", b"x"))


def test_bad_values_passed_in_are_records() -> None:
    deep: Any = []
    for _ in range(150):
        deep = [deep]
    read = read_fhir([OBS, "Observation", {"resourceType": "Foo"}, {**OBS, "x": deep}, OBS])
    assert read.counts == {"Observation": 2}
    assert [(r.source, r.line) for r in read.errors] == [
        ("<resources>", 2),
        ("<resources>", 3),
        ("<resources>", 4),
    ]


def test_bundles_of_bundles(tmp_path: Path) -> None:
    inner = {"resourceType": "Bundle", "type": "searchset", "entry": [{"resource": PAT}]}
    outer = {
        "resourceType": "Bundle",
        "type": "batch-response",
        "entry": [
            {"resource": inner},
            {"resource": OBS},
            {"response": {"status": "204"}},  # no resource: passed over
            "not an entry",
        ],
    }
    read = read_fhir(write(tmp_path, "b.json", orjson.dumps(outer)))
    assert read.counts == {"Observation": 1, "Patient": 1}
    assert [str(r) for r in read.errors] == [
        f"{tmp_path / 'b.json'}: Bundle.entry[3]: not an object"
    ]
    on_a_line = read_fhir(write(tmp_path, "Bundle.ndjson", ndjson(outer, outer)))
    assert on_a_line.counts == {"Observation": 2, "Patient": 2}
    assert [r.line for r in on_a_line.errors] == [1, 2]
    too_deep = read_fhir(NESTED_BUNDLE, max_bundle_depth=6)
    assert too_deep.counts == {"Patient": 1} and too_deep.errors == []


def test_records_are_frozen_and_printable() -> None:
    record = ReadError("a.ndjson", 3, "not valid JSON")
    with pytest.raises(AttributeError):
        record.line = 4  # type: ignore[misc]
    assert str(record) == "a.ndjson, line 3: not valid JSON"
