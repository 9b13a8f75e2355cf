"""The shipped default content (valuesets/): real value sets that all expand, as documented."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from conftest import VALUESETS

from workbench import Workbench

README = (VALUESETS / "README.md").read_text(encoding="utf-8")
# | `address-use` | 4.0.1 | selected | whole system | 5 | ...
_ROW = re.compile(r"^\| `([^`]+)` \| [^|]* \| [^|]* \| [^|]* \| (\d+) \|", re.MULTILINE)
DOCUMENTED = {name: int(count) for name, count in _ROW.findall(README)}
FILES = sorted(VALUESETS.rglob("*.json"))


def test_there_are_at_least_25_real_value_sets(default_wb: Workbench) -> None:
    hl7 = [vs for vs in default_wb.registry.all("ValueSet") if "example.org" not in vs["url"]]
    assert len(hl7) >= 25
    assert len(DOCUMENTED) >= 25


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_each_value_set_expands_to_its_documented_size(default_wb: Workbench, name: str) -> None:
    matches = [vs for vs in default_wb.registry.all("ValueSet") if vs["id"] == name]
    assert len(matches) == 1
    assert default_wb.expand(matches[0]["url"]).total == DOCUMENTED[name]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(VALUESETS).as_posix())
def test_every_file_is_listed_with_its_source(path: Path) -> None:
    resource = orjson.loads(path.read_bytes())
    assert f"`{path.relative_to(VALUESETS).as_posix()}`" in README
    assert resource["url"] in README


def test_every_code_system_is_complete_and_canonicals_are_unique(default_wb: Workbench) -> None:
    seen = set()
    for cs in default_wb.registry.all("CodeSystem"):
        assert cs["content"] == "complete", cs["url"]
    for rtype in ("CodeSystem", "ValueSet"):
        for resource in default_wb.registry.all(rtype):
            key = (rtype, resource["url"], resource.get("version"))
            assert key not in seen
            seen.add(key)
    assert len(seen) == len(FILES)
