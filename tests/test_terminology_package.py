"""The whole of hl7.terminology.r4 7.0.1: every value set expands or fails with a documented
error, never a crash."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from conftest import THO

from workbench import (
    CodeSystemNotFoundError,
    ImportCycleError,
    IncompleteCodeSystemError,
    TooCostlyError,
    UnsupportedFilterError,
    ValueSetNotFoundError,
    Workbench,
)

DOCUMENTED = (
    CodeSystemNotFoundError,
    IncompleteCodeSystemError,
    ImportCycleError,
    TooCostlyError,  # a value set of all of UCUM (a grammar: infinitely many codes)
    UnsupportedFilterError,
    ValueSetNotFoundError,
)


def test_every_tho_value_set_expands_or_fails_cleanly(package_dirs: dict[str, Path]) -> None:
    wb = Workbench()
    summary = wb.load(package_dirs[THO[0]], progress=False)
    assert len(summary.valuesets) > 2000
    assert len(summary.codesystems) > 800
    tally: Counter[str] = Counter()
    for vs in wb.registry.all("ValueSet"):
        try:
            expansion = wb.expand(vs["url"], version=vs.get("version"))
        except DOCUMENTED as exc:
            tally[type(exc).__name__] += 1
        else:
            tally["expanded"] += 1
            assert expansion.total == len({(e.system, e.code) for e in expansion.entries})
    print("\nhl7.terminology.r4 value sets:", dict(tally))
    assert sum(tally.values()) == len(wb.registry.all("ValueSet"))
    assert tally["expanded"] > 1500
