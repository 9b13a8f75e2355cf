"""The built-in code systems of issue 36 (BCP-47 language tags, ISO 3166 countries):
``$validate-code`` in process, per call, and ``validate_column`` of a million codes against
a bare ``Series.isin`` on the same column (the known codes being the set), in one run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_builtin.py [--rows N] [--calls N]

The column holds the codes of a few hundred distinct tags (or countries), a tenth of them
invalid, repeated to ``--rows``; the ratio is validate_column's time over isin's.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import pandas as pd
import pycountry

from workbench import Workbench

BCP47 = "urn:ietf:bcp:47"
ISO3166 = "urn:iso:std:iso:3166"
LANGUAGES = "http://example.org/vs/all-languages"
COUNTRIES = "http://example.org/vs/all-countries"
FHIR_CS = "http://example.org/cs/small"
FHIR_VS = "http://example.org/vs/small"


def best(run: Callable[[], object], repeat: int = 5) -> float:
    """The best of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def workbench() -> Workbench:
    """A Workbench with a value set of all of each system."""
    wb = Workbench()
    for url, system in ((LANGUAGES, BCP47), (COUNTRIES, ISO3166)):
        wb.load(
            {
                "resourceType": "ValueSet",
                "url": url,
                "status": "active",
                "compose": {"include": [{"system": system}]},
            }
        )
    wb.load(  # the baseline: a small FHIR CodeSystem through the same engine
        [
            {
                "resourceType": "CodeSystem",
                "url": FHIR_CS,
                "status": "active",
                "content": "complete",
                "concept": [{"code": f"c{i}", "display": f"C {i}"} for i in range(100)],
            },
            {
                "resourceType": "ValueSet",
                "url": FHIR_VS,
                "status": "active",
                "compose": {"include": [{"system": FHIR_CS}]},
            },
        ]
    )
    return wb


def columns(rows: int) -> dict[str, tuple[str, str, pd.Series, set[str]]]:
    """name -> (value set, system, column, known codes) for both systems."""
    countries = [c.alpha_2 for c in pycountry.countries]
    tags = [f"{lang}-{c}" for lang in ("en", "fr", "de") for c in countries[:80]]
    out = {}
    for name, vs, system, valid, bad in (
        ("BCP-47 tags", LANGUAGES, BCP47, tags, [f"zz-{c}" for c in countries[:24]]),
        (
            "ISO 3166 alpha-2",
            COUNTRIES,
            ISO3166,
            countries,
            [f"Q{c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWX"],
        ),
    ):
        distinct = valid + bad
        column = pd.Series((distinct * (rows // len(distinct) + 1))[:rows], dtype=object)
        out[name] = (vs, system, column, set(valid))
    return out


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    wb = workbench()
    print(f"{'call':55} {'µs per call':>12}")
    for label, call in (
        (
            "baseline: CodeSystem $validate-code, FHIR CodeSystem",
            lambda: wb.validate_in_codesystem(FHIR_CS, "c7"),
        ),
        (
            "baseline: ValueSet $validate-code, FHIR CodeSystem",
            lambda: wb.validate_code(FHIR_VS, system=FHIR_CS, code="c7"),
        ),
        (
            "CodeSystem $validate-code BCP-47 en-US",
            lambda: wb.validate_in_codesystem(BCP47, "en-US"),
        ),
        (
            "CodeSystem $validate-code BCP-47 EN-us",
            lambda: wb.validate_in_codesystem(BCP47, "EN-us"),
        ),
        ("CodeSystem $validate-code ISO 3166 US", lambda: wb.validate_in_codesystem(ISO3166, "US")),
        (
            "ValueSet $validate-code BCP-47 en-US",
            lambda: wb.validate_code(LANGUAGES, system=BCP47, code="en-US"),
        ),
        (
            "ValueSet $validate-code ISO 3166 US",
            lambda: wb.validate_code(COUNTRIES, system=ISO3166, code="US"),
        ),
    ):
        print(f"{label:55} {per_call(call, args.calls) * 1e6:12.1f}")
    title = f"validate_column, {args.rows:,} rows"
    print(f"\n{title:40} {'isin s':>8} {'column s':>9} {'ratio':>6}")
    for name, (vs, system, column, known) in columns(args.rows).items():
        baseline, mine = against_isin(wb, vs, system, column, known)
        print(f"{name:40} {baseline:8.3f} {mine:9.3f} {mine / baseline:6.2f}")


def per_call(call: Callable[[], object], calls: int) -> float:
    """Seconds per call, the best of three runs of ``calls`` calls."""
    call()
    return best(lambda: [call() for _ in range(calls)], repeat=3) / calls


def against_isin(
    wb: Workbench, vs: str, system: str, column: pd.Series, known: set[str]
) -> tuple[float, float]:
    """Seconds of ``column.isin(known)`` and of ``validate_column`` on the same column."""
    wb.validate_column(column.head(1000), vs, system=system)
    baseline = best(lambda: column.isin(known))
    return baseline, best(lambda: wb.validate_column(column, vs, system=system))


if __name__ == "__main__":
    main()
