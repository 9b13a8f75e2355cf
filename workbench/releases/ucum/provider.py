"""UCUM as a code system provider, present in every Workbench without loading anything.

UCUM is a grammar, not a list: every well-formed expression over its unit table is a code
(case-sensitive), so the provider answers ``get`` by parsing: it decides every code, but
cannot list them (``is_complete`` is False; ``why_unknown`` says why a code is not UCUM,
so a value set that lists an invalid unit does not take it). What follows from that:

- ``$validate-code`` and ``$lookup`` work on any code; an invalid one is unknown, with a
  message saying where it fails to parse.
- A value set that *lists* units validates and expands (its listed units). A listed unit
  also accepts a code that is the same unit spelled another way: the same canonical form
  and factor and the same annotations (``ml`` for ``mL``, ``cm3`` for ``mL``, ``10*9/L`` for
  ``10*3/uL``, ``/min`` for ``min-1``; never ``g`` for ``mg``); special units such as ``Cel``
  only match themselves. The result's ``normalized-code`` is the listed unit.
- A value set that includes all of UCUM, or a filter on it, validates codes but cannot be
  expanded (``TooCostlyError``): UCUM has infinitely many codes.
- Filters: ``canonical = <unit>`` (units with that canonical unit, whatever their factor:
  ``canonical = g`` takes every mass unit) and ``property = <kind of quantity>`` (the
  ``property`` of ucum-essence.xml, e.g. ``mass``, ``volume``: units whose canonical unit is
  that of a unit of that kind), as FHIR's UCUM page defines them.
- ``display`` is the code itself; the print name (``milligram per deciliter``) is a
  designation and the ``name`` property. ``$lookup`` gives ``canonical``, ``dimension``,
  ``factor`` and (for a single unit atom) ``property``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import pandas as pd

from workbench.errors import TooCostlyError, UnknownCodeError, UnsupportedFilterError
from workbench.releases.codes.base import MadeConcepts
from workbench.releases.ucum import units
from workbench.releases.ucum.units import SYSTEM, UcumSyntaxError, Unit
from workbench.terminology.codesystem import Concept
from workbench.terminology.compose import Entry
from workbench.terminology.filters import CodeFilter
from workbench.terminology.lookup import LookupResult
from workbench.terminology.provider import CodeSystemProvider

SYNONYM = {"system": "http://snomed.info/sct", "code": "900000000000013009", "display": "Synonym"}
PROPERTIES = {
    "canonical": "string",
    "dimension": "string",
    "factor": "decimal",
    "name": "string",
    "property": "string",
}
_NOT_LISTABLE = (
    "UCUM (http://unitsofmeasure.org) is a grammar with infinitely many codes: a value set "
    "that takes all of UCUM, or a filter on it, can validate units but cannot be expanded; "
    "list the units instead"
)


def _version() -> str:
    """The UCUM version of the shipped ucum-essence.xml, read from its first line only."""
    try:
        path = units._package_folder() / "vendor" / "ucum-essence.xml"
        with open(path, encoding="ascii", errors="replace") as fh:
            head = fh.read(400)
    except (OSError, RuntimeError):
        return ""
    found = re.search(r'\sversion="([^"]+)"', head.split("?>", 1)[-1])
    return found.group(1) if found else ""


class _Concepts(MadeConcepts):
    """Concepts by code, made by parsing (not enumerable)."""

    def __iter__(self) -> Iterator[str]:
        raise TooCostlyError(_NOT_LISTABLE)

    def __len__(self) -> int:
        return len(units.units_table().atoms)


class UcumProvider(CodeSystemProvider):
    """The UCUM code system: codes are checked by the grammar and the unit table."""

    url = SYSTEM
    # the grammar decides every code, so codes can be validated (the resource, as FHIR's
    # UCUM page has it, says not-present: no code is listed)
    content = "complete"
    case_sensitive = True
    hierarchy_meaning = "is-a"
    is_complete = False  # not listable
    enumerable = False  # a grammar: codes are parsed, not listed
    synonymous_codes = True  # ml and mL are one unit
    plain_entries = True
    hierarchical = False

    def __init__(self) -> None:
        self.version: str | None = _version() or None
        self.property_types = dict(PROPERTIES)
        self.concepts = _Concepts(self)
        self._made: dict[str, Concept] = {}
        self.resource: dict[str, Any] = {
            "resourceType": "CodeSystem",
            "url": SYSTEM,
            "version": self.version,
            "name": "UCUM",
            "title": "Unified Code for Units of Measure (UCUM)",
            "status": "active",
            "publisher": "Regenstrief Institute, Inc.",
            "caseSensitive": True,
            "compositional": True,
            "content": "not-present",
            "filter": [
                {"code": "canonical", "operator": ["="], "value": "a UCUM unit"},
                {"code": "property", "operator": ["="], "value": "a kind of quantity"},
            ],
            "property": [{"code": code, "type": kind} for code, kind in PROPERTIES.items()],
        }

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        """Pickled as a fresh provider (Dask ships code systems to its workers)."""
        return (UcumProvider, ())

    # --- codes ---------------------------------------------------------------------------

    @staticmethod
    def unit(code: str) -> Unit | None:
        """The parsed unit of a code, or None when it is not valid UCUM."""
        try:
            return units.parse(code)
        except UcumSyntaxError:
            return None

    @staticmethod
    def why_unknown(code: str) -> str | None:
        """Where a code fails to parse as UCUM (None when it is valid)."""
        return units.check(code) if isinstance(code, str) else "not a string"

    def get(self, code: str) -> Concept | None:
        """The concept of a valid UCUM code (None for anything else)."""
        if not isinstance(code, str):
            return None
        found = self._made.get(code)
        if found is None:
            unit = self.unit(code)
            if unit is None:
                return None
            found = self._concept(unit)
            if len(self._made) > 50_000:
                self._made.clear()
            self._made[code] = found
        return found

    def _concept(self, unit: Unit) -> Concept:
        props: dict[str, list[Any]] = {
            "canonical": [unit.canonical],
            "dimension": [unit.dimension],
            "factor": [float(f"{unit.factor:.15g}")],
            "name": [unit.name],
        }
        keys = {
            "canonical": "valueString",
            "dimension": "valueString",
            "factor": "valueDecimal",
            "name": "valueString",
        }
        atom = units.units_table().atoms.get(unit.code)
        if atom is not None and atom.property:
            props["property"] = [atom.property]
            keys["property"] = "valueString"
        return Concept(
            code=unit.code,
            display=unit.code,
            definition=None,
            order=0,
            designations=[{"language": "en", "use": dict(SYNONYM), "value": unit.name}],
            properties=props,
            value_keys=keys,
        )

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.get(code) is not None

    def __iter__(self) -> Iterator[Concept]:
        raise TooCostlyError(_NOT_LISTABLE)

    def __len__(self) -> int:
        return len(units.units_table().atoms)

    def __bool__(self) -> bool:
        return True

    def role_of(self, property_code: str) -> str:
        """Properties play their own role."""
        return property_code

    def has_property(self, name: str) -> bool:
        """The properties of ``PROPERTIES``."""
        return name in self.property_types

    def property_codes_for(self, role: str) -> list[str]:
        """Properties play their own role."""
        return [role]

    def ancestors(self, code: str) -> frozenset[str]:
        """UCUM defines no hierarchy."""
        return frozenset()

    def descendants(self, code: str) -> frozenset[str]:
        """UCUM defines no hierarchy."""
        return frozenset()

    def subsumes(self, code_a: str, code_b: str) -> str:
        """``equivalent`` for the same unit spelled either way (``mL``/``cm3``), else
        ``not-subsumed`` (UCUM has no subsumption)."""
        a, b = self.unit(code_a), self.unit(code_b)
        if code_a == code_b or (a is not None and b is not None and a.equals(b)):
            return "equivalent"
        return "not-subsumed"

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """The concepts of the valid codes among ``codes``, sorted by code."""
        return [c for c in (self.get(code) for code in sorted(codes)) if c is not None]

    # --- value sets ----------------------------------------------------------------------

    def equivalent_in(self, code: str, listed: Iterable[str]) -> str | None:
        """The listed unit that ``code`` is the same unit as (see the module docstring)."""
        mine = self.unit(code)
        if mine is None:
            return None
        for other in listed:
            theirs = self.unit(other)
            if theirs is not None and mine.equals(theirs):
                return other
        return None

    def compile_filter(self, raw: Mapping[str, Any]) -> CodeFilter:
        """``canonical = <unit>`` and ``property = <kind of quantity>``."""
        prop, op, value = (str(raw.get(k, "")) for k in ("property", "op", "value"))
        if prop not in ("canonical", "property") or op != "=":
            raise UnsupportedFilterError(
                f"The filter '{prop} {op} {value}' is not supported on UCUM (supported: "
                "'canonical = <unit>', 'property = <kind of quantity>')"
            )
        if prop == "canonical":
            try:
                wanted = {units.parse(value).quantity.powers}
            except UcumSyntaxError as exc:
                raise UnsupportedFilterError(
                    f"The filter 'canonical = {value}' needs a UCUM unit: {exc.text}"
                ) from None
        else:
            wanted = self._kinds().get(value.casefold(), set())
            if not wanted:
                known = ", ".join(sorted(self._kinds())[:12])
                raise UnsupportedFilterError(
                    f"'{value}' is no UCUM property (kind of quantity), e.g. {known}"
                )

        def matches(concept: Concept) -> bool:
            unit = self.unit(concept.code)
            return unit is not None and unit.quantity.powers in wanted

        return CodeFilter(f"{prop} {op} {value}", matches, None)

    @cached_property
    def _kind_table(self) -> dict[str, set[tuple[tuple[str, int], ...]]]:
        table = units.units_table()
        kinds: dict[str, set[tuple[tuple[str, int], ...]]] = {}
        for code, atom in table.atoms.items():
            if atom.property:
                kinds.setdefault(atom.property.casefold(), set()).add(
                    table.atom_quantity(code).powers
                )
        return kinds

    def _kinds(self) -> dict[str, set[tuple[tuple[str, int], ...]]]:
        return self._kind_table

    def filter_entries(self, filters: Sequence[CodeFilter]) -> list[Entry] | None:
        """A filter over UCUM cannot be listed."""
        raise self.listing_error()

    @staticmethod
    def listing_error() -> TooCostlyError:
        """Why all of UCUM (or a filter on it) cannot be expanded."""
        return TooCostlyError(_NOT_LISTABLE)

    # --- what the workbench delegates ----------------------------------------------------

    def implicit_valueset(self, url: str) -> dict[str, Any] | None:
        """All of UCUM: ``http://unitsofmeasure.org/vs`` (or ``?fhir_vs``); it validates
        units, and its expansion is refused as too costly."""
        if url not in (f"{SYSTEM}/vs", f"{SYSTEM}?fhir_vs"):
            return None
        return {
            "resourceType": "ValueSet",
            "url": url,
            "version": self.version,
            "name": "AllUCUMUnits",
            "status": "active",
            "compose": {"include": [{"system": SYSTEM}]},
        }

    def lookup(
        self,
        code: str,
        *,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
    ) -> LookupResult:
        """$lookup: the canonical unit, dimension, factor, print name (UnknownCodeError,
        saying where it fails to parse, for an invalid code)."""
        why = self.why_unknown(code)
        if why is not None:
            raise UnknownCodeError(f"Unknown code '{code}' in the CodeSystem '{SYSTEM}': {why}")
        return super().lookup(code, properties=properties, display_language=display_language)

    def concepts_frame(self) -> pd.DataFrame:
        """The unit table (base units and unit atoms; every other code is made of them)."""
        table = units.units_table()
        rows = []
        for code, atom in table.atoms.items():
            unit = units.parse(code)
            rows.append(
                [
                    code,
                    code,
                    atom.name,
                    atom.print_symbol,
                    atom.property,
                    unit.canonical,
                    float(f"{unit.factor:.15g}"),
                    unit.dimension,
                    atom.metric,
                    atom.special,
                    atom.arbitrary,
                ]
            )
        columns = [
            "code",
            "display",
            "name",
            "print_symbol",
            "property",
            "canonical",
            "factor",
            "dimension",
            "metric",
            "special",
            "arbitrary",
        ]
        return pd.DataFrame(rows, columns=columns)

    def designations_frame(self) -> pd.DataFrame:
        """The name of every unit atom, in long form."""
        table = units.units_table()
        rows = [
            [code, "en", SYNONYM["system"], SYNONYM["code"], atom.name]
            for code, atom in table.atoms.items()
        ]
        return pd.DataFrame(rows, columns=["code", "language", "use_system", "use_code", "value"])
