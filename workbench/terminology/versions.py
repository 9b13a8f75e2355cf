"""Code system versions in requests: patterns, and which version a request resolves to.

A version in a request is an exact version (``1.2.0``), a partial one (``1.2`` matches
``1.2.x``), or a wildcard pattern (``1.x``, ``1.2.x``, ``1.x.x``; ``*`` for any). A pattern
picks the latest matching version. A ``compose.include.version`` is stricter (``names``): an
exact version or a pattern, never a prefix (``1`` is an unknown version when 1.0.0 and
1.2.0 exist).

Which version of a code system a request uses (the tx-ecosystem rules), first match wins:

1. ``force-system-version`` for that system (it overrides everything, even a Coding's version);
2. the version the input itself carries (``Coding.version``, ``systemVersion``/``version``);
3. the version the value set's ``compose.include.version`` pins;
4. ``system-version`` for that system (a default for includes that pin nothing);
5. ``check-system-version`` for that system (its latest match, for includes that pin
   nothing when no default is given);
6. the latest version loaded.

Whatever was chosen, a version that does not match ``check-system-version`` is an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import InvalidRequestError
from workbench.terminology.params import param

#: The white space a version may not start or end with: what the OpenAPI document's pattern
#: of a canonical's version excludes (JSON Schema's ``\s`` of ASCII; Python's ``strip()``
#: also takes ``\x1c``-``\x1f`` and Unicode spaces, which a version text may hold).
_SPACE = " \t\n\r\f\v"
_PATTERN = re.compile(r"^[^.|x*]+(\.[^.|x*]+)*(\.x)+$|^x(\.x)*$|^\*$")


def is_pattern(version: str) -> bool:
    """True for a wildcard version such as ``1.x`` or ``1.0.x``.

    >>> is_pattern("1.x"), is_pattern("1.0.x"), is_pattern("1.0.0")
    (True, True, False)
    """
    return "x" in version.split(".") or version == "*"


def check_version_text(version: str, parameter: str) -> str:
    """Return ``version`` when it is an exact version or a well-formed pattern, else raise.

    >>> check_version_text("1.x.2", "system-version")
    Traceback (most recent call last):
    ...
    workbench.errors.InvalidRequestError: Parameter 'system-version': the version pattern \
'1.x.2' is malformed (a wildcard 'x' may only be followed by more wildcards, e.g. 1.x or 1.2.x)
    """
    if not version or version != version.strip(_SPACE):
        raise InvalidRequestError(f"Parameter '{parameter}': '{version}' is not a version")
    if is_pattern(version) and not _PATTERN.match(version):
        raise InvalidRequestError(
            f"Parameter '{parameter}': the version pattern '{version}' is malformed (a "
            "wildcard 'x' may only be followed by more wildcards, e.g. 1.x or 1.2.x)"
        )
    return version


def matches(wanted: str, version: str) -> bool:
    """True when ``version`` is ``wanted``, or matches it as a pattern or partial version.

    >>> matches("1.x", "1.4.0"), matches("1.0.x", "1.1.0"), matches("1.0", "1.0.3")
    (True, False, True)
    """
    if wanted == version or wanted == "*":
        return True
    parts = wanted.split(".")
    if "x" in parts:
        fixed = parts[: parts.index("x")]
        return version.split(".")[: len(fixed)] == fixed
    return version.startswith(wanted + ".")


def names(wanted: str, version: str) -> bool:
    """True when ``wanted`` as a ``compose.include.version`` names ``version``: the same
    version, or a wildcard pattern it matches (never a prefix).

    >>> names("1.0.x", "1.0.0"), names("1", "1.0.0"), names("1.0.0", "1.0.0")
    (True, False, True)
    """
    return wanted == version or (is_pattern(wanted) and matches(wanted, version))


def select(wanted: str, versions: Iterable[str], newest: Any) -> str | None:
    """The version among ``versions`` that ``wanted`` names: the exact one, else the newest
    match (``newest`` picks the latest of a list of version strings)."""
    known = list(versions)
    if wanted in known:
        return wanted
    found = [v for v in known if matches(wanted, v)]
    return newest(found) if found else None


#: The inputs read as ``system|version`` entries, and the form of one (a canonical, ``|``,
#: a version; the OpenAPI document states it as the inputs' pattern).
SYSTEM_VERSION_INPUTS = (
    "force-system-version",
    "system-version",
    "check-system-version",
    "default-valueset-version",
)
SYSTEM_VERSION_FORM = r"[^ \t\n\r\f\v|]+\|[^ \t\n\r\f\v]+"


def _by_system(entries: str | Iterable[str] | None, parameter: str) -> dict[str, str]:
    """``system|version`` entries (one or several) as ``{system: version}``."""
    found: dict[str, str] = {}
    for entry in [entries] if isinstance(entries, str) else entries or ():
        url, sep, version = str(entry).partition("|")
        if not sep or not url:
            raise InvalidRequestError(
                f"Parameter '{parameter}' must be 'system|version', not '{entry}'"
            )
        found[url] = check_version_text(version, parameter)
    return found


@dataclass(frozen=True)
class VersionPolicy:
    """The version parameters of one request, by system (or value set) URL (each read
    from the repeating ``system|version`` input its ``param`` names)."""

    force: Mapping[str, str] = param("force-system-version", factory=dict, parse=_by_system)
    defaults: Mapping[str, str] = param("system-version", factory=dict, parse=_by_system)
    check: Mapping[str, str] = param("check-system-version", factory=dict, parse=_by_system)
    valueset_defaults: Mapping[str, str] = param(
        "default-valueset-version", factory=dict, parse=_by_system
    )

    @classmethod
    def from_parameters(
        cls,
        *,
        system_version: str | Iterable[str] | None = None,
        force_system_version: str | Iterable[str] | None = None,
        check_system_version: str | Iterable[str] | None = None,
        default_valueset_version: str | Iterable[str] | None = None,
    ) -> VersionPolicy:
        """Read the ``system|version`` parameters (each one string or several, one per
        system).

        >>> VersionPolicy.from_parameters(system_version=["http://x|1.x"]).resolve("http://x", None)
        '1.x'
        """
        if not (
            system_version
            or force_system_version
            or check_system_version
            or default_valueset_version
        ):
            return NO_POLICY
        return cls(
            force=_by_system(force_system_version, "force-system-version"),
            defaults=_by_system(system_version, "system-version"),
            check=_by_system(check_system_version, "check-system-version"),
            valueset_defaults=_by_system(default_valueset_version, "default-valueset-version"),
        )

    def __bool__(self) -> bool:
        return bool(self.force or self.defaults or self.check or self.valueset_defaults)

    def key(self) -> tuple[Any, ...]:
        """A hashable key (compiled value sets are cached per policy)."""
        return tuple(
            tuple(sorted(m.items()))
            for m in (self.force, self.defaults, self.check, self.valueset_defaults)
        )

    def resolve(self, system: str, pinned: str | None) -> str | None:
        """The version a value set include uses: forced, else pinned, else the default."""
        return self.force.get(system) or pinned or self.defaults.get(system)

    def with_default(self, system: str, version: str) -> VersionPolicy:
        """This policy, with ``version`` as the default of ``system`` (a Coding's version)."""
        return VersionPolicy(
            self.force, {**self.defaults, system: version}, self.check, self.valueset_defaults
        )


NO_POLICY = VersionPolicy()
