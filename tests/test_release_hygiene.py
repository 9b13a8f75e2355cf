"""Data hygiene on import (issue 25, point 5), on the small synthetic releases: a control
character in a text (SNOMED CT, LOINC, RxNorm; the XML parser refuses them in ICD-10-CM) is
an error naming the file, line, column and character; two rows of one
id with different content are an error naming both rows; equal twins are kept once. Nothing
is left in the cache after an error."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import snomed_rf2
from snomed_rf2 import opened

from workbench import Workbench
from workbench.errors import ReleaseFormatError
from workbench.releases.snomed.loader import KIND as SNOMED

DATA = Path(__file__).resolve().parent / "data"
SCT = "http://snomed.info/sct"
DESCRIPTIONS = f"sct2_Description_Snapshot-en_INT_{snomed_rf2.TIME}.txt"
RELATIONSHIPS = f"sct2_Relationship_Snapshot_INT_{snomed_rf2.TIME}.txt"
DISEASE = (  # the synonym "Disease" of 64572001, as the test release writes it
    f"1006011\t{snomed_rf2.TIME}\t1\t{snomed_rf2.CORE}\t64572001\ten\t{snomed_rf2.SYN}\tDisease"
    f"\t{snomed_rf2.CASE}"
)
IS_A = (  # 64572001 is a 404684003
    f"102025\t{snomed_rf2.TIME}\t1\t{snomed_rf2.CORE}\t64572001\t404684003\t0\t116680003"
    "\t900000000000011006\t900000000000451002"
)


def _snomed(folder: Path) -> Path:
    return snomed_rf2.write(folder)


def _loinc(folder: Path) -> Path:
    return Path(shutil.copytree(DATA / "loinc-release", folder / "loinc"))


def _rxnorm(folder: Path) -> Path:
    return Path(shutil.copytree(DATA / "rxnorm-release", folder / "rxnorm"))


def _edit(pattern: str, before: str, after: str) -> Callable[[Path], Path]:
    """Replace ``before`` by ``after`` in the file matching ``pattern``; returns the file."""

    def edit(release: Path) -> Path:
        file = next(release.glob(f"**/{pattern}"))
        text = file.read_bytes().decode("utf-8")
        assert before in text
        file.write_bytes(text.replace(before, after, 1).encode("utf-8"))
        return file

    return edit


def _line(file: Path, needle: str) -> int:
    """The 1-based line of the file where ``needle`` is."""
    text = file.read_bytes().decode("utf-8")
    return text[: text.index(needle)].count("\n") + 1


CONTROL = (
    "a control character, {char}, in the column {column}: terms and other texts may not hold "
    "control characters"
)

# id, release, edit, the text marking the broken line, character, column
CONTROLS: list[tuple[str, Callable[[Path], Path], Callable[[Path], Path], str, str, str]] = [
    (
        "SNOMED CT synonym with NUL",
        _snomed,
        _edit(DESCRIPTIONS, "\tDisease\t", "\tDis\x00ease\t"),
        "Dis\x00ease",
        "U+0000 (NUL)",
        "term",
    ),
    (
        "SNOMED CT FSN with ESC",
        _snomed,
        _edit(DESCRIPTIONS, "Disease (disorder)", "Disease \x1b(disorder)"),
        "\x1b",
        "U+001B (ESC)",
        "term",
    ),
    (
        "SNOMED CT concrete value with BEL",
        _snomed,
        _edit(
            f"sct2_RelationshipConcreteValues_Snapshot_INT_{snomed_rf2.TIME}.txt", "\t#", "\t\x07#"
        ),
        "\x07",
        "U+0007 (BEL)",
        "value",
    ),
    (
        "LOINC related names with NUL (second line of a record)",
        _loinc,
        _edit("Loinc.csv", "Glu; Gluc;", "Glu;\x00Gluc;"),
        "\x00",
        "U+0000 (NUL)",
        "RELATEDNAMES2",
    ),
    (
        "RxNorm name with NUL",
        _rxnorm,
        _edit("RXNCONSO.RRF", "|acetaminophen|", "|acetamino\x00phen|"),
        "\x00",
        "U+0000 (NUL)",
        "STR",
    ),
    (
        "LOINC part name with DEL",
        _loinc,
        _edit("Part.csv", '"Glucose","Glucose"', '"Glu\x7fcose","Glucose"'),
        "\x7f",
        "U+007F (DEL)",
        "PartName",
    ),
]


@pytest.mark.parametrize(
    ("make", "edit", "needle", "char", "column"),
    [row[1:] for row in CONTROLS],
    ids=[row[0] for row in CONTROLS],
)
def test_a_control_character_is_an_error_with_file_and_line(
    tmp_path: Path,
    make: Callable[[Path], Path],
    edit: Callable[[Path], Path],
    needle: str,
    char: str,
    column: str,
) -> None:
    release = make(tmp_path / "release")
    file = edit(release)
    cache = tmp_path / "cache"
    wb = Workbench()
    with pytest.raises(ReleaseFormatError) as caught:
        wb.load_release(release, cache_dir=cache, progress=False)
    line = _line(file, needle)
    assert (caught.value.file, caught.value.line) == (str(file), line)
    assert str(caught.value) == f"{file}, line {line}: " + CONTROL.format(char=char, column=column)
    assert wb.codesystems.empty or SCT not in set(wb.codesystems["url"])
    assert not cache.exists() or not any(cache.iterdir())  # nothing half-imported


def _append(pattern: str, row: str) -> Callable[[Path], Path]:
    def edit(release: Path) -> Path:
        file = next(release.glob(f"**/{pattern}"))
        file.write_bytes(file.read_bytes() + f"{row}\r\n".encode())
        return file

    return edit


# id, edit, what, id, the first row, the second row
TWINS = [
    (
        "a description with two terms",
        _append(DESCRIPTIONS, DISEASE.replace("\tDisease\t", "\tIllness\t")),
        "description",
        "1006011",
        DISEASE,
        DISEASE.replace("\tDisease\t", "\tIllness\t"),
    ),
    (
        "a description active and inactive",
        _append(
            DESCRIPTIONS, DISEASE.replace(f"{snomed_rf2.TIME}\t1\t", f"{snomed_rf2.TIME}\t0\t")
        ),
        "description",
        "1006011",
        DISEASE,
        DISEASE.replace(f"{snomed_rf2.TIME}\t1\t", f"{snomed_rf2.TIME}\t0\t"),
    ),
    (
        "a relationship with two destinations",
        _append(RELATIONSHIPS, IS_A.replace("\t404684003\t", "\t138875005\t")),
        "relationship",
        "102025",
        IS_A,
        IS_A.replace("\t404684003\t", "\t138875005\t"),
    ),
]


@pytest.mark.parametrize(
    ("edit", "what", "key", "first", "second"),
    [row[1:] for row in TWINS],
    ids=[row[0] for row in TWINS],
)
def test_an_id_twice_with_different_content_names_both_rows(
    tmp_path: Path,
    edit: Callable[[Path], Path],
    what: str,
    key: str,
    first: str,
    second: str,
) -> None:
    release = snomed_rf2.write(tmp_path / "release")
    file = edit(release)
    with pytest.raises(ReleaseFormatError) as caught:
        SNOMED.load(release, tmp_path / "cache")
    one, two = _line(file, first), _line(file, second + "\r\n")
    assert str(caught.value) == (
        f"{file}, line {two}: {what} {key} appears twice with different content "
        f"({file}, line {one}: {first!r} and {file}, line {two}: {second!r}); a Snapshot "
        "holds one row per id"
    )
    assert not any((tmp_path / "cache").iterdir())


def test_equal_twins_are_kept_once(tmp_path: Path) -> None:
    plain = snomed_rf2.write(tmp_path / "plain")
    twice = snomed_rf2.write(tmp_path / "twice")
    _append(DESCRIPTIONS, DISEASE)(twice)
    _append(RELATIONSHIPS, IS_A)(twice)
    expected, _ = opened(SNOMED.load(plain, tmp_path / "cache"))
    found, built = opened(SNOMED.load(twice, tmp_path / "cache"))
    assert built and found.store.meta["descriptions"] == expected.store.meta["descriptions"]
    assert found.store.meta["relationships"] == expected.store.meta["relationships"]
    terms = [d["value"] for d in found.designations(found.store.row("64572001"))]
    assert terms.count("Disease") == 1


def test_a_loinc_term_twice_names_both_lines(tmp_path: Path) -> None:
    release = _loinc(tmp_path)
    file = release / "LoincTable" / "Loinc.csv"
    lines = file.read_bytes().decode("utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith('"2345-7"'))
    record = "\n".join(lines[start : start + 2])  # its DefinitionDescription spans two lines
    file.write_bytes(file.read_bytes() + (record + "\n").encode())
    total = len(lines)  # the copy starts on the line after the last one
    with pytest.raises(ReleaseFormatError) as caught:
        Workbench().load_release(release, cache_dir=tmp_path / "cache", progress=False)
    assert str(caught.value) == (
        f"{file}, line {total}: the term 2345-7 appears twice (lines {start + 1} and {total}); "
        "Loinc.csv holds one row per term"
    )
