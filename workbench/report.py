"""The result of validating a column: a DataFrame with a summary, failure cases and a plot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

COLUMNS = ["result", "message", "display", "issue", "system"]


@dataclass(frozen=True)
class ValidationSummary:
    """Counts per reason and the most frequent invalid codes of a column validation."""

    rows: int
    valid: int
    counts: pd.Series
    top_invalid: pd.DataFrame

    def _repr_html_(self) -> str:
        share = f"{self.valid / self.rows:.1%}" if self.rows else "n/a"
        head = f"<p><b>{self.valid:,}</b> of {self.rows:,} rows valid ({share}).</p>"
        counts = self.counts.rename("rows").to_frame().to_html()
        top = self.top_invalid.to_html(index=False) if len(self.top_invalid) else "<p>none</p>"
        return (
            f"<div>{head}<div style='display:flex;gap:2em'><div><b>By reason</b>{counts}"
            f"</div><div><b>Most frequent invalid codes</b>{top}</div></div></div>"
        )

    def __repr__(self) -> str:
        return (
            f"ValidationSummary({self.valid:,} of {self.rows:,} valid)\n"
            f"{self.counts.to_string()}\n\nMost frequent invalid codes:\n"
            f"{self.top_invalid.to_string(index=False)}"
        )

    def plot(self, top: int = 10) -> Any:
        """A matplotlib figure: bars of the top invalid codes and of the counts per reason."""
        import matplotlib.pyplot as plt

        figure, (left, right) = plt.subplots(
            1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [3, 2]}
        )
        shown = self.top_invalid.head(top).iloc[::-1]
        labels = [
            f"{c}  ({s.rsplit('/', 1)[-1]})" if isinstance(s, str) else f"{c}"
            for c, s in zip(shown["code"], shown["system"], strict=True)
        ]
        left.barh(labels, shown["count"], color="#cf222e")
        left.set_title("Most frequent invalid codes")
        left.set_xlabel("rows")
        counts = self.counts.iloc[::-1]
        colours = [
            "#1a7f37" if k == "valid" else "#9a6700" if k == "inactive" else "#cf222e"
            for k in counts.index
        ]
        right.barh([str(k) for k in counts.index], counts.to_numpy(), color=colours)
        right.set_title("Rows per reason")
        right.set_xlabel("rows")
        figure.tight_layout()
        plt.close(figure)
        return figure


class ValidationFrame(pd.DataFrame):
    """A column validation: one row per input row, with the columns result, message,
    display, issue and system, aligned to the input's index.

    ``.summary()`` counts the reasons and the most frequent invalid codes;
    ``.failure_cases`` keeps only the failing rows (with the code that failed).
    """

    _metadata: ClassVar[list[str]] = ["codes"]
    codes: pd.Series

    @property
    def _constructor(self) -> type[ValidationFrame]:
        return ValidationFrame

    def _checked_codes(self) -> pd.Series:
        """The codes behind the rows shown (a slice keeps the codes of its own rows)."""
        codes = getattr(self, "codes", None)
        if codes is None:
            return pd.Series(pd.NA, index=self.index, dtype=object)
        if len(codes) == len(self) and codes.index.equals(self.index):
            return codes
        if codes.index.is_unique:
            return codes.reindex(self.index)
        return pd.Series(pd.NA, index=self.index, dtype=object)

    def _is_complete(self) -> bool:
        return all(column in self.columns for column in COLUMNS)

    @property
    def failure_cases(self) -> pd.DataFrame:
        """The failing rows (result false, or missing), with the failing code first."""
        failing = ~self["result"].fillna(False).astype(bool)
        frame = pd.DataFrame(self[failing], copy=False)
        codes = self._checked_codes()[failing.to_numpy()].to_numpy(dtype=object)
        frame.insert(0, "code", pd.Series(codes, index=frame.index, dtype=object))
        return frame

    @property
    def reason(self) -> pd.Series:
        """The issue of each row, with ``valid`` for plainly valid rows."""
        return self["issue"].astype(object).where(self["issue"].notna(), "valid")

    def summary(self, top: int = 10) -> ValidationSummary:
        """Counts per reason ('valid' for plain valid rows) and the ``top`` invalid codes
        (missing values are counted as a reason, not listed as codes)."""
        counts = self.reason.value_counts()
        failures = self.failure_cases
        failures = failures[failures["issue"] != "missing"]
        if len(failures):
            grouped = failures.groupby(["code", "system", "issue"], dropna=False, sort=False)
            top_invalid = (
                grouped.size()
                .rename("count")
                .reset_index()
                .sort_values("count", ascending=False, kind="stable")
                .head(top)
                .reset_index(drop=True)
            )
        else:
            top_invalid = pd.DataFrame(columns=["code", "system", "issue", "count"])
        valid = int(self["result"].fillna(False).astype(bool).sum())
        return ValidationSummary(len(self), valid, counts, top_invalid)

    def _repr_html_(self) -> str | None:
        table = pd.DataFrame(self).head(20).to_html(na_rep="")
        if not self._is_complete():
            return table
        return (
            self.summary()._repr_html_() + "<details><summary>Rows</summary>" + table + "</details>"
        )


def to_report(frame: pd.DataFrame, codes: pd.Series) -> ValidationFrame:
    """Wrap a result frame and the codes it checked."""
    report = ValidationFrame(frame, copy=False)
    report.codes = codes
    return report
