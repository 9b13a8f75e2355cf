"""CodeSystem $subsumes: two codes (either may be a post-coordinated expression) of one
code system."""

from __future__ import annotations

from workbench.errors import UnknownCodeError
from workbench.terminology.provider import CodeSystemProvider


def subsumes(cs: CodeSystemProvider, code_a: str, code_b: str) -> str:
    """Return equivalent, subsumes, subsumed-by or not-subsumed for codes A and B (either
    may be a post-coordinated expression where the code system has them)."""
    found = []
    for code in (code_a, code_b):
        if cs.is_expression(code):
            found.append(code)  # the provider parses and checks it
            continue
        concept = cs.get(code)
        if concept is None:
            raise UnknownCodeError(f"Unknown code '{code}' in the CodeSystem '{cs.url}'")
        found.append(concept.code)
    return cs.subsumes(found[0], found[1])
