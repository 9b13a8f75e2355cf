"""Validate whole columns of codes against a value set, with the semantics of validate_code.

The work is done once per distinct (system, code, display), not once per row, and broadcast
back with ``take``. Members of the value set that need no further checks (active, not
abstract, no display to compare) are answered from a hash index of the expansion; every
other distinct value goes through the very function ``Workbench.validate_code`` uses, so a
row's result always equals ``validate_code`` on that row.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.bulk_systems import validate_systems
from workbench.bulk_table import (
    MISSING_MESSAGE,
    Answers,
    AnswerTable,
    Objects,
    Row,
    missing_mask,
    object_strings,
    result_frame,
    shares_objects,
    uniform_value,
)
from workbench.errors import InvalidRequestError, WorkbenchError
from workbench.terminology.compose import NO_MATCH, Clause, CompiledValueSet, Match
from workbench.terminology.languages import Languages, requested
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.validation import (
    CheckOptions,
    ValidationResult,
    combine_codings,
    non_members,
    validate_in_valueset,
)

Resolver = Callable[[str, "str | None"], "CodeSystemProvider | None"]
MAX_FOREIGN = 64  # systems outside a value set whose answers are kept (per value set)


def _weak(found: Any) -> Callable[[], Any]:
    """A reference to ``found`` that does not keep it alive (a replaced code system's
    index is not held by the answers kept for it): called, it gives ``found`` or None."""
    if found is None:
        return lambda: None
    try:
        return weakref.ref(found)
    except TypeError:  # an object without weak references: held
        return lambda: found


# --- what a worker needs ----------------------------------------------------------------


class CodeSystemTable:
    """Code system indexes by URL, resolved like the engine resolves them (picklable)."""

    def __init__(self, codesystems: dict[str, CodeSystemProvider]) -> None:
        self.codesystems = codesystems

    def codesystem(self, url: str, version: str | None = None) -> CodeSystemProvider | None:
        """The latest version of a code system, as the engine had it."""
        found = self.codesystems.get(url)
        if found is None or (version is not None and found.version != version):
            return None
        return found


class MembershipIndex(CodeSystemTable):
    """A value set's expansion as a hash index, with the code system indexes it needs.

    It answers ``contains``/``systems``/``canonical``/``inactive_allowed`` like a compiled
    value set and resolves code systems like the engine, so ``validate_in_valueset`` gives
    the same answers with it. It is picklable, which is how Dask ships it to its workers.
    """

    def __init__(self, compiled: CompiledValueSet, codesystems: dict[str, CodeSystemProvider]):
        super().__init__(codesystems)
        self.canonical = compiled.canonical
        self.inactive_allowed = compiled.inactive_allowed
        self._systems = compiled.systems()
        self._pins = {s: compiled.pinned_version(s) for s in self._systems}
        self._whole = frozenset(s for s in self._systems if compiled.takes_whole(s))
        self.members: dict[tuple[str, str], Match] = {
            key: compiled.contains(*key) for key in compiled.member_index()
        }

    def systems(self) -> list[str]:
        """The code systems the value set draws on."""
        return self._systems

    def pinned_version(self, system: str) -> str | None:
        """The version the value set pins for ``system``, if any."""
        return self._pins.get(system)

    def takes_whole(self, system: str) -> bool:
        """True when the value set includes the whole of ``system``."""
        return system in self._whole

    def contains(self, system: str, code: str) -> Match:
        """Membership from the expansion (for UCUM, a listed unit spelled another way
        is that unit)."""
        found = self.members.get((system, code))
        if found is not None:
            return found
        cs = self.codesystems.get(system)
        if cs is not None and cs.synonymous_codes:
            listed = cs.equivalent_in(code, [c for s, c in self.members if s == system])
            if listed is not None:
                return self.members[(system, listed)]
        return NO_MATCH


@dataclass
class Checker:
    """Validates distinct codings against one value set.

    ``fast`` maps plainly valid members (known, active, not abstract unless allowed) to
    their display; ``members`` is the whole expansion, or None when the value set cannot be
    expanded. Everything else goes through ``validate_in_valueset`` or ``non_members``, the
    functions ``validate_code`` itself uses. ``tables`` keeps the answers per system (only
    for the value set's own systems, whose changes drop the compiled value set and with it
    the tables).
    """

    valueset: Any
    resolve: Resolver
    abstract: bool
    fast: dict[tuple[str, str], str | None] = field(default_factory=dict)
    members: frozenset[tuple[str, str]] | None = None
    fast_by_system: dict[str, tuple[pd.Index, np.ndarray]] = field(default_factory=dict, repr=False)
    member_by_system: dict[str, pd.Index] = field(default_factory=dict, repr=False)
    versions: Callable[[str], list[str] | None] | None = field(default=None, repr=False)
    languages: Languages | None = field(default=None, repr=False)
    tables: dict[str | None, AnswerTable] = field(default_factory=dict, repr=False)
    foreign: dict[str, tuple[Callable[[], Any], AnswerTable]] = field(
        default_factory=dict, repr=False
    )

    def check(
        self, system: str | None, code: str, display: str | None, version: str | None = None
    ) -> Row:
        """Validate one coding: (result, message, display, issue, system)."""
        if display is None and system is not None and version is None:
            key = (system, code)
            if key in self.fast:
                return True, None, self.fast[key], None, system
        result = validate_in_valueset(
            self.valueset,
            self.resolve,
            code=code,
            system=system,
            version=version,
            display=display,
            options=CheckOptions(abstract=self.abstract, languages=self.languages),
            versions=self.versions,
        )
        return _row(result)

    def table(self, system: str | None) -> AnswerTable:
        """The answers for codes of ``system``, kept across calls. ``None``: codes given
        without a system, whose system is inferred from the value set alone.

        The answers for a system the value set does not draw on depend on that code system
        alone (which a change does not drop the compiled value set for): they are kept
        with the code system index they were answered with, and start afresh when the
        system resolves to another one (loaded, replaced, or gone); up to
        ``MAX_FOREIGN`` such systems per value set, any more are answered per call."""
        found = self.tables.get(system)
        if found is not None:
            return found
        if system is None:
            return self.tables.setdefault(None, AnswerTable(None, self.answer_inferred))
        fresh = AnswerTable(system, partial(self.answer, system))
        if system in set(self.valueset.systems()):
            return self.tables.setdefault(system, fresh)
        cs = self.resolve(system, None)
        kept = self.foreign.get(system)
        if kept is not None and kept[0]() is cs:
            return kept[1]
        if kept is not None or len(self.foreign) < MAX_FOREIGN:
            self.foreign[system] = (_weak(cs), fresh)
        return fresh

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (Dask ships a checker) without the answers of systems outside the value
        set: they hold weak references, and are only a cache."""
        return {**self.__dict__, "foreign": {}}

    def answer_inferred(self, codes: np.ndarray) -> Answers:
        """Validate distinct codes given without a system (str, none missing)."""
        return Answers.of_rows([self.check(None, str(code), None) for code in codes])

    def _member_index(self, system: str) -> pd.Index:
        """The codes of one system that are in the expansion, as a hash index."""
        found = self.member_by_system.get(system)
        if found is None:
            members = self.members or frozenset()
            found = pd.Index([c for s, c in members if s == system], dtype=object)
            self.member_by_system[system] = found
        return found

    def _fast_index(self, system: str) -> tuple[pd.Index, np.ndarray]:
        found = self.fast_by_system.get(system)
        if found is None:
            pairs = [(c, d) for (s, c), d in self.fast.items() if s == system]
            index = pd.Index([c for c, _ in pairs], dtype=object)
            shown = np.array([d for _, d in pairs] + [None], dtype=object)
            found = self.fast_by_system[system] = (index, shown)
        return found

    def answer(self, system: str, codes: np.ndarray) -> Answers:
        """Validate distinct codes of one system (str, none missing), without displays."""
        n = len(codes)
        result = np.zeros(n, dtype=np.int8)
        message = np.full(n, None, dtype=object)
        display = np.full(n, None, dtype=object)
        issue = np.full(n, None, dtype=object)
        systems = np.full(n, system, dtype=object)
        index, shown = self._fast_index(system)
        position = index.get_indexer(pd.Index(codes, dtype=object, copy=False))
        hit = position >= 0
        result[hit] = 1
        display[hit] = shown[position[hit]]
        rest = np.flatnonzero(~hit)
        cs = self.resolve(system, None)
        vs = self.valueset
        if (
            cs is not None
            and cs.case_sensitive
            and self.members is not None
            and not cs.synonymous_codes  # UCUM: ml is a listed mL
        ):
            members = self._member_index(system)
            if len(members) == len(index):
                # every member of this system is plainly valid, so no other code is a member
                outside = np.ones(len(rest), dtype=bool)
            else:
                outside = members.get_indexer(pd.Index(codes[rest], dtype=object)) < 0
            outside &= ~_expressions(cs, codes[rest])  # checked in full, one by one
            chosen = rest[outside]
            context = f"the value set {vs.canonical}"
            reasons, messages, displays = non_members(
                context, cs, system, codes[chosen].tolist(), vs.inactive_allowed
            )
            issue[chosen] = reasons
            message[chosen] = messages
            display[chosen] = displays
            rest = rest[~outside]
        for i in rest:
            ok, message[i], display[i], issue[i], systems[i] = self.check(
                system, str(codes[i]), None
            )
            result[i] = -1 if ok is pd.NA else int(bool(ok))
        return Answers(result, message, display, issue, systems)


def _expressions(cs: CodeSystemProvider, codes: np.ndarray) -> np.ndarray:
    """Which codes a compositional provider takes as post-coordinated expressions (all
    False for any other code system); only codes that are not plain digits are asked."""
    found = np.zeros(len(codes), dtype=bool)
    if not cs.expressions or not len(codes):
        return found
    text = pd.Series(codes, dtype=object)
    plain = text.str.isdigit().fillna(True).to_numpy(dtype=bool)
    for i in np.flatnonzero(~plain):
        found[i] = cs.is_expression(str(codes[i]))
    return found


def _row(result: ValidationResult) -> Row:
    return result.result, result.message, result.display, result.issue, result.system


def fast_members(compiled: CompiledValueSet, abstract: bool) -> dict[tuple[str, str], str | None]:
    """Members whose validation is plainly valid: a known, active, not deprecated concept (not
    abstract unless allowed). Their display is the value set's display, else the concept's."""
    fast: dict[tuple[str, str], str | None] = {}
    if compiled.includes and all(_from_a_release(c) for c in compiled.includes):
        # every member comes from a release store's own concepts (no listed codes, no
        # imports, no value-set displays): its expansion entry already says it all
        return {
            key: e.display
            for key, e in compiled.member_index().items()
            if not e.inactive and (abstract or not e.abstract)
        }
    for key in compiled.member_index():
        match = compiled.contains(*key)
        concept = match.concept
        if concept is None or concept.inactive or (concept.abstract and not abstract):
            continue
        if concept.status == "deprecated":  # valid, with a warning: the full check says it
            continue
        fast[key] = match.display or concept.display
    return fast


def _from_a_release(clause: Clause) -> bool:
    """An include whose members are exactly a release provider's filtered concepts."""
    return (
        clause.cs is not None
        and clause.cs.plain_entries
        and not clause.concepts
        and not clause.imports
    )


def make_checker(wb: Any, valueset: Any, abstract: bool) -> Checker:
    """A checker over the engine itself (the pandas path)."""
    compiled = wb.terminology.compiled(valueset)
    try:
        fast = wb.terminology.memo(
            compiled, ("bulk-fast", abstract), lambda: fast_members(compiled, abstract)
        )
        by_system = wb.terminology.memo(compiled, ("bulk-fast-index", abstract), dict)
        member_index = wb.terminology.memo(compiled, "bulk-member-index", dict)
        tables = wb.terminology.memo(compiled, ("bulk-answers", abstract), dict)
        foreign = wb.terminology.memo(compiled, ("bulk-foreign", abstract), dict)
    except WorkbenchError:
        fast, by_system, member_index, tables, foreign = {}, {}, {}, {}, {}
    try:
        members: frozenset[tuple[str, str]] | None = wb.terminology.memo(
            compiled, "bulk-members", lambda: frozenset(compiled.member_index())
        )
    except WorkbenchError:
        members = None
    wanted = value_set_languages(compiled)
    if wanted:  # displays depend on the language: every member goes through the check
        fast, by_system = {}, {}
    return Checker(
        compiled,
        wb.terminology.codesystem,
        abstract,
        fast,
        members,
        by_system,
        member_index,
        versions=wb.terminology.codesystem_versions,
        languages=wanted,
        tables=tables,
        foreign=foreign,
    )


def make_shippable_checker(wb: Any, valueset: Any, abstract: bool) -> Checker:
    """A picklable checker (the Dask path): the expansion index and every loaded code system.

    A value set that cannot be expanded is shipped as its compiled compose instead, so
    its rows get the same answers as on pandas.
    """
    compiled = wb.terminology.compiled(valueset)
    codesystems = {}
    for resource in wb.registry.all("CodeSystem"):
        url = resource.get("url")
        if url and url not in codesystems:
            found = wb.terminology.codesystem(url)
            if found is not None:
                codesystems[url] = found
    for provider in wb.terminology.providers():  # code systems loaded from release files
        codesystems.setdefault(provider.url, provider)
    versions = {url: wb.terminology.codesystem_versions(url) for url in codesystems}.get
    try:
        index = MembershipIndex(compiled, codesystems)
    except WorkbenchError:
        # Not expandable (a code system it needs is missing): ship the compose itself, as
        # validate_code uses it. Its filters are closures, which Dask serialises with
        # cloudpickle.
        table = CodeSystemTable(codesystems)
        return Checker(
            compiled,
            table.codesystem,
            abstract,
            versions=versions,
            languages=value_set_languages(compiled),
        )
    wanted = value_set_languages(compiled)
    return Checker(
        index,
        index.codesystem,
        abstract,
        {} if wanted else fast_members(compiled, abstract),
        frozenset(index.members),
        versions=versions,
        languages=wanted,
    )


def make_suggester(wb: Any, valueset: Any) -> Any:
    """The "did you mean" source for a column report over ``valueset``: its members by code
    system (when it can be expanded), else whole code systems, and every loaded code system
    URL with its title (for unknown systems). Nothing is computed before it is asked."""
    from workbench.suggest import Suggester

    def members() -> dict[str, list[tuple[str, str | None]]] | None:
        found: dict[str, list[tuple[str, str | None]]] = {}
        try:
            compiled = wb.terminology.compiled(valueset)
            for (system, code), entry in compiled.member_index().items():
                found.setdefault(system, []).append((code, entry.display))
        except WorkbenchError:
            return None
        return found

    def titles() -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        for resource in wb.registry.all("CodeSystem"):
            if resource.get("url"):
                found.setdefault(
                    str(resource["url"]), resource.get("title") or resource.get("name")
                )
        for provider in wb.terminology.providers():
            found.setdefault(provider.url, None)
        return found

    return Suggester(members, wb.terminology.codesystem, titles)


def value_set_languages(compiled: CompiledValueSet) -> Languages | None:
    """The display languages a value set names itself (its expansion-parameter extension or
    its ``language``), as ``validate_code`` applies them without a request language."""
    return requested(None, compiled.resource, None, wildcard=False)


# --- the column algorithm ----------------------------------------------------------------


def _is_missing(value: Any) -> bool:
    return (
        value is None
        or value is pd.NA
        or value == ""
        or (isinstance(value, float) and value != value)
    )


def _factorize(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and each row's index into them; missing values share one last slot."""
    codes, uniques = pd.factorize(values)
    ids = np.asarray(codes, dtype=np.int64)
    distinct = np.asarray(uniques, dtype=object)
    missing = ids < 0
    if missing.any():
        ids[missing] = len(distinct)
        distinct = np.concatenate([distinct, np.array([None], dtype=object)])
    return ids, distinct


def _factorize_objects(objects: Objects) -> tuple[np.ndarray, np.ndarray]:
    """``_factorize`` of a column grouped by identity: the groups' values made distinct by
    equality, missing values in one last slot."""
    ids, distinct = _factorize(pd.Series(objects.values, dtype=object))
    return ids.take(objects.ids), distinct


def validate_arrays(
    checker: Checker,
    codes: pd.Series,
    systems: pd.Series | str | None,
    displays: pd.Series | None,
    encoded: Objects | pa.Array | None = None,
) -> pd.DataFrame:
    """Validate aligned code/system/display columns; return the frame of COLUMNS.

    ``encoded``: the code column grouped by identity with the codes' texts, or as Arrow
    strings (from ``code_column``), when the caller has it.

    One system for every row (or none: the value set's answer table for codes without a
    system) and no displays: the codes are looked up in that answer table in the column's
    own encoding. A system column of several systems and no displays: each distinct
    (system, code) pair is looked up once in its system's answer table, both columns in
    their own encoding (``bulk_systems``). Otherwise each distinct (system, code,
    display) is validated once (plain ones through the answer tables too); rows get their
    answer by ``take``. A missing code (None, NaN, NA, "") gives result NA and the issue
    ``missing``.
    """
    if isinstance(systems, pd.Series):
        systems = uniform_value(systems) or systems
    if displays is not None and bool(displays.isna().all()):
        displays = None
    if (systems is None or isinstance(systems, str)) and displays is None:
        state, position = checker.table(systems).column(codes, encoded)
        return result_frame(state.answers, position, systems, state)
    if isinstance(systems, pd.Series) and displays is None and len(codes):
        return validate_systems(checker.table, codes, systems, encoded)
    columns = {"code": codes, "system": systems, "display": displays}
    parts = {
        name: _factorize_objects(encoded)
        if name == "code" and isinstance(encoded, Objects)
        else _factorize(col)
        for name, col in columns.items()
        if isinstance(col, pd.Series)
    }
    if len(parts) == 1:
        row_ids, keys = parts["code"][0], np.arange(len(parts["code"][1]), dtype=np.int64)
        values = {"code": parts["code"][1]}
    else:
        combined = np.zeros(len(codes), dtype=np.int64)
        for ids, uniques in parts.values():
            combined = combined * len(uniques) + ids
        ids, unique_keys = pd.factorize(combined)
        row_ids, keys = np.asarray(ids, dtype=np.int64), np.asarray(unique_keys, dtype=np.int64)
        values = {}
        rest = keys
        for name, (_, uniques) in reversed(list(parts.items())):
            rest, position = np.divmod(rest, len(uniques))
            values[name] = uniques[position]
    code_values = values["code"]
    system_values = values.get("system")
    if system_values is None:
        system_values = np.full(len(keys), systems, dtype=object)
    display_values = values.get("display")
    no_system = missing_mask(system_values)
    plain = np.ones(len(keys), dtype=bool)
    if display_values is not None:
        plain &= pd.isna(display_values) | (display_values == "")
    segments: list[Answers] = []
    at = np.zeros(len(keys), dtype=np.int64)
    offset = 0
    groups = [
        (str(s), plain & ~no_system & (system_values == s))
        for s in pd.unique(system_values[plain & ~no_system])
    ]
    for system, chosen in [*groups, (None, plain & no_system)]:
        where = np.flatnonzero(chosen)
        if not len(where):
            continue
        state, position = checker.table(system).distinct(code_values[where])
        segments.append(state.answers)
        at[where] = offset + position
        offset += len(state.answers)
    rows: list[Row] = []
    others = np.flatnonzero(~plain)
    for k in others:
        code = code_values[k]
        system = None if _is_missing(system_values[k]) else str(system_values[k])
        display = (
            None
            if display_values is None or _is_missing(display_values[k])
            else str(display_values[k])
        )
        if _is_missing(code):
            rows.append((pd.NA, MISSING_MESSAGE, None, "missing", system))
        else:
            rows.append(checker.check(system, str(code), display))
    segments.append(Answers.of_rows(rows))
    at[others] = offset + np.arange(len(others))
    answers = Answers.concat(segments)
    return result_frame(answers, at.take(row_ids), systems if isinstance(systems, str) else None)


# --- the public entry --------------------------------------------------------------------


def check_columns(
    columns: list[Any], *, code: str | None, system: str | None, display: str | None
) -> None:
    """Check the column arguments against a frame's columns (pandas and Dask alike).

    ``system`` names a column, or is a system URI (it has a ':' or a '/').
    """
    if code is None:
        raise InvalidRequestError(f"Name the code column: code=... (the columns are {columns})")
    named = [(code, "code"), (display, "display")]
    if system is not None and system not in columns and "/" not in system and ":" not in system:
        named.append((system, "system"))
    for name, role in named:
        if name is not None and name not in columns:
            raise KeyError(
                f"The {role} column {name!r} is not in the data; its columns are "
                f"{[str(c) for c in columns]}"
            )


def _structured(values: pd.Series) -> bool:
    """True when a column holds Coding or CodeableConcept dicts rather than codes (decided
    by its first value that is not missing)."""
    for value in values:
        if isinstance(value, Mapping):
            return True
        if not _is_missing(value):
            return False
    return False


def _validate_structured(checker: Checker, values: pd.Series) -> pd.DataFrame:
    """Validate a column of Coding or CodeableConcept dicts (a CodeableConcept is valid
    when any of its codings is)."""
    memo: dict[Hashable, Row] = {}

    def one(coding: Mapping[str, Any]) -> ValidationResult:
        system, code, display = coding.get("system"), coding.get("code"), coding.get("display")
        version = coding.get("version")
        key = (system, code, display, version)
        if key not in memo:
            if _is_missing(code):
                memo[key] = (False, MISSING_MESSAGE, None, "missing", system)
            else:
                memo[key] = checker.check(system, str(code), display, version)
        result, message, shown, issue, used = memo[key]
        return ValidationResult(bool(result), message, shown, code, used, None, issue)

    rows: list[Row] = []
    for value in values:
        if not isinstance(value, Mapping):
            rows.append((pd.NA, MISSING_MESSAGE, None, "missing", None))
            continue
        codings = value.get("coding") if "coding" in value else [value]
        if not codings:
            rows.append((pd.NA, MISSING_MESSAGE, None, "missing", None))
            continue
        rows.append(_row(combine_codings([one(c) for c in codings])))
    return result_frame(Answers.of_rows(rows), np.arange(len(rows), dtype=np.int64))


def prepare(
    data: pd.Series | pd.DataFrame,
    *,
    code: str | None,
    system: str | None,
    display: str | None,
    texts: tuple[pd.Series, Objects | pa.Array | None] | None = None,
) -> tuple[pd.Series, pd.Series | str | None, pd.Series | None, Objects | pa.Array | None]:
    """Pick the code, system and display inputs out of a Series or a DataFrame, with the
    code column's ``code_column`` (``texts``: that, when the caller has it already)."""
    if isinstance(data, pd.DataFrame):
        check_columns(list(data.columns), code=code, system=system, display=display)
        assert code is not None
        codes, encoded = code_column(data[code]) if texts is None else texts
        systems: pd.Series | str | None = system
        if system is not None and system in data.columns:
            systems = data[system]
        displays = data[display] if display is not None else None
        return codes, systems, displays, encoded
    if isinstance(data, pd.Series):
        if display is not None:
            raise InvalidRequestError("display=... names a column; pass a DataFrame for that")
        codes, encoded = code_column(data) if texts is None else texts
        return codes, system, None, encoded
    raise TypeError(
        f"validate_column takes a pandas Series or DataFrame, not {type(data).__name__}"
    )


def code_text(values: pd.Series) -> pd.Series:
    """Codes as the text the user had: an integer column (also a nullable ``Int64`` one, or a
    float column that holds whole numbers because of missing values) gives ``"1"``, never
    ``"1.0"``; missing values stay missing; strings, categoricals and Coding dicts are kept.

    >>> code_text(pd.Series([1, None, 20])).tolist()
    ['1', None, '20']
    >>> code_text(pd.Series([1, 2], dtype="Int64")).tolist()
    ['1', '2']
    """
    return code_column(values)[0]


def code_column(values: pd.Series) -> tuple[pd.Series, Objects | pa.Array | None]:
    """``code_text``, and for an ``object`` column also how the lookup takes it: its rows
    grouped by identity with each group's text (only one value per group is looked at, so
    the column is never scanned row by row), or, when equal codes are not one object
    (fresh strings per row), the column as Arrow strings if it holds nothing else."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if pd.api.types.is_numeric_dtype(dtype.categories.dtype):
            renamed = code_text(pd.Series(dtype.categories))
            return values.cat.rename_categories(renamed.tolist()), None
        return values, None
    if pd.api.types.is_bool_dtype(dtype):
        return values, None
    if pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype):
        present = values.notna().to_numpy()
        numbers = np.asarray(values.astype(object), dtype=object)
        out = np.full(len(values), None, dtype=object)
        out[present] = [_number_text(n) for n in numbers[present]]
        return pd.Series(out, index=values.index, name=values.name, dtype=object), None
    if pd.api.types.is_object_dtype(dtype):
        array = np.ascontiguousarray(np.asarray(values, dtype=object))
        if not shares_objects(array):
            strings = object_strings(array)
            if strings is not None:
                return values, strings
        objects = Objects.of(array)
        kind = pd.api.types.infer_dtype(objects.values, skipna=True)
        if kind not in ("integer", "floating", "mixed-integer", "mixed-integer-float", "mixed"):
            return values, objects
        texts = np.empty(len(objects.values), dtype=object)
        for k, v in enumerate(objects.values):  # once per distinct object
            number = isinstance(v, (int, float, np.number)) and not _is_missing(v)
            texts[k] = _number_text(v) if number else v
        rows = pd.Series(
            texts.take(objects.ids), index=values.index, name=values.name, dtype=object
        )
        return rows, Objects(objects.ids, texts)
    return values, None


def _number_text(value: Any) -> Any:
    """``1`` and ``1.0`` as ``"1"``; other numbers as their shortest exact text."""
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (float, np.floating)):
        if value != value:
            return None
        if float(value).is_integer():
            return str(int(value))
        return repr(float(value))
    return str(int(value))


def checked_codes(values: pd.Series) -> pd.Series:
    """The codes a result's rows are about, for reports: a Coding's code, the codes of a
    CodeableConcept joined with commas; plain codes as they are."""
    if values.dtype != object or not _structured(values):
        return values

    def code_of(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return None
        codings = value.get("coding") if "coding" in value else [value]
        codes = [str(c.get("code")) for c in codings or [] if isinstance(c, Mapping)]
        return ", ".join(codes) or None

    return pd.Series([code_of(v) for v in values], index=values.index, dtype=object)


def validate_pandas(
    checker: Checker,
    data: pd.Series | pd.DataFrame,
    *,
    code: str | None = None,
    system: str | None = None,
    display: str | None = None,
    texts: tuple[pd.Series, Objects | pa.Array | None] | None = None,
) -> pd.DataFrame:
    """Validate pandas data with a prepared checker; a plain frame of COLUMNS (``texts``:
    the code column's ``code_column``, when the caller has it already)."""
    codes, systems, displays, encoded = prepare(
        data, code=code, system=system, display=display, texts=texts
    )
    if codes.dtype == object and _structured(codes):
        frame = _validate_structured(checker, codes)
    else:
        frame = validate_arrays(checker, codes, systems, displays, encoded)
    frame.index = codes.index
    return frame
