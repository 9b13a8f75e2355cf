"""Grammars with bounded cost (issue 25): ECL, compositional grammar and UCUM are read by LALR
parsers (linear time, no recursion) under limits on length, nesting depth and terms, refused
with GrammarLimitError (400 ``too-long``) naming the limit and the value found, in Python and
over HTTP; UCUM numbers beyond a float are unknown codes; reading counts in the work budget.

Every input of the issue is a row of ``ROWS``, at a small size with the limits lowered
(``LOW``); a few full-size rows check that reading is fast because it is linear.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import snomed_rf2
from http_support import assert_outcome, client, served_fixtures, values

import server as server_script
from workbench import Workbench
from workbench.errors import ExpressionSyntaxError, GrammarLimitError, TooCostlyError
from workbench.releases import grammar
from workbench.releases.grammar import GrammarLimits, Limits
from workbench.releases.snomed import ecl, scg
from workbench.releases.ucum import units
from workbench.terminology import budget

SCT = "http://snomed.info/sct"
UCUM = "http://unitsofmeasure.org"
LOW = GrammarLimits(
    ecl=Limits(length=2_000, depth=10, terms=50),
    scg=Limits(length=1_000, depth=5, terms=30),
    ucum=Limits(length=100, depth=5, terms=10),
)


def refinement(pairs: int) -> str:
    """``< 404684003 : a1 = << v1, a2 = << v2 …`` (the issue's 200 pairs make 5 KB)."""
    return "< 404684003 : " + ", ".join(
        f"{363698007 + i} = << {39057004 + i}" for i in range(pairs)
    )


def chain(n: int, op: str) -> str:
    """``<< c1 OP << c2 …`` with ``n`` terms."""
    return f" {op} ".join(f"<< {100000 + i}" for i in range(n))


def nested_value(n: int) -> str:
    """A refinement value nested ``n`` deep."""
    return "< 404684003 : " + "363698007 = (< 80891009 : " * n + "363698007 = *" + ")" * n


def nested_expression(n: int) -> str:
    """A post-coordinated expression whose value is nested ``n`` deep."""
    return "64572001 : " + "363698007 = (80891009 : " * n + "363698007 = 80891009" + ")" * n


def ecl_valueset(constraint: str) -> dict[str, Any]:
    """A ValueSet with one SNOMED CT ``constraint`` filter."""
    include = {
        "system": SCT,
        "filter": [{"property": "constraint", "op": "=", "value": constraint}],
    }
    return {"resourceType": "ValueSet", "status": "active", "compose": {"include": [include]}}


def ucum_valueset(unit: str) -> dict[str, Any]:
    """A ValueSet of the UCUM units with the canonical unit of ``unit``."""
    include = {"system": UCUM, "filter": [{"property": "canonical", "op": "=", "value": unit}]}
    return {"resourceType": "ValueSet", "status": "active", "compose": {"include": [include]}}


#: (id, where the text goes, the text, expected: a GrammarLimitError's limit or "unknown",
#: and a pattern of its message)
ROWS: list[tuple[str, str, str, str, str]] = [
    ("ecl-5kb-refinement", "ecl-url", refinement(30), "ecl.terms", r"has 61 terms"),
    ("ecl-10kb", "ecl-url", chain(300, "OR"), "ecl.length", r"is 3,\d{3} characters long"),
    ("ecl-or-chain", "ecl-url", chain(60, "OR"), "ecl.terms", r"has 60 terms"),
    ("ecl-and-chain", "ecl-url", chain(60, "AND"), "ecl.terms", r"has 60 terms"),
    ("ecl-unbalanced", "ecl-url", "(" * 1_000, "ecl.depth", r"nests 1,000 levels deep"),
    ("ecl-nested", "ecl-url", "(" * 50 + "404684003" + ")" * 50, "ecl.depth", r"nests 50 lev"),
    (
        "ecl-filter",
        "ecl-constraint",
        "(" * 50 + "<< 404684003" + ")" * 50,
        "ecl.depth",
        r"nests 50 lev",
    ),
    ("ecl-deep-value", "ecl-url", nested_value(30), "ecl.depth", r"nests 30 levels deep"),
    ("scg-deep", "scg-code", nested_expression(20), "scg.depth", r"nests 20 levels deep"),
    ("scg-long", "scg-code", nested_expression(40), "scg.length", r"1,\d{3} characters long"),
    ("ucum-10*309", "ucum-code", "10*309", "unknown", r"factor is beyond the range"),
    ("ucum-10*99999", "ucum-code", "10*99999", "unknown", r"factor is beyond the range"),
    ("ucum-long-exponent", "ucum-code", "m" + "1" * 4_000, "ucum.length", r"4,001 characters"),
    ("ucum-factors", "ucum-code", ".".join(["m"] * 30), "ucum.terms", r"has 30 terms"),
    ("ucum-divisions", "ucum-code", "/".join(["s"] * 40), "ucum.terms", r"has 40 terms"),
    ("ucum-parentheses", "ucum-code", "(" * 20 + "m" + ")" * 20, "ucum.depth", r"nests 20 lev"),
    ("ucum-canonical", "ucum-filter", "(" * 30 + "g" + ")" * 30, "ucum.depth", r"nests 30 lev"),
    ("ucum-10+3", "ucum-code", "10+3/ul", "unknown", r"not to the number 10; .* write 10\*3"),
]


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    bench = Workbench()
    release = snomed_rf2.write(tmp_path_factory.mktemp("rf2"))
    bench.load_release(release, cache_dir=tmp_path_factory.mktemp("cache"), progress=False)
    yield bench


server, http = served_fixtures()


@pytest.fixture
def low() -> Iterator[GrammarLimits]:
    with grammar.limits_in_force(LOW) as limits:
        yield limits


def call(wb: Workbench, where: str, text: str) -> Any:
    """Hand ``text`` to the workbench the way the row says."""
    if where == "ecl-url":
        return wb.validate_code(f"{SCT}?fhir_vs=ecl/{text}", code="22298006", system=SCT)
    if where == "ecl-constraint":
        return wb.expand(ecl_valueset(text))
    if where == "scg-code":
        return wb.validate_in_codesystem(SCT, text)
    if where == "ucum-code":
        return wb.validate_in_codesystem(UCUM, text)
    return wb.validate_code(ucum_valueset(text), code="g", system=UCUM)


@pytest.mark.parametrize(
    ("where", "text", "limit", "pattern"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_limits_in_python(
    wb: Workbench, low: GrammarLimits, where: str, text: str, limit: str, pattern: str
) -> None:
    if limit == "unknown":
        result = call(wb, where, text)
        assert result.result is False and re_search(pattern, result.message or "")
        return
    with pytest.raises(GrammarLimitError) as caught:
        call(wb, where, text)
    error = caught.value
    assert (error.status, error.code, error.limit) == (400, "too-long", limit)
    maximum = getattr(getattr(LOW, limit.split(".")[0]), limit.split(".")[1])
    assert error.maximum == maximum and error.found > maximum
    assert re_search(pattern, error.text) and f"the limit {limit} is {maximum:,}" in error.text


@pytest.mark.parametrize(
    ("where", "text", "limit", "pattern"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_limits_over_http(
    http: httpx.Client, low: GrammarLimits, where: str, text: str, limit: str, pattern: str
) -> None:
    response = http_call(http, where, text)
    if limit == "unknown":
        assert response.status_code == 200, response.text
        body = response.json()
        assert values(body, "result") == [False]
        assert re_search(pattern, values(body, "message")[0])
        return
    assert_outcome(response, 400, "too-long", pattern)
    assert_outcome(response, 400, "too-long", rf"the limit {limit} is ")


def http_call(http: httpx.Client, where: str, text: str) -> httpx.Response:
    """The row's call over HTTP (POST, so that long texts fit)."""
    if where == "ecl-url":
        return http.post("/ValueSet/$validate-code", json=ecl_parameters(text))
    if where == "ecl-constraint":
        body = parameters(("valueSet", {"resource": ecl_valueset(text)}))
        return http.post("/ValueSet/$expand", json=body)
    if where in ("scg-code", "ucum-code"):
        system = SCT if where == "scg-code" else UCUM
        params = [("url", {"valueUri": system}), ("code", {"valueCode": text})]
        return http.post("/CodeSystem/$validate-code", json=parameters(*params))
    params = [
        ("valueSet", {"resource": ucum_valueset(text)}),
        ("code", {"valueCode": "g"}),
        ("system", {"valueUri": UCUM}),
    ]
    return http.post("/ValueSet/$validate-code", json=parameters(*params))


def ecl_parameters(text: str) -> dict[str, Any]:
    """$validate-code of 22298006 in the implicit value set of an ECL."""
    return parameters(
        ("url", {"valueUri": f"{SCT}?fhir_vs=ecl/{text}"}),
        ("code", {"valueCode": "22298006"}),
        ("system", {"valueUri": SCT}),
    )


def parameters(*entries: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"resourceType": "Parameters", "parameter": [{"name": n, **v} for n, v in entries]}


def re_search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


# --- full size: linear reading ---------------------------------------------------------------


def timed(action: Callable[[], Any]) -> float:
    """Processor seconds the action takes (not wall time: the suite shares its machine). The
    bounds below are guard rails an order of magnitude above a linear reading, far below the
    seconds to minutes the former Earley parser took; the figures are in bench_grammars."""
    started = time.process_time()
    with contextlib.suppress(GrammarLimitError, ExpressionSyntaxError, units.UcumSyntaxError):
        action()
    return time.process_time() - started


def test_a_50kb_ecl_is_refused_at_once() -> None:
    text = chain(4_000, "OR")[:50_000]
    assert len(text) == 50_000
    assert timed(lambda: ecl.parse(text)) < 5.0
    with pytest.raises(
        GrammarLimitError, match=r"is 50,000 characters long; the limit ecl\.length"
    ):
        ecl.parse(text)


def test_a_5kb_refinement_reads_fast_with_limits_raised() -> None:
    text = refinement(200)
    assert len(text) > 5_000
    raised = GrammarLimits.from_options(["ecl.length=100000", "ecl.terms=100000"])
    with grammar.limits_in_force(raised):
        assert timed(lambda: ecl.parse(text)) < 3.0
        assert len(ecl.parse(text).refinement.parts) == 200


@pytest.mark.parametrize(
    ("read", "text", "options"),
    [
        (ecl.parse, chain(3_000, "OR"), ["ecl.length=100000", "ecl.terms=100000"]),
        (ecl.parse, chain(3_000, "AND"), ["ecl.length=100000", "ecl.terms=100000"]),
        (ecl.parse, "(" * 10_000, ["ecl.depth=100"]),
        (ecl.parse, nested_value(3_000), ["ecl.length=200000", "ecl.depth=100"]),
        (scg.parse, nested_expression(500), ["scg.length=100000", "scg.depth=100"]),
        (units.parse, ".".join(["m"] * 1_000), ["ucum.length=100000", "ucum.terms=100000"]),
        (units.parse, "/".join(["s"] * 5_000), ["ucum.length=100000", "ucum.terms=100000"]),
        (units.parse, "(" * 1_000 + "m" + ")" * 1_000, ["ucum.length=100000", "ucum.depth=100"]),
    ],
    ids=[
        "or-3000",
        "and-3000",
        "parens-10000",
        "value-3000",
        "scg-500",
        "ucum-x1000",
        "ucum-div5000",
        "ucum-parens-1000",
    ],
)
def test_full_size_inputs_read_in_linear_time(
    read: Callable[[str], Any], text: str, options: list[str]
) -> None:
    with grammar.limits_in_force(GrammarLimits.from_options(options)):
        assert timed(lambda: read(text)) < 5.0


def test_ucum_numbers_beyond_a_float_are_unknown_codes() -> None:
    assert units.check("10*308") is None
    raised = GrammarLimits.from_options(["ucum.length=10000"])
    with grammar.limits_in_force(raised):
        for code in ("10*309", "10*99999", "m" + "1" * 4_000, "1" * 5_000, "10*300.10*300"):
            message = units.check(code)
            assert message is not None and "factor is beyond the range" in message, code


# --- configuration and the work budget ---------------------------------------------------------


def test_configuration() -> None:
    limits = GrammarLimits.from_options(["ecl.depth=12", "ucum.terms=7"])
    assert limits.ecl == Limits(20_000, 12, 2_000) and limits.ucum.terms == 7
    assert grammar.configured() == GrammarLimits()
    with grammar.limits_in_force(limits):
        assert grammar.configured() is limits
    assert grammar.configured() == GrammarLimits()
    for bad in ("ecl.deep=3", "sql.depth=3", "ecl.depth=x", "ecl.depth=0", "ecl.depth=1000"):
        with pytest.raises(ValueError, match="grammar limit"):
            GrammarLimits.from_options([bad])


def test_the_server_takes_the_limits() -> None:
    args = server_script.parse_args(
        ["--grammar-limit", "ecl.depth=12", "--grammar-limit", "scg.terms=9"]
    )
    assert GrammarLimits.from_options(args.grammar_limit).scg.terms == 9
    assert server_script.main(["--grammar-limit", "ecl.deep=1", "--no-default-content"]) == 2


def test_reading_counts_in_the_work_budget() -> None:
    text = chain(1_000, "OR")
    with (
        pytest.raises(TooCostlyError, match="more than 100 steps"),
        budget.limited(budget.Budget(100)),
    ):
        ecl.parse(text)
    with pytest.raises(budget.WouldBlock), budget.limited(budget.Budget(100, inline=True)):
        ecl.parse(text + " OR << 123456")
    with (
        pytest.raises(TooCostlyError, match="more than 0 seconds"),
        budget.limited(budget.Budget(10**9, 0.0)),
    ):
        units.parse("m.s.g.K")


# --- the server answers meanwhile --------------------------------------------------------------


def test_metadata_answers_while_big_inputs_are_read(server: Any, http: httpx.Client) -> None:
    big = [chain(3_000, "OR"), refinement(200), "(" * 10_000, chain(4_000, "AND")[:50_000]]
    raised = GrammarLimits.from_options(["ecl.length=200000", "ecl.terms=100000"])
    statuses: list[int] = []
    latencies: list[float] = []

    def post_all() -> None:
        with client(server.url) as own:
            for text in big:
                response = own.post("/ValueSet/$validate-code", json=ecl_parameters(text))
                statuses.append(response.status_code)

    with grammar.limits_in_force(raised):
        worker = threading.Thread(target=post_all)
        worker.start()
        for _ in range(50):
            started = time.perf_counter()
            assert http.get("/metadata").status_code == 200
            latencies.append(time.perf_counter() - started)
            if not worker.is_alive():
                break
        worker.join(30)
    assert not worker.is_alive() and len(statuses) == len(big)
    assert all(s in (200, 400) for s in statuses), statuses
    assert max(latencies) < 1.0, latencies
