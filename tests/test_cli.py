"""The workbench command, run as a real subprocess on small files written here."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench import Workbench

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
ROWS = {"id": [1, 2, 3], "gender": ["male", "female", "unknown"]}
NUMBERS = {"id": [1, 2], "code": [12, 7]}  # numbers read as codes: "12", never "12.0"


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command, as a user runs it (stdout piped: no progress bar)."""
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def write(path: Path, data: dict[str, list[object]]) -> Path:
    """Write ``data`` in the format of ``path``'s extension."""
    frame = pd.DataFrame(data)
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    elif path.suffix == ".ndjson":
        frame.to_json(path, orient="records", lines=True)  # NaN as null
    elif path.suffix == ".xlsx":
        frame.to_excel(path, index=False)
    return path


FORMATS = [".csv", ".tsv", ".parquet", ".ndjson", ".xlsx"]
#: The summary's last line, when the valid share reached --fail-under and when it did not.
PASSED = "PASS: {} rows valid ({}%), at least --fail-under {}"
FAILED = "FAIL: {} rows valid ({}%), below --fail-under {}"


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize(
    ("data", "extra", "code", "lines"),
    [
        (ROWS, [], 0, ["rows: 3", "valid: 3 (100.00%)", PASSED.format("3 of 3", "100.00", 100)]),
        (
            {"gender": ["male", "bogus"]},
            [],
            1,
            ["valid: 1 (50.00%)", "'bogus' unknown-code", FAILED.format("1 of 2", "50.00", 100)],
        ),
        (
            {"gender": ["male", "bogus"]},
            ["--fail-under", "50"],
            0,
            ["valid: 1 (50.00%)", PASSED.format("1 of 2", "50.00", 50)],
        ),
        (NUMBERS, ["--column", "code"], 1, ["'12' unknown-code", "'7' unknown-code"]),
    ],
)
def test_validate_formats_and_outcomes(
    tmp_path: Path, suffix: str, data: dict, extra: list[str], code: int, lines: list[str]
) -> None:
    path = write(tmp_path / f"data{suffix}", data)
    column = [] if "--column" in extra else ["--column", "gender"]
    done = run("validate", path, *column, "--valueset", GENDER, *extra)
    assert done.returncode == code, done.stderr
    for line in lines:
        assert line in done.stdout
    assert "12.0" not in done.stdout
    assert done.stderr == ""  # piped: no progress bar
    assert done.stdout.splitlines()[-1].startswith("PASS: " if code == 0 else "FAIL: ")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize(
    ("codes", "extra", "code", "lines"),
    [
        pytest.param(
            [],
            [],
            0,
            [
                "rows: 0",
                "valid: none (the column has no rows: nothing to validate)",
                "PASS: no rows to validate (--fail-under 100)",
            ],
            id="no-rows",
        ),
        pytest.param(
            [None, None, None],
            [],
            1,
            [
                "rows: 3",
                "valid: none (the column is empty: all 3 rows lack a code)",
                "  missing: 3",
                FAILED.format("0 of 3", "0.00", 100),
            ],
            id="only-missing",
        ),
        pytest.param(
            [None, None, None],
            ["--fail-under", "0"],
            0,
            [
                "rows: 3",
                "valid: none (the column is empty: all 3 rows lack a code)",
                "  missing: 3",
                PASSED.format("0 of 3", "0.00", 0),
            ],
            id="only-missing-fail-under-0",
        ),
    ],
)
def test_an_empty_column_says_so(
    tmp_path: Path,
    suffix: str,
    codes: list[str | None],
    extra: list[str],
    code: int,
    lines: list[str],
) -> None:
    """A column with no code to validate (no rows, or every row missing its code) says so
    plainly; the exit codes stay those of the valid share (100% of no rows, 0% of missing
    ones) against --fail-under."""
    frame = pd.DataFrame({"gender": pd.Series(codes, dtype=object)})
    path = tmp_path / f"data{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        pq.write_table(pa.table({"gender": pa.array(codes, pa.string())}), path)
    done = run("validate", path, "--column", "gender", "--valueset", GENDER, *extra)
    assert done.returncode == code, done.stderr
    assert done.stdout.splitlines() == lines


def test_the_summary_shows_the_suggestion_beside_each_failing_code(
    tmp_path: Path, default_wb: Workbench
) -> None:
    """Each failing code's line says what the column report suggests for it (by_code()'s
    suggestion, from the same suggester), within 80 columns."""
    codes = [" male", "Female", "Female", "femal", "Unknwn", "zzzz", "male"]
    path = write(tmp_path / "d.csv", {"gender": codes})
    done = run("validate", path, "--column", "gender", "--valueset", GENDER)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[lines.index("most frequent invalid codes:") + 1 :] == [
        "  'Female' unknown-code (2): did you mean 'female' (Female)?",
        "  ' male' unknown-code (1): did you mean 'male' (Male)?",
        "  'femal' unknown-code (1): did you mean 'female' (Female)?",
        "  'Unknwn' unknown-code (1): did you mean 'unknown' (Unknown)?",
        "  'zzzz' unknown-code (1)",
        FAILED.format("1 of 7", "14.29", 100),
    ]
    table = default_wb.validate_column(pd.Series(codes), GENDER).by_code(failures_only=True)
    for failing, suggestion in zip(table["code"], table["suggestion"], strict=True):
        shown = f": did you mean {suggestion!r}" if isinstance(suggestion, str) else ""
        assert any(line.startswith(f"  {failing!r} unknown-code (") for line in lines)
        assert any(line.startswith(f"  {failing!r}") and shown in line for line in lines)
    assert max(len(line) for line in lines) <= 80


def test_a_long_suggested_display_is_elided_to_80_columns(tmp_path: Path) -> None:
    long = "A display far longer than a terminal line can hold beside the code and its issue"
    codesystem = tmp_path / "cs.json"
    codesystem.write_text(
        json.dumps(
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/long",
                "status": "active",
                "content": "complete",
                "caseSensitive": True,
                "concept": [{"code": "long-code", "display": long}],
            }
        )
    )
    path = write(tmp_path / "d.csv", {"code": ["LONG-CODE", "long-code"]})
    args = ["--column", "code", "--system", "http://example.org/long", "--load", codesystem]
    done = run("validate", path, *args, "--fail-under", "50")
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if "did you mean" in line]
    assert line.startswith("  'LONG-CODE' unknown-code (1): did you mean 'long-code' (A display")
    assert len(line) == 80 and line.endswith("…)?")
    assert done.stdout.splitlines()[-1] == PASSED.format("1 of 2", "50.00", 50)


def test_a_folder_of_parquet_files_and_a_json_report(tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    write(folder / "a.parquet", {"gender": ["male", "other"]})
    write(folder / "b.parquet", {"gender": ["nonsense", "female"]})
    report = tmp_path / "out.json"
    done = run(
        "validate",
        folder,
        "--column",
        "gender",
        "--system",
        GENDER_CS,
        "--report",
        report,
        "--fail-under",
        "75",
    )
    assert done.returncode == 0, done.stderr  # "other" is a gender: 3 of 4 reach 75%
    summary = json.loads(report.read_text())
    assert (summary["rows"], summary["valid"], summary["valid_percent"]) == (4, 3, 75.0)
    assert summary["top_invalid"][0]["code"] == "nonsense"


def test_whole_floats_are_read_as_codes(tmp_path: Path) -> None:
    # a column of numbers with a gap is float in pandas: 12.0 in the file, "12" as a code
    # (Excel's floats: test_excel_is_read_in_batches; Parquet's: pyarrow's cast to string)
    path = write(tmp_path / "data.ndjson", {"code": [12, None, 7.5]})
    done = run("validate", path, "--column", "code", "--system", GENDER_CS)
    assert done.returncode == 1, done.stderr
    assert "'12' unknown-code" in done.stdout and "'7.5' unknown-code" in done.stdout
    assert "12.0" not in done.stdout


def test_excel_is_read_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.cli import reading

    monkeypatch.setattr(reading, "BATCH_ROWS", 2)
    path = write(tmp_path / "d.xlsx", {"n": [1, 2, 3, 4, 5], "code": ["a", 1, None, "0012", 2.0]})
    table = reading.open_table(path)
    frames = list(reading.batches(table, ["code"]))
    assert [len(f) for f in frames] == [2, 2, 1]
    assert [v for f in frames for v in f["code"]] == ["a", "1", None, "0012", "2"]


@pytest.mark.parametrize("suffix", [".html", ".xlsx"])
def test_html_and_excel_reports(tmp_path: Path, suffix: str) -> None:
    path = write(
        tmp_path / "d.csv", {"id": [1, 2, 3, 4], "gender": ["male", " male", "bogus", None]}
    )
    report = tmp_path / f"out{suffix}"
    done = run("validate", path, "--column", "gender", "--valueset", GENDER, "--report", report)
    assert done.returncode == 1, done.stderr
    if suffix == ".html":
        page = report.read_text(encoding="utf-8")
        assert "1</b> of 4 rows valid (25.00%)" in page
        assert "␣male" in page and "did you mean 'male'" in page
        return
    from openpyxl import load_workbook

    book = load_workbook(report)
    summary = dict(r for r in book["Summary"].iter_rows(values_only=True) if r[0])
    assert (summary["rows"], summary["valid"], summary["missing"]) == (4, 1, 1)
    assert summary["column"] == "gender" and summary["valueset"] == GENDER
    rows = {r[0]: r for r in book["By code"].iter_rows(values_only=True)}
    assert rows["code"][:4] == ("code", "count", "issue", "suggestion")
    assert rows[" male"][3] == "male" and rows["bogus"][1] == 1


def _truncated(tmp: Path) -> Path:
    good = write(tmp / "good.parquet", ROWS)
    bad = tmp / "bad.parquet"
    bad.write_bytes(good.read_bytes()[:-20])
    return bad


def _mixed_encodings(tmp: Path) -> Path:
    path = tmp / "mixed.csv"
    path.write_bytes("gender\nm\xe2le\n".encode() + "f\xe9male\n".encode("latin-1"))
    return path


def _text(name: str, content: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        (tmp / name).write_text(content)
        return tmp / name

    return make


BAD_INPUTS = [
    ("missing file", lambda tmp: tmp / "none.csv", [], "no such file"),
    ("empty file", _text("empty.csv", ""), [], "the file is empty"),
    ("not parquet", _text("fake.parquet", "gender\nmale\n"), [], "not a readable Parquet file"),
    ("truncated", _truncated, [], "not a readable Parquet file"),
    (
        "bad ndjson",
        _text("bad.ndjson", '{"gender": "male"}\n{"gender": \n'),
        [],
        "not a readable NDJSON file",
    ),
    ("mixed encodings", _mixed_encodings, [], "not a readable CSV file"),
    (
        "unknown column",
        lambda tmp: write(tmp / "d.csv", ROWS),
        ["--column", "sex"],
        "no column 'sex'; the columns are 'id', 'gender'",
    ),
    (
        "unknown value set",
        lambda tmp: write(tmp / "d.csv", ROWS),
        ["--valueset", "http://example.org/none"],
        "ValueSet http://example.org/none not found",
    ),
    (
        "unknown code system",
        lambda tmp: write(tmp / "d.csv", ROWS),
        ["--valueset", None, "--system", "http://example.org/no-system"],
        "CodeSystem http://example.org/no-system not found",
    ),
    ("not excel", _text("fake.xlsx", "gender\nmale\n"), [], "not a readable Excel file"),
    ("unknown format", _text("d.xml", "<a/>"), [], "unknown format"),
    (
        "unknown report form",
        lambda tmp: write(tmp / "d.csv", ROWS),
        ["--report", "out.pdf"],
        "--report out.pdf: write one of .json, .html, .xlsx",
    ),
    (
        "no value set",
        lambda tmp: write(tmp / "d.csv", ROWS),
        ["--valueset", None],
        "give one of --valueset URL or --system URL",
    ),
]


@pytest.mark.parametrize(
    ("make", "change", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS]
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, make: Callable[[Path], Path], change: list, message: str
) -> None:
    options = {"--column": "gender", "--valueset": GENDER}
    options.update(dict(zip(change[::2], change[1::2], strict=True)))
    args = [a for k, v in options.items() if v is not None for a in (k, v)]
    done = run("validate", make(tmp_path), *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 or "Usage:" in done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["expand", GENDER], "male,Male,http://hl7.org/fhir/administrative-gender,4.0.1"),
        (["expand", GENDER, "--format", "ndjson"], '"code":"female"'),
        (["expand", GENDER, "--format", "json"], '"resourceType": "ValueSet"'),
        (["lookup", GENDER_CS, "other"], "other\tOther"),
    ],
)
def test_expand_and_lookup(args: list[str], expected: str) -> None:
    done = run(*args)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout


def test_translate_a_column_and_load_a_map(tmp_path: Path) -> None:
    conceptmap = tmp_path / "map.json"
    conceptmap.write_text(
        json.dumps(
            {
                "resourceType": "ConceptMap",
                "url": "http://ex/cm",
                "status": "active",
                "group": [
                    {
                        "source": "http://ex/a",
                        "target": "http://ex/b",
                        "element": [
                            {"code": "1", "target": [{"code": "x", "equivalence": "equivalent"}]}
                        ],
                    }
                ],
            }
        )
    )
    data = write(tmp_path / "codes.csv", {"code": [1, 2]})
    done = run("translate", data, "--column", "code", "--map", "http://ex/cm", "--load", conceptmap)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert rows[1].startswith("1,") and ",x," in rows[1]
    assert rows[2].startswith("2,")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["lookup", GENDER_CS, "male", "--load", "/nonexistent/x.json"], 2, "/nonexistent"),
        (["expand", "http://example.org/none"], 2, "could not be found"),
        (["install", "not-a-reference"], 2, "error:"),
        (["import", "/nonexistent/release.zip"], 2, "error:"),
    ],
)
def test_other_commands_fail_cleanly(args: list[str], code: int, message: str) -> None:
    done = run(*args)
    assert done.returncode == code
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    ["validate", "expand", "lookup", "translate", "install", "import", "serve", "view"],
)
def test_every_help_shows_an_example_and_the_content_options(command: str) -> None:
    done = run(command, "--help")
    assert done.returncode == 0, done.stderr
    assert "example: " in done.stdout
    for option in ("--load", "--package", "--release"):
        assert option in done.stdout


def test_the_python_names_are_the_commands_too(tmp_path: Path) -> None:
    """``--code`` and ``--display`` name the columns as ``validate_column``'s ``code=`` and
    ``display=`` do; ``--column`` and ``--display-column`` stay their aliases."""
    path = write(tmp_path / "data.csv", {"gender": ["male", "bogus"], "shown": ["Male", "Man"]})
    named = run("validate", path, "--code", "gender", "--display", "shown", "--valueset", GENDER)
    aliased = run(
        "validate", path, "--column", "gender", "--display-column", "shown", "--valueset", GENDER
    )
    assert named.returncode == aliased.returncode == 1, named.stderr
    assert named.stdout == aliased.stdout and "'bogus' unknown-code" in named.stdout


COMMANDS = {
    "console script": [str(Path(sys.executable).with_name("workbench"))],
    "python -m workbench": [sys.executable, "-m", "workbench"],
    "python -m workbench.cli": [sys.executable, "-m", "workbench.cli"],
}


@pytest.mark.parametrize("how", list(COMMANDS))
@pytest.mark.parametrize(
    ("args", "code", "out"),
    [
        (["lookup", GENDER_CS, "other"], 0, "other\tOther"),
        (["expand", "http://example.org/not-there"], 2, ""),
    ],
)
def test_every_way_of_running_the_command_is_the_same(
    how: str, args: list[str], code: int, out: str
) -> None:
    """The console script, ``python -m workbench`` (a pipeline whose scripts folder is not
    on the PATH) and ``python -m workbench.cli``: one command, one answer, one exit code."""
    done = subprocess.run([*COMMANDS[how], *args], capture_output=True, text=True, timeout=120)
    reference = run(*args)
    assert done.returncode == reference.returncode == code, done.stderr
    assert done.stdout == reference.stdout and out in done.stdout
    assert done.stderr == reference.stderr
