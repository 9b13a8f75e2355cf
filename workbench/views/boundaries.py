"""``lowBoundary()`` and ``highBoundary()`` of dates, dateTimes, times and decimals.

A partial date, time or dateTime stands for a range; its boundaries are the first and last
instants of it, to nanoseconds, as the SQL on FHIR tests write them: ``2010-10`` is
``2010-10-01T00:00:00.000000000+14:00`` to ``2010-10-31T23:59:59.999999999-12:00`` (a
dateTime with no zone spans every zone), a time ``12:34`` is ``12:34:00.000000000`` to
``12:34:59.999999999``, a date ``2003`` is ``2003-01-01`` to ``2003-12-31``.

A decimal's boundaries follow the precision it was written with (8 decimals, computed
exactly from its text): ``1.587`` is ``1.58700000`` to ``1.58799999``, ``15.080`` is
``15.08000000`` to ``15.08099999``; a value with more than 15 significant digits has no
boundary (empty).
"""

from __future__ import annotations

import polars as pl

from workbench.views.errors import ViewDefinitionError
from workbench.views.values import Value, kind

_DATE = r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?"
_DATETIME = _DATE + r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?(Z|[+-]\d{2}:\d{2})?$"
_TIME = r"^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?$"
_PRECISION = 8
_SIGNIFICANT = 15


def boundary(value: Value, high: bool) -> Value:
    """The low or high boundary of a one-valued date, dateTime, instant, time or decimal."""
    match kind(value.type):
        case "date":
            return Value(_date(value.expr, high), "date", False)
        case "dateTime":
            return Value(_datetime(value.expr, high), "dateTime", False)
        case "time":
            return Value(_time(value.expr, high), "time", False)
        case "decimal" | "integer":
            return Value(_decimal(value.expr, high), "decimal", False)
        case "":
            return value
    raise ViewDefinitionError(
        f"{'high' if high else 'low'}Boundary() applies to dates, times and decimals, "
        f"not to a {value.type}"
    )


def _part(text: pl.Expr, pattern: str, group: int) -> pl.Expr:
    return text.str.extract(pattern, group)


def _date_of(text: pl.Expr, pattern: str, high: bool) -> pl.Expr:
    year, month, day = (_part(text, pattern, g) for g in (1, 2, 3))
    month = month.fill_null("12" if high else "01")
    first = pl.concat_str([year, pl.lit("-"), month, pl.lit("-01")])
    last = first.str.to_date("%Y-%m-%d", strict=False).dt.month_end().dt.to_string("%Y-%m-%d")
    return (
        pl.when(day.is_not_null())
        .then(pl.concat_str([year, pl.lit("-"), month, pl.lit("-"), day]))
        .otherwise(last if high else first)
    )


def _date(text: pl.Expr, high: bool) -> pl.Expr:
    pattern = _DATE + "$"
    return pl.when(text.str.contains(pattern)).then(_date_of(text, pattern, high))


def _clock(
    hour: pl.Expr, minute: pl.Expr, second: pl.Expr, fraction: pl.Expr, high: bool
) -> pl.Expr:
    """``HH:MM:SS.fffffffff`` from parts that may be missing (filled low or high)."""
    second = second.fill_null("59" if high else "00")
    pad = "9" if high else "0"
    fraction = fraction.fill_null("").str.pad_end(9, pad).str.slice(0, 9)
    return pl.concat_str([hour, pl.lit(":"), minute, pl.lit(":"), second, pl.lit("."), fraction])


def _datetime(text: pl.Expr, high: bool) -> pl.Expr:
    p = _DATETIME
    hour = _part(text, p, 4)
    clock = _clock(hour, _part(text, p, 5), _part(text, p, 6), _part(text, p, 7), high)
    whole_day = pl.lit("23:59:59.999999999" if high else "00:00:00.000000000")
    zone = _part(text, p, 8).fill_null("-12:00" if high else "+14:00")
    found = pl.concat_str(
        [_date_of(text, p, high), pl.lit("T"),
         pl.when(hour.is_not_null()).then(clock).otherwise(whole_day), zone]
    )  # fmt: skip
    return pl.when(text.str.contains(p)).then(found)


def _time(text: pl.Expr, high: bool) -> pl.Expr:
    p = _TIME
    found = _clock(_part(text, p, 1), _part(text, p, 2), _part(text, p, 3), _part(text, p, 4), high)
    return pl.when(text.str.contains(p)).then(found)


def _decimal(text: pl.Expr, high: bool) -> pl.Expr:
    """A decimal's boundary from its text, exactly (8 decimals): ``1.587`` is ``1.58700000``
    to ``1.58799999`` (its last digit's range, less one in the eighth place)."""
    text = text.cast(pl.String)
    value = text.cast(pl.Decimal(38, _PRECISION), strict=False)
    digits = text.str.replace_all(r"[^0-9]", "").str.strip_chars_start("0").str.len_chars()
    decimals = text.str.extract(r"\.(\d+)$", 1).str.len_chars().fill_null(0)
    if high:
        step = pl.lit(10.0).pow(-decimals.cast(pl.Float64)) - pl.lit(10.0**-_PRECISION)
        step = step.cast(pl.Decimal(38, _PRECISION))
        value = pl.when(value < 0).then(value - step).otherwise(value + step)
    fits = (digits <= _SIGNIFICANT) & (decimals <= _PRECISION)
    return pl.when(fits).then(value.cast(pl.String))
