"""Error types of the workbench.

Every error carries what a FHIR server needs to answer with an OperationOutcome: an issue
``code`` from http://hl7.org/fhir/issue-type, an HTTP ``status``, and a stable message id
(``msg_id``, e.g. ``WB-EXP-001``) that stays the same when the wording of the text changes.
Only the server turns these into responses; the engine just raises them.

A code that fails validation is never an error: it is a ``ValidationResult`` with
``result=False``.
"""

from __future__ import annotations

from typing import Any

TX_ISSUE_TYPE = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
MESSAGE_ID = "http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id"


def _rebuilt(cls: type[WorkbenchError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """A WorkbenchError back from its pickled parts (see ``WorkbenchError.__reduce__``)."""
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class WorkbenchError(Exception):
    """Base class: a failure with a FHIR issue code, an HTTP status and a stable message id."""

    code: str = "exception"
    status: int = 500
    msg_id: str = "WB-000"
    severity: str = "error"
    #: The tx-issue-type code (http://hl7.org/fhir/tools/CodeSystem/tx-issue-type) that
    #: terminology clients read, when the error has one.
    tx: str | None = None

    def __init__(
        self,
        text: str,
        *,
        code: str | None = None,
        status: int | None = None,
        msg_id: str | None = None,
        expression: list[str] | None = None,
    ) -> None:
        super().__init__(text)
        self.text = text
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        if msg_id is not None:
            self.msg_id = msg_id
        self.expression = expression or []

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as it is (a server's worker process sends errors back): a subclass's own
        # constructor builds its text from other arguments, so it is not called again.
        return (_rebuilt, (type(self), self.args, self.__dict__))

    def to_outcome(self) -> dict[str, Any]:
        """This error as an OperationOutcome (a dict), its message id where tx.fhir.org's go."""
        details: dict[str, Any] = {"text": self.text}
        if self.tx:
            details = {"coding": [{"system": TX_ISSUE_TYPE, "code": self.tx}], **details}
        issue: dict[str, Any] = {
            "extension": [{"url": MESSAGE_ID, "valueString": self.msg_id}],
            "severity": self.severity,
            "code": self.code,
            "details": details,
        }
        if self.expression:
            issue["expression"] = list(self.expression)
        return {"resourceType": "OperationOutcome", "issue": [issue]}


# --- loading -------------------------------------------------------------------------


class LoadError(WorkbenchError):
    """A source could not be loaded: not JSON, not a FHIR resource, a broken archive."""

    code = "structure"
    status = 400
    msg_id = "WB-LOAD-001"


class ArchiveLimitError(LoadError):
    """A member of a release zip or package tarball unpacks to more than the configured limits
    allow (``workbench.unpacking``): too many bytes in one member or in all of them, or too
    many bytes per compressed byte (a compression bomb). The text names the archive, the
    member, the limit and the value found."""

    code = "too-long"
    status = 413
    msg_id = "WB-ARC-413"

    def __init__(
        self, archive: str, member: str, limit: str, found: int, maximum: int, what: str
    ) -> None:
        super().__init__(
            f"{archive}: the member {member!r} {what}; the limit {limit} is {maximum:,}. "
            "Refused without unpacking the rest (limits are set by unpacking.configure or the "
            "server's --unpack-limit option)"
        )
        self.archive = archive
        self.member = member
        self.limit = limit
        self.found = found
        self.maximum = maximum


class InvalidResourceError(WorkbenchError):
    """A resource breaks a FHIR rule (for example the ValueSet invariants vsd-1/2/3)."""

    code = "invariant"
    status = 422
    msg_id = "WB-RES-001"


class StructureError(WorkbenchError):
    """A resource or a value breaks the FHIR R4 structure: a wrong JSON type, an array where
    one value is allowed, a missing required element, a malformed primitive. The text and the
    ``expression`` name the element path."""

    code = "structure"
    status = 400
    msg_id = "WB-RES-002"


class PackageError(WorkbenchError):
    """A FHIR NPM package could not be resolved, downloaded or verified."""

    code = "exception"
    status = 502
    msg_id = "WB-PKG-001"


class PackageNotFoundError(PackageError):
    """The package (or the version asked for) is neither in the cache nor in the registry."""

    code = "not-found"
    status = 404
    msg_id = "WB-PKG-002"


class PackageIntegrityError(PackageError):
    """A downloaded tarball does not match the registry's integrity hash."""

    code = "security"
    status = 502
    msg_id = "WB-PKG-003"


# --- resolution ----------------------------------------------------------------------


class ResourceNotFoundError(WorkbenchError):
    """A resource asked for by type and id does not exist."""

    code = "not-found"
    status = 404
    msg_id = "WB-RES-404"


class ValueSetNotFoundError(WorkbenchError):
    """``ValueSet <url> not found``: the operation API answers this with 400 ``invalid``."""

    code = "invalid"
    status = 400
    msg_id = "WB-VS-404"
    tx = "not-found"  # (tx.fhir.org's; the status and code are operation-api.md's)
    #: What else the message says (the loaded versions, when only the version is missing).
    context = ""

    def __init__(self, url: str, *, context: str = "") -> None:
        super().__init__(f"ValueSet {url} not found")  # operation-api.md 7.2's exact text
        self.url = url
        self.context = context

    def __str__(self) -> str:
        return self.text + (f" ({self.context})" if self.context else "")

    def to_outcome(self) -> dict[str, Any]:
        """The OperationOutcome: the text as the spec has it, the loaded versions (when
        only the version asked for is missing) as the issue's ``diagnostics``."""
        found = super().to_outcome()
        if self.context:
            found["issue"][0]["diagnostics"] = self.context
        return found


class ValueSetDefinitionNotFoundError(ValueSetNotFoundError):
    """A value set that $expand needs cannot be found: the one asked for (by ``url``, with
    ``valueSetVersion``) or one it imports (a ``default-valueset-version`` pin that does not
    resolve). 404 ``not-found``, as tx.fhir.org answers; ``$validate-code`` keeps the
    operation API's 400 ``invalid`` (``ValueSetNotFoundError``)."""

    code = "not-found"
    status = 404
    msg_id = "WB-EXP-VS-404"
    tx = "not-found"

    def __init__(self, url: str, *, context: str = "") -> None:
        WorkbenchError.__init__(self, f"A definition for the value Set '{url}' could not be found")
        self.url = url
        self.context = context


class ImportedValueSetNotFoundError(ValueSetNotFoundError):
    """A value set that another one imports (``compose.include.valueSet``) cannot be found.
    $expand fails as for any unknown value set; $validate-code answers result=false with a
    ``not-found`` issue (the value set asked for exists, it cannot be evaluated)."""

    def __init__(self, url: str, importer: str, detail: str = "") -> None:
        super().__init__(f"{url} ({detail})" if detail else url)
        self.reference = url
        self.importer = importer
        self.detail = detail


class ValueSetVersionNotFoundError(ValueSetDefinitionNotFoundError):
    """A value set asked for by a version that is not loaded, when other versions of it
    are: 404 ``not-found``, naming the versions that are loaded."""

    msg_id = "WB-VS-VER-404"

    def __init__(self, url: str, version: str, loaded: list[str]) -> None:
        WorkbenchError.__init__(
            self,
            f"The value set {url} has no version {version!r} loaded; the loaded versions "
            f"are {', '.join(repr(v) for v in loaded)}",
        )
        self.url = f"{url}|{version}"


class CodeSystemNotFoundError(WorkbenchError):
    """A code system whose codes are needed is not loaded: 404 ``not-found``, as REST has
    it for a resource that does not exist and as tx.fhir.org answers ``$lookup``."""

    code = "not-found"
    status = 404
    msg_id = "WB-CS-404"

    def __init__(self, url: str, version: str | None = None, *, context: str = "") -> None:
        canonical = f"{url}|{version}" if version else url
        text = f"CodeSystem {canonical} not found"
        if context:
            text += f" ({context})"
        super().__init__(text)
        self.url = url
        self.version = version


class ExpandCodeSystemNotFoundError(CodeSystemNotFoundError):
    """A code system whose codes a value set being expanded needs is not loaded, or not in
    the version the value set names (the loaded ones are listed): 404 ``not-found`` with
    tx.fhir.org's text."""

    status = 404
    msg_id = "WB-EXP-CS-404"
    tx = "not-found"

    def __init__(self, url: str, version: str | None = None, known: list[str] | None = None):
        label = f"CodeSystem '{url}' version '{version}'" if version else f"CodeSystem '{url}'"
        text = f"A definition for {label} could not be found, so the value set cannot be expanded"
        if known:
            text += ". Valid versions: " + " or ".join(known)
        WorkbenchError.__init__(self, text)
        self.url = url
        self.version = version


# --- expansion -----------------------------------------------------------------------


class IncompleteCodeSystemError(WorkbenchError):
    """All codes of a code system are needed, but its content is not complete."""

    code = "not-supported"
    status = 422
    msg_id = "WB-EXP-002"


class NotPresentCodeSystemError(IncompleteCodeSystemError):
    """A code system loaded as ``not-present`` whose codes are needed: expanding fails;
    validating answers as for one not loaded (``membership.not_present``)."""

    def __init__(self, url: str, version: str | None = None) -> None:
        canonical = f"{url}|{version}" if version else url
        super().__init__(
            f"CodeSystem {canonical} has content 'not-present': its codes cannot be used to "
            "expand a value set or validate a code"
        )
        self.url = url
        self.version = version


class ImportCycleError(WorkbenchError):
    """Value sets import each other in a cycle."""

    code = "processing"
    status = 422
    msg_id = "WB-EXP-003"


class UnsupportedFilterError(WorkbenchError):
    """A compose filter uses an operator or property that cannot be evaluated."""

    code = "not-supported"
    status = 422
    msg_id = "WB-EXP-004"


class TooCostlyError(WorkbenchError):
    """An unpaged expansion is larger than the configured limit."""

    code = "too-costly"
    status = 422
    msg_id = "WB-EXP-005"


class InvalidRequestError(WorkbenchError):
    """The arguments of a call are wrong or missing (an operation input, a Python argument)."""

    code = "invalid"
    status = 400
    msg_id = "WB-REQ-001"


class ColumnNotFoundError(InvalidRequestError, KeyError):
    """A column a call names is not in the data (every backend; a KeyError too)."""

    msg_id = "WB-REQ-COLUMN"

    def __str__(self) -> str:
        return self.text


class InvalidLanguageError(InvalidRequestError):
    """A display language that is not a language tag (``displayLanguage=-``): the request
    cannot be processed, whatever the code."""

    code = "processing"
    msg_id = "WB-REQ-006"
    tx = "invalid-display"


# --- requests ------------------------------------------------------------------------


class RequiredError(WorkbenchError):
    """A required input is missing."""

    code = "required"
    status = 400
    msg_id = "WB-REQ-002"


class NotSupportedError(WorkbenchError):
    """The request uses something this server does not support (GET with a complex type…)."""

    code = "not-supported"
    status = 400
    msg_id = "WB-REQ-003"


# --- terminology and storage ------------------------------------------------------------


class UnknownCodeError(WorkbenchError):
    """$lookup / $subsumes on a code that is not in the code system."""

    code = "not-found"
    status = 404
    msg_id = "WB-CS-001"


class DuplicateCanonicalError(WorkbenchError):
    """A write would give a second resource the same ``url|version`` as an existing one."""

    code = "duplicate"
    status = 409
    msg_id = "WB-RES-409"


# --- HTTP -----------------------------------------------------------------------------


class UnsupportedMediaTypeError(WorkbenchError):
    """The body is not FHIR JSON."""

    code = "not-supported"
    status = 415
    msg_id = "WB-HTTP-415"


class TooLargeError(WorkbenchError):
    """The body is over the configured size limit."""

    code = "too-long"
    status = 413
    msg_id = "WB-HTTP-413"


class TooManyResourcesError(TooLargeError):
    """A request carries more inline resources (``tx-resource``) than the server takes, by
    number or by size."""

    msg_id = "WB-HTTP-413-TX"


class MalformedError(WorkbenchError):
    """The body is not valid JSON."""

    code = "structure"
    status = 400
    msg_id = "WB-HTTP-400"


class LoginError(WorkbenchError):
    """A missing or wrong bearer token."""

    code = "login"
    status = 401
    msg_id = "WB-AUTH-401"


class MethodNotAllowedError(WorkbenchError):
    """The operation exists, but not with this method or at this level."""

    code = "not-supported"
    status = 405
    msg_id = "WB-OP-405"


class UnknownOperationError(WorkbenchError):
    """No operation of that name is defined here."""

    code = "not-found"
    status = 404
    msg_id = "WB-OP-404"


class VersionConflictError(WorkbenchError):
    """If-Match names another version than the current one."""

    code = "conflict"
    status = 412
    msg_id = "WB-RES-412"


# --- SNOMED CT releases and expressions -----------------------------------------------


class ReleaseFormatError(LoadError):
    """A terminology release is not what it claims: no release files, a truncated archive, a
    file with a wrong header or a broken row (the text names the file and the line)."""

    msg_id = "WB-REL-001"

    def __init__(self, text: str, *, file: str | None = None, line: int | None = None) -> None:
        where = f"{file}, line {line}: " if file and line else f"{file}: " if file else ""
        super().__init__(f"{where}{text}")
        self.file = file
        self.line = line


class ExpressionSyntaxError(WorkbenchError):
    """A SNOMED CT expression constraint (ECL) or post-coordinated expression does not parse;
    the text says where (line, column and what was expected)."""

    code = "invalid"
    status = 400
    msg_id = "WB-SCT-001"

    def __init__(self, text: str, *, position: int | None = None) -> None:
        super().__init__(text)
        self.position = position


class GrammarLimitError(WorkbenchError):
    """An expression (ECL, post-coordinated expression, UCUM unit) is over one of the
    configured grammar limits (``workbench.releases.grammar``): too long, nested too deep or
    with too many terms. The text names the limit (``ecl.depth``) and the value found."""

    code = "too-long"
    status = 400
    msg_id = "WB-GRAM-001"

    def __init__(self, kind: str, limit: str, found: int, maximum: int, what: str) -> None:
        super().__init__(
            f"The {kind} {what}; the limit {limit} is {maximum:,}. Shorten or split it "
            "(limits are set by GrammarLimits or the server's --grammar-limit option)"
        )
        self.limit = limit
        self.found = found
        self.maximum = maximum


class VersionCheckError(WorkbenchError):
    """A code system version that a ``check-system-version`` parameter does not allow was
    used to expand a value set (error/exception, tx ``version-error``)."""

    code = "exception"
    status = 422
    msg_id = "WB-EXP-009"
    tx = "version-error"


class SupplementNotFoundError(WorkbenchError):
    """A supplement that a request or a value set asks for is not loaded, or does not apply
    to a loaded version of the code system it supplements. Never ignored."""

    code = "not-found"
    status = 400
    msg_id = "WB-SUP-001"


# --- the server's data folder and REST interactions ------------------------------------


class StorageError(WorkbenchError):
    """A write could not be made durable (read-only folder, full disk, I/O error): nothing
    was stored and nothing changed in memory."""

    code = "exception"
    status = 500
    msg_id = "WB-STORE-001"


class GoneError(WorkbenchError):
    """A version that was a deletion (vread of a deleted resource's version)."""

    code = "deleted"
    status = 410
    msg_id = "WB-RES-410"


class NotAcceptableError(WorkbenchError):
    """The client asks for a format the server does not produce (only JSON is served)."""

    code = "not-supported"
    status = 406
    msg_id = "WB-HTTP-406"


class PreconditionFailedError(WorkbenchError):
    """A conditional interaction matched more than one resource (``If-None-Exist``)."""

    code = "multiple-matches"
    status = 412
    msg_id = "WB-RES-413"


# --- value set definitions (issue 22: f7, f8, e3) --------------------------------------


class ImplicitValueSetNotFoundError(ValueSetDefinitionNotFoundError):
    """An implicit value set whose definition does not exist: SNOMED CT's
    ``?fhir_vs=isa/{id}`` with an unknown concept, ``?fhir_vs=refset/{id}`` with a concept
    that is no reference set (404 ``not-found`` in every operation, as tx.fhir.org answers)."""

    msg_id = "WB-VS-405"

    def __init__(self, url: str, why: str) -> None:
        WorkbenchError.__init__(
            self, f"A definition for the value set '{url}' could not be found: {why}"
        )
        self.url = url


class InvalidValueSetError(WorkbenchError):
    """A value set that is used but cannot be evaluated: an ECL constraint naming a concept
    the code system does not have, a compose filter without a value (4xx ``invalid``, tx
    ``vs-invalid``, at the offending element when known)."""

    code = "invalid"
    status = 400
    msg_id = "WB-VS-406"
    tx = "vs-invalid"

    def to_outcome(self) -> dict[str, Any]:
        """The OperationOutcome, with the element as both ``expression`` and ``location``."""
        found = super().to_outcome()
        if self.expression:
            found["issue"][0]["location"] = list(self.expression)
        return found


class CacheIdUnknownError(WorkbenchError):
    """A client cache id (``X-Cache-Id``, ``$cache-control``) the server does not hold: never
    started, ended, or dropped by the cache limits (404, tx ``cache-id-unknown``)."""

    code = "not-found"
    status = 404
    msg_id = "WB-CACHE-404"
    tx = "cache-id-unknown"
