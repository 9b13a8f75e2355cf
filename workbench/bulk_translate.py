"""Translate a whole column of codes: the work is done once per distinct (system, code).

The distinct pairs are factorized, each is translated once with the same engine as
``Workbench.translate``, and the per-pair answers are broadcast back to the rows with
integer takes, so the cost per row is a vectorised gather.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.errors import InvalidRequestError
from workbench.terminology.conceptmap import STRENGTH, Translation

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


def translate_pandas(
    wb: Workbench,
    data: pd.DataFrame | pd.Series,
    url: str | None,
    *,
    code: str | None = None,
    system: str | None = None,
    target_system: str | None = None,
) -> pd.DataFrame:
    """Translate every row; return a frame aligned to ``data.index`` (see ``COLUMNS``).

    ``code`` names the code column of a DataFrame; ``system`` is a column name or, when it
    is not a column, the system of every row.
    """
    if isinstance(data, pd.DataFrame):
        if code is None or code not in data.columns:
            raise InvalidRequestError(f"code must name a column of the frame, not {code!r}")
        codes = data[code]
        systems = data[system] if system is not None and system in data.columns else None
    elif isinstance(data, pd.Series):
        codes, systems = data, None
    else:
        raise InvalidRequestError("translate_column takes a pandas DataFrame or Series")
    constant = system if systems is None else None
    code_arr = codes.astype(object).where(codes.notna(), None).to_numpy()
    sys_arr = (
        np.full(len(code_arr), constant, dtype=object)
        if systems is None
        else systems.astype(object).where(systems.notna(), None).to_numpy()
    )
    if systems is None:  # one system for every row: factorize the codes alone
        inverse, distinct = pd.factorize(code_arr, use_na_sentinel=False)
        uniques: Any = [(constant, c) for c in distinct]
    else:
        keys = np.empty(len(code_arr), dtype=object)
        keys[:] = list(zip(sys_arr, code_arr, strict=True))
        inverse, uniques = pd.factorize(keys)
    answers: list[tuple[Any, ...]] = []
    for sys_value, code_value in uniques:
        if code_value is None or (isinstance(code_value, float) and np.isnan(code_value)):
            answers.append((pd.NA, None, None, None, None, 0, None))
            continue
        sys_text = None if sys_value is None or sys_value != sys_value else str(sys_value)
        answers.append(
            strongest(
                wb.translate(str(code_value), system=sys_text, url=url, target_system=target_system)
            )
        )
    table = (
        pd.DataFrame(answers, columns=list(COLUMNS), dtype=object)
        if answers
        else pd.DataFrame(columns=list(COLUMNS), dtype=object)
    )
    out = table.take(inverse).reset_index(drop=True)
    out.index = data.index
    out["result"] = out["result"].astype("boolean")
    out["matches"] = out["matches"].astype("int64")
    return out
