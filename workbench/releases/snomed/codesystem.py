"""SNOMED CT as a code system over an opened store: look-up, displays, designations,
properties, subsumption and historical associations. Filters are in ``filters``, implicit
value sets in ``implicit``, the concept, designation and association frames in ``frames``
(``SnomedCT`` keeps a one-line method for each). Post-coordinated expressions are codes too:
checking one against the release and its MRCM is in ``mrcm``, looking one up and writing it
out with terms in ``expressions``.

Codes are SCTIDs as strings. The version is the edition URI
``http://snomed.info/sct/{module}/version/{yyyymmdd}`` (``xsct`` for unpublished releases).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from workbench.errors import InvalidRequestError, UnknownCodeError
from workbench.releases.snomed import ecl, filters, frames, implicit, scg
from workbench.releases.snomed.ecl_eval import DEFINITION, DIALECTS, FSN, SYNONYM, Evaluator, Mask
from workbench.releases.snomed.expressions import lookup_expression
from workbench.releases.snomed.frames import USE_SYSTEM, USES
from workbench.releases.snomed.implicit import XSCT
from workbench.releases.snomed.mrcm import ExpressionCheck, Mrcm, check_expression
from workbench.releases.snomed.store import SCT, Store
from workbench.terminology.lookup import LookupResult, TypedValue

__all__ = [
    "ASSOCIATIONS",
    "DEFINITION",
    "FSN",
    "SCT",
    "SYNONYM",
    "USES",
    "USE_SYSTEM",
    "XSCT",
    "SnomedCT",
    "check_version",
]

PREFERRED = 900000000000548007
IS_A = 116680003
VERSION_PATTERN = re.compile(r"^http://snomed\.info/x?sct/[1-9][0-9]{5,17}(/version/[0-9]{8})?$")
ASSOCIATIONS = {
    900000000000526001: "REPLACED BY",
    900000000000527005: "SAME AS",
    900000000000523009: "POSSIBLY EQUIVALENT TO",
    900000000000528000: "WAS A",
    900000000000530003: "ALTERNATIVE",
    1186921001: "POSSIBLY REPLACED BY",
    1186924009: "PARTIALLY EQUIVALENT TO",
    734139008: "REFERS TO",
    900000000000531004: "REFERS TO (concept)",
}


def check_version(version: str) -> str:
    """Return ``version`` when it is a SNOMED CT edition/version URI, else raise."""
    if not VERSION_PATTERN.match(version):
        raise InvalidRequestError(
            f"'{version}' is not a SNOMED CT version URI: expected "
            "http://snomed.info/sct/{module}/version/{yyyymmdd} (or …/xsct/… for an "
            "unpublished release)"
        )
    return version


class SnomedCT:
    """One SNOMED CT edition/version, over its store."""

    system = SCT
    name = "SNOMED CT"

    def __init__(self, store: Store, *, version: str | None = None) -> None:
        self.store = store
        self.version: str = check_version(version) if version else str(store.meta["version"])
        self.evaluate = Evaluator(store)
        self._default_refset = store.meta.get("defaultLanguageRefset")
        self._displays: dict[int, str | None] = {}  # the rows touched so far
        self._rows: dict[str, int] = {}

    @property
    def lookup_name(self) -> str:
        """``$lookup``'s ``name`` output: ``system|edition version URI``, as tx.fhir.org
        answers (issue 22, f11); ``name`` stays the code system's name."""
        return f"{self.system}|{self.version}"

    def __len__(self) -> int:
        return self.store.n

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as the store's folder and the version (reopened on unpickling)."""
        return {"store": self.store, "version": self.version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["store"], version=state["version"])  # type: ignore[misc]

    # --- concepts ---------------------------------------------------------------------

    def row(self, code: str) -> int:
        """The concept row of a code (-1 when unknown); codes seen before are a dict hit."""
        found = self._rows.get(code)
        if found is None:
            found = self.store.row(code) if code.isdigit() else -1
            if len(self._rows) > 1_000_000:
                self._rows.clear()
            self._rows[code] = found
        return found

    def require(self, code: str) -> int:
        """The concept row of a code; UnknownCodeError when there is none."""
        row = self.row(code)
        if row < 0:
            raise UnknownCodeError(
                f"Unknown code '{code}' in the CodeSystem '{SCT}' version '{self.version}'"
            )
        return row

    def is_active(self, row: int) -> bool:
        """Whether the concept at ``row`` is active."""
        return bool(self.store.active[row])

    def display(self, row: int, language: str | None = None) -> str | None:
        """The preferred term of a concept, in a language or dialect when asked
        (``en-GB``, ``en-US``, ``es`` …); the release's default preferred term otherwise."""
        if row < 0:
            return None
        if language:
            term = self.preferred_in(row, language)
            if term is not None:
                return term
        try:
            return self._displays[row]
        except KeyError:
            value = self.store.value("display", row)
            shown = str(value) if value is not None else None
            self._displays[row] = shown
            return shown

    def preferred_in(self, row: int, language: str) -> str | None:
        """The preferred synonym of a concept in a dialect (``en-GB``: the GB language
        refset) or language (``es``: a preferred term whose language is es), or None."""
        tag = language.split(",")[0].split(";")[0].strip().lower()
        refset = DIALECTS.get(tag)
        descriptions = self.store.descriptions(row)
        if not descriptions.num_rows:
            return None
        lo = int(descriptions.column("row")[0].as_py())
        hi = lo + descriptions.num_rows
        acc = self.store.acceptability(lo, hi).to_pydict()
        preferred = {
            d
            for d, r, a in zip(acc["description"], acc["refset"], acc["acceptability"], strict=True)
            if a == PREFERRED and (refset is None or r == refset)
        }
        table = descriptions.to_pydict()
        base = tag.split("-")[0]
        for pos in range(descriptions.num_rows):
            if (
                table["active"][pos]
                and table["typeId"][pos] == SYNONYM
                and table["row"][pos] in preferred
                and (refset is not None or table["language"][pos].lower() == base)
            ):
                return str(table["term"][pos])
        return None

    def designations(self, row: int, *, active_only: bool = True) -> list[dict[str, Any]]:
        """Every description of a concept as a FHIR designation (language, use, value)."""
        table = self.store.descriptions(row).to_pydict()
        out = []
        for pos in range(len(table["term"])):
            if active_only and not table["active"][pos]:
                continue
            type_id = int(table["typeId"][pos])
            out.append(
                {
                    "language": table["language"][pos],
                    "use": {
                        "system": USE_SYSTEM,
                        "code": str(type_id),
                        "display": USES.get(type_id, str(type_id)),
                    },
                    "value": table["term"][pos],
                }
            )
        return out

    def texts(self, row: int) -> list[str]:
        """Every active description term of a concept (all valid displays)."""
        table = self.store.descriptions(row)
        return [
            str(t)
            for t, a in zip(
                table.column("term").to_pylist(), table.column("active").to_pylist(), strict=True
            )
            if a
        ]

    # --- hierarchy --------------------------------------------------------------------

    def parents(self, row: int) -> list[str]:
        """Codes of the direct parents."""
        return [str(self.store.ids[r]) for r in self.store.closure.parents[row]]

    def children(self, row: int) -> list[str]:
        """Codes of the direct children."""
        return [str(self.store.ids[r]) for r in self.store.closure.children[row]]

    def subsumes(self, code_a: str, code_b: str) -> str:
        """``equivalent``, ``subsumes``, ``subsumed-by`` or ``not-subsumed`` (A against B).
        Either code may be a post-coordinated expression: it is compared by its focus
        concepts, and an expression with a refinement is below its focus (``56265001``
        subsumes ``56265001 : 116676008 = 55641003``); two different refined expressions are
        not compared further (``not-subsumed``)."""
        refined = [self._refined(c) for c in (code_a, code_b)]
        relation = self._focus_subsumes(code_a, code_b)
        if not any(refined):
            return relation
        if all(refined):
            same = scg.parse(code_a) == scg.parse(code_b)
            return "equivalent" if same else "not-subsumed"
        if refined[1]:  # only B is refined: below its focus
            return "subsumes" if relation in ("equivalent", "subsumes") else "not-subsumed"
        return "subsumed-by" if relation in ("equivalent", "subsumed-by") else "not-subsumed"

    @staticmethod
    def _refined(code: str) -> bool:
        if not scg.looks_like_expression(code):
            return False
        expression = scg.parse(code)
        return bool(expression.ungrouped or expression.groups)

    def _focus_subsumes(self, code_a: str, code_b: str) -> str:
        a, b = (self._subsumption_rows(c) for c in (code_a, code_b))
        if a == b:
            return "equivalent"
        closure = self.store.closure
        if all(any(x == y or closure.is_below(y, x) for y in b) for x in a):
            return "subsumes"
        if all(any(x == y or closure.is_below(x, y) for x in a) for y in b):
            return "subsumed-by"
        return "not-subsumed"

    def _subsumption_rows(self, code: str) -> tuple[int, ...]:
        if scg.looks_like_expression(code):
            return tuple(self.require(str(c)) for c in scg.parse(code).focus)
        return (self.require(code),)

    # --- properties -------------------------------------------------------------------

    def lookup(
        self,
        code: str,
        *,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
    ) -> LookupResult:
        """$lookup: display, designations and the SNOMED CT properties of a concept.

        Properties: ``parent``, ``child``, ``inactive``, ``moduleId``, ``effectiveTime``,
        ``sufficientlyDefined``, ``normalForm``, every attribute relationship under its
        attribute's concept id (``valueCode``), every concrete value (``valueInteger``,
        ``valueDecimal``, ``valueString``, ``valueBoolean``) and, for inactive concepts,
        their historical associations under the association refset's id.

        A post-coordinated expression (SNOMED CT on FHIR: an expression is a code) is looked
        up too (``expressions.lookup_expression``).
        """
        wanted = set(properties) if properties else None

        def want(name: str) -> bool:
            return wanted is None or name in wanted or "*" in wanted

        if scg.looks_like_expression(code):
            return lookup_expression(self, code, want, display_language)
        row = self.require(code)

        props: list[tuple[str, TypedValue]] = []
        if want("inactive"):
            props.append(("inactive", TypedValue("valueBoolean", not self.is_active(row))))
        if want("sufficientlyDefined"):
            props.append(
                ("sufficientlyDefined", TypedValue("valueBoolean", bool(self.store.defined[row])))
            )
        if want("moduleId"):
            props.append(
                ("moduleId", TypedValue("valueCode", str(self.store.value("moduleId", row))))
            )
        if want("effectiveTime"):
            props.append(
                (
                    "effectiveTime",
                    TypedValue("valueString", str(self.store.value("effectiveTime", row))),
                )
            )
        if want("parent"):
            props += [("parent", self.coded(p)) for p in self.parents(row)]
        if want("child"):
            props += [("child", self.coded(c)) for c in self.children(row)]
        if want("normalForm"):
            props.append(("normalForm", TypedValue("valueString", self.normal_form(row))))
        seen: set[tuple[str, Any]] = set()
        for type_id, key, value in self._attributes(row):
            if want(type_id) and (type_id, value) not in seen:
                seen.add((type_id, value))
                if key == "valueCode":
                    props.append((type_id, self.coded(value, type_id)))
                else:
                    named = self.display(self.row(type_id))
                    props.append((type_id, TypedValue(key, value, code_display=named)))
        for _source, target, refset, active in self.associations_of(row):
            if active and want(str(refset)):
                props.append((str(refset), TypedValue("valueCode", target)))
        designations = tuple(self.designations(row)) if want("designation") else ()
        return LookupResult(
            name=self.lookup_name,
            version=self.version,
            code=code,
            display=self.display(row, display_language),
            definition=None,
            abstract=False,
            designations=designations,
            typed_properties=tuple(props),
        )

    def coded(self, code: str, attribute: str | None = None) -> TypedValue:
        """A concept as a ``valueCode`` property value, with its preferred term as the
        ``description`` and, for an attribute's value, the attribute's preferred term
        (tx.fhir.org's ``code-display``)."""
        named = self.display(self.row(attribute)) if attribute is not None else None
        return TypedValue("valueCode", code, self.display(self.row(code)), named)

    def _attributes(self, row: int) -> list[tuple[str, str, Any]]:
        rels = self.store.relationships(row)
        out: list[tuple[str, str, Any]] = []
        for type_row, dst_id in zip(rels["rel_type"], rels["rel_dst_id"], strict=True):
            type_id = int(self.store.ids[type_row])
            if type_id != IS_A:
                out.append((str(type_id), "valueCode", str(int(dst_id))))
        concrete = self.store.concrete(row).to_pydict()
        for type_id, value in zip(concrete["typeId"], concrete["value"], strict=True):
            key, typed = _concrete(value)
            out.append((str(type_id), key, typed))
        return out

    def normal_form(self, row: int) -> str:
        """The concept's necessary normal form in compositional grammar: its parents and
        its attributes (ungrouped, then each group), ``===`` when sufficiently defined."""
        rels = self.store.relationships(row)
        groups: dict[int, list[str]] = {}
        for type_row, dst_id, group in zip(
            rels["rel_type"], rels["rel_dst_id"], rels["rel_group"], strict=True
        ):
            type_id = int(self.store.ids[type_row])
            if type_id != IS_A:
                groups.setdefault(int(group), []).append(f"{type_id}={int(dst_id)}")
        concrete = self.store.concrete(row).to_pydict()
        for type_id, value, group in zip(
            concrete["typeId"], concrete["value"], concrete["group"], strict=True
        ):
            groups.setdefault(int(group), []).append(f"{type_id}={value}")
        focus = "+".join(self.parents(row)) or str(self.store.ids[row])
        parts = []
        if groups.get(0):
            parts.append(",".join(groups[0]))
        parts += ["{" + ",".join(v) + "}" for g, v in sorted(groups.items()) if g != 0]
        status = "===" if self.store.defined[row] else "<<<"
        return f"{status} {focus}" + (":" + ",".join(parts) if parts else "")

    # --- historical associations ------------------------------------------------------

    def associations(self) -> pd.DataFrame:
        """Every historical association row (``frames.associations``)."""
        return frames.associations(self.store)

    def associations_of(self, row: int) -> list[tuple[str, str, int, bool]]:
        """The historical associations whose source is the concept at ``row``."""
        table = self.store.associations(int(self.store.ids[row])).to_pydict()
        return [
            (str(s), str(t), int(r), bool(a))
            for s, t, r, a in zip(
                table["source"], table["target"], table["refsetId"], table["active"], strict=True
            )
        ]

    def replacements(self, row: int) -> str:
        """A sentence naming the active historical associations of an inactive concept."""
        found = [
            f"{ASSOCIATIONS.get(refset, str(refset))} {target}"
            + (f" |{self.display(self.row(target))}|" if self.row(target) >= 0 else "")
            for _s, target, refset, active in self.associations_of(row)
            if active
        ]
        return "; ".join(found)

    # --- filters and implicit value sets (``filters``, ``implicit``) ----------------------

    def filter(self, prop: str, op: str, value: str) -> Mask:
        """The concepts a ValueSet ``compose.include.filter`` selects (``filters.mask``)."""
        return filters.mask(self, prop, op, value)

    def filter_ecl(self, prop: str, op: str, value: str) -> str | None:
        """The ECL a filter stands for (``filters.ecl_of``)."""
        return filters.ecl_of(prop, op, value)

    @staticmethod
    def implicit_kind(url: str) -> tuple[str, str] | None:
        """An implicit value set URL as ``(kind, argument)`` (``implicit.kind``)."""
        return implicit.kind(url)

    def implicit_valueset(self, url: str) -> dict[str, Any] | None:
        """The ValueSet an implicit value set URL stands for (``implicit.valueset``)."""
        return implicit.valueset(self, url)

    def implicit(self, url: str) -> Mask | None:
        """The members of an implicit value set URL (``implicit.members``)."""
        return implicit.members(self, url)

    def codes(self, mask: Mask) -> npt.NDArray[np.int64]:
        """The rows a mask selects, in SCTID order."""
        return np.flatnonzero(mask)

    # --- post-coordinated expressions -------------------------------------------------

    @cached_property
    def mrcm(self) -> Mrcm:
        """The release's MRCM domain and range rules, read once per code system (not
        pickled: an unpickled code system reads them again on first use)."""
        return Mrcm(self.store)

    def expression_in(self, expression: scg.Expression, constraints: list[str]) -> bool:
        """Whether a (checked) expression satisfies every one of the ECL constraints."""
        from workbench.releases.snomed.ecl_expression import Satisfies, virtual

        test = Satisfies(self.evaluate, virtual(self.evaluate, expression))
        return all(test(ecl.parse(text)) for text in constraints)

    def check_expression(self, text: str) -> ExpressionCheck:
        """Parse a post-coordinated expression (ExpressionSyntaxError when malformed) and
        check it against this release and its MRCM (``mrcm.check_expression``)."""
        return check_expression(self, text)

    # --- frames (``frames``) -------------------------------------------------------------

    def concepts_frame(self) -> pd.DataFrame:
        """Every concept as a frame, from the store's columns (``frames.concepts``)."""
        return frames.concepts(self.store)

    def designations_frame(self) -> pd.DataFrame:
        """Every description as a frame, from the store's columns (``frames.designations``)."""
        return frames.designations(self.store)


def _concrete(value: str) -> tuple[str, Any]:
    if value.startswith("#"):
        number = value[1:]
        if re.fullmatch(r"[+-]?[0-9]+", number):
            return "valueInteger", int(number)
        return "valueDecimal", float(number)
    if value.startswith('"') and value.endswith('"'):
        return "valueString", value[1:-1]
    if value.lower() in ("true", "false"):
        return "valueBoolean", value.lower() == "true"
    return "valueString", value
