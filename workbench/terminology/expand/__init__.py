"""Expansion of value sets: ``engine`` (the engine's expansion calls: a request resolved,
paged, filtered, its languages and supplements applied) and ``expansion`` (the
``Expansion`` result and how it is written as a ValueSet)."""
