"""FHIR NPM packages: the local package cache, an npm-protocol registry client, tarball readers.

Packages are kept the way SUSHI and the HL7 validator keep them, so the cache is shared with
those tools: one folder ``<cache>/<name>#<version>`` per package, holding the tarball's
``package/`` folder exactly as published. A package is installed by fetching its npm
"packument" (``GET {registry}/{name}``), downloading the tarball of the chosen version,
verifying it against the registry's hash, extracting it into a temporary folder inside the
cache and renaming that folder into place, so a cache folder is either complete or absent.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from . import unpacking
from .errors import LoadError, PackageError, PackageIntegrityError, PackageNotFoundError

if TYPE_CHECKING:  # imported where a package is fetched: not at start-up (httpx takes 0.1 s)
    import httpx

__all__ = [
    "CACHE_ENV",
    "REGISTRY_ENV",
    "VersionKey",
    "cached_package_dir",
    "default_cache_dir",
    "default_registry",
    "install_package",
    "iter_tar_package_members",
    "package_files",
    "parse_package_ref",
    "version_key",
]

CACHE_ENV = "WORKBENCH_PACKAGE_CACHE"
REGISTRY_ENV = "WORKBENCH_PACKAGE_REGISTRY"
_NPM_REGISTRY_ENVS = ("NPM_CONFIG_REGISTRY", "npm_config_registry")
_NPM_TIMEOUT = 10.0

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
_VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]*")
_MAX_NAME_LENGTH = 214
_SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:\.(0|[1-9]\d*))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)

_PACKUMENT_ACCEPT = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
_SRI_STRENGTH = {"sha1": 1, "sha256": 2, "sha384": 3, "sha512": 4}
_TEMP_PREFIX = ".workbench-"
_CHUNK = 1 << 16
_MEMBER_CHUNK = 1 << 20
_ARCHIVE_ERRORS = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)

VersionKey = tuple[int, int, int, int, int, tuple[tuple[int, int, str], ...], str]
"""What :func:`version_key` returns: only meant to be compared with other keys."""


# --- configuration -------------------------------------------------------------------


def default_cache_dir() -> Path:
    """Return the package cache folder: ``$WORKBENCH_PACKAGE_CACHE``, else ``~/.fhir/packages``."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".fhir" / "packages"


def default_registry() -> str:
    """Return the base URL of the package registry, without trailing slashes.

    In order: ``$WORKBENCH_PACKAGE_REGISTRY``, npm's ``$NPM_CONFIG_REGISTRY`` /
    ``$npm_config_registry``, then the output of ``npm config get registry`` if ``npm`` is on
    ``PATH``. Raises :class:`PackageError` if none of them gives a registry.
    """
    for variable in (REGISTRY_ENV, *_NPM_REGISTRY_ENVS):
        value = os.environ.get(variable, "").strip().rstrip("/")
        if value:
            return value
    configured = _npm_configured_registry()
    if configured:
        return configured
    raise PackageError(
        "No FHIR package registry is configured: set the environment variable "
        f"{REGISTRY_ENV} to the registry's base URL, configure npm's registry "
        "(NPM_CONFIG_REGISTRY, or `npm config set registry <url>`), or pass registry=..."
    )


def _npm_configured_registry() -> str | None:
    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        done = subprocess.run(
            [npm, "config", "get", "registry"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=_NPM_TIMEOUT,
            check=False,
            encoding="utf-8",
            errors="replace",
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    lines = done.stdout.strip().splitlines()
    value = lines[-1].strip().rstrip("/") if lines else ""
    return value if value.startswith(("http://", "https://")) else None


# --- names and versions --------------------------------------------------------------


def parse_package_ref(ref: str) -> tuple[str, str | None]:
    """Split ``name#version``, ``name@version`` or ``name`` into ``(name, version or None)``.

    Raises :class:`PackageError` if the name is not a lowercase npm-style name (letters,
    digits, ``.``, ``-``, ``_``) or the version is empty or not a plain version string.
    """
    text = ref.strip()
    separator = "#" if "#" in text else "@"
    name, found, version = text.partition(separator)
    _check_name(name, ref)
    if not found:
        return name, None
    _check_version(version, ref)
    return name, version


def _check_name(name: str, ref: str | None = None) -> None:
    if _NAME_RE.fullmatch(name) and len(name) <= _MAX_NAME_LENGTH:
        return
    where = f" in {ref!r}" if ref is not None and ref != name else ""
    raise PackageError(
        f"Invalid package name {name!r}{where}: FHIR package names are lowercase letters, "
        "digits, '.', '-' and '_', starting with a letter or digit"
    )


def _check_version(version: str, ref: str | None = None) -> None:
    if _VERSION_RE.fullmatch(version):
        return
    where = f" in {ref!r}" if ref is not None and ref != version else ""
    raise PackageError(
        f"Invalid package version {version!r}{where}: expected a version such as 4.0.1 "
        "(letters, digits, '.', '-', '_', '+')"
    )


def version_key(version: str) -> VersionKey:
    """Return a sort key that orders package versions from oldest to newest.

    Versions that parse as semver (leniently: ``4.0`` counts as ``4.0.0``) are ordered by
    semver precedence, so ``1.0.0-ballot < 1.0.0 < 1.10.0``; build metadata is ignored except
    as a final tie-break. Anything else (``current``, ``dev``) sorts below every semver
    version, lexically among itself.
    """
    match = _SEMVER_RE.fullmatch(version)
    if match is None:
        return (0, 0, 0, 0, 0, (), version)
    major, minor, patch, prerelease = match.groups()
    identifiers: tuple[tuple[int, int, str], ...] = ()
    if prerelease is not None:
        identifiers = tuple(
            (0, int(part), "") if part.isdigit() else (1, 0, part) for part in prerelease.split(".")
        )
    return (
        1,
        int(major),
        int(minor or 0),
        int(patch or 0),
        0 if prerelease is not None else 1,
        identifiers,
        version,
    )


# --- the cache -----------------------------------------------------------------------


def _cache_path(cache_dir: str | os.PathLike[str] | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()


def _is_complete(folder: Path) -> bool:
    return (folder / "package" / "package.json").is_file()


def cached_package_dir(
    name: str,
    version: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path | None:
    """Return the cache folder ``<cache>/<name>#<version>`` of an installed package, or None.

    A folder only counts if it contains ``package/package.json``. With ``version`` None the
    highest cached version (by :func:`version_key`) is returned.
    """
    _check_name(name)
    cache = _cache_path(cache_dir)
    if version is not None:
        _check_version(version)
        folder = cache / f"{name}#{version}"
        return folder if _is_complete(folder) else None
    try:
        entries = list(cache.iterdir())
    except OSError:
        return None
    found: list[tuple[VersionKey, Path]] = []
    for entry in entries:
        entry_name, separator, entry_version = entry.name.partition("#")
        if separator and entry_name == name and entry_version and _is_complete(entry):
            found.append((version_key(entry_version), entry))
    return max(found)[1] if found else None


def package_files(package_dir: Path) -> list[Path]:
    """Return the resource files of an extracted package, sorted by file name.

    ``package_dir`` is a cache folder (``<name>#<version>``) or its ``package/`` folder. The
    resources are the ``*.json`` files directly inside ``package/``; subfolders such as
    ``package/example/``, ``package.json`` and dotfiles such as ``.index.json`` are left out.
    """
    root = package_dir / "package" if (package_dir / "package").is_dir() else package_dir
    if not root.is_dir():
        raise LoadError(f"Package folder {package_dir} does not exist or is not a folder")
    files = [path for path in root.iterdir() if _is_resource_name(path.name) and path.is_file()]
    return sorted(files, key=lambda path: path.name)


def _is_resource_name(file_name: str) -> bool:
    return (
        file_name.endswith(".json")
        and not file_name.startswith(".")
        and file_name != "package.json"
    )


# --- reading tarballs ----------------------------------------------------------------


def iter_tar_package_members(
    source: str | os.PathLike[str] | IO[bytes],
) -> Iterator[tuple[str, bytes]]:
    """Yield ``(member name, content)`` for each resource file of a package tarball (``.tgz``).

    The resource files are the ``package/*.json`` members, with the exclusions of
    :func:`package_files`; names are given without a leading ``./``. ``source`` is a path or
    a binary file object; it is read once, front to back, so a pipe or a network stream
    works. A truncated or corrupt archive raises :class:`LoadError` naming the file, possibly
    after some members have been yielded (the gzip checksum is checked at the end).

    The archive is unpacked as a stream, under the unpack limits (``workbench.unpacking``): a
    member over them raises :class:`ArchiveLimitError` naming it, a member's declared size
    before it is read, a compression bomb as soon as it shows.
    """
    with ExitStack() as stack:
        if isinstance(source, (str, os.PathLike)):
            label = os.fspath(source)
            try:
                raw: IO[bytes] = stack.enter_context(open(source, "rb"))
            except OSError as exc:
                raise LoadError(f"Cannot read package archive {label}: {exc}") from exc
        else:
            raw, label = source, str(getattr(source, "name", "<stream>"))
        try:
            meter = stack.enter_context(unpacking.GzipMeter(raw, label))
            with tarfile.open(fileobj=meter, mode="r|") as archive:  # type: ignore[call-overload]
                for member in archive:
                    name = _resource_member_name(member)
                    meter.begin(member.name, member.size, whole=name is not None)
                    if name is None:
                        continue
                    content = archive.extractfile(member)
                    if content is not None:
                        yield name, _read_member(content)
            meter.drain()
        except _ARCHIVE_ERRORS as exc:
            problem = _describe(exc)
            raise LoadError(f"{label}: truncated or corrupt package archive ({problem})") from exc


def _read_member(content: IO[bytes]) -> bytes:
    """A member's bytes, read in chunks (the limits are checked as they are unpacked; the
    parser needs the member whole, so it is at most ``resource_bytes`` large)."""
    chunks = []
    while chunk := content.read(_MEMBER_CHUNK):
        chunks.append(chunk)
    return b"".join(chunks)


def _resource_member_name(member: tarfile.TarInfo) -> str | None:
    if not member.isfile():
        return None
    name = member.name
    while name.startswith("./"):
        name = name[2:]
    folder, separator, file_name = name.partition("/")
    if folder != "package" or not separator or "/" in file_name:
        return None
    return name if _is_resource_name(file_name) else None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unsafe_member_problem(name: str) -> str | None:
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        return "absolute path"
    if ".." in re.split(r"[\\/]", name):
        return "'..' in path"
    return None


def _extract_tarball(archive_path: Path, destination: Path, label: str) -> None:
    def checked(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        problem = _unsafe_member_problem(member.name)
        if problem is not None:
            raise LoadError(f"{label}: refusing to extract member {member.name!r} ({problem})")
        meter.begin(member.name, member.size, whole=_resource_member_name(member) is not None)
        return tarfile.data_filter(member, dest)

    try:
        with archive_path.open("rb") as raw, unpacking.GzipMeter(raw, label) as meter:
            with tarfile.open(fileobj=meter, mode="r|") as archive:  # type: ignore[call-overload]
                archive.extractall(destination, filter=checked)
            meter.drain()
    except tarfile.FilterError as exc:
        member = exc.tarinfo.name
        raise LoadError(f"{label}: refusing to extract member {member!r} ({exc})") from exc
    except _ARCHIVE_ERRORS as exc:
        problem = _describe(exc)
        raise LoadError(f"{label}: truncated or corrupt package tarball ({problem})") from exc


# --- installing ----------------------------------------------------------------------


def install_package(
    name: str,
    version: str | None = None,
    *,
    registry: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    client: httpx.Client | None = None,
    timeout: float = 60.0,
) -> Path:
    """Install a FHIR package into the cache (if needed) and return its cache folder.

    A version that is already cached is returned without any network access (and without
    looking up the registry). Otherwise the packument is fetched from ``registry`` (default:
    :func:`default_registry`); ``version`` None means the ``latest`` dist-tag, and a dist-tag
    name is accepted as a version. The tarball is verified against ``dist.integrity`` (SRI:
    sha512, sha384, sha256 or sha1) or else ``dist.shasum``; if the registry gives neither,
    it cannot be verified. ``timeout`` (seconds, per network operation) applies when no
    ``client`` is given; a given client is used as is and not closed.

    Raises :class:`PackageNotFoundError` for an unknown package or version,
    :class:`PackageIntegrityError` for a hash mismatch, :class:`LoadError` for a broken
    tarball and :class:`PackageError` for network and registry failures. On failure nothing
    is left in the cache.
    """
    _check_name(name)
    if version is not None:
        _check_version(version)
        cached = cached_package_dir(name, version, cache_dir)
        if cached is not None:
            return cached
    cache = _cache_path(cache_dir)
    base = (registry if registry is not None else default_registry()).strip().rstrip("/")
    import httpx

    http = client if client is not None else httpx.Client(timeout=timeout)
    try:
        packument_url = f"{base}/{name}"
        packument = _fetch_packument(http, packument_url, name, base)
        chosen, dist = _select_version(packument, name, version, base, packument_url)
        cached = cached_package_dir(name, chosen, cache)
        if cached is not None:
            return cached
        return _download_and_install(http, name, chosen, dist, cache, packument_url)
    finally:
        if client is None:
            http.close()


def _fetch_packument(http: httpx.Client, url: str, name: str, base: str) -> dict[str, Any]:
    import httpx

    try:
        response = http.get(url, headers={"Accept": _PACKUMENT_ACCEPT}, follow_redirects=True)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise PackageError(f"Cannot fetch package metadata from {url}: {_describe(exc)}") from exc
    if response.status_code == 404:
        raise PackageNotFoundError(f"Package {name} not found in registry {base}")
    if response.status_code >= 400:
        raise PackageError(
            f"Registry {base} answered HTTP {response.status_code} for package metadata {url}"
        )
    try:
        packument = orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise PackageError(f"Package metadata from {url} is not valid JSON: {exc}") from exc
    if not isinstance(packument, dict):
        raise PackageError(f"Package metadata from {url} is not a JSON object")
    return packument


def _select_version(
    packument: dict[str, Any],
    name: str,
    version: str | None,
    base: str,
    url: str,
) -> tuple[str, dict[str, Any]]:
    versions = packument.get("versions")
    if not isinstance(versions, dict):
        raise PackageError(f"Package metadata from {url} has no 'versions'")
    tags = packument.get("dist-tags")
    tags = tags if isinstance(tags, dict) else {}
    available = ", ".join(sorted(versions, key=version_key)) or "none"
    if version is None:
        chosen = tags.get("latest")
        if not isinstance(chosen, str) or not chosen:
            raise PackageNotFoundError(
                f"Package {name} has no 'latest' dist-tag in registry {base}; "
                f"available versions: {available}"
            )
    elif version in versions:
        chosen = version
    elif isinstance(tags.get(version), str):
        chosen = tags[version]
    else:
        raise PackageNotFoundError(
            f"Version {version} of package {name} not found in registry {base}; "
            f"available versions: {available}"
        )
    _check_version(chosen)
    entry = versions.get(chosen)
    if not isinstance(entry, dict):
        raise PackageNotFoundError(
            f"Version {chosen} of package {name} (dist-tag of {version or 'latest'}) is not in "
            f"registry {base}; available versions: {available}"
        )
    dist = entry.get("dist")
    if not isinstance(dist, dict) or not isinstance(dist.get("tarball"), str):
        raise PackageError(f"Package metadata from {url} has no tarball for version {chosen}")
    return chosen, dist


def _expected_digests(dist: dict[str, Any], label: str) -> tuple[str, set[bytes]] | None:
    integrity = dist.get("integrity")
    if isinstance(integrity, str):
        found: dict[str, set[bytes]] = {}
        for token in integrity.split():
            algorithm, separator, value = token.partition("-")
            algorithm = algorithm.lower()
            if not separator or algorithm not in _SRI_STRENGTH:
                continue
            try:
                digest = base64.b64decode(value.partition("?")[0], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise PackageIntegrityError(f"Malformed integrity {token!r} for {label}") from exc
            if len(digest) != hashlib.new(algorithm).digest_size:
                raise PackageIntegrityError(f"Malformed integrity {token!r} for {label}")
            found.setdefault(algorithm, set()).add(digest)
        if found:
            strongest = max(found, key=_SRI_STRENGTH.__getitem__)
            return strongest, found[strongest]
    shasum = dist.get("shasum")
    if isinstance(shasum, str) and shasum.strip():
        try:
            digest = bytes.fromhex(shasum.strip())
        except ValueError as exc:
            raise PackageIntegrityError(f"Malformed shasum {shasum!r} for {label}") from exc
        return "sha1", {digest}
    return None


def _download(http: httpx.Client, url: str, out: IO[bytes], algorithm: str) -> bytes:
    import httpx

    hasher = hashlib.new(algorithm)
    try:
        with http.stream("GET", url, follow_redirects=True) as response:
            if response.status_code >= 400:
                raise PackageError(f"Download of {url} failed: HTTP {response.status_code}")
            for chunk in response.iter_bytes(_CHUNK):
                out.write(chunk)
                hasher.update(chunk)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise PackageError(f"Download of {url} failed: {_describe(exc)}") from exc
    return hasher.digest()


def _download_and_install(
    http: httpx.Client,
    name: str,
    version: str,
    dist: dict[str, Any],
    cache: Path,
    packument_url: str,
) -> Path:
    import httpx

    tarball_url = str(httpx.URL(packument_url).join(dist["tarball"]))
    expected = _expected_digests(dist, tarball_url)
    cache.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".tgz", dir=cache)
    temp_file = Path(temp_name)
    temp_dir: Path | None = None
    try:
        with os.fdopen(handle, "wb") as out:
            algorithm = expected[0] if expected is not None else "sha512"
            digest = _download(http, tarball_url, out, algorithm)
        if expected is not None and digest not in expected[1]:
            wanted = " or ".join(
                f"{algorithm}-{base64.b64encode(value).decode()}" for value in expected[1]
            )
            raise PackageIntegrityError(
                f"Integrity check failed for {name}#{version} ({tarball_url}): expected "
                f"{wanted}, got {algorithm}-{base64.b64encode(digest).decode()}"
            )
        temp_dir = cache / f"{_TEMP_PREFIX}{uuid.uuid4().hex}"
        temp_dir.mkdir()
        _extract_tarball(temp_file, temp_dir, tarball_url)
        _check_manifest(temp_dir, name, tarball_url)
        target = cache / f"{name}#{version}"
        try:
            os.rename(temp_dir, target)
        except OSError as exc:
            winner = cached_package_dir(name, version, cache)
            if winner is not None:
                return winner
            raise PackageError(
                f"Cannot move {name}#{version} into the package cache at {target}: {exc}"
            ) from exc
        temp_dir = None
        return target
    finally:
        temp_file.unlink(missing_ok=True)
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


def _check_manifest(folder: Path, name: str, label: str) -> None:
    manifest = folder / "package" / "package.json"
    if not manifest.is_file():
        raise LoadError(f"{label} is not a FHIR package: it has no package/package.json")
    try:
        data = orjson.loads(manifest.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise LoadError(f"{label}: package/package.json is not valid JSON ({exc})") from exc
    declared = data.get("name") if isinstance(data, dict) else None
    if not isinstance(declared, str) or declared.casefold() != name.casefold():
        raise LoadError(
            f"{label}: package/package.json names package {declared!r}, expected {name!r}"
        )
