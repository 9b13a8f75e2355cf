"""The result of validating a code: ``ValidationResult`` and its ``Issue``s.

A code that fails is a ``ValidationResult`` with ``result=False``, a message and a stable
``issue``; it never raises (``workbench.terminology.validate.coding`` decides). The issues (also
the ``issue`` column of bulk validation):

========================  =========  ===================================================
issue                     result     meaning
========================  =========  ===================================================
None                      True       valid
``inactive``              True       valid, but the concept is inactive (a warning)
``not-in-vs``             False      a real code of a known system, not in the value set
``unknown-code``          False      the code is not in its code system
``unknown-system``        False      the system is not loaded, missing and not inferable
``invalid-display``       False      the display is none of the concept's displays
``abstract``              False      an abstract code, and ``abstract`` was not allowed
``missing``               False      no code at all
``version``               False      the coding's version is not the one the value set
                                     pins, or not the one ``check-system-version`` allows
``unknown-valueset``      False      a value set the value set imports cannot be found
========================  =========  ===================================================

Each result also carries the outputs the reference terminology servers give (code, system,
version, display, inactive, status, x-caused-by-unknown-system, normalized-code) and its
``issues``, each with a tx-issue-type code and the FHIRPath expression of the input element
it is about; ``message`` joins the texts of every error (of every warning when valid).
"""

from __future__ import annotations

import dataclasses
import html
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from workbench.frozen import fast_init
from workbench.marks import visible

REASONS = (
    "not-in-vs",
    "unknown-code",
    "unknown-system",
    "invalid-display",
    "abstract",
    "inactive",
    "missing",
    "version",
    "unknown-valueset",
)
# FHIR tx-issue-type codes (http://hl7.org/fhir/tools/CodeSystem/tx-issue-type) per reason.
_TX_TYPE = {
    "not-in-vs": "not-in-vs",
    "unknown-code": "invalid-code",
    "unknown-system": "not-found",
    "invalid-display": "invalid-display",
    "abstract": "code-rule",
    "inactive": "code-comment",
    "missing": "invalid-code",
    "version": "vs-invalid",
    "unknown-valueset": "not-found",
}

# R4's canonical (``\S*``, ASCII classes): a url and a version sent with a space in them
# (a FHIR string may have one) name no canonical, so the outputs typed canonical leave them
# out (the message names them).
_CANONICAL = re.compile(r"[^ \t\n\r\f\v]*")


TX_ISSUE_TYPE = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
# OperationOutcome.issue.code for each tx-issue-type code, as the reference servers use them.
_OO_TYPE = {
    "not-in-vs": "code-invalid",
    "this-code-not-in-vs": "code-invalid",
    "invalid-code": "code-invalid",
    "invalid-display": "invalid",
    "display-comment": "invalid",
    "code-rule": "business-rule",
    "code-comment": "business-rule",
    "status-check": "business-rule",
    "not-found": "not-found",
    "cannot-infer": "not-found",
    "vs-invalid": "invalid",
    "version-error": "exception",
    "process-note": "informational",
}
# The element of the validated input each reason is about ("" is the whole coding).
_ELEMENT: dict[str, str | None] = {
    "not-in-vs": "code",
    "unknown-code": "code",
    "unknown-system": "system",
    "invalid-display": "display",
    "abstract": "code",
    "inactive": "",
    "missing": "code",
    "version": "version",
    "unknown-valueset": None,  # about a resource the request uses, not an input element
}


@fast_init
@dataclass(frozen=True, slots=True)
class Issue:
    """One finding of a validation: severity, tx-issue-type code, text and reason.

    ``element`` is the part of the input it is about (``code``, ``system``, ``display``,
    ``version``, or ``""`` for the whole coding) and ``path`` where that input sits
    (``""`` for the code/system parameters, ``Coding``, ``CodeableConcept.coding[1]``);
    together they give the FHIRPath ``expression`` of the OperationOutcome issue.

    >>> Issue("error", "invalid-display", "Wrong display", "invalid-display", "display",
    ...       "CodeableConcept.coding[1]").expression
    'CodeableConcept.coding[1].display'
    """

    severity: str
    code: str
    text: str
    reason: str
    element: str | None = "code"
    path: str = ""

    @property
    def type(self) -> str:
        """The OperationOutcome ``issue.code`` (``code-invalid``, ``not-found`` …)."""
        return _OO_TYPE.get(self.code, "invalid")

    @property
    def expression(self) -> str | None:
        """Where the issue is, as a FHIRPath expression over the operation's input (None for
        an issue about a resource the request uses, such as a status-check)."""
        if self.element is None:
            return None
        if not self.path:
            return self.element or "code"
        return f"{self.path}.{self.element}" if self.element else self.path

    def at(self, path: str) -> Issue:
        """The same issue, for an input found at ``path``."""
        return dataclasses.replace(self, path=path)

    def to_fhir(self) -> dict[str, Any]:
        """The ``OperationOutcome.issue`` element."""
        found: dict[str, Any] = {
            "severity": self.severity,
            "code": self.type,
            "details": {
                "coding": [{"system": TX_ISSUE_TYPE, "code": self.code}],
                "text": self.text,
            },
        }
        where = self.expression
        if where is not None:
            found["location"] = [where]
            found["expression"] = [where]
        return found


class Suggestion(NamedTuple):
    """A code that was probably meant (never applied by itself): the code, its display,
    why it is suggested and, for a ConceptMap match, the target ``system``, the ``map``
    (``url|version``) and its ``equivalence``.

    >>> Suggestion("E11.9", "Type 2 diabetes", "dotted/undotted variant")
    Suggestion(code='E11.9', display='Type 2 diabetes', why='dotted/undotted variant')
    >>> Suggestion("female", "Female", "ConceptMap match (equal)", "http://g", "http://m", "equal")
    ... # doctest: +NORMALIZE_WHITESPACE
    Suggestion(code='female', display='Female', why='ConceptMap match (equal)', system='http://g',
        map='http://m', equivalence='equal')
    """

    code: str
    display: str | None
    why: str
    system: str | None = None
    map: str | None = None
    equivalence: str | None = None

    def __repr__(self) -> str:
        """The fields that are set (a map match names its system, map and equivalence)."""
        shown = [f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True)]
        return f"Suggestion({', '.join(shown[:3] if self.map is None else shown)})"

    def text(self) -> str:
        """``did you mean 'E11.9' (Type 2 diabetes)?``, codes with odd whitespace visible."""
        shown = f" ({self.display})" if self.display else ""
        return f"did you mean '{visible(self.code)}'{shown}? ({self.why})"


@fast_init
@dataclass(frozen=True, slots=True)
class ValidationResult:
    """The answer of ``validate_code``: result, message, the valid display, and the issues.

    >>> r = ValidationResult(True, None, "Male", code="male", system="http://x")
    >>> bool(r), r.display
    (True, 'Male')
    """

    result: bool
    message: str | None
    display: str | None
    code: str | None = None
    system: str | None = None
    version: str | None = None
    issue: str | None = None
    issues: tuple[Issue, ...] = ()
    inactive: bool | None = None
    status: str | None = None
    unknown_systems: tuple[str, ...] = ()
    normalized_code: str | None = None
    #: The code that was probably meant, for a failing code (Python only: the FHIR
    #: ``message`` and the operations' outputs never carry it). ``Workbench.validate_code``
    #: fills it; nothing is ever applied.
    suggestion: Suggestion | None = None
    #: code systems not known that the value set does not draw on either (x-unknown-system)
    outside_systems: tuple[str, ...] = ()
    #: the CodeableConcept validated, as given: echoed as the output ``codeableConcept``
    #: (R5's, which tx.fhir.org sends in R4 too); not part of equality or the hash
    concept: Mapping[str, Any] | None = field(default=None, compare=False)
    #: False for a CodeableConcept none of whose codes is known: its Parameters then carry
    #: no code, system, version or display (the fields keep the first coding's, for reports)
    named: bool = True

    def __bool__(self) -> bool:
        return self.result

    def __repr__(self) -> str:
        """The fields that are set, codes and displays with odd whitespace made visible
        (``code='␣male'``), the suggestion last (``issues`` are in the message, each in
        ``.issues``); the data itself stays exact.

        >>> ValidationResult(False, "Unknown code", None, code=" male", system="http://g",
        ...     issue="unknown-code", suggestion=Suggestion("male", "Male", "without the "
        ...     "surrounding whitespace"))  # doctest: +NORMALIZE_WHITESPACE
        ValidationResult(result=False, code='␣male', system='http://g', issue='unknown-code',
            message='Unknown code', suggestion='male' (Male; without the surrounding whitespace))
        """
        parts = [f"result={self.result}"]
        for name in ("code", "system", "version", "display", "issue", "message"):
            value = getattr(self, name)
            if value is not None:
                shown = visible(value) if name in ("code", "display") else value
                parts.append(f"{name}={shown!r}")
        if self.inactive:
            parts.append("inactive=True")
        for name in ("status", "normalized_code"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={visible(getattr(self, name))!r}")
        if self.unknown_systems:
            parts.append(f"unknown_systems={self.unknown_systems!r}")
        found = self.suggestion
        if found is not None:
            display = f"{found.display}; " if found.display else ""
            parts.append(f"suggestion={visible(found.code)!r} ({display}{found.why})")
        return f"ValidationResult({', '.join(parts)})"

    @property
    def reason(self) -> str | None:
        """Deprecated name of ``issue`` (the stable failure kind, as in column reports)."""
        warnings.warn(
            "ValidationResult.reason is deprecated: use ValidationResult.issue (the name "
            "column reports use)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.issue

    def outputs(self) -> dict[str, Any]:
        """The output values of $validate-code by name, as the reference servers give them:
        result, message, display, code, system, version, issues (an OperationOutcome),
        inactive, status, x-caused-by-unknown-system, x-unknown-system, normalized-code and
        codeableConcept (the one validated)."""
        values: dict[str, Any] = {}  # (only the values there are)
        if self.result is not None:
            values["result"] = self.result
        if self.message is not None:
            values["message"] = self.message
        if self.named:  # the coding the answer is about (none for unknown codes of a concept)
            if self.display is not None:
                values["display"] = self.display
            if self.code:
                values["code"] = self.code
            if self.system:
                values["system"] = self.system
            if self.version is not None:
                values["version"] = self.version
        if self.issues:
            values["issues"] = self.outcome()
        if self.inactive is not None:
            values["inactive"] = self.inactive
        if self.status is not None:
            values["status"] = self.status
        unknown = [c for c in self.unknown_systems if _CANONICAL.fullmatch(c)]
        if unknown:
            values["x-caused-by-unknown-system"] = unknown
        outside = [c for c in self.outside_systems if _CANONICAL.fullmatch(c)]
        if outside:
            values["x-unknown-system"] = outside
        if self.normalized_code is not None:
            values["normalized-code"] = self.normalized_code
        if self.concept is not None:
            values["codeableConcept"] = self.concept
        return values

    def outcome(self) -> dict[str, Any]:
        """The issues as an OperationOutcome resource."""
        return {"resourceType": "OperationOutcome", "issue": [i.to_fhir() for i in self.issues]}

    def to_parameters(self) -> dict[str, Any]:
        """Return the FHIR Parameters of $validate-code (see ``outputs``).

        >>> r = ValidationResult(True, None, "Male", code="male", system="http://x")
        >>> [(p["name"], p.get("valueCode") or p.get("valueString")) for p in
        ...  r.to_parameters()["parameter"] if p["name"] != "result"]
        [('display', 'Male'), ('code', 'male'), ('system', None)]
        """
        params: list[dict[str, Any]] = []
        for name, value in self.outputs().items():
            if name == "issues":
                params.append({"name": name, "resource": value})
                continue
            for item in value if isinstance(value, list) else [value]:
                params.append({"name": name, _OUTPUT_TYPES[name]: item})
        return {"resourceType": "Parameters", "parameter": params}

    def _repr_html_(self) -> str:
        # JupyterLab's theme colours (light and dark), with light fallbacks elsewhere
        colour = (
            "var(--jp-success-color1, #1a7f37)"
            if self.result
            else "var(--jp-error-color1, #cf222e)"
        )
        word = "valid" if self.result else "invalid"
        if self.result and self.issues:
            colour, word = "var(--jp-warn-color1, #9a6700)", "valid, with a warning"
        rows = "".join(
            f"<tr><th style='text-align:left'>{k}</th>"
            f"<td>{html.escape(str(visible(v) if k in ('code', 'display') else v))}</td></tr>"
            for k, v in (
                ("system", self.system),
                ("code", self.code),
                ("display", self.display),
                ("issue", self.issue),
                ("message", self.message),
                ("did you mean", _suggested(self.suggestion)),
            )
            if v is not None
        )
        return f"<div><b style='color:{colour}'>&#9679; {word}</b><table>{rows}</table></div>"


def _suggested(found: Suggestion | None) -> str | None:
    """A suggestion as one line of the HTML table (None when there is none)."""
    if found is None:
        return None
    display = f" ({found.display})" if found.display else ""
    return f"{visible(found.code)}{display}: {found.why}"


_OUTPUT_TYPES = {
    "result": "valueBoolean",
    "code": "valueCode",
    "system": "valueUri",
    "version": "valueString",
    "display": "valueString",
    "message": "valueString",
    "inactive": "valueBoolean",
    "status": "valueCode",
    "x-caused-by-unknown-system": "valueCanonical",
    "x-unknown-system": "valueCanonical",
    "normalized-code": "valueCode",
    "codeableConcept": "valueCodeableConcept",
}


def failure(
    reason: str,
    text: str,
    *,
    code: str | None,
    system: str | None,
    version: str | None = None,
    display: str | None = None,
    tx: str | None = None,
    element: str | None = None,
    extra: Sequence[Issue] = (),
    unknown: Sequence[str] = (),
) -> ValidationResult:
    """A failed validation: its first issue is ``text`` (an error), ``extra`` more issues;
    the message joins every error."""
    first = Issue(
        "error",
        tx or _TX_TYPE[reason],
        text,
        reason,
        _ELEMENT[reason] if element is None else element,
    )
    issues = (first, *extra)
    message = "; ".join(i.text for i in issues if i.severity == "error")
    return ValidationResult(
        False,
        message,
        display,
        code,
        system,
        version,
        reason,
        issues,
        unknown_systems=tuple(unknown),
    )


def coding_label(system: str | None, code: str | None) -> str:
    """``system#code``, or ``'code'`` without a system (how messages name a coding)."""
    return f"{system}#{code}" if system else f"'{code}'"
