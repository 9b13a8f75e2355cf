"""The FHIRPath parser (issue 47): expressions read into their nodes with the g4's precedence
and associativity, literals of every kind, Pathling's Coding literal beside the union
operator, one-line syntax errors naming the column, the grammar limits, unparse as the
inverse of parse (a property over generated nodes), and every FHIRPath expression of the R4
core SearchParameters read and written back."""

from __future__ import annotations

import contextlib
import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import GrammarLimitError
from workbench.fhirpath import FhirPathError, parse, unparse
from workbench.fhirpath.nodes import (
    Binary,
    CodingLiteral,
    Function,
    Identifier,
    Index,
    Indexer,
    Literal,
    Member,
    Node,
    QuantityLiteral,
    This,
    Total,
    TypeOperation,
    TypeSpecifier,
    Unary,
    Variable,
)
from workbench.fhirpath.parser import CALENDAR_UNITS, LEVELS, TYPE_FUNCTIONS, depth
from workbench.releases import grammar
from workbench.releases.grammar import GrammarLimits, Limits

I = Identifier  # noqa: E741 - short names keep the table readable
M = Member
S = TypeSpecifier


def B(op: str, left: Node, right: Node) -> Binary:
    return Binary(op, left, right)


def F(base: Node | None, name: str, *args: Node) -> Function:
    return Function(base, name, args)


def lit(kind: Any, value: Any) -> Literal:
    return Literal(kind, value)


def s(value: str) -> Literal:
    return Literal("string", value)


def n(value: int) -> Literal:
    return Literal("integer", value)


a, b, c, d = I("a"), I("b"), I("c"), I("d")

#: (text, the nodes it reads into)
PARSES: list[tuple[str, Node]] = [
    # precedence, from the loosest to the tightest, and left associativity
    ("a or b and c", B("or", a, B("and", b, c))),
    ("a and b or c", B("or", B("and", a, b), c)),
    ("a xor b or c", B("or", B("xor", a, b), c)),
    ("a implies b or c", B("implies", a, B("or", b, c))),
    ("a implies b implies c", B("implies", B("implies", a, b), c)),
    ("a and b in c", B("and", a, B("in", b, c))),
    ("a contains b = c", B("contains", a, B("=", b, c))),
    ("a = b < c", B("=", a, B("<", b, c))),
    ("a != b !~ c ~ d", B("~", B("!~", B("!=", a, b), c), d)),
    ("a <= b | c", B("<=", a, B("|", b, c))),
    ("a >= b > c", B(">", B(">=", a, b), c)),
    ("a | b is T", B("|", a, TypeOperation("is", b, S(None, "T")))),
    ("a + b is T", TypeOperation("is", B("+", a, b), S(None, "T"))),
    ("a is T is U", TypeOperation("is", TypeOperation("is", a, S(None, "T")), S(None, "U"))),
    ("1 + 2 * 3", B("+", n(1), B("*", n(2), n(3)))),
    ("1 * 2 + 3", B("+", B("*", n(1), n(2)), n(3))),
    ("a - b - c", B("-", B("-", a, b), c)),
    ("a - (b - c)", B("-", a, B("-", b, c))),
    ("a & b + c", B("+", B("&", a, b), c)),
    ("a div b mod c / d", B("/", B("mod", B("div", a, b), c), d)),
    ("-a * b", B("*", Unary("-", a), b)),
    ("-a.b", Unary("-", M(a, "b"))),
    ("+-a", Unary("+", Unary("-", a))),
    ("-a[0]", Unary("-", Indexer(a, n(0)))),
    ("a - -1", B("-", a, Unary("-", n(1)))),
    ("a.b[0].c", M(Indexer(M(a, "b"), n(0)), "c")),
    ("a[b[0]]", Indexer(a, Indexer(b, n(0)))),
    ("(a | b).c", M(B("|", a, b), "c")),
    ("((a))", a),
    # types
    ("a is Quantity", TypeOperation("is", a, S(None, "Quantity"))),
    ("x as FHIR.Quantity", TypeOperation("as", I("x"), S("FHIR", "Quantity"))),
    ("x is System.String", TypeOperation("is", I("x"), S("System", "String"))),
    ("(x as Quantity).value", M(TypeOperation("as", I("x"), S(None, "Quantity")), "value")),
    ("x is `is`", TypeOperation("is", I("x"), S(None, "is"))),
    ("value.ofType(Quantity).value", M(F(I("value"), "ofType", S(None, "Quantity")), "value")),
    ("value.ofType(FHIR.Quantity)", F(I("value"), "ofType", S("FHIR", "Quantity"))),
    ("x.as(Coding)", F(I("x"), "as", S(None, "Coding"))),
    ("x.is(System.Integer)", F(I("x"), "is", S("System", "Integer"))),
    ("getReferenceKey(Patient)", F(None, "getReferenceKey", S(None, "Patient"))),
    ("subject.getReferenceKey()", F(I("subject"), "getReferenceKey")),
    (
        "extension('http://x').value.ofType(Coding)",
        F(M(F(None, "extension", s("http://x")), "value"), "ofType", S(None, "Coding")),
    ),
    # paths and functions
    (
        "name.where(use = 'official').family.first()",
        F(M(F(I("name"), "where", B("=", I("use"), s("official"))), "family"), "first"),
    ),
    ("iif(a, b, c)", F(None, "iif", a, b, c)),
    ("a.exists()", F(a, "exists")),
    ("a.select($this.b)", F(a, "select", M(This(), "b"))),
    ("a.where($index > 0)", F(a, "where", B(">", Index(), n(0)))),
    ("a.aggregate($total + $this, 0)", F(a, "aggregate", B("+", Total(), This()), n(0))),
    ("Patient.name", M(I("Patient"), "name")),
    ("%rowIndex", Variable("rowIndex")),
    ("%resource.id", M(Variable("resource"), "id")),
    ("%`vs-x`", Variable("vs-x")),
    ("%'vs-x'", Variable("vs-x")),
    ("$this", This()),
    ("$index", Index()),
    ("$total", Total()),
    # identifiers: backticks, and the keywords the g4 allows as names
    ("`div`", I("div")),
    ("text.`div`", M(I("text"), "div")),
    ("`a b`.`\\``", M(I("a b"), "`")),
    ("_x1", I("_x1")),
    ("expansion.contains.code", M(M(I("expansion"), "contains"), "code")),
    ("as.is.in", M(M(I("as"), "is"), "in")),
    ("in in contains", B("in", I("in"), I("contains"))),
    ("is(T)", F(None, "is", S(None, "T"))),
    # literals
    ("{}", lit("empty", None)),
    ("{ }", lit("empty", None)),
    ("true", lit("boolean", True)),
    ("false", lit("boolean", False)),
    ("'text'", s("text")),
    ("''", s("")),
    (r"'\'\"\`\\\/\f\n\r\t'", s("'\"`\\/\f\n\r\t")),
    (r"'M\u00fcller'", s("Müller")),
    ("'a\nb'", s("a\nb")),
    ("0", n(0)),
    ("007", n(7)),
    ("3L", lit("long", 3)),
    ("1.50", lit("decimal", Decimal("1.50"))),
    ("@2019", lit("date", "2019")),
    ("@2019-01", lit("date", "2019-01")),
    ("@2019-01-01", lit("date", "2019-01-01")),
    ("@2019T", lit("datetime", "2019T")),
    ("@2019-01-01T10", lit("datetime", "2019-01-01T10")),
    ("@2019-01-01T10:00:00.000+01:00", lit("datetime", "2019-01-01T10:00:00.000+01:00")),
    ("@2019-01-01T10:00Z", lit("datetime", "2019-01-01T10:00Z")),
    ("@T10:00", lit("time", "10:00")),
    ("@T10:00:00.5", lit("time", "10:00:00.5")),
    ("4 'mg'", QuantityLiteral(Decimal("4"), "mg")),
    ("4.5 'mg/dL'", QuantityLiteral(Decimal("4.5"), "mg/dL")),
    ("4 days", QuantityLiteral(Decimal("4"), "days")),
    ("1 year", QuantityLiteral(Decimal("1"), "year")),
    ("-4 'mg'", Unary("-", QuantityLiteral(Decimal("4"), "mg"))),
    ("a + 3 days", B("+", a, QuantityLiteral(Decimal("3"), "days"))),
    # Coding literals
    ("http://snomed.info/sct|52101004", CodingLiteral("http://snomed.info/sct", "52101004")),
    (
        "http://loinc.org|'8867-4'|'2.73'|'Heart rate'",
        CodingLiteral("http://loinc.org", "8867-4", "2.73", "Heart rate"),
    ),
    (
        "http://snomed.info/sct|'397956004 |Prosthetic arthroplasty of hip|'",
        CodingLiteral("http://snomed.info/sct", "397956004 |Prosthetic arthroplasty of hip|"),
    ),
    (
        "http://snomed.info/sct|52101004||Present",
        CodingLiteral("http://snomed.info/sct", "52101004", None, "Present"),
    ),
    (
        "http://s|c|v|'d'|true",
        CodingLiteral("http://s", "c", "v", "d", True),
    ),
    ("http://s|c|||false", CodingLiteral("http://s", "c", None, None, False)),
    (
        "urn:oid:2.16.840.1.113883.6.1|1234-5",
        CodingLiteral("urn:oid:2.16.840.1.113883.6.1", "1234-5"),
    ),
    ("http://s|'it\\'s'", CodingLiteral("http://s", "it's")),
    # the union operator beside Coding literals
    ("a|b", B("|", a, b)),
    ("a | b", B("|", a, b)),
    ("'a'|'b'", B("|", s("a"), s("b"))),
    ("a.b|c.d", B("|", M(a, "b"), M(c, "d"))),
    ("http://x|y | b", B("|", CodingLiteral("http://x", "y"), b)),
    ("b | http://x|y", B("|", b, CodingLiteral("http://x", "y"))),
    ("(http://x|y)|b", B("|", CodingLiteral("http://x", "y"), b)),
    (
        "x.where(s = 'http://x')|y",
        B("|", F(I("x"), "where", B("=", I("s"), s("http://x"))), I("y")),
    ),
    (
        "coding contains http://loinc.org|8867-4",
        B("contains", I("coding"), CodingLiteral("http://loinc.org", "8867-4")),
    ),
    ("f(http://x|y, z)", F(None, "f", CodingLiteral("http://x", "y"), I("z"))),
    # whitespace and comments
    ("  a\t.\nb  ", M(a, "b")),
    ("a // a comment\n + b", B("+", a, b)),
    ("a /* a\n comment */ + b // the end", B("+", a, b)),
    ("a/b", B("/", a, b)),
]


@pytest.mark.parametrize(("text", "expected"), PARSES, ids=[p[0] for p in PARSES])
def test_parses(text: str, expected: Node) -> None:
    assert parse(text) == expected
    assert parse(unparse(expected)) == expected


def test_decimals_keep_their_precision() -> None:
    for text in ("1.50", "0.10", "100.000"):
        value = parse(text)
        assert isinstance(value, Literal) and str(value.value) == text
        assert unparse(value) == text
    quantity = parse("1.50 'mg'")
    assert isinstance(quantity, QuantityLiteral) and str(quantity.value) == "1.50"
    assert unparse(quantity) == "1.50 'mg'"


def test_parse_is_cached() -> None:
    assert parse("a.b.where(c = 1)") is parse("a.b.where(c = 1)")


def test_the_package_exports() -> None:
    import workbench.fhirpath as package

    assert set(package.__all__) == {"FhirPathError", "parse", "unparse"}
    assert sorted(TYPE_FUNCTIONS) == ["as", "getReferenceKey", "is", "ofType"]


#: (text, the 1-based column the error names, a fragment of its message)
ERRORS: list[tuple[str, int, str]] = [
    ("a +", 4, "(the end of the text); expected an expression"),
    ("a.where(", 9, "expected ')', an expression"),
    ("(a", 3, "expected ')'"),
    ("a[0", 4, "expected ']'"),
    ("a b", 3, "(at 'b'); expected '(', '.', '[', an operator, the end of the text"),
    ("a..b", 3, "expected 'as', 'contains', 'in', 'is', a `name`, a name"),
    ("f(a,)", 5, "(at ')'); expected an expression"),
    ("a = = b", 5, "expected an expression"),
    ("a | | b", 5, "expected an expression"),
    ("-", 2, "expected an expression"),
    ("$foo", 1, "(at '$foo')"),
    ("'abc", 1, "(is a ' never closed?)"),
    ("a = `b", 5, "(is a ` never closed?)"),
    ("a:b", 2, "(at ':b')"),
    ("http://x|", 5, "(at '://x|')"),
    ("a is 1", 6, "expected 'as', 'contains', 'in', 'is', a `name`, a name"),
    ("a.$this", 3, "(at '$this')"),
    ("{ a }", 3, "expected '}'"),
    ("4 'mg' 'g'", 8, "expected '.', '[', an operator, the end of the text"),
    ("1.5L", 4, "a calendar unit (days, …)"),
    ("3Lx", 3, "(at 'x')"),
    ("%", 2, "a 'string'"),
    ("a /* open", 4, "(at '* open')"),
    ("a +\n b )", 4, "line 2, column 4 (at ')'); expected the end of the text"),
    ("a orb", 3, "(at 'orb'); expected '(', '.', '[', an operator"),  # keywords are words
    ("a isT", 3, "(at 'isT')"),
    ("4 daysx", 3, "(at 'daysx')"),
    ("text.div", 6, "'div' is a keyword; as a name write it in backticks (`div`)"),
    ("a.day", 3, "'day' is a keyword"),
    ("and.b", 1, "'and' is a keyword"),
    ("a.true", 3, "'true' is a keyword"),
    ("%day", 2, "'day' is a keyword"),
    ("'\\q'", 2, "the escape \\q is not FHIRPath"),
    ("'\\u00g1'", 2, "the escape \\u is not FHIRPath"),
    ("http://s|c|1|d|maybe", 1, "userSelected component of a Coding literal is true or false"),
    ("ofType(1)", 1, "the argument is a type name"),
    ("x.ofType('Quantity')", 3, "the argument is a type name"),
]


@pytest.mark.parametrize(("text", "column", "fragment"), ERRORS, ids=[e[0] for e in ERRORS])
def test_syntax_errors(text: str, column: int, fragment: str) -> None:
    with pytest.raises(FhirPathError) as caught:
        parse(text)
    error = caught.value
    message = str(error)
    assert fragment in message
    assert f"column {column} (" in message and "\n" not in message
    assert message.startswith(f"The FHIRPath expression {text!r} ")
    assert error.__cause__ is None and error.__suppress_context__  # no lark traceback
    assert (error.status, error.code, error.expression_text) == (400, "invalid", text)
    assert isinstance(error, ValueError)
    line_start = text.rfind("\n", 0, error.position) + 1
    assert error.position is not None and error.position - line_start + 1 == column


@pytest.mark.parametrize("text", ["", "   ", "// nothing but a comment", "/* */"])
def test_empty_expressions(text: str) -> None:
    with pytest.raises(FhirPathError, match="FHIRPath expression"):
        parse(text)


# --- unparse ---------------------------------------------------------------------------------

#: (text, its canonical form)
CANONICAL = [
    ("(a.b  +2)*-c.d", "(a.b + 2) * -c.d"),
    ("a - (b - c)", "a - (b - c)"),
    ("((a - b)) - c", "a - b - c"),
    ("(a and b) or c", "a and b or c"),
    ("a and (b or c)", "a and (b or c)"),
    ("(a is T).b", "(a is T).b"),
    ("(a | b) is T", "(a | b) is T"),
    ("-(-a)", "- -a"),
    ("-(a + b)", "-(a + b)"),
    ("(-a).b", "(-a).b"),
    ("%'vs x'", "%`vs x`"),
    ("`a`.`b c`.`div`", "a.`b c`.`div`"),
    ("contains.in", "`contains`.`in`"),
    ("'it\\'s'", "'it\\'s'"),
    ("'a\u0001b\n'", "'a\\u0001b\\n'"),
    ("1.50 'mg'", "1.50 'mg'"),
    ("3  days", "3 days"),
    ("4 'days'", "4 days"),  # QuantityLiteral does not keep the quotes: the same node
    ("@T10:00", "@T10:00"),
    ("http://s|'c'|'1'|'a b'", "http://s|c|1|'a b'"),
    ("(http://s|c).display", "(http://s|c).display"),
    ("x.ofType(FHIR.`Quantity`)", "x.ofType(FHIR.Quantity)"),
    ("a[(http://s|c)]", "a[(http://s|c)]"),
    ("a[x | http://s|c ]", "a[(x | http://s|c)]"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL, ids=[c[0] for c in CANONICAL])
def test_unparse_writes_the_canonical_text(text: str, canonical: str) -> None:
    node = parse(text)
    assert unparse(node) == canonical
    assert parse(canonical) == node


def test_unparse_refuses_what_has_no_text() -> None:
    with pytest.raises(ValueError, match="URI with a scheme"):
        unparse(CodingLiteral("snomed", "123"))
    with pytest.raises(TypeError, match="not a FHIRPath node"):
        unparse("a")  # type: ignore[arg-type]


# --- limits ----------------------------------------------------------------------------------

LOW = GrammarLimits(fhirpath=Limits(length=200, depth=5, terms=10))


def timed(text: str) -> float:
    """Processor seconds that parsing ``text`` takes, whatever it raises."""
    started = time.process_time()
    with contextlib.suppress(FhirPathError, GrammarLimitError):
        parse(text)
    return time.process_time() - started


#: (id, text, the limit it passes with LOW in force, a fragment of the message)
OVER_LOW: list[tuple[str, str, str, str]] = [
    ("long", "a" * 201, "fhirpath.length", "is 201 characters long"),
    ("parentheses", "(" * 6 + "a" + ")" * 6, "fhirpath.depth", "nests 6 levels deep"),
    ("unbalanced", "(" * 50, "fhirpath.depth", "nests 50 levels deep"),
    ("brackets", "a" + "[0" * 6 + "]" * 6, "fhirpath.depth", "levels deep"),
    ("path", ".".join(["a"] * 6), "fhirpath.depth", "nests 6 levels deep (operators"),
    ("minus", "-" * 6 + "a", "fhirpath.depth", "nests 7 levels deep"),
    ("union", " | ".join(["a"] * 6), "fhirpath.depth", "nests 6 levels deep"),
    ("arguments", "f(" + ", ".join(["a"] * 11) + ")", "fhirpath.terms", "has 12 terms"),
    (
        "literals",
        "f(1, 'a', @2019, 3L, 2.5, `b`, %x, $this, http://s|c, 4 days)",
        "fhirpath.terms",
        "has 11 terms",
    ),
]


@pytest.mark.parametrize(
    ("text", "limit", "fragment"), [o[1:] for o in OVER_LOW], ids=[o[0] for o in OVER_LOW]
)
def test_limits(text: str, limit: str, fragment: str) -> None:
    with grammar.limits_in_force(LOW), pytest.raises(GrammarLimitError) as caught:
        parse(text)
    error = caught.value
    assert (error.status, error.code, error.limit) == (400, "too-long", limit)
    assert fragment in error.text and "The FHIRPath expression " in error.text
    assert f"the limit {limit} is " in error.text


def test_default_limits() -> None:
    assert GrammarLimits().fhirpath == Limits(length=20_000, depth=64, terms=2_000)
    assert GrammarLimits.from_options(["fhirpath.depth=10"]).fhirpath.depth == 10
    with pytest.raises(ValueError, match="at most 100"):
        GrammarLimits.from_options(["fhirpath.depth=1000"])


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("a + " * 250_000 + "a", "fhirpath.length"),  # 1 MB
        ("(" * 1_000 + "a" + ")" * 1_000, "fhirpath.depth"),
        ("(" * 1_000, "fhirpath.depth"),
        ("-" * 1_000 + "a", "fhirpath.depth"),
        (".".join(["a"] * 1_000), "fhirpath.depth"),
        (" | ".join(["a"] * 1_500), "fhirpath.depth"),
        ("f(" + ", ".join(["a"] * 2_500) + ")", "fhirpath.terms"),
    ],
    ids=[
        "1MB",
        "parentheses-1000",
        "unbalanced-1000",
        "minus-1000",
        "path-1000",
        "union-1500",
        "terms-2500",
    ],
)
def test_hostile_expressions_are_refused_fast(text: str, limit: str) -> None:
    raised = grammar.configured().fhirpath.length if limit == "fhirpath.length" else 100_000
    options = [f"fhirpath.length={raised}", "fhirpath.depth=100"]
    with grammar.limits_in_force(GrammarLimits.from_options(options)):
        assert timed(text) < 2.0
        with pytest.raises(GrammarLimitError, match=limit.replace(".", r"\.")):
            parse(text)


def test_the_deepest_allowed_tree_is_safe_to_walk() -> None:
    """At the ceiling of 100 levels the nodes compare, print and unparse without recursing
    out of the stack, and a long flat expression reads in linear time."""
    with grammar.limits_in_force(GrammarLimits.from_options(["fhirpath.depth=100"])):
        node = parse("(" * 99 + "a" + ")" * 99 + ".b" * 99)
        assert depth(node) == 100
        assert parse(unparse(node)) == node and repr(node).count("Member(") == 99
        nested = parse("f(" * 99 + "a" + ")" * 99)
        assert depth(nested) == 100 and parse(unparse(nested)) == nested
    wide = "f(" + ", ".join(f"a{i}.b = {i}" for i in range(600)) + ")"
    with grammar.limits_in_force(GrammarLimits.from_options(["fhirpath.length=100000"])):
        assert timed(wide) < 2.0
        assert isinstance(parse(wide), Function)


# --- parse(unparse(node)) == node, over generated nodes ----------------------------------------

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
names = st.one_of(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True), text)
namespace_part = names.filter(lambda part: part != "" and "." not in part)
type_specifiers = st.builds(
    TypeSpecifier,
    st.none() | st.lists(namespace_part, min_size=1, max_size=2).map(".".join),
    names,
)
decimals = st.from_regex(r"[0-9]{1,4}\.[0-9]{1,4}", fullmatch=True).map(Decimal)
numbers = st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,3})?", fullmatch=True).map(Decimal)
_TIME = r"[0-9]{2}(:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,3})?)?)?"
_DATE = r"[0-9]{4}(-[0-9]{2}(-[0-9]{2})?)?"
literals = st.one_of(
    st.just(Literal("empty", None)),
    st.builds(Literal, st.just("boolean"), st.booleans()),
    st.builds(Literal, st.just("string"), text),
    st.builds(Literal, st.just("integer"), st.integers(0, 10**20)),
    st.builds(Literal, st.just("long"), st.integers(0, 10**20)),
    st.builds(Literal, st.just("decimal"), decimals),
    st.builds(Literal, st.just("date"), st.from_regex(_DATE, fullmatch=True)),
    st.builds(
        Literal,
        st.just("datetime"),
        st.from_regex(rf"{_DATE}T({_TIME}(Z|[+-][0-9]{{2}}:[0-9]{{2}})?)?", fullmatch=True),
    ),
    st.builds(Literal, st.just("time"), st.from_regex(_TIME, fullmatch=True)),
    st.builds(QuantityLiteral, numbers, st.sampled_from(CALENDAR_UNITS) | text),
    st.builds(
        CodingLiteral,
        st.from_regex(r"[A-Za-z][A-Za-z0-9+.\-]{0,8}:[^\s'|(),]{0,12}", fullmatch=True),
        text,
        st.none() | text,
        st.none() | text,
        st.none() | st.booleans(),
    ),
)
leaves = st.one_of(
    literals,
    st.builds(Identifier, names),
    st.builds(Variable, names),
    st.just(This()),
    st.just(Index()),
    st.just(Total()),
)
OPERATORS = [op for level in LEVELS for op in level if op not in ("is", "as")]
plain_functions = names.filter(lambda name: name not in TYPE_FUNCTIONS)


def compound(inner: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    bases = st.none() | inner
    return st.one_of(
        st.builds(Binary, st.sampled_from(OPERATORS), inner, inner),
        st.builds(TypeOperation, st.sampled_from(["is", "as"]), inner, type_specifiers),
        st.builds(Unary, st.sampled_from(["-", "+"]), inner),
        st.builds(Member, inner, names),
        st.builds(Function, bases, plain_functions, st.lists(inner, max_size=3).map(tuple)),
        st.builds(
            Function,
            bases,
            st.sampled_from(sorted(TYPE_FUNCTIONS)),
            type_specifiers.map(lambda spec: (spec,)),
        ),
        st.builds(Indexer, inner, inner),
    )


nodes = st.recursive(leaves, compound, max_leaves=20)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes)
def test_parse_inverts_unparse(node: Node) -> None:
    written = unparse(node)
    assert parse(written) == node, written
    assert unparse(parse(written)) == written


# --- the R4 core SearchParameters -------------------------------------------------------------


def search_expressions(package: Path) -> list[str]:
    """The FHIRPath ``expression`` of every SearchParameter of the package, once each."""
    found: set[str] = set()
    for path in sorted(package.rglob("SearchParameter-*.json")):
        resource = json.loads(path.read_text(encoding="utf-8"))
        if resource.get("resourceType") == "SearchParameter" and resource.get("expression"):
            found.add(resource["expression"])
    return sorted(found)


@pytest.mark.slow
def test_every_r4_search_parameter_expression_parses(package_dirs: dict[str, Path]) -> None:
    expressions = search_expressions(package_dirs[EXAMPLES[0]])
    assert len(expressions) > 1_000
    failures = []
    for expression in expressions:
        try:
            node = parse(expression)
            assert parse(unparse(node)) == node
        except (FhirPathError, GrammarLimitError, AssertionError) as exc:
            failures.append(f"{expression}: {exc}")
    assert not failures, "\n".join(failures)
    union = parse(max(expressions, key=lambda e: e.count("|")))
    assert isinstance(union, Binary) and union.op == "|" and depth(union) < 64
