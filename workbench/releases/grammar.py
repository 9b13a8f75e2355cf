"""Limits on the expressions the grammars read: ECL, SNOMED CT compositional grammar, UCUM,
FHIRPath.

Each grammar is parsed by a lark LALR parser (time linear in the text, no recursion), but a
parsed expression is then walked by recursive code (evaluators, checks), and its terms each
cost work. So each language has three limits, checked while the text is read:

- ``length``: characters of the text (checked before anything else);
- ``depth``: nesting of parentheses and braces (FHIRPath: and of the parsed expression, its
  operators, path steps, arguments and indexes);
- ``terms``: concept references, values, unit symbols and numbers (FHIRPath: names,
  literals and ``$this``).

Going over one raises GrammarLimitError (400 ``too-long``) naming the limit and the value
found. Reading a text also charges the work budget of the request (one step per bracket and
term), so a deadline holds while a long text is read.

>>> configured().ecl
Limits(length=20000, depth=40, terms=2000)
>>> GrammarLimits.from_options(["ecl.depth=10", "ucum.length=64"]).ecl.depth
10
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import Any

from workbench.errors import GrammarLimitError
from workbench.settings import Setting
from workbench.terminology import budget

#: The deepest nesting a configuration may allow: the evaluators that walk a parsed tree
#: recurse up to seven frames per level, and stay below Python's recursion limit with room for
#: the frames of the server around them.
DEPTH_CEILING = 100


@dataclass(frozen=True)
class Limits:
    """The limits of one language: characters, nesting depth, terms."""

    length: int
    depth: int
    terms: int

    def __post_init__(self) -> None:
        for name in ("length", "depth", "terms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"the grammar limit {name} must be a positive integer")
        if self.depth > DEPTH_CEILING:
            raise ValueError(f"the grammar limit depth is at most {DEPTH_CEILING}")


@dataclass(frozen=True)
class GrammarLimits:
    """The limits of each language (``ecl``, ``scg`` for post-coordinated expressions,
    ``ucum``, ``fhirpath`` for the paths of SQL on FHIR views); set them for the process
    with ``configure``."""

    ecl: Limits = field(default_factory=lambda: Limits(length=20_000, depth=40, terms=2_000))
    scg: Limits = field(default_factory=lambda: Limits(length=10_000, depth=20, terms=1_000))
    ucum: Limits = field(default_factory=lambda: Limits(length=500, depth=20, terms=100))
    fhirpath: Limits = field(default_factory=lambda: Limits(length=20_000, depth=64, terms=2_000))

    def with_option(self, option: str) -> GrammarLimits:
        """These limits with one changed by ``LANGUAGE.LIMIT=VALUE`` (``ecl.depth=60``)."""
        name, _, value = option.partition("=")
        language, _, limit = name.strip().partition(".")
        names = {f.name for f in fields(self)}
        if language not in names or limit not in ("length", "depth", "terms"):
            raise ValueError(
                f"the grammar limit {name.strip()!r} is not known: use LANGUAGE.LIMIT=VALUE, "
                f"LANGUAGE one of {', '.join(sorted(names))} and LIMIT length, depth or terms"
            )
        try:
            number = int(value.strip().replace("_", ""))
        except ValueError:
            raise ValueError(f"the grammar limit {name.strip()} wants an integer") from None
        changed = replace(getattr(self, language), **{limit: number})
        return replace(self, **{language: changed})

    @classmethod
    def from_options(cls, options: Iterable[str]) -> GrammarLimits:
        """The defaults changed by each ``LANGUAGE.LIMIT=VALUE`` option in turn."""
        found = cls()
        for option in options:
            found = found.with_option(option)
        return found


_LIMITS: Setting[GrammarLimits] = Setting(GrammarLimits())


def configured() -> GrammarLimits:
    """The limits in force for this process."""
    return _LIMITS.get()


def configure(limits: GrammarLimits) -> GrammarLimits:
    """Put ``limits`` in force for the whole process; return the ones they replace."""
    return _LIMITS.set(limits)


def limits_in_force(limits: GrammarLimits) -> AbstractContextManager[GrammarLimits]:
    """Run the block (``with limits_in_force(...):``) with ``limits`` in force, then put
    the previous ones back."""
    return _LIMITS.in_force(limits)


# --- counting while a text is read --------------------------------------------------------


class Tracker:
    """Counts the nesting and the terms of one text as its tokens are read (lark lexer
    callbacks), charging the work budget; ``check`` raises when a limit was passed."""

    __slots__ = ("deepest", "depth", "key", "kind", "limits", "terms", "where")

    def __init__(self, kind: str, key: str, limits: Limits | None) -> None:
        self.kind = kind
        self.key = key
        self.limits = limits
        self.depth = 0
        self.deepest = 0
        self.terms = 0
        self.where: tuple[int, int] | None = None

    def opened(self, token: Any) -> Any:
        """A bracket opens (a lexer callback: returns the token)."""
        self.depth += 1
        if self.depth > self.deepest:
            self.deepest = self.depth
            limits = self.limits
            if limits is not None and self.depth == limits.depth + 1:
                self.where = (token.line, token.column)
        budget.charge()
        return token

    def closed(self, token: Any) -> Any:
        """A bracket closes."""
        self.depth -= 1
        return token

    def term(self, token: Any) -> Any:
        """A term (concept reference, value, unit symbol, number)."""
        self.terms += 1
        budget.charge()
        return token

    def over(self) -> bool:
        """Whether a limit was passed."""
        limits = self.limits
        return limits is not None and (self.deepest > limits.depth or self.terms > limits.terms)

    def check(self) -> None:
        """Raise GrammarLimitError when the text nested too deep or had too many terms."""
        limits = self.limits
        if limits is None:
            return
        if self.deepest > limits.depth:
            line, column = self.where or (0, 0)
            raise GrammarLimitError(
                self.kind,
                f"{self.key}.depth",
                self.deepest,
                limits.depth,
                f"nests {self.deepest:,} levels deep (parentheses and braces; level "
                f"{limits.depth + 1:,} at line {line}, column {column})",
            )
        if self.terms > limits.terms:
            raise GrammarLimitError(
                self.kind,
                f"{self.key}.terms",
                self.terms,
                limits.terms,
                f"has {self.terms:,} terms",
            )


_TRACKER: ContextVar[Tracker | None] = ContextVar("workbench_grammar_tracker", default=None)


def _current() -> Tracker:
    tracker = _TRACKER.get()
    if tracker is None:  # a parser used outside ``tracking`` counts into a throwaway tracker
        tracker = Tracker("", "", None)
    return tracker


def callbacks(
    opening: Iterable[str], closing: Iterable[str], terms: Iterable[str]
) -> dict[str, Callable[[Any], Any]]:
    """Lark ``lexer_callbacks`` that count into the tracker of the text being read."""
    found: dict[str, Callable[[Any], Any]] = {}
    for name in opening:
        found[name] = lambda token: _current().opened(token)
    for name in closing:
        found[name] = lambda token: _current().closed(token)
    for name in terms:
        found[name] = lambda token: _current().term(token)
    return found


@contextmanager
def tracking(kind: str, key: str, limits: Limits | None) -> Iterator[Tracker]:
    """Count the text read in the block (``limits`` None: count, never refuse)."""
    tracker = Tracker(kind, key, limits)
    token = _TRACKER.set(tracker)
    try:
        yield tracker
    finally:
        _TRACKER.reset(token)


def check_length(kind: str, key: str, text: str, limits: Limits) -> None:
    """Raise GrammarLimitError when ``text`` is longer than the ``length`` limit."""
    if len(text) > limits.length:
        raise GrammarLimitError(
            kind,
            f"{key}.length",
            len(text),
            limits.length,
            f"is {len(text):,} characters long",
        )
