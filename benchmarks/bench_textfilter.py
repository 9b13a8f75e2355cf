"""The ``$expand`` text filter through its index (issue 38, point 4).

Run from the repository root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_textfilter.py [--codes 20000]

A code system of ``--codes`` codes whose displays are 200 words drawn from 40 (the worst case
of issue 38: every filter word is common), in one value set. Printed, each the best of
``--runs``: the index's build, ``Workbench.expand`` with filters of 1, 10 and 30 words (the
index built and cached), and as the baseline measured in the same run the plain definition
(every word tested on every code's text, ``all(w in text ...)``) for the same filter, with
the ratio expand / baseline. Target: the 30-word expand <= 0.3 s.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from workbench import Workbench
from workbench.terminology.compose import Entry
from workbench.terminology.textindex import TextIndex, entry_text

SYSTEM = "http://example.org/fhir/CodeSystem/bench-text"
VALUESET = "http://example.org/fhir/ValueSet/bench-text"
VOCAB = [f"term{k}x" for k in range(40)]


def concepts(codes: int) -> list[dict[str, str]]:
    """``codes`` concepts, each display 200 words drawn from ``VOCAB`` (seeded)."""
    rng = random.Random(38)
    return [
        {"code": f"C{i:06d}", "display": " ".join(rng.choice(VOCAB) for _ in range(200))}
        for i in range(codes)
    ]


def plain_count(texts: Sequence[str], words: Sequence[str]) -> int:
    """The baseline: how many texts contain every word, each word tested on every text."""
    return sum(all(w in t for w in words) for t in texts)


def best(runs: int, call: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``runs`` calls (seconds) and the last answer."""
    times, answer = [], None
    for _ in range(runs):
        start = time.perf_counter()
        answer = call()
        times.append(time.perf_counter() - start)
    return min(times), answer


def main(argv: Sequence[str] | None = None) -> int:
    """Print the figures; exit status 1 when the 30-word expand is over 0.3 s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codes", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    made = concepts(args.codes)
    wb = Workbench()
    wb.load(
        [
            {"resourceType": "CodeSystem", "url": SYSTEM, "status": "active",
             "content": "complete", "concept": made},
            {"resourceType": "ValueSet", "url": VALUESET, "status": "active",
             "compose": {"include": [{"system": SYSTEM}]}},
        ],
        progress=False,
    )  # fmt: skip
    entries = [Entry(SYSTEM, None, c["code"], c["display"], False, False) for c in made]
    build_s, _ = best(1, lambda: TextIndex(entries))
    print(f"{args.codes} codes of 200-word displays; index build {build_s:.2f} s")
    wb.expand(VALUESET, filter=VOCAB[0], count=1)  # the value set's index, built once
    texts = [entry_text(e) for e in entries]
    slow = 0.0
    for n in (1, 10, 30):
        words = " ".join(VOCAB[:n])
        took, got = best(args.runs, partial(wb.expand, VALUESET, filter=words, count=10))
        base, want = best(1, partial(plain_count, texts, words.split()))
        assert got.total == want, (got.total, want)
        print(
            f"{n:2d} words: expand {took * 1000:7.1f} ms, {got.total} codes; baseline "
            f"(every word on every text) {base * 1000:7.1f} ms; ratio {took / base:.3f}"
        )
        slow = took if n == 30 else slow
    print(f"30-word expand {slow:.3f} s: {'ok' if slow <= 0.3 else 'OVER'} (target 0.3 s)")
    return 0 if slow <= 0.3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
