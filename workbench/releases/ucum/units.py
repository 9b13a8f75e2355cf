"""UCUM units: parsed with the UCUM grammar, reduced to their canonical form.

The grammar and the unit table come from the ``ucumvert`` package: its lark grammar is
generated from UCUM's official ``ucum-essence.xml`` (which it ships too), and it parses every
code of UCUM's table of example codes. Only its data files are used here (its package itself
imports ``pint``, which this module has no use for). The canonical form of a unit is computed
from ``ucum-essence.xml`` the way UCUM defines it: every atom is replaced by its definition
until only the seven base units (m, s, g, rad, K, C, cd) are left, with a numeric factor.

Special units (``Cel``, ``[degF]``, ``[pH]`` …, non-linear) and arbitrary units (``[IU]``,
``[arb'U]`` …, not comparable with anything else) keep their own symbol in the canonical
form. Annotations (``{cells}``) mean 1, as UCUM says, but are kept alongside so that units
that differ only by their annotation are not taken as the same unit.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from lark import Lark, Token, Tree  # lark itself is light; the grammar is built lazily
from lark.exceptions import LarkError, UnexpectedInput

from workbench import forksafe

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

    def __init__(self, essence: Path, grammar: Path) -> None:
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
        self.parser = Lark(grammar.read_text(encoding="utf-8"), start="main_term", strict=True)
        self._canonical: dict[str, Quantity] = {}
        self._lock = forksafe.lock()

    def atom_quantity(self, code: str, depth: int = 0) -> Quantity:
        """An atom's canonical form (memoised; definitions are resolved recursively)."""
        found = self._canonical.get(code)
        if found is not None:
            return found
        atom = self.atoms[code]
        if atom.base_dim is not None or (atom.arbitrary and atom.unit in (None, "1")):
            found = Quantity(1.0, ((code, 1),))  # a base unit, or an arbitrary one
        elif atom.special and atom.function_unit:
            # non-linear: its canonical form is that of its function's unit (Cel: K)
            try:
                inner = _evaluate(self, self.parser.parse(atom.function_unit), depth + 1)
                factor = atom.function_value * inner.quantity.factor
                found = Quantity(factor, inner.quantity.powers, (), True)
            except (LarkError, KeyError):
                found = Quantity(1.0, ((code, 1),), special=True)
        elif atom.unit is None or depth > 20:
            found = Quantity(1.0, ((code, 1),))
        else:
            try:
                defined = _evaluate(self, self.parser.parse(atom.unit), depth + 1).quantity
            except (LarkError, KeyError):  # a definition this grammar cannot read
                defined = Quantity(1.0, ((code, 1),))
            found = Quantity(atom.value * defined.factor, defined.powers, (), defined.special)
        with self._lock:
            self._canonical[code] = found
        return found


def _number(text: str | None) -> float:
    try:
        return float(text) if text else 1.0
    except ValueError:
        return 1.0


@lru_cache(maxsize=1)
def units_table() -> UnitTable:
    """The UCUM unit table and grammar (read once, on first use)."""
    folder = _package_folder()
    return UnitTable(folder / "vendor" / "ucum-essence.xml", folder / "ucum_grammar.lark")


# --- evaluating a parse tree ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Part:
    quantity: Quantity
    name: str
    atoms: tuple[str, ...] = ()


def _evaluate(table: UnitTable, node: Any, depth: int = 0) -> _Part:
    if isinstance(node, Token):
        if node.type == "ANNOTATION":
            return _Part(Quantity(annotations=(str(node),)), str(node))
        raise KeyError(node.type)
    assert isinstance(node, Tree)
    kids = list(node.children)
    if node.data == "simple_unit":
        return _simple(table, kids, depth)
    if node.data == "main_term":
        inner = _evaluate(table, kids[-1], depth)
        if len(kids) == 2:  # a leading "/"
            return _Part(Quantity().times(inner.quantity, -1), f"per {inner.name}", inner.atoms)
        return inner
    if node.data == "term":
        left, op, right = kids
        a, b = _evaluate(table, left, depth), _evaluate(table, right, depth)
        if str(op) == "/":
            quotient = a.quantity.times(b.quantity, -1)
            return _Part(quotient, f"{a.name} per {b.name}", a.atoms + b.atoms)
        return _Part(a.quantity.times(b.quantity), f"{a.name} × {b.name}", a.atoms + b.atoms)
    if node.data == "component":
        a, b = _evaluate(table, kids[0], depth), _evaluate(table, kids[1], depth)
        return _Part(a.quantity.times(b.quantity), f"{a.name} {b.name}", a.atoms)
    if node.data == "annotatable":
        if len(kids) == 2 and isinstance(kids[1], Token) and kids[1].type == "EXPONENT":
            base = _evaluate(table, kids[0], depth)
            exp = int(str(kids[1]))
            return _Part(base.quantity.power(exp), f"{base.name}^{exp}", base.atoms)
        inner = _evaluate(table, kids[0], depth)
        return _Part(inner.quantity, f"({inner.name})", inner.atoms)
    raise KeyError(node.data)


def _simple(table: UnitTable, kids: list[Any], depth: int) -> _Part:
    if len(kids) == 1 and kids[0].type == "FACTOR":
        return _Part(Quantity(float(int(str(kids[0])))), str(kids[0]))
    atom_code = str(kids[-1])
    atom = table.atoms[atom_code]
    quantity = table.atom_quantity(atom_code, depth)
    name = "10" if atom_code in ("10*", "10^") else atom.name
    if len(kids) == 2:
        prefix = table.prefixes[str(kids[0])]
        quantity = Quantity(
            prefix.value * quantity.factor,
            quantity.powers,
            quantity.annotations,
            quantity.special,
        )
        name = prefix.name + name
    return _Part(quantity, name, (atom_code,))


# --- the public surface -----------------------------------------------------------------


def _syntax_error(code: str, exc: UnexpectedInput) -> UcumSyntaxError:
    at = exc.pos_in_stream if isinstance(exc.pos_in_stream, int) else None
    if at is not None and 0 <= at < len(code):
        detail = f"unexpected character {code[at]!r} at position {at + 1}"
    else:
        at = len(code)
        detail = "the unit ends too early"
    return UcumSyntaxError(f"'{code}' is not a valid UCUM unit: {detail}", at)


@lru_cache(maxsize=65536)
def parse(code: str) -> Unit:
    """The unit of a UCUM code; UcumSyntaxError (saying where it fails) when it is none.

    >>> u = parse("mg/dL")
    >>> u.canonical, round(u.factor, 9), u.dimension
    ('g.m-3', 10.0, 'L-3.M')
    """
    if not isinstance(code, str) or code == "":
        raise UcumSyntaxError("an empty string is not a UCUM unit", 0)
    if code != code.strip() or any(c.isspace() for c in code):
        at = next(i for i, c in enumerate(code) if c.isspace())
        raise UcumSyntaxError(
            f"'{code}' is not a valid UCUM unit: UCUM codes contain no spaces (position {at + 1})",
            at,
        )
    table = units_table()
    try:
        tree = table.parser.parse(code)
    except UnexpectedInput as exc:
        raise _syntax_error(code, exc) from None
    except LarkError as exc:
        raise UcumSyntaxError(f"'{code}' is not a valid UCUM unit: {exc}") from None
    part = _evaluate(table, tree)
    return Unit(code, part.quantity, part.name, part.atoms)


def check(code: str) -> str | None:
    """None when ``code`` is a valid UCUM unit, else the message saying where it fails."""
    try:
        parse(code)
    except UcumSyntaxError as exc:
        return exc.text
    return None
