"""The MapExplorer widget, driven headlessly: set the inputs' ``.value`` and assert on the
outputs and on what the engine was asked (real R4 maps and the project's own)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, VALUESETS
from tests.test_conceptmap import MAIN, A
from workbench import Workbench
from workbench.notebook import MapExplorer
from workbench.notebook.map_explorer import Debouncer

GENDER = "http://hl7.org/fhir/administrative-gender"
GENDER_V2 = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2"
GENDER_V3 = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v3"


@pytest.fixture(scope="module")
def mwb(package_dirs: dict[str, Path]) -> Workbench:
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    folder = package_dirs[EXAMPLES[0]]
    maps = [json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("**/ConceptMap-*.json")]
    wb.load([*maps, {**MAIN, "id": "main", "status": "active", "title": "Project test map"}])
    return wb


def text_of(markup: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", markup)).strip()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("administrative-gender", {f"{GENDER_V2}|4.0.1", f"{GENDER_V3}|4.0.1"}),
        ("v2.administrativegender", {f"{GENDER_V2}|4.0.1"}),  # the name, case-insensitive
        ("project test", {MAIN["url"]}),  # the title
        ("no such map", set()),
    ],
)
def test_search_the_maps(mwb: Workbench, query: str, expected: set[str]) -> None:
    explorer = MapExplorer(mwb, debounce=0)
    assert len(explorer.select.options) == len(mwb.conceptmaps)
    explorer.search.value = query
    assert {value for _label, value in explorer.select.options} == expected


def test_show_a_map_as_a_table(mwb: Workbench) -> None:
    explorer = MapExplorer(mwb, debounce=0)
    assert "Pick a map" in explorer.table.value
    explorer.show(GENDER_V2)
    assert explorer.select.value == f"{GENDER_V2}|4.0.1"
    rows = mwb.mappings(GENDER_V2)
    assert f"{len(rows)} mappings" in text_of(explorer.metadata.value)
    assert "v2 map for AdministrativeGender" in explorer.metadata.value
    table = text_of(explorer.table.value)
    for source, target in zip(rows["source_code"], rows["target_code"], strict=True):
        assert source in table and target in table
    assert "Type a code" in explorer.output.value


@pytest.mark.parametrize(
    ("url", "code", "system", "reverse", "mapped", "codes"),
    [
        (GENDER_V2, "male", GENDER, False, True, ["M"]),
        (GENDER_V2, "other", GENDER, False, True, ["A", "O"]),
        (GENDER_V2, "F", "", True, True, ["female"]),
        (GENDER_V2, "nonsense", GENDER, False, False, []),
        (MAIN["url"], "2", A, False, True, ["y", "z"]),
        (MAIN["url"], "3", "", False, False, [None]),
    ],
)
def test_translate_as_you_type(
    mwb: Workbench,
    url: str,
    code: str,
    system: str,
    reverse: bool,
    mapped: bool,
    codes: list[str | None],
) -> None:
    explorer = MapExplorer(mwb, debounce=0)
    explorer.show(url)
    explorer.system.value = system
    explorer.reverse.value = reverse
    explorer.code.value = code
    t = explorer.translation
    assert t is not None
    assert t.result is mapped
    assert [m.code for m in t.match_list] == codes
    expected = mwb.translate(
        code, system=system or None, url=explorer.select.value, reverse=reverse
    )
    assert t == expected
    shown = text_of(explorer.output.value)
    assert shown.startswith("mapped" if mapped else "not mapped")
    for c in codes:
        if c:
            assert c in shown
    if t.message:
        assert t.message.replace("'", "&#x27;") in explorer.output.value


def test_changing_the_map_translates_again(mwb: Workbench) -> None:
    explorer = MapExplorer(mwb, debounce=0)
    explorer.show(GENDER_V2)
    explorer.code.value = "female"
    assert [m.code for m in explorer.translation.match_list] == ["F"]  # type: ignore[union-attr]
    explorer.show(GENDER_V3)
    assert [m.code for m in explorer.translation.match_list] == ["F"]  # type: ignore[union-attr]
    assert explorer.translation.match_list[0].source == f"{GENDER_V3}|4.0.1"  # type: ignore[union-attr]
    explorer.code.value = ""
    assert explorer.translation is None and "Type a code" in explorer.output.value


def test_typing_is_debounced(mwb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    real = mwb.translate

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append({"args": args, **kwargs})
        return real(*args, **kwargs)

    monkeypatch.setattr(mwb, "translate", recording)
    explorer = MapExplorer(mwb, debounce=0.3)
    explorer.show(GENDER_V2)
    explorer.system.value = GENDER
    explorer.debouncer.wait()
    calls.clear()
    for typed in ("m", "ma", "mal", "male"):
        explorer.code.value = typed
    assert explorer.debouncer.pending
    assert calls == []  # nothing asked while typing
    explorer.debouncer.wait()
    assert [c["args"] for c in calls] == [("male",)]
    assert [m.code for m in explorer.translation.match_list] == ["M"]  # type: ignore[union-attr]


def test_debouncer_runs_at_once_without_delay_and_once_after_a_burst() -> None:
    ran: list[float] = []
    now = Debouncer(0, lambda: ran.append(time.monotonic()))
    now()
    now()
    assert len(ran) == 2 and not now.pending
    ran.clear()
    later = Debouncer(0.05, lambda: ran.append(time.monotonic()))
    start = time.monotonic()
    for _ in range(5):
        later()
    later.wait()
    assert len(ran) == 1 and ran[0] - start >= 0.05


def test_long_maps_are_cut_and_unknown_maps_are_messages(mwb: Workbench) -> None:
    explorer = MapExplorer(mwb, limit=2, debounce=0)
    explorer.show(MAIN["url"])
    assert "the first 2 shown" in explorer.metadata.value
    assert explorer.table.value.count("<tr") == 3  # the header and two rows
    explorer.show("http://ex/no-such-map")
    assert "ConceptMap http://ex/no-such-map not found" in explorer.output.value
    assert explorer.select.value == MAIN["url"]  # the choice stays


def test_new_maps_appear_in_the_list(package_dirs: dict[str, Path]) -> None:
    wb = Workbench()
    explorer = MapExplorer(wb, debounce=0)
    assert explorer.select.options == ()
    wb.load({**MAIN, "id": "main", "status": "active"})
    assert [v for _l, v in explorer.select.options] == [MAIN["url"]]


def test_the_table_shows_the_displays_translate_shows(package_dirs: dict[str, Path]) -> None:
    """Before: target_display was empty in every row, while translate filled it."""
    folder = package_dirs[EXAMPLES[0]] / "package"
    mwb = Workbench()
    mwb.load(VALUESETS, progress=False)
    mwb.load(folder / "CodeSystem-v2-0001.json", progress=False)  # the map's target system
    mwb.load(folder / "ConceptMap-cm-administrative-gender-v2.json", progress=False)
    explorer = MapExplorer(mwb, debounce=0)
    explorer.show(GENDER_V2)
    rows = mwb.mappings(GENDER_V2)
    assert rows["target_display"].notna().all() and rows["source_display"].notna().all()
    table = text_of(explorer.table.value)
    for source, code, display in zip(
        rows["source_code"], rows["target_code"], rows["target_display"], strict=True
    ):
        shown = {
            (m.code, m.display)
            for m in mwb.translate(source, system=GENDER, url=GENDER_V2).match_list
        }
        assert (code, display) in shown
        assert display in table


LONG = "The concept map says a great deal about this code. " * 12


@pytest.mark.parametrize(
    ("text", "folded"), [("Short message.", False), (LONG, True)], ids=["short", "long"]
)
def test_long_messages_wrap_and_expand(
    mwb: Workbench, monkeypatch: pytest.MonkeyPatch, text: str, folded: bool
) -> None:
    from workbench.errors import InvalidRequestError

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise InvalidRequestError(text)

    explorer = MapExplorer(mwb, debounce=0)
    explorer.show(GENDER_V2)
    monkeypatch.setattr(mwb, "translate", refuse)
    explorer.code.value = "male"
    out = explorer.output.value
    assert "white-space:normal" in out and "overflow-wrap:anywhere" in out
    assert ("<details" in out) is folded
    assert text_of(out).replace("… (show all) …", "") == text.strip()
    assert "white-space:normal" in explorer.table.value
