"""Does a post-coordinated expression satisfy an ECL constraint?

The expression is taken as a new concept: below its focus concepts (so it has their ancestors),
with their inferred relationships plus the expression's own attributes (ungrouped ones in
group 0, each ``{ }`` group its own; a grouped constraint needs one of those groups). The
virtual concept is below its focus but not a child of it (``<!``, ``<<!`` do not hold for a
refinement). Hierarchy operators, refinements (with groups and
cardinality) and compounds are decided on that virtual concept; parts that only real concepts
can satisfy (member of a refset, description and concept filters, ancestors of, reverse and
dotted attributes) hold only when the expression is just one concept, and then the store's
masks answer exactly.

>>> Virtual((1,), frozenset({0}), (), refined=False).refined
False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.releases.snomed import ecl, scg
from workbench.releases.snomed.ecl_eval import Evaluator


@dataclass(frozen=True)
class Relationship:
    """One relationship of the virtual concept: type row, value rows or concrete value."""

    type: int
    group: tuple[int, int]
    rows: tuple[int, ...] = ()
    concrete: Any = None


@dataclass(frozen=True)
class Virtual:
    """The concept an expression defines: focus rows, their ancestors, relationships."""

    focus: tuple[int, ...]
    ancestors: frozenset[int]
    relationships: tuple[Relationship, ...]
    refined: bool


def virtual(evaluator: Evaluator, expression: scg.Expression) -> Virtual:
    """The virtual concept of a parsed expression (its concepts must all be known)."""
    store = evaluator.store
    focus = tuple(store.row(c) for c in expression.focus)
    ancestors: set[int] = set()
    relationships: list[Relationship] = []
    for i, row in enumerate(focus):
        ancestors.update(int(a) for a in store.closure.ancestors(row))
        rels = store.relationships(row)
        for type_row, dst, group in zip(
            rels["rel_type"], rels["rel_dst"], rels["rel_group"], strict=True
        ):
            relationships.append(Relationship(int(type_row), (i + 1, int(group)), (int(dst),)))
        concrete = store.concrete(row).to_pydict()
        for type_row, value, group in zip(
            concrete["type"], concrete["value"], concrete["group"], strict=True
        ):
            relationships.append(
                Relationship(int(type_row), (i + 1, int(group)), (), _concrete(str(value)))
            )
    for index, group in enumerate([expression.ungrouped, *expression.groups]):
        for attribute in group:
            relationships.append(_own(store, attribute, (0, index)))
    return Virtual(focus, frozenset(ancestors), tuple(relationships), bool(expression.attributes()))


def _own(store: Any, attribute: scg.Attribute, group: tuple[int, int]) -> Relationship:
    value = attribute.value
    type_row = store.row(attribute.name)
    if isinstance(value, scg.Expression):
        return Relationship(type_row, group, tuple(store.row(c) for c in value.focus))
    if isinstance(value, int) and not isinstance(value, bool):
        return Relationship(type_row, group, (store.row(value),))
    return Relationship(type_row, group, (), value)


def _concrete(value: str) -> Any:
    """An RF2 concrete value (``#500``, ``"text"``, ``true``) as a Python value."""
    if value.startswith("#"):
        try:
            return float(value[1:])
        except ValueError:
            return value
    if value.startswith('"') and value.endswith('"'):
        return value[1:-1]
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


class Satisfies:
    """Decides ECL constraints on one virtual concept, using the store's masks for the rest."""

    def __init__(self, evaluator: Evaluator, concept: Virtual) -> None:
        self.evaluator = evaluator
        self.concept = concept
        self.plain = not concept.refined and len(concept.focus) == 1

    def __call__(self, node: Any) -> bool:
        """Whether the virtual concept is in the set the constraint describes."""
        if self.plain:
            return bool(self.evaluator.evaluate(node)[self.concept.focus[0]])
        return self._holds(node)

    def _holds(self, node: Any) -> bool:
        if isinstance(node, ecl.Compound):
            parts = [self._holds(p) for p in node.parts]
            if node.kind == "and":
                return all(parts)
            if node.kind == "or":
                return any(parts)
            return parts[0] and not parts[1]
        if isinstance(node, ecl.Refined):
            return self._holds(node.expr) and self._refinement(node.refinement)
        if isinstance(node, ecl.Sub):
            return self._sub(node)
        # the wildcard holds; a single concept or a dotted constraint needs a real concept
        return isinstance(node, ecl.Wildcard)

    def _sub(self, node: ecl.Sub) -> bool:
        if node.member or node.filters:
            return False
        if node.op is None:
            return self._holds(node.focus)
        if node.op not in ("<", "<<", "<!", "<<!"):
            return False  # ancestors, parents, top and bottom: only real concepts
        targets = self.evaluator.evaluate(node.focus)
        focus = set(self.concept.focus)
        if node.op in ("<!", "<<!"):
            # a refinement of X is below X but never its child (tx.fhir.org, issue 22 f2);
            # a bare combination of focus concepts has them as its parents
            return not self.concept.refined and any(targets[f] for f in focus)
        below = focus | self.concept.ancestors
        return any(targets[r] for r in below)

    # --- refinements ----------------------------------------------------------------------

    def _refinement(self, node: Any, group: tuple[int, int] | None = None) -> bool:
        if isinstance(node, ecl.Logical):
            parts = [self._refinement(p, group) for p in node.parts]
            return all(parts) if node.kind == "and" else any(parts)
        if isinstance(node, ecl.Group):
            # the expression's own ungrouped attributes (0, 0) are in no ``{ }`` group: a
            # grouped constraint needs a grouped refinement (issue 22 f2)
            groups = {r.group for r in self.concept.relationships} - {(0, 0)}
            count = sum(1 for g in groups if self._refinement(node.body, g))
            return _within(count, node.card)
        if not isinstance(node, ecl.Attribute) or node.reverse:
            return False
        types = self.evaluator.evaluate(node.name)
        count = 0
        for rel in self.concept.relationships:
            if group is not None and rel.group != group:
                continue
            if rel.type >= 0 and types[rel.type] and self._value(node, rel):
                count += 1
        return _within(count, node.card)

    def _value(self, node: ecl.Attribute, rel: Relationship) -> bool:
        if node.kind == "expr":
            if not rel.rows:
                return False
            values = self.evaluator.evaluate(node.value)
            inside = all(r >= 0 and values[r] for r in rel.rows)
            return inside if node.op == "=" else not inside
        if rel.concrete is None:
            return False
        if node.kind == "num":
            if isinstance(rel.concrete, bool) or not isinstance(rel.concrete, (int, float)):
                return False
            compare = {
                "=": np.equal,
                "!=": np.not_equal,
                "<": np.less,
                "<=": np.less_equal,
                ">": np.greater,
                ">=": np.greater_equal,
            }[node.op]
            return bool(compare(float(rel.concrete), node.value))
        same = rel.concrete == node.value
        return same if node.op == "=" else not same


def _within(count: int, card: ecl.Cardinality | None) -> bool:
    low, high = (1, None) if card is None else (card.min, card.max)
    return count >= low and (high is None or count <= high)
