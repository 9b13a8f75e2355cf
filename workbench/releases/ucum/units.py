"""UCUM units: parsed with the UCUM grammar, reduced to their canonical form.

The unit table comes from UCUM's official ``ucum-essence.xml`` as the ``ucumvert`` package
ships it (its package itself imports ``pint``, which this module has no use for). The grammar
is ucumvert's, which it generates from that file, read by a lark LALR parser (time linear in
the code, no recursion): a unit symbol is one token, split into prefix and atom by a look-up
in the table (no two splits spell the same symbol), and an exponent follows only a unit
symbol (``10*3``; ``10+3`` is refused with a hint). The canonical form of a unit is computed
from ``ucum-essence.xml`` the way UCUM defines it: every atom is replaced by its definition
until only the seven base units (m, s, g, rad, K, C, cd) are left, with a numeric factor; a
factor beyond what a float holds (``10*309``) makes the code unusable (UcumSyntaxError).
Codes are limited in length, nesting and terms (``workbench.releases.grammar``).

Special units (``Cel``, ``[degF]``, ``[pH]`` …, non-linear) and arbitrary units (``[IU]``,
``[arb'U]`` …, not comparable with anything else) keep their own symbol in the canonical
form. Annotations (``{cells}``) mean 1, as UCUM says, but are kept alongside so that units
that differ only by their annotation are not taken as the same unit.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast
from xml.etree import ElementTree as ET

from lark import Lark, Token, Transformer  # lark itself is light; the grammar is built lazily
from lark.exceptions import LarkError, UnexpectedInput

from workbench import forksafe
from workbench.releases import grammar

SYSTEM = "http://unitsofmeasure.org"
# UCUM's dimension letters of its base units, in UCUM's order
_DIM_ORDER = ("L", "T", "M", "A", "C", "Q", "F")


class UcumSyntaxError(ValueError):
    """A string that is not a valid UCUM unit; ``position`` is its 0-based offset."""

    def __init__(self, text: str, position: int | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.position = position


@dataclass(frozen=True, slots=True)
class Atom:
    """One unit atom (or base unit) of ``ucum-essence.xml``."""

    code: str
    name: str
    print_symbol: str
    property: str
    metric: bool
    special: bool
    arbitrary: bool
    base_dim: str | None
    unit: str | None
    value: float
    function_unit: str | None = None
    function_value: float = 1.0


@dataclass(frozen=True, slots=True)
class Prefix:
    """A metric prefix (``k`` kilo 1e3 …)."""

    code: str
    name: str
    value: float


@dataclass(frozen=True, slots=True)
class Quantity:
    """A unit reduced to a factor times a product of base units (and kept symbols)."""

    factor: float = 1.0
    powers: tuple[tuple[str, int], ...] = ()
    annotations: tuple[str, ...] = ()
    special: bool = False

    def times(self, other: Quantity, sign: int = 1) -> Quantity:
        """This quantity times ``other`` (``sign=-1``: divided by it)."""
        powers = dict(self.powers)
        for base, exp in other.powers:
            powers[base] = powers.get(base, 0) + sign * exp
        return Quantity(
            self.factor * (other.factor if sign > 0 else 1.0 / other.factor),
            _clean(powers),
            tuple(sorted(self.annotations + other.annotations)),
            self.special or other.special,
        )

    def power(self, exp: int) -> Quantity:
        """This quantity to an integer power."""
        return Quantity(
            self.factor**exp,
            _clean({b: e * exp for b, e in self.powers}),
            self.annotations,
            self.special,
        )


def _clean(powers: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((b, e) for b, e in powers.items() if e != 0))


@dataclass(frozen=True, slots=True)
class Unit:
    """A valid UCUM code: its canonical form, dimension and print name."""

    code: str
    quantity: Quantity
    name: str
    atoms: tuple[str, ...] = field(default=())

    @property
    def canonical(self) -> str:
        """The canonical unit without its factor (``g.m-3``; ``1`` when dimensionless)."""
        return _format(self.quantity.powers) or "1"

    @property
    def factor(self) -> float:
        """What one of this unit is in the canonical unit (``mg/dL`` is 10 ``g.m-3``)."""
        return self.quantity.factor

    @property
    def dimension(self) -> str:
        """The dimension over UCUM's base dimensions (``M.L-3``; ``1`` when none)."""
        table = units_table()
        dims: dict[str, int] = {}
        others: list[tuple[str, int]] = []
        for base, exp in self.quantity.powers:
            letter = table.base_dims.get(base)
            if letter is None:
                others.append((base, exp))
            else:
                dims[letter] = dims.get(letter, 0) + exp
        ordered = [(d, dims[d]) for d in _DIM_ORDER if dims.get(d)]
        return _format(ordered + others) or "1"

    def equals(self, other: Unit) -> bool:
        """True when both are the same unit: the same canonical form and factor, the same
        annotations, and (for special units) the same code."""
        mine, theirs = self.quantity, other.quantity
        if mine.special or theirs.special:
            return self.code == other.code
        return (
            mine.powers == theirs.powers
            and mine.annotations == theirs.annotations
            and math.isclose(mine.factor, theirs.factor, rel_tol=1e-12)
        )


def _format(powers: Any) -> str:
    return ".".join(b if e == 1 else f"{b}{e}" for b, e in powers)


# --- the unit table -------------------------------------------------------------------


def _package_folder() -> Path:
    """The folder of the ``ucumvert`` package, found without importing it."""
    spec = importlib.util.find_spec("ucumvert")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the package 'ucumvert' (UCUM grammar and table) is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


class UnitTable:
    """Prefixes and atoms of ``ucum-essence.xml``, and the grammar built from them."""

    def __init__(self, essence: Path) -> None:
        root = ET.parse(essence).getroot()  # a file of an installed package
        self.version: str = root.get("version", "")
        self.revision_date: str = root.get("revision-date", "")
        self.prefixes: dict[str, Prefix] = {}
        self.atoms: dict[str, Atom] = {}
        self.base_dims: dict[str, str] = {}
        for el in root:
            tag = el.tag.rsplit("}", 1)[-1]
            code = el.get("Code", "")
            name = (el.findtext("{*}name") or "").strip()
            symbol = "".join((el.find("{*}printSymbol") or ET.Element("x")).itertext()).strip()
            if tag == "prefix":
                value = el.find("{*}value")
                number = float(value.get("value", "1")) if value is not None else 1.0
                self.prefixes[code] = Prefix(code, name, number)
            elif tag in ("base-unit", "unit"):
                value = el.find("{*}value")
                function = value.find("{*}function") if value is not None else None
                dim = el.get("dim")
                if dim:
                    self.base_dims[code] = dim
                self.atoms[code] = Atom(
                    code=code,
                    name=name,
                    print_symbol=symbol or code,
                    property=(el.findtext("{*}property") or "").strip(),
                    metric=tag == "base-unit" or el.get("isMetric") == "yes",
                    special=el.get("isSpecial") == "yes",
                    arbitrary=el.get("isArbitrary") == "yes",
                    base_dim=dim,
                    unit=value.get("Unit") if value is not None else None,
                    value=_number(value.get("value")) if value is not None else 1.0,
                    function_unit=function.get("Unit") if function is not None else None,
                    function_value=_number(function.get("value")) if function is not None else 1.0,
                )
        # every unit symbol: an atom, or a metric atom after a prefix (no two spell the same)
        self.symbols: dict[str, tuple[Prefix | None, str]] = {
            p.code + a.code: (p, a.code)
            for p in self.prefixes.values()
            for a in self.atoms.values()
            if a.metric
        }
        self.symbols.update((code, (None, code)) for code in self.atoms)
        self.parser = Lark(
            GRAMMAR,
            parser="lalr",
            start="main_term",
            transformer=_Build(self),
            lexer_callbacks=grammar.callbacks(
                ("LPAR",), ("RPAR",), ("SYMBOL", "FACTOR", "ANNOTATION")
            ),
        )
        self._canonical: dict[str, Quantity] = {}
        self._lock = forksafe.lock()

    def atom_quantity(self, code: str) -> Quantity:
        """An atom's canonical form (memoised; definitions are resolved recursively)."""
        found = self._canonical.get(code)
        if found is not None:
            return found
        atom = self.atoms[code]
        depth = _RESOLVING.get()
        if atom.base_dim is not None or (atom.arbitrary and atom.unit in (None, "1")):
            found = Quantity(1.0, ((code, 1),))  # a base unit, or an arbitrary one
        elif atom.special and atom.function_unit:
            # non-linear: its canonical form is that of its function's unit (Cel: K)
            inner = self._definition(atom.function_unit, depth)
            if inner is None:
                found = Quantity(1.0, ((code, 1),), special=True)
            else:
                found = Quantity(atom.function_value * inner.factor, inner.powers, (), True)
        elif atom.unit is None or depth > 20:
            found = Quantity(1.0, ((code, 1),))
        else:
            defined = self._definition(atom.unit, depth) or Quantity(1.0, ((code, 1),))
            found = Quantity(atom.value * defined.factor, defined.powers, (), defined.special)
        with self._lock:
            self._canonical[code] = found
        return found

    def _definition(self, unit: str, depth: int) -> Quantity | None:
        """The quantity of an atom's definition; None when this grammar cannot read it."""
        token = _RESOLVING.set(depth + 1)
        try:
            with grammar.tracking("UCUM unit", "ucum", None):
                part = cast(_Part, self.parser.parse(unit))
            return part.quantity
        except (LarkError, KeyError, UcumSyntaxError, _Bad, OverflowError, ValueError):
            return None
        finally:
            _RESOLVING.reset(token)


def _number(text: str | None) -> float:
    try:
        return float(text) if text else 1.0
    except ValueError:
        return 1.0


@lru_cache(maxsize=1)
def units_table() -> UnitTable:
    """The UCUM unit table and grammar (read once, on first use)."""
    return UnitTable(_package_folder() / "vendor" / "ucum-essence.xml")


# --- the grammar: UCUM's syntax, read by an LALR parser ----------------------------------

#: UCUM's syntax as ucumvert writes it from ``ucum-essence.xml`` (main_term, term, component,
#: annotatable, simple_unit), with a unit symbol read as one token and split into prefix and
#: atom by the table (no two splits spell the same symbol), and an exponent only after a unit
#: symbol (``10*3``, not ``10+3``). The tree is built while the parser reduces.
GRAMMAR = r"""
main_term: SLASH? term
?term: component
    | term DOT component -> times
    | term SLASH component -> per
?component: annotatable ANNOTATION -> annotated
    | annotatable
?annotatable: SYMBOL EXPONENT -> power
    | SYMBOL -> symbol
    | FACTOR -> factor
    | ANNOTATION -> annotation
    | "(" main_term ")" -> group

LPAR: "("
RPAR: ")"
SLASH: "/"
DOT: "."
ANNOTATION: /\{[!-z|~]*\}/
SYMBOL.2: /10[*^]|(?:[A-Za-z%'_]|\[[^\[\]]*\])+/
EXPONENT: /[+-]?[1-9][0-9]*/
FACTOR: /[1-9][0-9]*/
"""

_RESOLVING: ContextVar[int] = ContextVar("workbench_ucum_resolving", default=0)


class _Bad(Exception):
    """A unit symbol that is not in the table; ``at`` is where reading it stops."""

    def __init__(self, at: int) -> None:
        super().__init__(at)
        self.at = at


@dataclass(frozen=True, slots=True)
class _Part:
    quantity: Quantity
    name: str
    atoms: tuple[str, ...] = ()


class _Build(Transformer):
    """Computes each part's quantity while the parser reduces (no tree, no recursion)."""

    def __init__(self, table: UnitTable) -> None:
        super().__init__()
        self.table = table

    def main_term(self, items: list[Any]) -> _Part:
        inner: _Part = items[-1]
        if len(items) == 2:  # a leading "/"
            return _Part(Quantity().times(inner.quantity, -1), f"per {inner.name}", inner.atoms)
        return inner

    def times(self, items: list[Any]) -> _Part:
        a, _, b = items
        return _Part(a.quantity.times(b.quantity), f"{a.name} × {b.name}", a.atoms + b.atoms)

    def per(self, items: list[Any]) -> _Part:
        a, _, b = items
        quotient = a.quantity.times(b.quantity, -1)
        return _Part(quotient, f"{a.name} per {b.name}", a.atoms + b.atoms)

    def annotated(self, items: list[Any]) -> _Part:
        a, note = items
        b = self.annotation([note])
        return _Part(a.quantity.times(b.quantity), f"{a.name} {b.name}", a.atoms)

    def annotation(self, items: list[Token]) -> _Part:
        return _Part(Quantity(annotations=(str(items[0]),)), str(items[0]))

    def group(self, items: list[_Part]) -> _Part:
        return items[0]  # the name of ``mol/(24.h)`` is "mole per 24 × hour"

    def factor(self, items: list[Token]) -> _Part:
        return _Part(Quantity(float(int(str(items[0])))), str(items[0]))

    def power(self, items: list[Token]) -> _Part:
        base = self.symbol(items[:1])
        exp = int(str(items[1]))
        return _Part(base.quantity.power(exp), f"{base.name}^{exp}", base.atoms)

    def symbol(self, items: list[Token]) -> _Part:
        table = self.table
        token = items[0]
        found = table.symbols.get(str(token))
        if found is None:
            raise _Bad((token.start_pos or 0) + _reach(table, str(token)))
        prefix, atom_code = found
        quantity = table.atom_quantity(atom_code)
        name = "10" if atom_code in ("10*", "10^") else table.atoms[atom_code].name
        if prefix is not None:
            quantity = Quantity(
                prefix.value * quantity.factor,
                quantity.powers,
                quantity.annotations,
                quantity.special,
            )
            name = prefix.name + name
        return _Part(quantity, name, (atom_code,))


def _reach(table: UnitTable, text: str) -> int:
    """How far an unknown symbol reads as UCUM: the longest atom, prefix, or prefix and
    metric atom it starts with (where a character-by-character reader would stop)."""
    reach = max((len(a) for a in table.atoms if text.startswith(a)), default=0)
    for p in table.prefixes:
        if text.startswith(p):
            rest = text[len(p) :]
            metric = (
                len(a) for a, atom in table.atoms.items() if atom.metric and rest.startswith(a)
            )
            reach = max(reach, len(p) + max(metric, default=0))
    return reach


# --- the public surface -----------------------------------------------------------------

KIND = "UCUM unit"


def _syntax_error(code: str, exc: UnexpectedInput) -> UcumSyntaxError:
    at = exc.pos_in_stream if isinstance(exc.pos_in_stream, int) else None
    token = getattr(exc, "token", None)
    if getattr(token, "type", "") == "$END":
        at = None
    if at is not None and 0 <= at < len(code):
        detail = f"unexpected character {code[at]!r} at position {at + 1}"
        history = getattr(exc, "token_history", None) or ()
        if getattr(token, "type", "") == "EXPONENT" and history and history[-1].type == "FACTOR":
            number = str(history[-1])
            hint = f"{number}*{str(token).lstrip('+')}" if number == "10" else "10*n"
            detail = (
                f"an exponent ({str(token)!r} at position {at + 1}) applies to a unit symbol, "
                f"not to the number {number}; for a power of ten write {hint}"
            )
    else:
        at = len(code)
        detail = "the unit ends too early"
    return UcumSyntaxError(f"'{code}' is not a valid UCUM unit: {detail}", at)


def parse(code: str) -> Unit:
    """The unit of a UCUM code; UcumSyntaxError (saying where it fails) when it is none, also
    when its factor is beyond what a float holds (``10*309``). GrammarLimitError (400
    ``too-long``) when it is over a limit of ``grammar.configured().ucum``.

    >>> u = parse("mg/dL")
    >>> u.canonical, round(u.factor, 9), u.dimension
    ('g.m-3', 10.0, 'L-3.M')
    """
    if not isinstance(code, str):
        raise UcumSyntaxError("a UCUM unit is a string", 0)
    return _parse(code, grammar.configured().ucum)


@lru_cache(maxsize=65536)
def _parse(code: str, limits: grammar.Limits) -> Unit:
    grammar.check_length(KIND, "ucum", code, limits)
    if code == "":
        raise UcumSyntaxError("an empty string is not a UCUM unit", 0)
    if code != code.strip() or any(c.isspace() for c in code):
        at = next(i for i, c in enumerate(code) if c.isspace())
        raise UcumSyntaxError(
            f"'{code}' is not a valid UCUM unit: UCUM codes contain no spaces (position {at + 1})",
            at,
        )
    table = units_table()
    with grammar.tracking(KIND, "ucum", limits) as tracker:
        try:
            part = cast(_Part, table.parser.parse(code))
        except UnexpectedInput as exc:
            tracker.check()
            raise _syntax_error(code, exc) from None
        except _Bad as exc:
            tracker.check()
            where = f"unexpected character {code[exc.at]!r} at position {exc.at + 1}"
            raise UcumSyntaxError(f"'{code}' is not a valid UCUM unit: {where}", exc.at) from None
        except (OverflowError, ValueError):  # 10*309; a number of more than 4,300 digits
            tracker.check()
            raise _out_of_range(code) from None
    tracker.check()
    factor = part.quantity.factor
    if not math.isfinite(factor) or factor == 0.0:
        raise _out_of_range(code)
    return Unit(code, part.quantity, part.name, part.atoms)


def _out_of_range(code: str) -> UcumSyntaxError:
    return UcumSyntaxError(
        f"'{code}' is not a usable UCUM unit: its factor is beyond the range of numbers this "
        "server computes with (about 10^-308 to 10^308)"
    )


def check(code: str) -> str | None:
    """None when ``code`` is a valid UCUM unit, else the message saying where it fails."""
    try:
        parse(code)
    except UcumSyntaxError as exc:
        return exc.text
    return None
