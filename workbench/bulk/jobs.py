"""What a backend is given: one request per kind of bulk work, and the backend contract.

A request holds the call's arguments and the engine it runs against, and makes what the
backends need from it (a checker, the engine shipped to workers with the call, a
translator, a suggester), so no backend reaches into the engine itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from workbench.bulk.checker import Checker, make_checker, make_suggester
from workbench.bulk.shipping import ShippedChecker
from workbench.bulk.translate import ColumnTranslator
from workbench.terminology.engine import Terminology
from workbench.terminology.service import EngineService

if TYPE_CHECKING:
    import pandas as pd

    from workbench.bulk.suggest import Suggester


@dataclass(frozen=True)
class ValidateColumn:
    """A ``validate_column`` call: the value set, the column arguments, the engine."""

    engine: Terminology
    valueset: str | Mapping[str, Any]
    code: str | None = None
    system: str | None = None
    display: str | None = None
    abstract: bool | None = None
    progress: bool = False

    def checker(self) -> Checker:
        """A checker over the engine (what it learns is kept with the value set)."""
        return make_checker(self.engine, self.valueset, self.abstract)

    def shipped_checker(self) -> ShippedChecker:
        """The checker to make on workers, with the engine itself (see ``shipping``)."""
        return ShippedChecker(self.engine, self.valueset, self.abstract)

    def suggester(self) -> Suggester:
        """Where a report's "did you mean" comes from."""
        return make_suggester(self.engine, self.valueset)


@dataclass(frozen=True)
class TranslateColumn:
    """A ``translate_column`` call: the map, the column arguments, the engine service."""

    service: EngineService
    url: str | None
    code: str | None = None
    system: str | None = None
    target_system: str | None = None
    reverse: bool = False

    def translator(self) -> ColumnTranslator:
        """A translator for this call (the maps chosen once)."""
        return ColumnTranslator(
            self.service.conceptmaps_for(self.url),
            self.url,
            self.service.display_of,
            self.service.terminology.codesystem,
            target_system=self.target_system,
            reverse=self.reverse,
        )


class Backend(Protocol):
    """A dataframe library: whether it takes some data, and the two kinds of bulk work."""

    def handles(self, data: Any) -> bool:
        """Whether ``data`` is this library's DataFrame or Series."""

    def validate(self, job: ValidateColumn, data: Any) -> Any:
        """``validate_column`` of ``data``."""

    def translate(self, job: TranslateColumn, data: Any) -> Any:
        """``translate_column`` of ``data``."""

    def collect(self, job: ValidateColumn, data: Any, result: Any) -> tuple[pd.DataFrame, Any]:
        """A ``validate`` result and the input columns it is about, as pandas (a frame and
        a DataFrame or Series), for ``wb.report``."""

    def counts(self, data: Any, column: str | None) -> pd.DataFrame:
        """The distinct codes of ``data``'s column ``column`` (the Series itself when
        None) with their rows (``pandas_backend.code_counts``): ``impact``."""
