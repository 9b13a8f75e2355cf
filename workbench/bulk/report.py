"""The result of validating a column: a DataFrame with a summary, the distinct codes with
their outcome and suggestion (``by_code``), failure cases, charts and exports."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import pandas as pd

from workbench.bulk.charting import BAR_COLOURS, BY_CODE, log_scale
from workbench.bulk.leading import leading_repr, ordered
from workbench.bulk.schema import VALIDATION
from workbench.charts import VegaLite
from workbench.extras import require
from workbench.marks import frame_formatters, frame_html, frame_text, visible

if TYPE_CHECKING:
    from workbench.bulk.fix import Fixed

COLUMNS = VALIDATION.names
#: The columns of ``failure_cases`` after the code: the issue and its message first, the
#: narrow result (false or NA there) last, as pandas keeps the last columns in a terminal.
FAILURE_COLUMNS = ["issue", "message", "display", "system", "result"]
#: The columns of ``ValidationSummary.top_invalid``.
TOP_INVALID = ["code", "count", "issue", "system"]
EXPORTS = {
    "csv": "text/csv",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "parquet": "application/vnd.apache.parquet",
}


def theme_colours() -> dict[str, str]:
    """The report's colours as JupyterLab theme variables (with light-theme fallbacks), so
    that HTML follows the light and the dark theme."""
    return {
        "valid": "var(--jp-success-color1, #1a7f37)",
        "warning": "var(--jp-warn-color1, #9a6700)",
        "invalid": "var(--jp-error-color1, #cf222e)",
        "muted": "var(--jp-ui-font-color2, #57606a)",
    }


@dataclass(frozen=True)
class ValidationSummary:
    """Counts per reason and the most frequent invalid codes of a column validation."""

    rows: int
    valid: int
    counts: pd.Series
    top_invalid: pd.DataFrame

    def _repr_html_(self) -> str:
        colours = theme_colours()
        share = f"{self.valid / self.rows:.1%}" if self.rows else "n/a"
        head = (
            f"<p><b style='color:{colours['valid']}'>{self.valid:,}</b> of {self.rows:,} rows "
            f"valid ({share}).</p>"
        )
        counts = self.counts.rename("rows").rename_axis("reason").reset_index()
        top = _frame_html(self.top_invalid) if len(self.top_invalid) else "<p>none</p>"
        return (
            f"<div class='workbench-summary'>{head}<div style='display:flex;gap:2em;"
            f"flex-wrap:wrap'><div><b>By reason</b>{_frame_html(counts)}</div>"
            f"<div><b>Most frequent invalid codes</b>{top}</div></div></div>"
        )

    def chart(
        self, *, top: int = 15, issue: str | None = None, by_code: pd.DataFrame | None = None
    ) -> VegaLite:
        """Bars of the rows per reason and of the most frequent failing codes (those of
        ``issue`` when given, its bar outlined): a Vega-Lite chart JupyterLab draws in its
        own theme, with tooltips; log-scaled when counts span more than two decades."""
        reasons = [
            {
                "reason": str(k),
                "rows": int(v),
                "kind": _kind(str(k)),
                "chosen": issue is None or str(k) == issue,
            }
            for k, v in self.counts.items()
        ]
        failing = by_code if by_code is not None else self.top_invalid
        codes = _failing_bars(failing, issue, top)
        palette = {
            "domain": ["valid", "warning", "invalid"],
            "range": [BAR_COLOURS[k] for k in ("valid", "warning", "invalid")],
        }

        def x_axis(values: list[int]) -> dict[str, Any]:
            axis: dict[str, Any] = {"field": "rows", "type": "quantitative", "title": "rows"}
            if log_scale(values):
                axis["scale"] = {"type": "log"}
                axis["title"] = "rows (log scale)"
            return axis

        by_reason = {
            "title": "Rows per reason",
            "data": {"values": reasons},
            "mark": {"type": "bar", "tooltip": True},
            "encoding": {
                "y": {"field": "reason", "type": "nominal", "sort": "-x", "title": None},
                "x": x_axis([int(str(r["rows"])) for r in reasons]),
                "color": {"field": "kind", "type": "nominal", "scale": palette, "legend": None},
                "opacity": {"condition": {"test": "datum.chosen", "value": 1}, "value": 0.35},
                "tooltip": [{"field": "reason"}, {"field": "rows", "format": ","}],
            },
            "width": 260,
        }
        top_codes = {
            "title": "Most frequent failing codes" + (f" ({issue})" if issue else ""),
            "data": {"values": codes},
            "mark": {"type": "bar", "tooltip": True, "color": palette["range"][2]},
            "encoding": {
                "y": {"field": "code", "type": "nominal", "sort": "-x", "title": None},
                "x": x_axis([int(str(c["rows"])) for c in codes]),
                "tooltip": [
                    {"field": "code"},
                    {"field": "rows", "format": ","},
                    {"field": "issue"},
                    {"field": "suggestion"},
                ],
            },
            "width": 320,
        }
        return VegaLite(
            {
                "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
                "hconcat": [by_reason, top_codes] if codes else [by_reason],
                "config": {"view": {"stroke": None}},
            }
        )

    def __repr__(self) -> str:
        return (
            f"ValidationSummary({self.valid:,} of {self.rows:,} valid)\n"
            f"{self.counts.to_string()}\n\nMost frequent invalid codes:\n"
            f"{plain_text(self.top_invalid[ordered(list(self.top_invalid.columns))], index=False)}"
        )

    def plot(self, top: int = 10) -> Any:
        """A matplotlib figure: bars of the top invalid codes and of the counts per reason,
        drawn for both JupyterLab themes: a transparent background, text and axes in a
        grey that reads on white and on black, the bars in the colours of ``chart`` (the
        Vega-Lite chart, which JupyterLab draws in its own theme). Codes are labelled with
        their odd whitespace visible (``␣male``)."""
        require("matplotlib", "notebook", "the summary's plot")
        import matplotlib.pyplot as plt

        with plt.rc_context(cast(Any, PLOT_STYLE)):  # its keys typed as Literals
            figure, (left, right) = plt.subplots(
                1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [3, 2]}
            )
            shown = self.top_invalid.head(top).iloc[::-1]
            labels = [
                f"{visible(c)}  ({s.rsplit('/', 1)[-1]})" if isinstance(s, str) else f"{visible(c)}"
                for c, s in zip(shown["code"], shown["system"], strict=True)
            ]
            left.barh(labels, shown["count"], color=BAR_COLOURS["invalid"])
            left.set_title("Most frequent invalid codes")
            left.set_xlabel("rows")
            counts = self.counts.iloc[::-1]
            colours = [BAR_COLOURS[_kind(str(k))] for k in counts.index]
            right.barh([str(k) for k in counts.index], counts.to_numpy(), color=colours)
            right.set_title("Rows per reason")
            right.set_xlabel("rows")
            figure.patch.set_alpha(0.0)
            for axes in (left, right):
                axes.set_facecolor("none")
            figure.tight_layout()
        plt.close(figure)
        return figure


#: A grey for text, ticks and axes that reads on JupyterLab's light and dark themes.
NEUTRAL = "#8b949e"
#: The matplotlib style of ``plot``: transparent, neutral grey text and frame.
PLOT_STYLE: dict[str, Any] = {
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.transparent": True,
    "text.color": NEUTRAL,
    "axes.labelcolor": NEUTRAL,
    "axes.edgecolor": NEUTRAL,
    "axes.titlecolor": NEUTRAL,
    "xtick.color": NEUTRAL,
    "ytick.color": NEUTRAL,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _failing_bars(failing: pd.DataFrame, issue: str | None, top: int) -> list[dict[str, Any]]:
    """The bars of the most frequent failing codes (of ``issue`` when given)."""
    failing = failing[failing["issue"].notna() & (failing["issue"] != "missing")]
    if "result" in failing:
        failing = failing[~failing["result"].fillna(False).astype(bool)]
    if issue is not None:
        failing = failing[failing["issue"] == issue]
    failing = failing.head(top)
    return [
        {
            "code": f"{visible(c)}  ({str(sy).rstrip('/').rsplit('/', 1)[-1]})"
            if isinstance(sy, str)
            else str(visible(c)),
            "rows": int(n),
            "issue": str(i),
            "suggestion": (None if "suggestion" not in failing or pd.isna(sg) else str(sg)),
        }
        for c, sy, n, i, sg in zip(
            failing["code"],
            failing["system"],
            failing["count"],
            failing["issue"],
            failing["suggestion"] if "suggestion" in failing else [None] * len(failing),
            strict=True,
        )
    ]


def _kind(reason: str) -> str:
    if reason == "valid":
        return "valid"
    return "warning" if reason == "inactive" else "invalid"


class MarkedFrame(pd.DataFrame):
    """A frame of codes (``failure_cases``) whose plain text and HTML show the odd
    whitespace of its code, display and suggestion columns (``␣male``), as pandas otherwise
    shows a frame; the data keeps the codes exactly."""

    @property
    def _constructor(self) -> type[MarkedFrame]:
        return MarkedFrame

    def to_string(self, *args: Any, **kwargs: Any) -> Any:
        """As ``DataFrame.to_string`` (and so ``repr``), with the marks."""
        return plain_text(self, *args, **kwargs)

    def _repr_html_(self) -> str | None:
        return str(
            pd.DataFrame.to_html(
                self,
                formatters=frame_formatters(self, MARKED),
                max_rows=pd.get_option("display.max_rows"),
                max_cols=pd.get_option("display.max_columns"),
                show_dimensions=pd.get_option("display.show_dimensions"),
                notebook=True,
            )
        )


class ValidationFrame(pd.DataFrame):
    """A column validation: one row per input row, with the columns result, message,
    display, issue and system, aligned to the input's index.

    ``.summary()`` counts the reasons and the most frequent invalid codes;
    ``.failure_cases`` keeps only the failing rows (with the code that failed).
    """

    _metadata: ClassVar[list[str]] = ["codes", "suggester", "revalidate"]
    codes: pd.Series
    suggester: Callable[[str | None, Any, str | None], Any] | None
    revalidate: Any

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
    def failure_cases(self) -> MarkedFrame:
        """The failing rows (result false, or missing): the failing code (printed and shown
        with its odd whitespace visible; the data is exact), then ``FAILURE_COLUMNS``."""
        failing = ~self["result"].fillna(False).astype(bool)
        shown = [c for c in FAILURE_COLUMNS if c in self.columns]
        shown += [c for c in self.columns if c not in shown]
        frame = MarkedFrame(pd.DataFrame(self[failing], copy=False)[shown], copy=False)
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
                .reset_index(drop=True)[TOP_INVALID]
            )
        else:
            top_invalid = pd.DataFrame(columns=TOP_INVALID)
        valid = int(self["result"].fillna(False).astype(bool).sum())
        return ValidationSummary(len(self), valid, counts, top_invalid)

    def groups(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows grouped by (system, code, issue), with no Python per row: each row's
        group id, and the first row of each group (``by_code`` and ``fix`` answer per
        group)."""
        combined = np.zeros(len(self), dtype=np.int64)
        for column in (self["system"], self._checked_codes(), self["issue"]):
            part = _factor(column)
            combined = combined * (int(part.max(initial=-1)) + 2) + part + 1
        ids = np.asarray(pd.factorize(combined)[0], dtype=np.int64)
        _, first = np.unique(ids, return_index=True)
        return ids, first

    def by_code(
        self, *, failures_only: bool = False, suggest: bool = True, suggest_limit: int = 1000
    ) -> CodeTable:
        """One row per distinct (system, code) and outcome: ``count`` rows, their ``share``
        of all rows, ``result``, ``issue``, ``message``, ``display``, ``suggestion`` (the
        code that was probably meant, also said in the message as "did you mean …?"; never
        applied: see ``fix``) and ``suggested_display``, the suggestion's display. Sorted
        by count, most frequent first. ``failures_only`` keeps the failing codes;
        suggestions are looked for the ``suggest_limit`` most frequent failing codes.
        """
        if not self._is_complete():
            raise ValueError("by_code needs a complete validate_column result")
        codes = self._checked_codes()
        ids_array, first = self.groups()
        counts = np.bincount(ids_array, minlength=len(first))

        def at_first(column: pd.Series) -> np.ndarray:
            return np.asarray(column.iloc[first].astype(object), dtype=object)

        rows = pd.DataFrame(
            {
                "system": at_first(self["system"]),
                "code": at_first(codes),
                "count": counts,
                "share": counts / max(len(self), 1),
                "result": self["result"].array[first],
                "issue": at_first(self["issue"]),
                "message": at_first(self["message"]),
                "display": at_first(self["display"]),
                "suggestion": np.full(len(first), None, dtype=object),
                "suggested_display": np.full(len(first), None, dtype=object),
            }
        )
        rows = rows.sort_values(
            ["count", "code"], ascending=[False, True], kind="stable", na_position="last"
        ).reset_index(drop=True)
        failing = ~rows["result"].fillna(False).astype(bool)
        if failures_only:
            rows = rows[failing].reset_index(drop=True)
            failing = failing[failing].reset_index(drop=True)
        suggester = getattr(self, "suggester", None)
        if suggest and suggester is not None:
            messages = rows["message"].to_numpy(dtype=object).copy()
            suggestions = rows["suggestion"].to_numpy(dtype=object).copy()
            displays = rows["suggested_display"].to_numpy(dtype=object).copy()
            asked = np.flatnonzero(failing.to_numpy())[:suggest_limit]
            keys = [(rows.at[i, "system"], rows.at[i, "code"], rows.at[i, "issue"]) for i in asked]
            many = getattr(suggester, "many", None)  # (a Suggester asks them all at once)
            answers = many(keys) if many else [suggester(*key) for key in keys]
            for i, found in zip(asked, answers, strict=True):
                if found is not None:
                    suggestions[i], displays[i] = found.code, found.display
                    text = found.text()
                    messages[i] = f"{messages[i]}; {text}" if messages[i] else text.capitalize()
            rows["suggestion"] = suggestions
            rows["suggested_display"] = displays
            rows["message"] = messages
        return CodeTable(rows[BY_CODE])

    def fix(
        self,
        data: pd.Series | pd.DataFrame | None = None,
        *,
        kinds: Sequence[str] | str = ("whitespace", "case", "dotted", "map"),
    ) -> Fixed:
        """Apply the safe suggestions of the ``kinds`` asked for and validate again.

        ``kinds``: ``whitespace`` (surrounding or doubled whitespace removed), ``case`` (a
        case variant), ``dotted`` (``E119`` ↔ ``E11.9``), ``map`` (a loaded ConceptMap's
        target at ``equal``/``equivalent`` strength; with a system column, its system too).
        An edit-distance guess is never applied. ``data`` is what was validated (by default
        the very data given to ``validate_column``); it is never changed in place.

        Returns a ``Fixed``: ``.data`` (a fixed copy, same index), ``.audit`` (before, after,
        kind, row, column, why, map: one row per cell changed), ``.report`` (the new
        validation), ``.fixed`` (rows per kind) and ``.remaining`` (codes still failing).
        Raises InvalidRequestError for an unknown kind, or data whose index differs from
        the report's.
        """
        from workbench.bulk.fix import fix_report

        return fix_report(self, data, kinds)

    def against(self, to_version: str, *, from_version: str | None = None) -> Any:
        """The ``Impact`` of release ``to_version`` on the validated data (its one
        system), from ``from_version`` (default: the version validation used)."""
        from workbench.bulk.impact import against

        return against(self, to_version, from_version)

    def export(self, fmt: str = "csv", *, what: str = "by_code") -> bytes:
        """The distinct codes (``what="by_code"``) or the failing rows (``"failures"``) as
        ``csv``, ``xlsx`` or ``parquet`` bytes, codes exactly as given."""
        frame = self.by_code() if what == "by_code" else self.failure_cases
        return export_frame(pd.DataFrame(frame), fmt)

    def chart(self, *, top: int = 15, issue: str | None = None) -> VegaLite:
        """An interactive bar chart (Vega-Lite, drawn by JupyterLab itself, in its light or
        dark theme): rows per reason and the most frequent failing codes (of one ``issue``
        when given); a log scale when the counts span more than two decades."""
        codes = self.by_code(failures_only=True, suggest_limit=top)
        return self.summary().chart(top=top, issue=issue, by_code=codes)

    # the report's file forms replace the frame's: pd.DataFrame(report).to_html() is the rows
    def to_html(  # type: ignore[override]
        self, path: str | Path, *, title: str = "Validation report"
    ) -> Path:
        """Write one self-contained HTML page (no network, no script): the summary, a chart
        (inline SVG), the rows per reason and the by-code table with suggestions, in the
        reader's light or dark colour scheme (``workbench.bulk.page``). Returns the path."""
        from workbench.bulk.page import MAX_PAGE_CODES, write_html
        from workbench.bulk.sharing import content_of

        return write_html(content_of(self, title, MAX_PAGE_CODES), path)

    def to_excel(  # type: ignore[override, misc]
        self, path: str | Path, *, title: str = "Validation report"
    ) -> Path:
        """Write an ``.xlsx`` workbook (needs openpyxl): a ``Summary`` sheet and a ``By
        code`` sheet, codes as text (``workbench.bulk.sharing``). Returns the path."""
        from workbench.bulk.sharing import content_of, write_excel

        return write_excel(content_of(self, title, 1000), path)

    def to_string(self, *args: Any, **kwargs: Any) -> Any:
        """As ``DataFrame.to_string`` (and so ``repr`` and ``print``), with the displays'
        odd whitespace made visible as in the HTML; the data keeps them exactly."""
        return plain_text(self, *args, **kwargs)

    def __repr__(self) -> str:
        """The rows with the checked code first, then the issue; messages last, elided."""
        shown = pd.DataFrame(self, copy=False)
        if "code" not in shown.columns:
            shown = shown.assign(code=self._checked_codes().to_numpy(dtype=object))
        return leading_repr(shown, MARKED)

    def _repr_html_(self) -> str | None:
        table = _frame_html(pd.DataFrame(self).head(20))
        if not self._is_complete():
            return table
        codes = self.by_code(suggest_limit=20)
        return (
            self.summary()._repr_html_()
            + "<details open><summary><b>By code</b> (most frequent first)</summary>"
            + str(codes._repr_html_())
            + "</details><details><summary>Rows</summary>"
            + table
            + "</details>"
        )


def _factor(column: pd.Series) -> np.ndarray:
    """Integer ids of a column's values (missing values -1), categoricals without a pass."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return np.asarray(column.cat.codes, dtype=np.int64)
    return np.asarray(pd.factorize(column, use_na_sentinel=True)[0], dtype=np.int64)


class CodeTable(pd.DataFrame):
    """``ValidationFrame.by_code()``: one row per distinct code and outcome. Its HTML shows
    codes with their odd whitespace made visible; its data keeps them exactly."""

    @property
    def _constructor(self) -> type[CodeTable]:
        return CodeTable

    def to_export(self, fmt: str = "csv") -> bytes:
        """This table as ``csv``, ``xlsx`` or ``parquet`` bytes."""
        return export_frame(pd.DataFrame(self), fmt)

    def to_string(self, *args: Any, **kwargs: Any) -> Any:
        """As ``DataFrame.to_string`` (and so ``repr`` and ``print``), with the codes,
        displays and suggestions' odd whitespace made visible as in the HTML (``␣male``);
        the data keeps them exactly."""
        return plain_text(self, *args, **kwargs)

    def __repr__(self) -> str:
        """The code, count, issue and suggestion first; messages last and elided."""
        return leading_repr(self, MARKED)

    def _repr_html_(self) -> str | None:
        shown = pd.DataFrame(self).head(50).copy()
        if "share" in shown:
            shown["share"] = [f"{v:.1%}" if isinstance(v, float) else v for v in shown["share"]]
        more = f"<p>{len(self) - 50:,} more codes</p>" if len(self) > 50 else ""
        return _frame_html(shown) + more


#: The columns whose text is shown with odd whitespace made visible (HTML and plain text).
MARKED = ("code", "display", "suggestion", "suggested_display")


def _frame_html(frame: pd.DataFrame) -> str:
    """A frame's HTML with codes and displays shown faithfully (odd whitespace visible)."""
    return frame_html(frame, MARKED)


def plain_text(frame: pd.DataFrame, *args: Any, **kwargs: Any) -> Any:
    """``frame.to_string(...)`` with odd whitespace made visible in its code, display and
    suggestion columns, as in the HTML (the data itself is not changed)."""
    return frame_text(frame, MARKED, *args, **kwargs)


def export_frame(frame: pd.DataFrame, fmt: str) -> bytes:
    """A frame as ``csv``, ``xlsx`` (needs openpyxl) or ``parquet`` bytes."""
    plain = frame.astype({c: object for c in frame.columns if str(frame[c].dtype) == "category"})
    buffer = io.BytesIO()
    if fmt == "csv":
        buffer.write(plain.to_csv(index=False).encode())
    elif fmt == "xlsx":
        require("openpyxl", "quality", "Excel exports")
        plain.to_excel(buffer, index=False)
    elif fmt == "parquet":
        plain.to_parquet(buffer, index=False)
    else:
        raise ValueError(f"Unknown export format {fmt!r}: use one of {sorted(EXPORTS)}")
    return buffer.getvalue()


class Revalidate:
    """What a report needs to fix its data: the data it validated (``source``), the code and
    system columns, and ``run``, which validates data of the same shape the same way. A
    pickled report keeps none of it (it holds the engine): it unpickles without ``fix``."""

    def __init__(
        self,
        source: pd.Series | pd.DataFrame,
        code: str | None,
        system: str | None,
        run: Callable[[Any], ValidationFrame],
        engine: Any = None,
    ) -> None:
        self.engine = engine  # the Terminology that validated (``against``)
        self.source = source
        self.code = code
        self.system = system if isinstance(source, pd.DataFrame) and system in source else None
        self.run = run

    def __reduce__(self) -> tuple[Any, ...]:
        return (_nothing, ())


def _nothing() -> None:
    return None


def to_report(
    frame: pd.DataFrame,
    codes: pd.Series,
    suggester: Callable[[str | None, Any, str | None], Any] | None = None,
    revalidate: Revalidate | None = None,
) -> ValidationFrame:
    """Wrap a result frame, the codes it checked, where suggestions come from, and how to
    validate fixed data again (``fix``)."""
    report = ValidationFrame(frame, copy=False)
    report.codes = codes
    report.suggester = suggester
    report.revalidate = revalidate
    return report
