"""What went wrong while reading FHIR data: one small frozen record per problem.

A problem in the data is never an exception: it is a :class:`ReadError` naming the file (or
``<resources>`` for resources passed in as dicts), the line (1-based, ``None`` when the
problem is the file's as a whole or the file is one JSON document) and the reason, with a
severity: ``"error"`` (the value was not read) or ``"warning"`` (it was read; look at it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

ERROR = "error"
WARNING = "warning"
FRAME_COLUMNS = ("source", "line", "severity", "reason")


@dataclass(frozen=True)
class ReadError:
    """A problem met while reading: where (``source``, ``line``) and why (``reason``).

    >>> ReadError("Observation.ndjson", 3, "not valid JSON (unexpected character)")
    ReadError(source='Observation.ndjson', line=3, reason='not valid JSON (unexpected character)', severity='error')
    """  # noqa: E501

    source: str
    line: int | None
    reason: str
    severity: str = ERROR

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}, line {self.line}"
        return f"{where}: {self.reason}" + (" (warning)" if self.severity == WARNING else "")


def errors_frame(records: Iterable[ReadError]) -> pd.DataFrame:
    """The records as a frame: ``source``, ``line`` (nullable integers), ``severity``,
    ``reason``.

    >>> errors_frame([ReadError("a.ndjson", None, "empty")]).dtypes["line"]
    Int64Dtype()
    """
    rows = [(r.source, r.line, r.severity, r.reason) for r in records]
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    frame["line"] = frame["line"].astype("Int64")
    return frame
