"""SNOMED CT as a code system the terminology engine can use like a CodeSystem's index.

``SnomedProvider`` answers what value sets, validation, look-up and expansion ask of a code
system (a concept by code, the hierarchy, filters, iteration, the version), from the store:
membership in a filter is one look-up in a boolean mask over concept rows, and concepts become
Python objects only when a call needs them. Post-coordinated expressions are validated by
``validate_expression``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import WorkbenchError
from workbench.releases import grammar
from workbench.releases.check_digits import sctid_namespace, sctid_problem
from workbench.releases.masks import MaskFilter
from workbench.releases.snomed import maps, scg
from workbench.releases.snomed.codesystem import ASSOCIATIONS, SCT, SnomedCT
from workbench.releases.snomed.concepts import (
    ConceptTable,
    SnomedConcept,
    make_concept,
    make_concepts,
)
from workbench.releases.snomed.expressions import with_terms
from workbench.terminology.codesystem import Concept
from workbench.terminology.compose import Entry
from workbench.terminology.filters import CodeFilter
from workbench.terminology.languages import Languages
from workbench.terminology.lookup import LookupResult
from workbench.terminology.provider import (
    CodeSystemProvider,
    HierarchyMembers,
    Successor,
    dialect_display_for,
)

PROPERTIES = {
    "inactive": "boolean",
    "sufficientlyDefined": "boolean",
    "moduleId": "code",
    "effectiveTime": "string",
    "parent": "code",
    "child": "code",
    "normalForm": "string",
    "constraint": "string",
    "expression": "string",
    "expressions": "boolean",
}

#: The historical associations that replace an inactive concept one to one.
REPLACING = frozenset({"SAME AS", "REPLACED BY"})


class SnomedProvider(CodeSystemProvider):
    """One SNOMED CT edition/version, seen as a code system by the engine."""

    content = "complete"
    case_sensitive = True
    hierarchy_meaning = "is-a"
    is_complete = True
    expressions = True
    plain_entries = True

    def __init__(self, sct: SnomedCT) -> None:
        self.sct = sct
        self.url = SCT
        self.version: str | None = sct.version
        self.property_types = dict(PROPERTIES)
        self.concepts = ConceptTable(sct, self.get)
        self._made: dict[str, SnomedConcept] = {}  # the concepts touched so far
        self._maps: dict[str, dict[str, Any] | None] = {}  # implicit ConceptMaps built
        # an expression is checked for its validation, then for its display: once (per
        # grammar limits, which a check applies)
        self._check = lru_cache(maxsize=4096)(lambda code, _limits: sct.check_expression(code))
        self.resource: dict[str, Any] = {
            "resourceType": "CodeSystem",
            "url": SCT,
            "version": sct.version,
            "name": "SNOMED_CT",
            "title": "SNOMED CT",
            "status": "active",
            "publisher": "SNOMED International",
            "caseSensitive": True,
            "hierarchyMeaning": "is-a",
            "compositional": True,
            "content": "not-present",
            "count": len(sct),
            "property": [{"code": code, "type": kind} for code, kind in PROPERTIES.items()],
        }

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its code system (the store's folder and the version)."""
        return {"sct": self.sct}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["sct"])  # type: ignore[misc]

    def accepts_version(self, version: str) -> bool:
        """An edition URI without a date (``http://snomed.info/sct/{module}``) asks for the
        latest loaded version of that edition."""
        return bool(self.version) and str(self.version).startswith(
            version.rstrip("/") + "/version/"
        )

    # --- the CodeSystemIndex surface ------------------------------------------------------

    def role_of(self, property_code: str) -> str:
        """Properties play their own role."""
        return property_code

    def has_property(self, name: str) -> bool:
        """Known properties, and any attribute id."""
        return name in self.property_types or name.isdigit()

    def property_codes_for(self, role: str) -> list[str]:
        """Properties play their own role."""
        return [role]

    def get(self, code: str) -> SnomedConcept | None:
        """The concept of an SCTID (None for anything else, expressions included)."""
        found = self._made.get(code)
        if found is None:
            row = self.sct.row(code) if isinstance(code, str) else -1
            if row < 0:
                return None
            found = make_concept(self.sct, row)
            if len(self._made) > 100_000:
                self._made.clear()
            self._made[code] = found
        return found

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.sct.row(code) >= 0

    def successors(self, code: str) -> list[Successor]:
        """The targets of the concept's active historical associations, SAME AS and
        REPLACED BY first (those replace it one to one), then the weaker ones."""
        row = self.sct.row(code) if isinstance(code, str) else -1
        if row < 0:
            return []
        found = []
        for _source, target, refset, active in self.sct.associations_of(row):
            if not active:
                continue
            at = self.sct.row(target)
            relation = ASSOCIATIONS.get(refset, str(refset))
            shown = self.sct.display(at) if at >= 0 else None
            found.append(Successor(target, shown, relation, relation in REPLACING))
        return sorted(found, key=lambda s: (not s.replaces, s.relation, s.code))

    def __iter__(self) -> Iterator[Concept]:
        rows = np.arange(len(self.sct))
        for start in range(0, len(rows), 50_000):
            yield from make_concepts(self.sct, rows[start : start + 50_000])

    def __len__(self) -> int:
        return len(self.sct)

    def roots(self) -> list[Concept]:
        """The concepts without a parent (the top of the hierarchy, 138875005)."""
        offsets = np.asarray(self.sct.store.closure.parents.offsets)
        rows = np.flatnonzero((offsets[1:] == offsets[:-1]) & np.asarray(self.sct.store.active))
        return [c for c in (self.get(str(int(self.sct.store.ids[r]))) for r in rows) if c]

    def ancestors(self, code: str) -> frozenset[str]:
        """Codes of every ancestor."""
        row = self.sct.row(code)
        if row < 0:
            return frozenset()
        rows = self.sct.store.closure.ancestors(row)
        return frozenset(self.sct.store.codes.take(np.asarray(rows)).to_pylist())

    def descendants(self, code: str) -> frozenset[str]:
        """Codes of every descendant."""
        row = self.sct.row(code)
        if row < 0:
            return frozenset()
        rows = self.sct.store.closure.descendants(row)
        return frozenset(self.sct.store.codes.take(np.asarray(rows)).to_pylist())

    def known_codes(self, codes: Sequence[str]) -> list[str | None]:
        """The SCTID of each code's concept (None for anything else), made from the rows."""
        ids = self.sct.store.ids
        rows = [self.sct.row(c) if isinstance(c, str) else -1 for c in codes]
        return [str(int(ids[r])) if r >= 0 else None for r in rows]

    def hierarchy_members(self, codes: Iterable[str]) -> HierarchyMembers:
        """Members as a mask over the release's rows (``RowMembers``)."""
        return RowMembers(self, codes)

    def subsumes(self, code_a: str, code_b: str) -> str:
        """The $subsumes outcome of A against B."""
        return self.sct.subsumes(code_a, code_b)

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """The concepts of ``codes`` in SCTID order."""
        rows = np.sort(self.rows_of(list(codes)))
        return list(make_concepts(self.sct, rows[rows >= 0]))

    def rows_of(self, codes: Sequence[str]) -> npt.NDArray[np.int64]:
        """The concept rows of many codes at once (-1 for anything that is not a concept)."""
        if len(codes) < 256:
            return np.array(
                [self.sct.row(c) if isinstance(c, str) else -1 for c in codes], dtype=np.int64
            )
        try:
            texts = pa.array(codes, type=pa.string(), from_pandas=True)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            texts = pa.array([c if isinstance(c, str) else None for c in codes], pa.string())
        digits = pc.and_(pc.utf8_is_digit(texts), pc.less_equal(pc.utf8_length(texts), 18))
        plain = pc.fill_null(pc.and_(digits, pc.ascii_is_decimal(texts)), False)
        ints = pc.cast(pc.if_else(plain, texts, "0"), pa.int64()).to_numpy()
        plain = plain.to_numpy(zero_copy_only=False)
        rows = self.sct.store.rows(ints)
        return np.where(plain, rows, -1)

    def describe(
        self, codes: Sequence[str]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], list[str | None]]:
        """For many codes at once: known, inactive and display (vectorised over the store,
        for bulk validation's non-members)."""
        rows = self.rows_of(codes)
        known = rows >= 0
        safe = np.where(known, rows, 0)
        inactive = known & ~np.asarray(self.sct.store.active)[safe]
        if len(codes) < 256:
            shown = [self.sct.display(int(r)) for r in safe]
        else:
            shown = self.sct.store.column("display", safe)
        return known, inactive, [s if k else None for s, k in zip(shown, known, strict=True)]

    def why_unknown(self, code: str) -> str | None:
        """Why a code is no concept of this release: not an SCTID (with the rule it breaks:
        digits, length, Verhoeff check digit, partition), or a well-formed concept id this
        release does not have. None for a concept it has, or a code with surrounding
        whitespace (the engine says that)."""
        if not isinstance(code, str) or code != code.strip() or code in self:
            return None
        problem = sctid_problem(code)
        if problem is not None:
            return problem
        namespace = sctid_namespace(code)
        origin = (
            f"it is a concept of the extension with namespace {namespace}"
            if namespace
            else "it may come from another release or edition"
        )
        return (
            "a well-formed SNOMED CT concept id (its Verhoeff check digit is right) that "
            f"this release does not have; {origin}"
        )

    # --- filters --------------------------------------------------------------------------

    def compile_filter(self, raw: Mapping[str, Any]) -> CodeFilter:
        """A compose filter as a mask test (membership) and its members (expansion)."""
        prop, op, value = (str(raw.get(k, "")) for k in ("property", "op", "value"))
        text = self.sct.filter_ecl(prop, op, value)
        mask = self.sct.filter(prop, op, value)
        # the members' codes from their ids: casting only these (not every code of the
        # release, ``store.codes``) keeps a first validation from touching the whole column
        ids = self.sct.store.ids[np.flatnonzero(mask)]
        members = frozenset(pa.array(ids, pa.int64()).cast(pa.string()).to_pylist())

        def matches(concept: Concept) -> bool:
            if isinstance(concept, SnomedConcept):
                return bool(mask[concept.order])
            row = self.sct.row(concept.code)
            return row >= 0 and bool(mask[row])

        return MaskFilter(f"{prop} {op} {value}", matches, members, mask, text)

    def filter_entries(self, filters: Sequence[CodeFilter]) -> list[Entry] | None:
        """The expansion of an include's filters, built column-wise from the store (None
        when a filter is not this provider's)."""
        if not filters or not all(isinstance(f, MaskFilter) for f in filters):
            return None
        masks = [f.mask for f in filters if isinstance(f, MaskFilter)]
        rows = np.flatnonzero(np.logical_and.reduce(masks) if len(masks) > 1 else masks[0])
        store = self.sct.store
        codes = store.codes.take(rows).to_pylist()
        displays = store.column("display", rows)
        inactive = (~np.asarray(store.active)[rows]).tolist()
        url, version = self.url, self.version
        return [
            Entry(url, version, code, display, False, stale)
            for code, display, stale in zip(codes, displays, inactive, strict=True)
        ]

    # --- what the workbench delegates -----------------------------------------------------

    def implicit_valueset(self, url: str) -> dict[str, Any] | None:
        """The ValueSet an implicit value set URL stands for (``?fhir_vs…``), or None."""
        return self.sct.implicit_valueset(url)

    def implicit_conceptmap(self, url: str) -> dict[str, Any] | None:
        """The ConceptMap of a historical association or map refset
        (``?fhir_cm={refsetId}``), built once per URL, or None."""
        if url not in self._maps:
            self._maps[url] = maps.implicit_map(self.sct, url)
        return self._maps[url]

    def lookup(
        self,
        code: str,
        *,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
    ) -> LookupResult:
        """$lookup (see ``SnomedCT.lookup``)."""
        return self.sct.lookup(code, properties=properties, display_language=display_language)

    def designations_of(self, code: str) -> list[dict[str, Any]]:
        """The designations of a concept (for expansions that include them)."""
        row = self.sct.row(code)
        return self.sct.designations(row) if row >= 0 else []

    def display_in(self, code: str, language: str) -> str | None:
        """A concept's preferred term in a language or dialect (``en-GB``), if it has one."""
        row = self.sct.row(code)
        return self.sct.preferred_in(row, language) if row >= 0 else None

    def display_for(
        self,
        code: str,
        display: str | None,
        designations: Sequence[Mapping[str, Any]],
        wanted: Languages,
    ) -> str | None:
        """The preferred term of the first wanted language or dialect the release has."""
        return dialect_display_for(self, code, display, wanted)

    def concepts_frame(self) -> pd.DataFrame:
        """Every concept, from the store's columns."""
        return self.sct.concepts_frame()

    def designations_frame(self) -> pd.DataFrame:
        """Every description, from the store's columns."""
        return self.sct.designations_frame()

    def associations(self) -> pd.DataFrame:
        """Every historical association row (source, target, refsetId, active)."""
        return self.sct.associations()

    # --- expressions ----------------------------------------------------------------------

    @staticmethod
    def is_expression(code: str) -> bool:
        """True when a code is a post-coordinated expression, not a plain SCTID."""
        return scg.looks_like_expression(code)

    def validate_expression(self, code: str) -> tuple[bool, str | None, list[str]]:
        """Check a post-coordinated expression: (valid, message, focus concept codes).

        Raises ExpressionSyntaxError when it does not parse."""
        checked = self._check(code, grammar.configured().scg)
        focus = [str(c) for c in checked.expression.focus]
        if checked.ok:
            return True, None, focus
        return False, "; ".join(checked.problems), focus

    def expression_display(self, code: str) -> str | None:
        """The normalised expression with every concept's preferred term
        (``expressions.with_terms``), or None when it is not valid in this release."""
        checked = self._check(code, grammar.configured().scg)
        return with_terms(self.sct, checked.expression) if checked.ok else None

    def expression_member(self, vs: Any, code: str) -> bool | None:
        """Whether a (checked) expression is in a compiled value set (issue 22, f2): an
        include that lists concepts takes it only when it lists this very expression (its
        focus concept is not enough); an include of ECL-like filters takes it as a new
        concept below its focus, with its attributes (so ``<< X`` and ``< X`` match a
        refinement of X, ``<! X`` and ``>> X`` do not), unless a filter ``expressions =
        false`` leaves expressions out. None when a clause imports value sets (then
        membership is decided by the focus concepts)."""
        expression = scg.parse(code)

        def holds(clause: Any) -> bool | None:
            if clause.system != self.url:
                return False
            if clause.imports:
                return None
            if clause.concepts:
                return any(_same_expression(listed, expression) for listed in clause.concepts)
            texts = []
            for f in clause.filters:
                if f.text == "expressions = false":
                    return False
                if f.text != "expressions = true":
                    texts.append(getattr(f, "ecl", None))
            if any(t is None for t in texts):
                return None
            return self.sct.expression_in(expression, [str(t) for t in texts])

        included = [holds(c) for c in vs.includes]
        if None in included:
            return None
        if not any(included):
            return False
        excluded = [holds(c) for c in vs.excludes]
        if None in excluded:
            return None
        return not any(excluded)

    def inactive_note(self, code: str) -> str:
        """What replaces an inactive concept (empty when nothing does)."""
        row = self.sct.row(code)
        return self.sct.replacements(row) if row >= 0 else ""


class RowMembers(HierarchyMembers):
    """Members of a SNOMED CT closure table as a mask over the release's rows: a new
    member's ancestors and descendants among them are the rows of its closure that the mask
    holds, and only those become codes (not every ancestor of every member)."""

    def __init__(self, provider: SnomedProvider, codes: Iterable[str] = ()) -> None:
        self.provider = provider
        self.sct = provider.sct
        self._mask = np.zeros(len(provider.sct), dtype=np.bool_)
        rows = provider.rows_of(list(codes))
        self._mask[rows[rows >= 0]] = True

    def add(self, code: str) -> tuple[list[str], list[str]]:
        """Add ``code``: the members among its ancestors and among its descendants."""
        row = self.sct.row(code)
        if row < 0:
            return [], []
        closure, ids = self.sct.store.closure, self.sct.store.ids
        found = []
        for rows in (closure.ancestors(row), closure.descendants(row)):
            rows = rows[self._mask[rows]] if len(rows) else rows
            found.append([str(sctid) for sctid in ids[rows].tolist()] if len(rows) else [])
        self._mask[row] = True
        return found[0], found[1]


def _same_expression(listed: str, expression: scg.Expression) -> bool:
    """Whether a code listed in an include is this expression (terms and spaces aside)."""
    if not scg.looks_like_expression(listed):
        return False
    try:
        return scg.parse(listed) == expression
    except WorkbenchError:
        return False
