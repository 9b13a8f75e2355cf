"""LOINC as a code system the terminology engine can use like a CodeSystem's index.

Concepts (terms, parts, answers, answer lists) become Python objects only when a call
touches them, with their properties (LOINC's names: the six axes as Codings of their part
codes, CLASS, CLASSTYPE, STATUS, ORDER_OBS … ``answer-list``, ``MAP_TO``), designations in
every language of the release and their place in the component hierarchy. Filters are
boolean masks over concept rows, evaluated column-wise on the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import UnsupportedFilterError
from workbench.releases.check_digits import loinc_kind, loinc_problem
from workbench.releases.loinc.store import CODING_PROPERTIES, FSN, KINDS, LOINC, Store
from workbench.releases.mask_provider import ConceptsByCode, MaskProvider
from workbench.releases.masks import MaskFilter
from workbench.terminology.codesystem import Concept
from workbench.terminology.languages import Languages
from workbench.terminology.provider import Successor, dialect_display_for

CLASSTYPES = {
    "1": "Laboratory class",
    "2": "Clinical class",
    "3": "Claims attachments",
    "4": "Surveys",
}
_CONCEPT_OPS = ("is-a", "descendent-of", "generalizes", "child-of", "=", "in", "not-in")
_PROPERTY_OPS = ("=", "in", "not-in", "regex", "exists")
#: Filters besides the properties: hierarchy, answer lists, copyright.
SPECIAL_FILTERS = ("concept", "code", "parent", "child", "LIST", "answers-for", "copyright")


@dataclass(slots=True, eq=False)
class LoincConcept(Concept):
    """A LOINC concept made from the store; ``note`` names the replacement of an inactive
    term (its MAP_TO)."""


class LoincProvider(MaskProvider):
    """One LOINC version, seen as a code system by the engine."""

    content = "complete"
    concept_class = LoincConcept
    case_sensitive = False
    hierarchy_meaning = "is-a"
    is_complete = True

    def __init__(self, store: Store, *, version: str | None = None) -> None:
        self.store = store
        self.url = LOINC
        self.version: str | None = version or str(store.meta.get("version"))
        names = [p for p in store.meta.get("properties", []) if p != "PartTypeName"]
        self.property_types: dict[str, str] = {
            "parent": "code",
            "child": "code",
            "inactive": "boolean",
            **{p: ("Coding" if p in CODING_PROPERTIES else "string") for p in names},
            "PartTypeName": "string",
        }
        self.concepts = ConceptsByCode(self)
        self._made: dict[int, LoincConcept] = {}
        self.resource: dict[str, Any] = {
            "resourceType": "CodeSystem",
            "url": LOINC,
            "version": self.version,
            "name": "LOINC",
            "title": "LOINC Code System",
            "status": "active",
            "publisher": "Regenstrief Institute, Inc.",
            "language": "en-US",
            "caseSensitive": False,
            "hierarchyMeaning": "is-a",
            "compositional": False,
            "versionNeeded": False,
            "valueSet": f"{LOINC}/vs",
            "content": "not-present",
            "count": store.n,
            "filter": [
                {"code": name, "operator": list(_CONCEPT_OPS), "value": "a LOINC code"}
                for name in ("concept",)
            ]
            + [
                {"code": name, "operator": ["="], "value": "a LOINC code"}
                for name in ("parent", "child", "LIST", "answers-for")
            ]
            + [
                {"code": p, "operator": list(_PROPERTY_OPS), "value": "a part code or text"}
                for p in self.property_types
                if p not in ("parent", "child", "inactive")
            ],
            "property": [
                {"code": code, "uri": f"{LOINC}/property/{code}", "type": kind}
                if code not in ("parent", "child", "inactive")
                else {
                    "code": code,
                    "uri": f"http://hl7.org/fhir/concept-properties#{code}",
                    "type": kind,
                }
                for code, kind in self.property_types.items()
            ],
        }

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its store's folder and the version."""
        return {"store": self.store, "version": self.version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["store"], version=state["version"])  # type: ignore[misc]

    # --- the CodeSystemIndex surface ------------------------------------------------------

    def role_of(self, property_code: str) -> str:
        """STATUS plays the status role; the others their own."""
        return "status" if property_code == "STATUS" else property_code

    def has_property(self, name: str) -> bool:
        """Whether LOINC (this release) has the property."""
        return name in self.property_types

    def property_codes_for(self, role: str) -> list[str]:
        """The property codes that play a role."""
        return ["STATUS"] if role == "status" else [role]

    def get(self, code: str) -> LoincConcept | None:
        """The concept of a code (any case), with its properties and designations."""
        row = self.store.row(code) if isinstance(code, str) else -1
        if row < 0:
            return None
        found = self._made.get(row)
        if found is None:
            found = self._make(row)
            if len(self._made) > 50_000:
                self._made.clear()
            self._made[row] = found
        return found

    def _make(self, row: int) -> LoincConcept:
        store = self.store
        concept = self._light(row)
        props = store.rows_of("properties", row).to_pydict()
        for name, code, value in zip(props["property"], props["code"], props["value"], strict=True):
            if code is not None:
                concept.properties.setdefault(name, []).append(
                    {"system": LOINC, "code": code, "display": value}
                )
                concept.value_keys.setdefault(name, "valueCoding")
            else:
                concept.properties.setdefault(name, []).append(value)
                concept.value_keys.setdefault(name, "valueString")
        concept.designations = self.designations_of_row(row)
        concept.parents = store.codes.take(np.asarray(store.closure.parents[row])).to_pylist()
        concept.children = store.codes.take(np.asarray(store.closure.children[row])).to_pylist()
        if concept.inactive:
            concept.note = self._replacement(concept)
        return concept

    def _light(self, row: int) -> LoincConcept:
        """A concept without its properties and designations (for iteration)."""
        status = str(self.store.value("status", row) or "")
        return LoincConcept(
            code=self.store.codes[row].as_py(),
            display=self.store.value("display", row),
            definition=None,
            order=row,
            inactive=not self.store.active[row],
            status=status.lower() or None,
        )

    def successors(self, code: str) -> list[Successor]:
        """The MAP_TO targets of a deprecated term (each replaces it)."""
        concept = self.get(code)
        if concept is None:
            return []
        targets = concept.properties.get("MAP_TO", [])
        return [Successor(t["code"], t.get("display"), "MAP_TO", True) for t in targets]

    def _replacement(self, concept: Concept) -> str:
        targets = concept.properties.get("MAP_TO", [])
        return "; ".join(f"MAP_TO {t['code']} |{t['display']}|" for t in targets)

    def why_unknown(self, code: str) -> str | None:
        """Why a code is none of this release's: not a LOINC code (a LOINC number with a
        wrong mod 10 check digit, or another shape), or a well-formed code this release does
        not have. None for a code it has, or one with surrounding whitespace (the engine
        says that)."""
        if not isinstance(code, str) or code != code.strip() or self.get(code) is not None:
            return None
        problem = loinc_problem(code)
        if problem is not None:
            return problem
        kind = loinc_kind(code)
        checked = " (its mod 10 check digit is right)" if kind == "term" else ""
        return (
            f"a well-formed LOINC {'number' if kind == 'term' else kind + ' code'}{checked} "
            "that this release does not have; it may come from another release"
        )

    def inactive_note(self, code: str) -> str:
        """What replaces a deprecated or discouraged term (its MAP_TO), or empty."""
        found = self.get(code)
        return found.note if found is not None else ""

    def __iter__(self) -> Iterator[Concept]:
        for start in range(0, self.store.n, 50_000):
            yield from self._many(np.arange(start, min(start + 50_000, self.store.n)))

    def _many(self, rows: npt.NDArray[np.integer]) -> list[Concept]:
        """Many concepts without their properties, columns read in bulk."""
        rows = np.asarray(rows, dtype=np.int64)
        codes = self.store.codes.take(rows).to_pylist()
        displays = self.store.column("display", rows)
        statuses = self.store.column("status", rows)
        inactive = (~self.store.active[rows]).tolist()
        return [
            LoincConcept(
                code=code,
                display=display,
                definition=None,
                order=int(row),
                inactive=stale,
                status=(status or "").lower() or None,
            )
            for code, display, status, stale, row in zip(
                codes, displays, statuses, inactive, rows.tolist(), strict=True
            )
        ]

    def roots(self) -> list[Concept]:
        """The tops of the component hierarchy (concepts with children and no parent)."""
        closure = self.store.closure
        parents = np.diff(np.asarray(closure.parents.offsets))
        children = np.diff(np.asarray(closure.children.offsets))
        return self._many(np.flatnonzero((parents == 0) & (children > 0)))

    def _codes(self, rows: Any) -> frozenset[str]:
        return frozenset(self.store.codes.take(np.asarray(rows, dtype=np.int64)).to_pylist())

    def ancestors(self, code: str) -> frozenset[str]:
        """Codes of every ancestor in the component hierarchy."""
        row = self.store.row(code)
        return self._codes(self.store.closure.ancestors(row)) if row >= 0 else frozenset()

    def descendants(self, code: str) -> frozenset[str]:
        """Codes of every descendant in the component hierarchy."""
        row = self.store.row(code)
        return self._codes(self.store.closure.descendants(row)) if row >= 0 else frozenset()

    def subsumes(self, code_a: str, code_b: str) -> str:
        """The $subsumes outcome of A against B (by the component hierarchy)."""
        a, b = self.store.row(code_a), self.store.row(code_b)
        if a == b:
            return "equivalent"
        if self.store.closure.is_below(b, a):
            return "subsumes"
        if self.store.closure.is_below(a, b):
            return "subsumed-by"
        return "not-subsumed"

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """The concepts of ``codes`` in code order."""
        rows = np.sort(self.rows_of(list(codes)))
        return self._many(rows[rows >= 0])

    # --- designations and languages -------------------------------------------------------

    def designations_of_row(self, row: int) -> list[dict[str, Any]]:
        """A concept's designations: its English names (LONG_COMMON_NAME, SHORTNAME, consumer
        name, the fully specified name) and every linguistic variant's, with their language."""
        table = self.store.rows_of("designations", row).to_pydict()
        out = []
        for language, use, value in zip(
            table["language"], table["use"], table["value"], strict=True
        ):
            if use == FSN:
                coding = {
                    "system": "http://snomed.info/sct",
                    "code": FSN,
                    "display": "Fully specified name",
                }
            else:
                coding = {"system": LOINC, "code": use, "display": use}
            out.append({"language": language, "use": coding, "value": value})
        return out

    def designations_of(self, code: str) -> list[dict[str, Any]]:
        """The designations of a concept (for expansions that include them)."""
        row = self.store.row(code)
        return self.designations_of_row(row) if row >= 0 else []

    def display_in(self, code: str, language: str) -> str | None:
        """The display in a language (``de``, ``de-AT``, ``zh-CN``): the variant's long common
        name, else its display name or fully specified name; English is the display."""
        from workbench.terminology.languages import Languages, display_in

        row = self.store.row(code)
        if row < 0:
            return None
        wanted = Languages.parse(language, wildcard=False)
        return display_in(
            wanted, self.store.value("display", row), "en-US", self.designations_of_row(row)
        )

    # --- filters --------------------------------------------------------------------------

    def display_for(
        self,
        code: str,
        display: str | None,
        designations: Sequence[Mapping[str, Any]],
        wanted: Languages,
    ) -> str | None:
        """The preferred term of the first wanted language or dialect the release has."""
        return dialect_display_for(self, code, display, wanted)

    def filter(self, prop: str, op: str, value: str) -> npt.NDArray[np.bool_]:
        """The rows a ValueSet filter selects: ``concept`` (``is-a``, ``descendent-of``,
        ``generalizes``, ``child-of``, ``=``, ``in``, ``not-in``), ``parent``/``child =``,
        ``LIST =`` an answer list (its answers), ``answers-for =`` a term (its answers),
        ``copyright = LOINC|3rdParty`` and any property (``=``, ``in``, ``not-in`` by part
        code or name, ``regex``, ``exists``)."""
        text = f"'{prop} {op} {value}' on {LOINC}"
        mask = np.zeros(self.store.n, dtype=bool)
        closure = self.store.closure
        if prop in ("concept", "code"):
            if op not in _CONCEPT_OPS:
                raise UnsupportedFilterError(
                    f"Filter {text}: '{op}' is not supported on concept ({', '.join(_CONCEPT_OPS)})"
                )
            rows = [self._require_row(v, text) for v in _split(value)]
            for row in rows:
                if op in ("is-a", "generalizes", "=", "in", "not-in"):
                    mask[row] = True
                if op in ("is-a", "descendent-of"):
                    mask[closure.descendants(row)] = True
                elif op == "generalizes":
                    mask[closure.ancestors(row)] = True
                elif op == "child-of":
                    mask[closure.children[row]] = True
            return ~mask if op == "not-in" else mask
        if prop in ("parent", "child", "LIST", "answers-for"):
            if op != "=":
                raise UnsupportedFilterError(f"Filter {text}: only '=' is supported on '{prop}'")
            for v in _split(value):
                row = self._require_row(v, text)
                if prop == "parent":
                    mask[closure.children[row]] = True
                elif prop == "child":
                    mask[closure.parents[row]] = True
                elif prop == "LIST":
                    mask[self.answers(row)] = True
                else:
                    lists = self.store.rows_of("answer_links", row).column("list").to_numpy()
                    for found in lists:
                        mask[self.answers(int(found))] = True
            return mask
        if prop == "copyright":
            if op != "=" or value not in ("LOINC", "3rdParty"):
                raise UnsupportedFilterError(
                    f"Filter {text}: expected copyright = LOINC or 3rdParty"
                )
            third = self._property_mask("EXTERNAL_COPYRIGHT_NOTICE", "exists", "true")
            terms = self.store.kind == KINDS.index("term")
            return terms & third if value == "3rdParty" else terms & ~third
        if prop not in self.property_types or prop in ("parent", "child"):
            raise UnsupportedFilterError(
                f"Filter {text}: the property '{prop}' is not one of LOINC's "
                f"({', '.join([*SPECIAL_FILTERS, *list(self.property_types)])})"
            )
        if op not in _PROPERTY_OPS:
            raise UnsupportedFilterError(
                f"Filter {text}: '{op}' is not supported on '{prop}' ({', '.join(_PROPERTY_OPS)})"
            )
        if prop == "inactive":
            if op != "=" or value not in ("true", "false"):
                raise UnsupportedFilterError(f"Filter {text}: expected inactive = true or false")
            return ~self.store.active if value == "true" else self.store.active.copy()
        return self._property_mask(prop, op, value)

    def _property_mask(self, prop: str, op: str, value: str) -> npt.NDArray[np.bool_]:
        table = self.store.tables["properties"]
        names = table.column("property").combine_chunks()
        try:
            at = names.dictionary.index(prop).as_py()
        except pa.ArrowInvalid:
            at = -1
        if not isinstance(names, pa.DictionaryArray) or at < 0:
            picked = np.zeros(0, dtype=np.int64)
        else:
            picked = np.flatnonzero(names.indices.to_numpy(zero_copy_only=False) == at)
        rows = table.column("row").to_numpy()[picked]
        mask = np.zeros(self.store.n, dtype=bool)
        if op == "exists":
            if value not in ("true", "false"):
                raise UnsupportedFilterError(
                    f"Filter '{prop} exists {value}': expected true or false"
                )
            mask[rows] = True
            return mask if value == "true" else ~mask
        codes = pc.utf8_upper(table.column("code").take(pa.array(picked)))
        texts = table.column("value").take(pa.array(picked))
        if op == "regex":
            pattern = f"^(?:{value})$"
            try:
                hit = pc.or_kleene(
                    pc.match_substring_regex(codes, pattern),
                    pc.match_substring_regex(texts, pattern),
                )
            except pa.ArrowInvalid as exc:
                raise UnsupportedFilterError(f"Filter '{prop} regex {value}': {exc}") from exc
        else:
            wanted = [v.strip() for v in (_split(value) if op != "=" else [value])]
            if prop == "CLASSTYPE":
                names_of = {n.lower(): k for k, n in CLASSTYPES.items()}
                wanted = [names_of.get(w.lower(), w) for w in wanted]
            hit = pc.or_kleene(
                pc.is_in(codes, pa.array([w.upper() for w in wanted], pa.string())),
                pc.is_in(pc.utf8_lower(texts), pa.array([w.lower() for w in wanted], pa.string())),
            )
        mask[rows[pc.fill_null(hit, False).to_numpy(zero_copy_only=False)]] = True
        return ~mask if op == "not-in" else mask

    def _require_row(self, code: str, text: str) -> int:
        row = self.store.row(code.strip())
        if row < 0:
            raise UnsupportedFilterError(f"Filter {text}: '{code}' is not a code of {LOINC}")
        return row

    def answers(self, row: int) -> npt.NDArray[np.int32]:
        """The answer rows of an answer list row, in their order."""
        return self.store.rows_of("answers", row).column("answer").to_numpy()

    def inactive_rows(self) -> npt.NDArray[np.bool_]:
        """The inactive flag of every row (deprecated and discouraged terms)."""
        return ~self.store.active

    def ordered(self, filters: Sequence[MaskFilter], rows: npt.NDArray[np.int64]) -> Any:
        """An answer list's answers (a ``LIST =`` filter) in the list's order."""
        lists = [f.text.split(" ", 2)[2] for f in filters if f.text.startswith("LIST = ")]
        if lists and "," not in lists[0]:
            answers = self.answers(self.store.row(lists[0])).astype(np.int64)
            return answers[np.isin(answers, rows)]
        return rows

    def implicit_valueset(self, url: str) -> dict[str, Any] | None:
        """``http://loinc.org/vs`` (every term) and ``http://loinc.org/vs/{LL…}`` (an answer
        list's answers), or None."""
        if url == f"{LOINC}/vs":
            include: dict[str, Any] = {
                "system": LOINC,
                "filter": [{"property": "CLASSTYPE", "op": "exists", "value": "true"}],
            }
            title = "All LOINC terms"
        elif url.startswith(f"{LOINC}/vs/"):
            code = url[len(f"{LOINC}/vs/") :]
            row = self.store.row(code)
            if row < 0 or self.store.kind[row] != KINDS.index("answer-list"):
                return None
            include = {"system": LOINC, "filter": [{"property": "LIST", "op": "=", "value": code}]}
            title = f"LOINC answer list {code} {self.store.value('display', row)}"
        else:
            return None
        return {
            "resourceType": "ValueSet",
            "url": url,
            "version": self.version,
            "status": "active",
            "name": "LOINCImplicit",
            "title": title,
            "compose": {"include": [include]},
        }

    # --- frames ---------------------------------------------------------------------------

    def concepts_frame(self) -> pd.DataFrame:
        """Every concept, with the columns of every code system's concept frame (code,
        display, definition, parents, abstract, inactive, status) and then kind and LOINC's
        main properties (the axes by part name, CLASS, CLASSTYPE, ORDER_OBS)."""
        store = self.store
        t = store.tables["concepts"]
        n = store.n
        parents = store.closure.parents
        codes = store.codes
        lists = pa.ListArray.from_arrays(
            pa.array(np.asarray(parents.offsets).astype(np.int32)),
            codes.take(pa.array(np.asarray(parents.values, dtype=np.int64))),
        )
        frame = pd.DataFrame(
            {
                "code": codes.to_pandas(),
                "display": t.column("display").to_pandas(),
                "definition": pd.Series([None] * n, dtype=object),
                "parents": pd.Series(lists.to_pylist(), dtype=object),
                "abstract": np.zeros(n, dtype=bool),
                "inactive": ~store.active,
                "status": t.column("status").to_pandas().str.lower(),
                "kind": pd.Categorical.from_codes(
                    store.kind.astype(np.int64), categories=pd.Index(KINDS)
                ),
            }
        )
        props = store.tables["properties"]
        names = props.column("property").combine_chunks()
        for name in (*CODING_PROPERTIES[:6], "CLASS", "CLASSTYPE", "ORDER_OBS"):
            keep = pc.equal(names.cast(pa.string()), name)
            rows = props.column("row").filter(keep).to_numpy()
            values = props.column("value").filter(keep).to_pylist()
            column = pd.Series([None] * n, dtype=object)
            first = ~pd.Series(rows).duplicated().to_numpy()
            column.iloc[rows[first]] = np.asarray(values, dtype=object)[first]
            frame[name] = column
        return frame

    def designations_frame(self) -> pd.DataFrame:
        """Every designation (code, language, use_system, use_code, value)."""
        t = self.store.tables["designations"]
        use = t.column("use").combine_chunks().cast(pa.string())
        is_fsn = pc.equal(use, FSN)
        return pd.DataFrame(
            {
                "code": self.store.codes.take(t.column("row")).to_pandas(),
                "language": t.column("language").cast(pa.string()).to_pandas(),
                "use_system": pc.if_else(is_fsn, "http://snomed.info/sct", LOINC).to_pandas(),
                "use_code": use.to_pandas(),
                "value": t.column("value").to_pandas(),
            }
        )


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]
