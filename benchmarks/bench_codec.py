"""The Parameters codec on the hot path (issue 38.3): how long ``parse_parameters`` takes on a
body such as the HL7 validator sends to ``$validate-code``, next to a baseline measured in
the same run (``orjson.loads`` of the same body, the least any request pays for it).

Run from the repository root::

    .venv/bin/python benchmarks/bench_codec.py                   # this checkout
    .venv/bin/python benchmarks/bench_codec.py --checkout PATH   # another one ("before")

Bodies: ``validator`` (url, a Coding and the validator's six extra parameters), ``envelope``
(the same with the Parameters' ``id`` and ``meta`` and an entry's ``extension``, which the
typing check reads) and ``inline`` (the same with a small ValueSet as ``tx-resource``).
Printed per body: microseconds per parse (the best of ``--repeat`` runs of ``--number``
parses) and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path
from typing import Any

import orjson

CS = "http://hl7.org/fhir/administrative-gender"
PROFILE = "http://hl7.org/fhir/ExpansionProfile/dc8fd4bc-091a-424a-8a3b-6198ef146891"
VALIDATOR: list[dict[str, Any]] = [
    {"name": "url", "valueUri": "http://hl7.org/fhir/ValueSet/administrative-gender"},
    {"name": "coding", "valueCoding": {"system": CS, "code": "female", "display": "Female"}},
    {"name": "diagnostics", "valueBoolean": True},
    {"name": "default-to-latest-version", "valueBoolean": True},
    {"name": "profile-url", "valueString": PROFILE},
    {"name": "x-system-cache-id", "valueString": "dc8fd4bc-091a-424a-8a3b-6198ef146891"},
    {"name": "displayLanguage", "valueString": "en-US"},
    {"name": "valueset-membership-only", "valueBoolean": False},
]
ENVELOPE: dict[str, Any] = {
    "id": "p1",
    "meta": {"lastUpdated": "2026-12-01T10:00:00Z", "tag": [{"system": CS, "code": "t"}]},
}
INLINE_VS = {
    "resourceType": "ValueSet",
    "url": "http://example.org/vs",
    "status": "active",
    "compose": {"include": [{"system": CS, "concept": [{"code": "female"}, {"code": "male"}]}]},
}


def bodies() -> dict[str, bytes]:
    """The bodies, as JSON."""
    marked = [dict(VALIDATOR[0], extension=[{"url": "http://x/e", "valueString": "y"}])]
    return {
        "validator": orjson.dumps({"resourceType": "Parameters", "parameter": VALIDATOR}),
        "envelope": orjson.dumps(
            {"resourceType": "Parameters", **ENVELOPE, "parameter": marked + VALIDATOR[1:]}
        ),
        "inline": orjson.dumps(
            {
                "resourceType": "Parameters",
                "parameter": [*VALIDATOR, {"name": "tx-resource", "resource": INLINE_VS}],
            }
        ),
    }


def best(statement: Any, number: int, repeat: int) -> float:
    """Microseconds per call, the best of ``repeat`` runs."""
    return min(timeit.repeat(statement, number=number, repeat=repeat)) / number * 1e6


def main() -> int:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, help="import workbench from this checkout")
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if args.checkout:
        sys.path.insert(0, str(args.checkout.resolve()))
    from workbench.operations import valueset_validate_code
    from workbench.operations.codec import parse_parameters

    print(f"workbench from {Path(valueset_validate_code.__file__).parent.parent}")
    op = valueset_validate_code.OPERATION.definition
    print(f"{'body':<10} {'bytes':>6} {'parse µs':>9} {'loads µs':>9} {'ratio':>6}")
    for name, data in bodies().items():
        body = orjson.loads(data)
        parse_parameters(op, body, strict=False)  # warm the codec's per-definition tables
        parse = best(lambda b=body: parse_parameters(op, b, strict=False), args.number, args.repeat)
        loads = best(lambda d=data: orjson.loads(d), args.number, args.repeat)
        print(f"{name:<10} {len(data):>6} {parse:>9.2f} {loads:>9.2f} {parse / loads:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
