"""Translate a whole column of codes: the work is done once per distinct (system, code).

The column is factorized (codes alone when every row has the same system, else codes and
systems separately and then their integer pairs), each distinct pair is translated once
with the same engine as ``Workbench.translate`` (the map chosen once, target displays
looked up once), and the answers are broadcast back to the rows with integer takes, so the
cost per row is a vectorised gather.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.errors import InvalidRequestError
from workbench.terminology.conceptmap import (
    STRENGTH,
    Translation,
    candidate_maps,
    translate_code,
)

if TYPE_CHECKING:
    from workbench.workbench import Workbench

COLUMNS = (
    "result",
    "equivalence",
    "target_system",
    "target_code",
    "target_display",
    "matches",
    "message",
)
_RANK = {eq: i for i, eq in enumerate(STRENGTH)}
#: the row of a missing code
MISSING: tuple[Any, ...] = (pd.NA, None, None, None, None, 0, None)
Key = tuple[str | None, str]
Answer = Callable[[str | None, str], tuple[Any, ...]]


def strongest(t: Translation) -> tuple[Any, ...]:
    """One row for one translation: the strongest match and the number of matches."""
    if not t.match_list:
        return (t.result, None, None, None, None, 0, t.message)
    best = min(t.match_list, key=lambda m: _RANK.get(m.equivalence, len(_RANK)))
    return (
        t.result,
        best.equivalence,
        best.system,
        best.code,
        best.display,
        len(t.match_list),
        t.message,
    )


class ColumnTranslator:
    """Answers one (system, code) at a time for a column: the maps are chosen once and
    target displays are looked up once each (``wb.translate`` semantics otherwise)."""

    def __init__(
        self,
        wb: Workbench,
        url: str | None,
        *,
        target_system: str | None = None,
        reverse: bool = False,
    ) -> None:
        self.maps = wb.conceptmaps_for(url)
        self.candidates = candidate_maps(self.maps, url=url, reverse=reverse)
        self.target_system = target_system
        self.reverse = reverse
        self._lookup = wb.display_of
        self._has_system = wb.terminology.codesystem
        self._systems: dict[str, bool] = {}
        self._displays: dict[tuple[str, str], str | None] = {}

    def display_of(self, system: str, code: str) -> str | None:
        """The target display, looked up once per (system, code); a system that is not
        loaded is asked about once."""
        known = self._systems.get(system)
        if known is None:
            known = self._systems[system] = self._has_system(system) is not None
        if not known:
            return None
        key = (system, code)
        if key not in self._displays:
            self._displays[key] = self._lookup(system, code)
        return self._displays[key]

    def __call__(self, system: str | None, code: str) -> tuple[Any, ...]:
        """The row (see ``COLUMNS``) for one code."""
        return strongest(
            translate_code(
                self.candidates,
                self.maps,
                code=code,
                system=system,
                target_system=self.target_system,
                reverse=self.reverse,
                display_of=self.display_of,
            )
        )

    def table(self, pairs: Iterable[tuple[Any, Any]]) -> dict[Key, tuple[Any, ...]]:
        """Answers for distinct (system, code) pairs, by normalised key (what Dask ships)."""
        out: dict[Key, tuple[Any, ...]] = {}
        for pair in pairs:
            key = normalise(*pair)
            if key is not None and key not in out:
                out[key] = self(*key)
        return out


def _is_missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def normalise(system: Any, code: Any) -> Key | None:
    """The (system, code) strings of a pair, or None for a missing or empty code."""
    if _is_missing(code) or code == "":
        return None
    return (None if _is_missing(system) else str(system), str(code))


def answer_row(answer: Answer, system: Any, code: Any) -> tuple[Any, ...]:
    """The row of one distinct pair: a missing or empty code gives ``MISSING``."""
    key = normalise(system, code)
    return MISSING if key is None else answer(*key)


def split_input(
    data: pd.DataFrame | pd.Series, code: str | None, system: str | None
) -> tuple[pd.Series, pd.Series | None, str | None]:
    """The code column, the system column (or None) and the constant system (or None)."""
    if isinstance(data, pd.DataFrame):
        if code is None or code not in data.columns:
            raise InvalidRequestError(f"code must name a column of the frame, not {code!r}")
        codes = data[code]
        if system is not None and system in data.columns:
            return codes, data[system], None
        return codes, None, system
    if isinstance(data, pd.Series):
        return data, None, system
    raise InvalidRequestError("translate_column takes a pandas DataFrame or Series")


def factorize(
    codes: pd.Series, systems: pd.Series | None, constant: str | None
) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
    """Integer labels per row and the distinct (system, code) pairs; -1 marks a missing
    code (or system and code both missing)."""
    code_inv, code_uni = pd.factorize(codes)
    if systems is None:
        return code_inv, [(constant, c) for c in code_uni]
    sys_inv, sys_uni = pd.factorize(systems)
    width = len(code_uni) + 1
    both = (sys_inv.astype(np.int64) + 1) * width + (code_inv.astype(np.int64) + 1)
    inverse, keys = pd.factorize(both)
    pairs = []
    for key in keys.tolist():
        s, c = divmod(key, width)
        pairs.append((sys_uni[s - 1] if s else None, code_uni[c - 1] if c else None))
    return inverse, pairs


def assemble(rows: list[tuple[Any, ...]], inverse: np.ndarray, index: pd.Index) -> pd.DataFrame:
    """Broadcast one answer per distinct pair to the rows (``inverse`` -1 is missing)."""
    rows = [*rows, MISSING]  # index -1 takes the last row
    columns = list(zip(*rows, strict=True))
    out: dict[str, Any] = {}
    for name, values in zip(COLUMNS, columns, strict=True):
        if name == "result":
            out[name] = pd.array(values, dtype="boolean").take(inverse)
        elif name == "matches":
            out[name] = np.asarray(values, dtype=np.int64).take(inverse)
        else:
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
            out[name] = pd.Series(arr.take(inverse), index=index, dtype=object, copy=False)
    return pd.DataFrame(out, index=index, copy=False)


def translate_pandas(
    wb: Workbench,
    data: pd.DataFrame | pd.Series,
    url: str | None,
    *,
    code: str | None = None,
    system: str | None = None,
    target_system: str | None = None,
    reverse: bool = False,
) -> pd.DataFrame:
    """Translate every row; return a frame aligned to ``data.index`` (see ``COLUMNS``).

    ``code`` names the code column of a DataFrame; ``system`` is a column name or, when it
    is not a column, the system of every row. ``reverse`` maps target codes back to sources.
    """
    codes, systems, constant = split_input(data, code, system)
    translator = ColumnTranslator(wb, url, target_system=target_system, reverse=reverse)
    return translate_frame(translator, codes, systems, constant, data.index)


def translate_frame(
    answer: Answer,
    codes: pd.Series,
    systems: pd.Series | None,
    constant: str | None,
    index: pd.Index,
) -> pd.DataFrame:
    """Factorize, answer each distinct pair once, broadcast back (shared with Dask)."""
    inverse, pairs = factorize(codes, systems, constant)
    rows = [answer_row(answer, s, c) for s, c in pairs]
    return assemble(rows, inverse, index)
