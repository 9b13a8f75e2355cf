"""RxNorm as a code system the terminology engine uses like a CodeSystem's index.

Concepts (RXCUIs) become Python objects only when a call touches them: display from the
preferred atom, ``TTY`` (its term type), every RXNORM relationship as a property named by its
RELA (``has_ingredient``, ``tradename_of``, ``consists_of`` … with the related RXCUIs as
values), the RXNORM attributes of RXNSAT (``RXN_HUMAN_DRUG``, ``NDC`` …) and, for a retired
RXCUI (RXNCUI), inactive with what replaced it. Filters are boolean masks over concept rows:
``TTY`` and every relationship (``=``/``in``/``not-in``, the value an RXCUI), every attribute
(``=``), ``inactive``. RxNorm has no is-a hierarchy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import UnsupportedFilterError
from workbench.releases.mask_provider import ConceptsByCode, MaskProvider
from workbench.releases.rxnorm.store import RXNORM, Store
from workbench.terminology.codesystem import Concept

SYNONYM = {"system": "http://snomed.info/sct", "code": "900000000000013009", "display": "Synonym"}


@dataclass(slots=True, eq=False)
class RxNormConcept(Concept):
    """An RxNorm concept made from the store; ``note`` names what replaced a retired one."""


class RxNormProvider(MaskProvider):
    """One RxNorm release, seen as a code system by the engine."""

    content = "complete"
    hierarchical = False  # relationships, but no is-a hierarchy
    concept_class = RxNormConcept
    case_sensitive = True
    hierarchy_meaning = "is-a"
    is_complete = True

    def __init__(self, store: Store, *, version: str | None = None) -> None:
        self.store = store
        self.url = RXNORM
        self.version: str | None = version or store.meta.get("version")
        self.relas: list[str] = list(store.meta.get("relas", []))
        self.atns: list[str] = list(store.meta.get("atns", []))
        self.property_types: dict[str, str] = {"TTY": "code", "inactive": "boolean"}
        self.property_types.update({r: "code" for r in self.relas})
        self.property_types.update({a: "string" for a in self.atns if a not in self.relas})
        self.concepts = ConceptsByCode(self)
        self._made: dict[str, RxNormConcept] = {}
        self.resource: dict[str, Any] = {
            "resourceType": "CodeSystem",
            "url": RXNORM,
            "version": self.version,
            "name": "RxNorm",
            "title": "RxNorm",
            "status": "active",
            "publisher": "National Library of Medicine",
            "caseSensitive": True,
            "content": "not-present",
            "count": store.n,
            "filter": [
                {"code": "TTY", "operator": ["=", "in", "not-in"], "value": "a term type"},
                *(
                    {"code": r, "operator": ["=", "in", "not-in"], "value": "an RXCUI"}
                    for r in self.relas
                ),
            ],
            "property": [
                {"code": code, "type": kind} for code, kind in self.property_types.items()
            ],
        }

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its store's folder and the version."""
        return {"store": self.store, "version": self.version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["store"], version=state["version"])  # type: ignore[misc]

    # --- the CodeSystemIndex surface ------------------------------------------------------

    def role_of(self, property_code: str) -> str:
        """Properties play their own role."""
        return property_code

    def has_property(self, name: str) -> bool:
        """TTY, inactive, every relationship and attribute name of the release."""
        return name in self.property_types

    def property_codes_for(self, role: str) -> list[str]:
        """Properties play their own role."""
        return [role]

    def get(self, code: str) -> RxNormConcept | None:
        """The concept of an RXCUI (None for anything else)."""
        found = self._made.get(code) if isinstance(code, str) else None
        if found is None:
            row = self.store.row(code)
            if row < 0:
                return None
            found = self._make(row)
            if len(self._made) > 100_000:
                self._made.clear()
            self._made[code] = found
        return found

    def _make(self, row: int) -> RxNormConcept:
        store = self.store
        code = str(int(store.ids[row]))
        display = store.value("display", row)
        tty = store.value("tty", row)
        props: dict[str, list[Any]] = {}
        keys: dict[str, str] = {}
        if tty:
            props["TTY"], keys["TTY"] = [tty], "valueCode"
        rels = store.rows_of("rels", row).to_pydict()
        for rela, target in zip(rels["rela"], rels["target"], strict=True):
            props.setdefault(rela, []).append(str(target))
            keys[rela] = "valueCode"
        attrs = store.rows_of("attrs", row).to_pydict()
        for atn, atv in zip(attrs["atn"], attrs["atv"], strict=True):
            props.setdefault(atn, []).append(atv)
            keys.setdefault(atn, "valueString")
        atoms = store.rows_of("atoms", row).to_pydict()
        seen = {display}
        designations = []
        for text in atoms["str"]:
            if text not in seen:
                seen.add(text)
                designations.append({"language": "en", "use": dict(SYNONYM), "value": text})
        retired = bool(store.value("retired", row))
        return RxNormConcept(
            code=code,
            display=display,
            definition=None,
            order=row,
            designations=designations,
            properties=props,
            value_keys=keys,
            inactive=not bool(store.active[row]),
            status="retired" if retired else None,
            note=self._replacement(row) if retired else "",
        )

    def _replacement(self, row: int) -> str:
        """``replaced by 1049221 (Acetaminophen 325 MG Oral Tablet)`` for a remapped RXCUI."""
        targets = (self.store.value("replaced_by", row) or "").split()
        if not targets:
            return "retired without replacement"
        named = []
        for target in targets:
            at = self.store.row(target)
            shown = self.store.value("display", at) if at >= 0 else None
            named.append(f"{target} ({shown})" if shown else target)
        return "replaced by " + ", ".join(named)

    def inactive_note(self, code: str) -> str:
        """What replaced a retired RXCUI (empty for an active one)."""
        concept = self.get(code)
        return concept.note if concept is not None else ""

    def __iter__(self) -> Iterator[Concept]:
        for row in range(self.store.n):
            yield self._make(row)

    def ancestors(self, code: str) -> frozenset[str]:
        """RxNorm has no is-a hierarchy."""
        return frozenset()

    def descendants(self, code: str) -> frozenset[str]:
        """RxNorm has no is-a hierarchy."""
        return frozenset()

    def subsumes(self, code_a: str, code_b: str) -> str:
        """``equivalent`` for the same RXCUI, else ``not-subsumed`` (no hierarchy)."""
        return "equivalent" if code_a == code_b else "not-subsumed"

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """The concepts of ``codes`` in RXCUI order."""
        rows = np.sort(self.rows_of(list(codes)))
        return [self._make(int(r)) for r in rows[rows >= 0]]

    def designations_of(self, code: str) -> list[dict[str, Any]]:
        """The other names of a concept (synonyms, tall-man, prescribable names)."""
        concept = self.get(code)
        return list(concept.designations) if concept is not None else []

    # --- filters --------------------------------------------------------------------------

    def filter(self, prop: str, op: str, value: str) -> npt.NDArray[np.bool_]:
        """The rows a filter selects: ``TTY`` (=, in, not-in), a relationship by its RELA
        (=, in, not-in; the value RXCUIs), an attribute by its ATN (=), ``inactive`` (=)."""
        text = f"'{prop} {op} {value}' on {RXNORM}"
        values = [v.strip() for v in value.split(",") if v.strip()]
        store = self.store
        if prop == "inactive" and op == "=" and value in ("true", "false"):
            return ~store.active if value == "true" else store.active.copy()
        if op not in ("=", "in", "not-in") or (op == "=" and len(values) != 1):
            raise UnsupportedFilterError(
                f"The filter {text} is not supported (operators: =, in, not-in)"
            )
        if prop == "TTY":
            column = store.tables["concepts"].column("tty")
            mask = np.asarray(
                pc.is_in(column, pa.array(values, pa.string())).to_numpy(zero_copy_only=False),
                bool,
            )
        elif prop in self.relas:
            wanted = []
            for v in values:
                if store.row(v) < 0:
                    raise UnsupportedFilterError(f"Filter {text}: '{v}' is not an RXCUI")
                wanted.append(int(v))
            rels = store.tables["rels"]
            hit = pc.and_(
                pc.equal(rels.column("rela"), prop),
                pc.is_in(rels.column("target"), pa.array(wanted, pa.int64())),
            )
            rows = rels.column("row").filter(hit).to_numpy()
            mask = np.zeros(store.n, bool)
            mask[rows] = True
        elif prop in self.atns and op == "=":
            attrs = store.tables["attrs"]
            hit = pc.and_(pc.equal(attrs.column("atn"), prop), pc.equal(attrs.column("atv"), value))
            mask = np.zeros(store.n, bool)
            mask[attrs.column("row").filter(hit).to_numpy()] = True
            return mask
        else:
            known = ", ".join(["TTY", "inactive", *self.relas[:8]])
            raise UnsupportedFilterError(
                f"The filter {text} is not supported: '{prop}' is no RxNorm filter property "
                f"(e.g. {known})"
            )
        return ~mask if op == "not-in" else mask

    def inactive_rows(self) -> npt.NDArray[np.bool_]:
        """The inactive flag of every row (retired RXCUIs)."""
        return ~self.store.active

    # --- frames ---------------------------------------------------------------------------

    def concepts_frame(self) -> pd.DataFrame:
        """Every concept: code, display, TTY, inactive, retired, replaced_by."""
        table = self.store.tables["concepts"]
        return pd.DataFrame(
            {
                "code": self.store.codes.to_pandas(),
                "display": table.column("display").to_pandas(),
                "TTY": table.column("tty").to_pandas(),
                "inactive": ~self.store.active,
                "retired": table.column("retired").to_pandas(),
                "replaced_by": table.column("replaced_by").to_pandas(),
            }
        )

    def designations_frame(self) -> pd.DataFrame:
        """Every RXNORM atom in long form (code, language, use, value, TTY)."""
        atoms = self.store.tables["atoms"]
        rows = atoms.column("row").to_numpy()
        return pd.DataFrame(
            {
                "code": self.store.codes.take(pa.array(rows)).to_pandas(),
                "language": "en",
                "use_system": SYNONYM["system"],
                "use_code": SYNONYM["code"],
                "value": atoms.column("str").to_pandas(),
                "TTY": atoms.column("tty").to_pandas(),
            }
        )
