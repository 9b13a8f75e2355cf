"""Frames that read well in a terminal: every frame a user looks at, printed as pandas prints
it in an 80-column terminal, shows what people look for (the code and its display, the
change, the outcome; a listing's url) and fits the width.

Outside a Jupyter kernel pandas sets ``display.max_columns`` to 0: it fits the columns to
the terminal's width (``shutil.get_terminal_size``: ``$COLUMNS``, else the terminal) by
keeping as many columns from the left as from the right and eliding the middle ones. So a
frame leads with what people look for, keeps wide columns (systems, URLs, free text) in the
middle, and ends with narrow ones (or, where the one text people read is long, with that
text: a designation's ``value``).
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import EXAMPLES, ROOT, THO
from workbench import Workbench

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_V2 = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2"
ADDRESS_USE_V3 = "http://hl7.org/fhir/ConceptMap/cm-address-use-v3"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
MALE_ONLY = {
    "resourceType": "ValueSet",
    "compose": {"include": [{"system": GENDER_CS, "concept": [{"code": "male"}]}]},
}
BOOKABLE = "http://example.org/fhir/ValueSet/workbench-demo-bookable"
DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
ACT = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
WIDTH = 80


@pytest.fixture(scope="module")
def bench(package_dirs: dict[str, Path]) -> Workbench:
    """The shipped content, two real ConceptMaps of FHIR R4 and two real versions of
    v3-ActCode (FHIR R4's and hl7.terminology.r4's)."""
    wb = Workbench()
    wb.load(ROOT / "valuesets", progress=False)
    examples = package_dirs[EXAMPLES[0]] / "package"
    for name in ("cm-administrative-gender-v2", "cm-address-use-v3"):
        wb.load(examples / f"ConceptMap-{name}.json", progress=False)
    wb.load(examples / "CodeSystem-v3-ActCode.json", progress=False)
    wb.load(package_dirs[THO[0]] / "package" / "CodeSystem-v3-ActCode.json", progress=False)
    return wb


def _act_versions(wb: Workbench) -> tuple[str, str]:
    versions = sorted(wb.terminology.codesystem_versions(ACT))
    assert len(versions) == 2, versions
    return versions[0], versions[1]


def _diff(wb: Workbench) -> pd.DataFrame:
    return wb.diff(ACT, *_act_versions(wb)).frame


def _impact(wb: Workbench) -> pd.DataFrame:
    old, new = _act_versions(wb)
    codes = wb.concepts(ACT, old)["code"]
    column = pd.Series(list(codes) * 2 + ["NOT-A-CODE"], name="act")
    return wb.impact(column, system=ACT, from_version=old, to_version=new).frame


def _report(wb: Workbench) -> Any:
    return wb.validate_column(pd.Series(["male", " male", "femal", "Female", None]), GENDER)


#: name -> (the frame, the columns the printed header starts with, others it shows).
FRAMES: dict[str, tuple[Callable[[Workbench], Any], list[str], list[str]]] = {
    "expand(gender).frame": (lambda wb: wb.expand(GENDER).frame, ["code", "display"], []),
    "expand(demo).frame": (lambda wb: wb.expand(BOOKABLE).frame, ["code", "display"], []),
    "valuesets": (lambda wb: wb.valuesets, ["url"], []),
    "codesystems": (lambda wb: wb.codesystems, ["url"], ["concepts"]),
    "conceptmaps": (lambda wb: wb.conceptmaps, ["url"], ["groups"]),
    "mappings(gender)": (lambda wb: wb.mappings(GENDER_V2), ["source_code", "target_code"], []),
    "mappings(address-use)": (
        lambda wb: wb.mappings(ADDRESS_USE_V3),
        ["source_code", "target_code"],
        [],
    ),
    "concepts(demo)": (lambda wb: wb.concepts(DEMO), ["code", "display"], []),
    "concepts(ActCode)": (lambda wb: wb.concepts(ACT), ["code", "display"], []),
    "designations(demo)": (lambda wb: wb.designations(DEMO), ["code"], ["value"]),
    "diff(ActCode).frame": (_diff, ["code", "change"], []),
    "impact(ActCode).frame": (_impact, ["code", "change"], ["replacement"]),
    "by_code()": (
        lambda wb: _report(wb).by_code(),
        ["code", "count", "issue", "suggestion"],
        [],
    ),
    "failure_cases": (lambda wb: _report(wb).failure_cases, ["code", "issue"], []),
    "fix().audit": (lambda wb: _report(wb).fix().audit, ["before", "after"], []),
    "summary().top_invalid": (
        lambda wb: _report(wb).summary().top_invalid,
        ["code", "count", "issue"],
        [],
    ),
    "compare().only_in_a": (
        lambda wb: wb.compare(GENDER, MALE_ONLY).only_in_a,
        ["code", "display"],
        [],
    ),
    # two URLs (the target system, the map) leave room for the code and the equivalence
    "translate().matches": (
        lambda wb: wb.translate("other", system=GENDER_CS).matches,
        ["code"],
        ["equivalence"],
    ),
}


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pandas as in an 80-column terminal: columns fitted (``display.max_columns`` 0, what
    pandas sets outside a Jupyter kernel) to ``$COLUMNS``."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("LINES", "24")
    with pd.option_context("display.width", WIDTH, "display.max_columns", 0):
        yield


@pytest.mark.usefixtures("terminal")
@pytest.mark.parametrize("name", list(FRAMES))
def test_a_frame_printed_in_80_columns_leads_with_what_people_look_for(
    bench: Workbench, name: str
) -> None:
    build, leading, shown = FRAMES[name]
    frame = build(bench)
    assert len(frame), name  # something to print
    assert list(frame.columns)[: len(leading)] == leading
    printed = repr(frame)
    header = printed.splitlines()[0].split()
    assert header[: len(leading)] == leading, printed
    assert all(column in header for column in shown), printed
    assert max(len(line) for line in printed.splitlines()) <= WIDTH, printed


#: What a user runs: ``print`` of an expansion's frame in a Python started in a terminal.
SCRIPT = """
import pandas as pd
from workbench import Workbench
wb = Workbench()
wb.load("valuesets", progress=False)
print(pd.get_option("display.max_columns"))
print(wb.expand("{url}").frame)
"""


def test_the_expansion_frame_in_a_real_80_column_terminal() -> None:
    """A Python process on a pseudo-terminal 80 columns wide (no ``$COLUMNS``): pandas fits
    the frame to it, and the code and display are on screen."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, WIDTH, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(url=GENDER)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=ROOT,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the follower closed: the process has ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    lines = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    assert process.wait(timeout=120) == 0, "\n".join(lines)
    assert lines[0] == "0"  # pandas fits columns to the terminal
    assert lines[1].split()[:2] == ["code", "display"], "\n".join(lines)
    assert max(len(line) for line in lines) <= WIDTH
    assert "male" in lines[2] and "Male" in lines[2]
