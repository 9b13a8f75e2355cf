"""Parse time and peak memory of the full-size hostile inputs of issue 25 (ECL, compositional
grammar, UCUM), each against a baseline measured in the same run (a small normal ECL).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_grammars.py [--raised] [--repeat N]

By default the limits are the defaults, so most inputs are refused by a limit (the time is what
refusing costs); ``--raised`` raises every limit (depth to its ceiling) so that the inputs are
read in full: the time is then what reading them costs, linear in their length.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from workbench.errors import ExpressionSyntaxError, GrammarLimitError
from workbench.releases import grammar
from workbench.releases.snomed import ecl, scg
from workbench.releases.ucum import units

RAISED = [
    f"{lang}.{name}={value}"
    for lang in ("ecl", "scg", "ucum")
    for name, value in (
        ("length", 10_000_000),
        ("terms", 10_000_000),
        ("depth", grammar.DEPTH_CEILING),
    )
]


def refinement(pairs: int) -> str:
    """``< 404684003 : a1 = << v1, …`` (200 pairs: 5 KB)."""
    return "< 404684003 : " + ", ".join(
        f"{363698007 + i} = << {39057004 + i}" for i in range(pairs)
    )


def chain(n: int, op: str) -> str:
    """``<< c1 OP << c2 …``."""
    return f" {op} ".join(f"<< {100000 + i}" for i in range(n))


def inputs() -> list[tuple[str, Callable[[str], Any], str]]:
    """(name, parser, text) of every full-size input."""
    nested = "< 404684003 : " + "363698007 = (< 80891009 : " * 3000 + "363698007 = *" + ")" * 3000
    expression = "64572001 : " + "363698007 = (80891009 : " * 500 + "116676008 = 1" + ")" * 500
    return [
        ("baseline: << 404684003 : 363698007 = << 39057004", ecl.parse, ""),
        ("ECL refinement, 200 pairs (5 KB)", ecl.parse, refinement(200)),
        ("ECL refinement, 400 pairs (10 KB)", ecl.parse, refinement(400)),
        ("ECL 50 KB", ecl.parse, chain(4_000, "OR")[:50_000]),
        ("ECL 3000-term OR chain", ecl.parse, chain(3_000, "OR")),
        ("ECL 3000-term AND chain", ecl.parse, chain(3_000, "AND")),
        ("ECL 10,000 unbalanced '('", ecl.parse, "(" * 10_000),
        ("ECL 500 nested parentheses", ecl.parse, "(" * 500 + "404684003" + ")" * 500),
        ("ECL refinement value nested 3000 deep", ecl.parse, nested),
        ("expression nested 500 deep", scg.parse, expression),
        ("UCUM 10*309", units.parse, "10*309"),
        ("UCUM m + 4000 digits", units.parse, "m" + "1" * 4_000),
        ("UCUM 1000 multiplied factors", units.parse, ".".join(["m"] * 1_000)),
        ("UCUM 5000 divisions", units.parse, "/".join(["s"] * 5_000)),
        ("UCUM 1000 nested parentheses", units.parse, "(" * 1_000 + "m" + ")" * 1_000),
    ]


def measure(parse: Callable[[str], Any], text: str, repeat: int) -> tuple[float, int, str]:
    """Best time of ``repeat`` fresh parses (the parse caches are cleared), the peak traced
    memory of one more (traced apart: tracing slows allocation down), and the outcome."""
    best = float("inf")
    outcome = "parsed"
    variant = text or "<< 404684003 : 363698007 = << 39057004"
    for _ in range(repeat + 1):
        ecl._parse.cache_clear()
        scg._parse.cache_clear()
        units._parse.cache_clear()
        tracing = best != float("inf") and _ == repeat
        if tracing:
            tracemalloc.start()
        started = time.perf_counter()
        try:
            parse(variant)
        except (GrammarLimitError, ExpressionSyntaxError, units.UcumSyntaxError) as exc:
            outcome = f"{type(exc).__name__}: {str(exc)[:70]}"
        except RecursionError:
            outcome = "RecursionError"
        elapsed = time.perf_counter() - started
        if tracing:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        else:
            best = min(best, elapsed)
    return best, peak, outcome


def main() -> None:
    """Print one line per input: time, ratio to the baseline, peak memory, outcome."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--raised", action="store_true", help="raise every limit")
    args.add_argument("--repeat", type=int, default=3)
    options = args.parse_args()
    limits = grammar.GrammarLimits.from_options(RAISED if options.raised else [])
    ecl.parse("<< 1234567")  # build the parsers outside the measurements
    scg.parse("1234567")
    units.parse("m")
    with grammar.limits_in_force(limits):
        baseline = 0.0
        print(f"limits: {'raised' if options.raised else 'defaults'}; best of {options.repeat}")
        print(f"{'input':42} {'length':>8} {'time':>10} {'× base':>8} {'peak':>9}  outcome")
        for name, parse, text in inputs():
            seconds, peak, outcome = measure(parse, text, options.repeat)
            baseline = baseline or seconds
            print(
                f"{name[:42]:42} {len(text):8,} {seconds * 1e3:8.2f}ms {seconds / baseline:7.0f}×"
                f" {peak / 1e6:7.2f}MB  {outcome}"
            )


if __name__ == "__main__":
    main()
