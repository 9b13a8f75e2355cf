"""Benchmark of ``ValueSet/$compare`` (``Workbench.compare``) against expanding both value
sets in the same run (the baseline: what a client does to compare them itself).

Run from the repository root::

    .venv/bin/python benchmarks/bench_compare.py              # 100,000 codes each, 5 runs
    .venv/bin/python benchmarks/bench_compare.py --codes 20000 --repeat 3

The cases: a code system of 1.5x ``--codes`` codes; value set A lists the first
``--codes`` of them, B the last ``--codes`` (half of each shared), compared by expansion
(in Python and over HTTP on loopback); and two definitions that differ only in order (a
few includes with filters and listed codes, reversed), decided without expanding. Medians
of ``--repeat`` runs after one warm-up; the goals are $compare of A and B <= 0.3 s and of
the reordered definitions <= 5 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx

from workbench import Workbench

CS = "http://example.org/bench/compare"
VS = "http://example.org/bench/compare/vs/"


def build(codes: int) -> Workbench:
    """A Workbench with the code system and value sets A and B."""
    wb = Workbench()
    total = codes * 3 // 2
    concepts = [{"code": f"C{i}", "display": f"Concept {i}"} for i in range(total)]
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": CS,
            "status": "active",
            "content": "complete",
            "concept": concepts,
        }
    )
    for name, first in (("a", 0), ("b", total - codes)):
        listed = [{"code": f"C{i}"} for i in range(first, first + codes)]
        wb.load(
            {
                "resourceType": "ValueSet",
                "url": VS + name,
                "status": "active",
                "compose": {"include": [{"system": CS, "concept": listed}]},
            }
        )
    return wb


def reordered() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two definitions with the same includes (filters, listed codes) in reverse order."""
    includes = [
        {"system": CS, "filter": [{"property": "concept", "op": "is-a", "value": f"C{i}"}]}
        for i in range(5)
    ] + [
        {"system": CS, "concept": [{"code": f"C{i}"} for i in range(100 * k, 100 * k + 100)]}
        for k in range(5)
    ]
    other = [
        dict(inc, concept=list(reversed(inc.get("concept", [])))) if "concept" in inc else inc
        for inc in reversed(includes)
    ]
    return (
        {"resourceType": "ValueSet", "status": "active", "compose": {"include": includes}},
        {"resourceType": "ValueSet", "status": "active", "compose": {"include": other}},
    )


def median(run: Callable[[], Any], repeat: int) -> float:
    """The median seconds of ``repeat`` runs after one warm-up."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Run the benchmark and print figures and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--codes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    wb = build(args.codes)
    a, b = VS + "a", VS + "b"
    got = wb.compare(a, b)
    assert got.result == "overlapping" and len(got.common) == args.codes // 2, got
    expand = median(
        lambda: [wb.expand(u, allow_maximum_size=True).frame for u in (a, b)], args.repeat
    )
    compare = median(lambda: wb.compare(a, b), args.repeat)
    with (
        wb.serve(port=0, token="bench") as handle,
        httpx.Client(
            base_url=handle.url,
            headers={"Authorization": "Bearer bench"},
            trust_env=False,
            timeout=60,
        ) as http,
    ):
        query = {"thisUrl": a, "otherUrl": b}
        over_http = median(
            lambda: http.get("/ValueSet/$compare", params=query).raise_for_status(), args.repeat
        )
    this, other = reordered()
    assert wb.compare(this, other).performed_expansion is False
    by_definition = median(lambda: wb.compare(this, other), args.repeat * 20)
    by_expansion = median(
        lambda: wb.compare(
            this,
            dict(
                other,
                compose={
                    "include": [
                        *other["compose"]["include"],
                        {"system": CS, "concept": [{"code": "C999"}]},
                    ]
                },
            ),
        ),
        args.repeat,
    )
    print(f"{args.codes:,} codes each, half shared")
    print(f"  baseline: expanding both (.frame)   {expand:8.3f} s")
    print(f"  wb.compare(a, b)                    {compare:8.3f} s  ({compare / expand:.2f}x)")
    print(f"  GET ValueSet/$compare (loopback)    {over_http:8.3f} s  ({over_http / expand:.2f}x)")
    print("two definitions differing only in order (5 filters, 500 listed codes)")
    print(f"  compared by expansion (one code more) {by_expansion * 1000:8.2f} ms")
    print(
        f"  wb.compare, by definition             {by_definition * 1000:8.2f} ms  "
        f"({by_definition / by_expansion:.3f}x)"
    )


if __name__ == "__main__":
    main()
