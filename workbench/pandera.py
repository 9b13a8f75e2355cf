"""pandera checks: ``in_value_set(url)`` is a ``pandera.Check`` for pandas and polars schemas
whose rows are validated by ``Workbench.validate_column`` (the bulk validation itself, not a
copy of it): each failure case names its row (pandera's ``index``) and says the code and the
reason (``'bogus' unknown-code``), and the check's error, shown in a ``SchemaError``, is the
summary (how many rows are valid, and the rows per reason).

Needs pandera (the ``quality`` extra); ``import workbench`` does not import it.

>>> import pandas as pd, pandera.pandas as pa
>>> from workbench import Workbench
>>> wb = Workbench()
>>> _ = wb.load("valuesets", progress=False)
>>> schema = pa.DataFrameSchema({"gender": pa.Column(str, in_value_set(
...     "http://hl7.org/fhir/ValueSet/administrative-gender", workbench=wb))})
>>> try:
...     schema.validate(pd.DataFrame({"gender": ["male", "mail"]}))
... except pa.errors.SchemaError as error:
...     print(error.failure_cases[["index", "failure_case"]].to_string(index=False))
 index        failure_case
     1 'mail' unknown-code
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from workbench.extras import require

with warnings.catch_warnings():
    # pandera tries pyspark.pandas in each of its pandas modules when pyspark is installed,
    # and pyspark 4 warns about pandas 3: its backends are loaded here, once, warning-free
    warnings.filterwarnings("ignore", "PySpark does not yet fully support", FutureWarning)
    require("pandera", "quality", "workbench.pandera")
    import pandera.api.checks
    import pandera.backends.pandas.builtin_checks
    import pandera.backends.pandas.components
    import pandera.backends.pandas.container
    import pandera.pandas
    from pandera.api.base.checks import CheckResult
    from pandera.backends.pandas.checks import PandasCheckBackend

from workbench.bulk.verdicts import Verdicts, row_verdicts
from workbench.selection import current
from workbench.workbench import Workbench


class ValueSetCheck(pandera.api.checks.Check):
    """The check ``in_value_set`` returns: a ``pandera.Check`` whose backends turn the
    column's validation into pandera's pass/fail rows and failure cases."""

    #: the value set the check names in its summary
    valueset_url: str = ""
    #: whether a missing code passes (the check's own ``ignore_na``: pandera's is kept off,
    #: so pandera does not copy the column without its nulls before the check sees it)
    skip_missing: bool = True

    def verdicts(self, data: Any) -> RowResults:
        """Each row's pass, the failing rows and ``'code' reason`` for each of them, of
        ``data`` (what the check function validates); sets the check's error to the
        summary."""
        found = self._check_fn(data)
        if isinstance(found, Verdicts):
            return self._from_verdicts(found)
        report, codes = found
        frame = report if isinstance(report, pd.DataFrame) else report.to_pandas()
        self.error = summary_line(frame, self.valueset_url)
        result = frame["result"]
        passed = np.asarray(result.to_numpy(dtype=bool, na_value=self.skip_missing), dtype=bool)
        rows = np.flatnonzero(~passed)
        return RowResults(passed, rows, failure_cases(codes.iloc[rows], frame["issue"].iloc[rows]))

    def _from_verdicts(self, found: Verdicts) -> RowResults:
        """``verdicts`` from the answer table's entries: one text per failing entry."""
        passing = found.passing(self.skip_missing)
        passed = passing.take(found.position)
        rows = np.flatnonzero(~passed)
        failing = found.position.take(rows)  # the failing rows' entries
        valid, reasons = found.summary(failing, self.skip_missing)
        self.error = summary_text(self.valueset_url, valid, len(found.position), reasons)
        entries = np.flatnonzero(np.bincount(failing, minlength=len(passing)))
        texts = [
            "missing" if entry == 0 else _case(found.codes[entry], found.issues[entry])
            for entry in entries
        ]
        text_ids, categories = pd.factorize(np.array(texts, dtype=object))
        lookup = np.full(len(passing), -1, dtype=np.int64)
        lookup[entries] = text_ids
        cases = pd.Categorical.from_codes(lookup.take(failing), categories=_texts(categories))
        return RowResults(passed, rows, cases)


class RowResults(NamedTuple):
    """A column's verdicts as pandera's backends take them: each row's pass (``passed``),
    the failing rows' positions (``rows``, ascending) and their failure cases (``cases``,
    ``'code' reason``, in the order of ``rows``)."""

    passed: np.ndarray
    rows: np.ndarray
    cases: pd.Categorical


def failure_cases(codes: pd.Series, issues: pd.Series) -> pd.Categorical:
    """The failing rows' texts (``'mail' unknown-code``, ``missing``), one text made per
    distinct code and reason: a categorical, which pandera's message joins without a
    Python call per row."""
    code_ids, distinct_codes = pd.factorize(codes, use_na_sentinel=False)
    issue_ids, distinct_issues = pd.factorize(issues, use_na_sentinel=False)
    keys = code_ids.astype(np.int64) * max(len(distinct_issues), 1) + issue_ids
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    texts = [_case(distinct_codes[code_ids[row]], distinct_issues[issue_ids[row]]) for row in first]
    text_ids, categories = pd.factorize(np.array(texts, dtype=object))
    return pd.Categorical.from_codes(text_ids[inverse], categories=_texts(categories))


#: the failure cases' categories: text held as Python strings, so that pandera's message, which
#: maps each case through ``str`` and joins them, reads them back without converting each
#: failing row from Arrow (3.8 ms, not 14 ms, for 90,000 cases; pandas keeps the storage)
TEXTS = pd.StringDtype("python", na_value=np.nan)


def _texts(categories: np.ndarray) -> pd.Index:
    """The distinct failure texts as categories of ``TEXTS``."""
    return pd.Index(categories, dtype=TEXTS)


def _case(code: Any, issue: Any) -> str:
    """A failure case: ``'mail' unknown-code``, or ``missing`` for a missing code."""
    return "missing" if code is None or code is pd.NA or code != code else f"{code!r} {issue}"


def in_value_set(
    url: str | Mapping[str, Any],
    *,
    workbench: Workbench | None = None,
    code: str | None = None,
    system: str | None = None,
    system_column: str | None = None,
    display: str | None = None,
    abstract: bool | None = None,
    ignore_na: bool = True,
) -> ValueSetCheck:
    """A pandera ``Check`` that the codes are in the value set ``url`` (a canonical URL or a
    ValueSet), with ``validate_code``'s semantics (``validate_column``'s arguments).

    On a ``Column`` it checks that column; with ``code`` (a column name) it is a schema-wide
    check, where ``system_column``/``display`` name columns of systems and displays
    (``system`` is the system URI of every row, on either kind). The
    Workbench is ``workbench``, else the one chosen with ``workbench.use(wb)``, else the only
    one. Missing codes pass when ``ignore_na`` (pandera's default: nullability is the
    column's ``nullable``), else they fail with the reason ``missing``.
    """
    wb = current() if workbench is None else workbench
    if not isinstance(wb, Workbench):
        raise TypeError(f"workbench= takes a Workbench, not {type(wb).__name__}")

    def validate(data: Any) -> Verdicts | tuple[Any, pd.Series]:
        column = _column_of(data, code)
        codes = column[code] if code is not None else column
        if code is None and display is None and system_column is None:  # one column of codes
            found = row_verdicts(wb.terminology, url, codes, system=system, abstract=abstract)
            if found is not None:
                return found
        report = wb.validate_column(
            column,
            url,
            code=code,
            system=system,
            system_column=system_column,
            display=display,
            abstract=abstract,
        )
        return report, codes if isinstance(codes, pd.Series) else codes.to_pandas()

    name = url if isinstance(url, str) else str(url.get("url", "a ValueSet"))
    check = ValueSetCheck(
        validate, name="in_value_set", error=f"in value set {name}", ignore_na=False
    )
    check.valueset_url = name
    check.skip_missing = ignore_na
    return check


def _column_of(data: Any, code: str | None) -> Any:
    """What ``validate_column`` gets: the pandas Series or frame, or pandera's polars data
    (its lazy frame) collected."""
    if isinstance(data, pd.Series | pd.DataFrame):
        return data
    if code is not None:
        return data.lazyframe.collect()
    return data.lazyframe.select(data.key).collect().to_series(0)


def summary_line(report: pd.DataFrame, url: str) -> str:
    """``in value set URL: 3 of 5 rows valid (60.00%); unknown-code 1, not-in-vs 1``."""
    counts = report["issue"].value_counts(dropna=True)  # a valid row has no issue
    valid = int(np.count_nonzero(report["result"].to_numpy(dtype=bool, na_value=False)))
    reasons = {str(k): int(v) for k, v in counts.items() if v}
    return summary_text(url, valid, len(report), reasons)


def summary_text(url: str, valid: int, rows: int, reasons: Mapping[str, int]) -> str:
    """The summary line from its counts (``reasons``: rows per issue, most first)."""
    share = 100.0 * valid / rows if rows else 100.0
    failing = ", ".join(f"{k} {v:,}" for k, v in reasons.items() if v)
    return f"in value set {url}: {valid:,} of {rows:,} rows valid ({share:.2f}%)" + (
        f"; {failing}" if failing else ""
    )


class PandasValueSetBackend(PandasCheckBackend):
    """pandera's pandas check backend for ValueSetCheck: the failure cases are the failing
    rows' code and reason, indexed by row."""

    check: ValueSetCheck

    def apply(self, check_obj: Any) -> Any:
        """Each row's pass and the failing rows' texts."""
        return self.check.verdicts(check_obj)

    def postprocess(self, check_obj: Any, check_output: Any) -> CheckResult:
        """Pass per row, and the failure cases as ``'code' reason`` texts."""
        found: RowResults = check_output
        output = pd.Series(found.passed, index=check_obj.index)
        failures = pd.Series(found.cases, index=check_obj.index.take(found.rows))
        return CheckResult(output, not len(found.rows), check_obj, failures)


ValueSetCheck.register_backend(pd.Series, PandasValueSetBackend)
ValueSetCheck.register_backend(pd.DataFrame, PandasValueSetBackend)
if importlib.util.find_spec("polars") is not None:
    from workbench.pandera_polars import register

    register(ValueSetCheck)
