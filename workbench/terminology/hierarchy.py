"""Checks of a CodeSystem's concept hierarchy (nesting and ``parent``/``child`` properties)."""

from __future__ import annotations

from workbench.resources import Resource
from workbench.terminology.codesystem import CodeSystemIndex


def hierarchy_cycle(resource: Resource) -> list[str] | None:
    """A cycle in the is-a hierarchy of a CodeSystem (codes, first repeated at the end), or
    None. A cycle makes a concept its own ancestor, so subsumption would hold both ways."""
    index = CodeSystemIndex(resource)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in index.concepts:
        if state.get(start):
            continue
        path = [start]
        state[start] = 1
        stack = [iter(index.concepts[start].children)]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                state[path.pop()] = 2
                continue
            seen = state.get(child)
            if seen == 1:
                return [*path[path.index(child) :], child]
            if seen is None:
                state[child] = 1
                path.append(child)
                stack.append(iter(index.concepts[child].children))
    return None
