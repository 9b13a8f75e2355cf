"""Evaluate a parsed ECL constraint over a SNOMED CT store, as a boolean mask over concept rows.

Everything is vectorised over the store's arrays: hierarchy operators gather CSR slices of the
closure, refinements select relationships with lookup masks and count them per source concept
(or per attribute group) to apply cardinalities, reverse attributes count per destination,
dotted attributes follow relationships, concrete values compare the stored numbers or strings,
and description filters run Arrow compute kernels over the candidates' descriptions.

The wildcard ``*`` means the root concept (138875005) and every active concept with an active
is-a parent, as tx.fhir.org reads it: an active concept outside the hierarchy (a module
concept without an is-a relationship in the release) is left out. A concept named explicitly
stays in the result even when inactive (its hierarchy is empty then).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import UnsupportedFilterError
from workbench.releases.closure import CSR, sorted_unique, unique_counts
from workbench.releases.snomed import ecl
from workbench.releases.snomed.store import Store

Mask = npt.NDArray[np.bool_]

SYNONYM = 900000000000013009
FSN = 900000000000003001
DEFINITION = 900000000000550004
PREFERRED = 900000000000548007
ACCEPTABLE = 900000000000549004
DIALECTS = {"en-us": 900000000000509007, "en-gb": 900000000000508004}
_TYPES = {"syn": SYNONYM, "fsn": FSN, "def": DEFINITION}
_GROUPS = 1 << 16
ROOT = 138875005
HISTORY_PROFILES = {
    "min": [900000000000527005, 900000000000526001],
    "mod": [900000000000523009, 1186924009],
}


def gather(csr: CSR, rows: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    """Concatenate the CSR slices of many rows (vectorised)."""
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return np.empty(0, dtype=np.int64)
    if len(rows) == 1:
        return np.asarray(csr[int(rows[0])], dtype=np.int64)
    starts = np.asarray(csr.offsets)[rows]
    lengths = np.asarray(csr.offsets)[rows + 1] - starts
    total = int(lengths.sum())
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.asarray(csr.values)[np.repeat(starts, lengths) + within].astype(np.int64)


class Evaluator:
    """Evaluates ECL trees (or texts) against one store; results are cached by text."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.n = store.n
        self._cache: dict[str, Mask] = {}

    def __call__(self, text: str) -> Mask:
        """The mask of the concepts an ECL text selects (parsed and cached)."""
        found = self._cache.get(text)
        if found is None:
            found = self.evaluate(ecl.parse(text))
            found.setflags(write=False)
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[text] = found
        return found

    def _mask(self, rows: npt.NDArray[np.integer] | None = None) -> Mask:
        mask = np.zeros(self.n, dtype=bool)
        if rows is not None and len(rows):
            mask[np.asarray(rows, dtype=np.int64)] = True
        return mask

    # --- expressions ------------------------------------------------------------------

    def evaluate(self, node: Any) -> Mask:
        """The mask of a parsed constraint (any node of ``ecl``'s tree)."""
        method: Callable[[Any], Mask] = getattr(self, f"_eval_{type(node).__name__.lower()}")
        return method(node)

    def _eval_concept(self, node: ecl.Concept) -> Mask:
        row = self.store.row(node.id)
        return self._mask(np.array([row]) if row >= 0 else None)

    def _eval_wildcard(self, _node: ecl.Wildcard) -> Mask:
        offsets = np.asarray(self.store.closure.parents.offsets)
        found = np.asarray(self.store.active, dtype=bool) & (offsets[1:] > offsets[:-1])
        root = self.store.row(str(ROOT))
        if root >= 0 and self.store.active[root]:
            found[root] = True
        return found

    def _eval_sub(self, node: ecl.Sub) -> Mask:
        focus = self._members(node.focus) if node.member else self.evaluate(node.focus)
        if node.op is not None:
            focus = self._hierarchy(node.op, focus, isinstance(node.focus, ecl.Wildcard))
        for block in node.filters:
            focus = self._filter_block(focus, block)
        return focus

    def _members(self, focus: Any) -> Mask:
        if isinstance(focus, ecl.Concept):
            refsets = [focus.id]
        elif isinstance(focus, ecl.Wildcard):
            refsets = self.store.refsets()
        else:
            refsets = [int(i) for i in self.store.ids[np.flatnonzero(self.evaluate(focus))]]
        mask = self._mask()
        for refset in refsets:
            rows = self.store.rows(np.asarray(self.store.members(refset), dtype=np.int64))
            mask[rows[rows >= 0]] = True
        return mask

    def _hierarchy(self, op: str, focus: Mask, wildcard: bool) -> Mask:
        closure = self.store.closure
        if op in ("!!>", "!!<"):
            # top / bottom of the set: members with no ancestor (descendant) in the set
            rows = np.flatnonzero(focus)
            csr = closure.up if op == "!!>" else closure.down
            offsets = np.asarray(csr.offsets)
            lengths = offsets[rows + 1] - offsets[rows]
            related = gather(csr, rows)
            inside = focus[related] if len(related) else np.zeros(0, dtype=bool)
            owners = np.repeat(rows, lengths)
            blocked = self._mask(owners[inside])
            return focus & ~blocked
        if wildcard:
            # every concept with a parent (below), or with a child (above)
            rows = np.arange(self.n)
            offsets = np.asarray(
                closure.parents.offsets if op.startswith("<") else closure.children.offsets
            )
            has = (offsets[1:] - offsets[:-1]) > 0
            return (has & focus) | (focus if op in ("<<", ">>", "<<!", ">>!") else False)
        rows = np.flatnonzero(focus)
        csr = {
            "<": closure.down,
            "<<": closure.down,
            "<!": closure.children,
            "<<!": closure.children,
            ">": closure.up,
            ">>": closure.up,
            ">!": closure.parents,
            ">>!": closure.parents,
        }[op]
        result = self._mask(gather(csr, rows))
        if op in ("<<", ">>", "<<!", ">>!"):
            result |= focus
        return result

    def _eval_compound(self, node: ecl.Compound) -> Mask:
        masks = [self.evaluate(p) for p in node.parts]
        result = masks[0].copy()
        for other in masks[1:]:
            if node.kind == "and":
                result &= other
            elif node.kind == "or":
                result |= other
            else:
                result &= ~other
        return result

    def _eval_refined(self, node: ecl.Refined) -> Mask:
        focus = self.evaluate(node.expr)
        return focus & self._refinement(node.refinement, focus)

    def _eval_dotted(self, node: ecl.Dotted) -> Mask:
        current = self.evaluate(node.expr)
        a = self.store.arrays
        for attribute in node.attributes:
            types = self.evaluate(attribute)
            hit = current[a["rel_src"]] & types[a["rel_type"]] & (a["rel_dst"] >= 0)
            current = self._mask(a["rel_dst"][hit])
        return current

    # --- refinements ------------------------------------------------------------------

    def _refinement(self, node: Any, focus: Mask) -> Mask:
        if isinstance(node, ecl.Logical):
            parts = [self._refinement(p, focus) for p in node.parts]
            result = parts[0].copy()
            for other in parts[1:]:
                result = result & other if node.kind == "and" else result | other
            return result
        if isinstance(node, ecl.Group):
            keys = self._group_keys(node.body)
            counts = np.bincount(keys // _GROUPS, minlength=self.n)[: self.n]
            return _within(counts, node.card)
        return self._attribute_counts(node, None)

    def _relationship_hits(self, node: ecl.Attribute) -> tuple[npt.NDArray[np.bool_], str]:
        """Which relationships (or concrete values) satisfy an attribute; and which table."""
        types = self.evaluate(node.name)
        if node.kind == "expr":
            a = self.store.arrays
            values = self.evaluate(node.value)
            dst_ok = a["rel_dst"] >= 0
            if node.reverse:
                in_values = values[a["rel_src"]] & dst_ok
            else:
                in_values = values[np.where(dst_ok, a["rel_dst"], 0)] & dst_ok
            hit = types[a["rel_type"]] & (in_values if node.op == "=" else ~in_values & dst_ok)
            return hit, "rel"
        table = self.store.tables["concrete"]
        ctype = table.column("type").to_numpy()
        ok = ctype >= 0
        type_ok = types[np.where(ok, ctype, 0)] & ok
        if node.kind == "num":
            number = table.column("number").to_numpy(zero_copy_only=False)
            compare = {
                "=": np.equal,
                "!=": np.not_equal,
                "<": np.less,
                "<=": np.less_equal,
                ">": np.greater,
                ">=": np.greater_equal,
            }[node.op]
            with np.errstate(invalid="ignore"):
                matched = compare(number, node.value) & ~np.isnan(number)
        else:
            stored = table.column("value")
            wanted = (
                ("true" if node.value else "false")
                if node.kind == "bool"
                else '"' + str(node.value).replace('"', '\\"') + '"'
            )
            equal = pc.equal(pc.utf8_lower(stored) if node.kind == "bool" else stored, wanted)
            matched = np.asarray(equal.to_numpy(zero_copy_only=False), dtype=bool)
            if node.op == "!=":
                matched = ~matched
        return type_ok & matched, "concrete"

    def _owners(self, table: str, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
        if table == "rel":
            a = self.store.arrays
            return (a["rel_dst"] if reverse else a["rel_src"]), a["rel_group"]
        concrete = self.store.tables["concrete"]
        return concrete.column("source").to_numpy(), concrete.column("group").to_numpy()

    def _attribute_counts(self, node: Any, _group: None) -> Mask:
        if not isinstance(node, ecl.Attribute):
            raise UnsupportedFilterError(f"Unexpected refinement element {node!r}")
        hit, table = self._relationship_hits(node)
        owners, _groups = self._owners(table, node.reverse)
        owners = owners[hit]
        counts = np.bincount(owners[owners >= 0], minlength=self.n)[: self.n]
        return _within(counts, node.card)

    def _group_keys(self, node: Any) -> npt.NDArray[np.int64]:
        """The (concept, group) keys whose group satisfies an attribute set."""
        if isinstance(node, ecl.Logical):
            parts = [self._group_keys(p) for p in node.parts]
            result = parts[0]
            for other in parts[1:]:
                result = (
                    np.intersect1d(result, other)
                    if node.kind == "and"
                    else np.union1d(result, other)
                )
            return result
        if isinstance(node, ecl.Group):
            raise UnsupportedFilterError("An attribute group cannot be nested in another group")
        hit, table = self._relationship_hits(node)
        owners, groups = self._owners(table, node.reverse)
        keys = owners.astype(np.int64) * _GROUPS + groups.astype(np.int64)
        matched, counts = unique_counts(keys[hit & (owners >= 0)])
        low, high = (1, None) if node.card is None else (node.card.min, node.card.max)
        if low == 0:
            universe = sorted_unique(keys[owners >= 0])
            full = np.zeros(len(universe), dtype=np.int64)
            full[np.searchsorted(universe, matched)] = counts
            matched, counts = universe, full
        ok = counts >= low
        if high is not None:
            ok &= counts <= high
        return matched[ok]

    # --- filters ----------------------------------------------------------------------

    def _filter_block(self, focus: Mask, block: tuple[ecl.Filter, ...]) -> Mask:
        """Concept filters narrow the concepts; the description filters of one block must
        all hold for one and the same active description of the concept."""
        description_filters = []
        for f in block:
            if f.kind == "history":
                return focus | self._history(focus, str(f.values[0]))
            if f.kind in ("active", "definitionStatus", "moduleId", "effectiveTime"):
                focus = focus & self._concept_filter(f)
            else:
                description_filters.append(f)
        if not description_filters:
            return focus
        table = self.store.tables["descriptions"]
        concept = table.column("concept").to_numpy()
        active = table.column("active").to_numpy(zero_copy_only=False)
        candidates = np.flatnonzero(focus[concept] & active)
        if not len(candidates):
            return self._mask()
        sub = table.take(pa.array(candidates))
        ok = np.ones(len(candidates), dtype=bool)
        for f in description_filters:
            ok &= self._description_filter(sub, candidates, f)
        return self._mask(concept[candidates[ok]]) & focus

    def _history(self, focus: Mask, profile: str) -> Mask:
        """Inactive concepts whose active historical associations point into ``focus``
        (MIN: SAME AS and REPLACED BY; MOD adds POSSIBLY EQUIVALENT TO and PARTIALLY
        EQUIVALENT TO; MAX: every association)."""
        table = self.store.associations()
        refsets = table.column("refsetId").to_numpy()
        keep = table.column("active").to_numpy(zero_copy_only=False).astype(bool)
        if profile != "max":
            wanted = HISTORY_PROFILES["min"] + (HISTORY_PROFILES["mod"] if profile == "mod" else [])
            keep &= np.isin(refsets, wanted)
        targets = self.store.rows(table.column("target").to_numpy()[keep])
        sources = self.store.rows(table.column("source").to_numpy()[keep])
        ok = (targets >= 0) & (sources >= 0)
        hit = ok.copy()
        hit[ok] = focus[targets[ok]]
        return self._mask(sources[hit])

    def _concept_filter(self, f: ecl.Filter) -> Mask:
        store = self.store
        if f.kind == "active":
            keep = store.active == bool(f.values[0])
        elif f.kind == "definitionStatus":
            value = f.values[0]
            defined = str(value).lower() == "defined" or value == 900000000000073002
            keep = store.defined == defined
        elif f.kind == "effectiveTime":
            times = store.tables["concepts"].column("effectiveTime").to_numpy()
            compare = {
                "=": np.equal,
                "!=": np.not_equal,
                "<": np.less,
                "<=": np.less_equal,
                ">": np.greater,
                ">=": np.greater_equal,
            }[f.op]
            if f.op == "!=":  # none of the dates
                return np.logical_and.reduce([times != v for v in f.values])
            return np.logical_or.reduce([compare(times, v) for v in f.values])
        else:
            modules = store.tables["concepts"].column("moduleId").to_numpy()
            keep = np.isin(modules, np.array([int(v) for v in f.values], dtype=np.int64))
        return np.asarray(keep if f.op == "=" else ~keep, dtype=bool)

    def _description_filter(
        self, sub: pa.Table, candidates: npt.NDArray[np.int64], f: ecl.Filter
    ) -> npt.NDArray[np.bool_]:
        if f.kind == "term":
            ok = np.zeros(len(candidates), dtype=bool)
            for kind, text in f.values:
                ok |= _term_matches(sub.column("term"), kind, text)
        elif f.kind == "language":
            wanted = [str(v).lower() for v in f.values]
            ok = np.asarray(
                pc.is_in(pc.utf8_lower(sub.column("language")), pa.array(wanted)).to_numpy(
                    zero_copy_only=False
                ),
                dtype=bool,
            )
        elif f.kind in ("type", "typeId"):
            wanted_types = [
                _TYPES[str(v).lower()] if f.kind == "type" else int(v) for v in f.values
            ]
            ok = np.isin(sub.column("typeId").to_numpy(), wanted_types)
        elif f.kind in ("dialect", "dialectId"):
            ok = self._dialect(candidates, f)
        else:
            raise UnsupportedFilterError(f"The ECL filter '{f.kind}' is not supported")
        return ~ok if f.op == "!=" else ok

    def _dialect(self, candidates: npt.NDArray[np.int64], f: ecl.Filter) -> npt.NDArray[np.bool_]:
        refsets = []
        for v in f.values:
            if isinstance(v, int):
                refsets.append(v)
            elif str(v).lower() in DIALECTS:
                refsets.append(DIALECTS[str(v).lower()])
            else:
                raise UnsupportedFilterError(
                    f"The dialect alias '{v}' is not known (known: {', '.join(DIALECTS)})"
                )
        accept = [
            v if isinstance(v, int) else (PREFERRED if v == "prefer" else ACCEPTABLE)
            for v in f.acceptability
        ]
        acc = self.store.tables["acceptability"]
        rows = acc.column("description").to_numpy()
        keep = np.isin(acc.column("refset").to_numpy(), refsets)
        if accept:
            keep &= np.isin(acc.column("acceptability").to_numpy(), accept)
        return np.isin(candidates, rows[keep])


def _within(counts: npt.NDArray[np.int64], card: ecl.Cardinality | None) -> Mask:
    low, high = (1, None) if card is None else (card.min, card.max)
    ok = counts >= low
    if high is not None:
        ok &= counts <= high
    return np.asarray(ok, dtype=bool)


def _term_matches(terms: pa.ChunkedArray | pa.Array, kind: str, text: str) -> Mask:
    """ECL term matching: ``match`` = every word is the start of a word of the term
    (case-insensitive); ``wild`` = the whole term against a ``*`` wildcard pattern."""
    if kind == "wild":
        pattern = "(?i)^" + ".*".join(re.escape(part) for part in text.split("*")) + "$"
        return np.asarray(
            pc.match_substring_regex(terms, pattern).to_numpy(zero_copy_only=False), dtype=bool
        )
    ok = np.ones(len(terms), dtype=bool)
    for word in text.split():
        pattern = r"(?i)(^|[^\pL\pN])" + re.escape(word)
        ok &= np.asarray(
            pc.match_substring_regex(terms, pattern).to_numpy(zero_copy_only=False), dtype=bool
        )
    return ok
