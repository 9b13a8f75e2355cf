"""Tests of workbench.packages against a real npm-protocol registry served on 127.0.0.1."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import socket
import stat
import tarfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench import packages, unpacking
from workbench.errors import (
    ArchiveLimitError,
    LoadError,
    PackageError,
    PackageIntegrityError,
    PackageNotFoundError,
)
from workbench.packages import (
    cached_package_dir,
    default_cache_dir,
    default_registry,
    install_package,
    iter_tar_package_members,
    package_files,
    parse_package_ref,
    version_key,
)
from workbench.unpacking import UnpackLimits

NAME = "example.fhir.terminology"

CODE_SYSTEM = {
    "resourceType": "CodeSystem",
    "id": "colors",
    "url": "http://example.org/fhir/CodeSystem/colors",
    "version": "1.0.0",
    "status": "active",
    "content": "complete",
    "concept": [{"code": "red", "display": "Red"}, {"code": "green", "display": "Green"}],
}
VALUE_SET = {
    "resourceType": "ValueSet",
    "id": "warm-colors",
    "url": "http://example.org/fhir/ValueSet/warm-colors",
    "status": "active",
    "compose": {"include": [{"system": CODE_SYSTEM["url"], "concept": [{"code": "red"}]}]},
}
RESOURCE_NAMES = ["package/CodeSystem-colors.json", "package/ValueSet-warm-colors.json"]


def dump(value: Any) -> bytes:
    return json.dumps(value).encode()


def package_contents(name: str = NAME, version: str = "1.0.0") -> dict[str, bytes]:
    """The files of a small FHIR package, including the ones that are not resources."""
    return {
        "package/package.json": dump({"name": name, "version": version, "fhirVersions": ["4.0.1"]}),
        "package/.index.json": dump({"index-version": 1, "files": []}),
        "package/CodeSystem-colors.json": dump(CODE_SYSTEM),
        "package/ValueSet-warm-colors.json": dump(VALUE_SET),
        "package/example/CodeSystem-example.json": dump(CODE_SYSTEM),
        "package/other/README.md": b"not a resource",
    }


def make_tgz(files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    """Build an npm tarball (gzipped tar) holding ``files`` and ``symlinks`` (name → target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member_name, content in files.items():
            info = tarfile.TarInfo(member_name)
            info.size = len(content)
            info.mode = 0o644
            info.mtime = 499162500
            archive.addfile(info, io.BytesIO(content))
        for member_name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(member_name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()


def sri(algorithm: str, data: bytes) -> str:
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def dist_hashes(mode: str, data: bytes) -> dict[str, str]:
    """The hash fields of a packument's ``dist`` for ``data``, in one of several styles."""
    if mode in ("sha512", "sha384", "sha256", "sha1"):
        return {"integrity": sri(mode, data)}
    if mode == "shasum":
        return {"shasum": hashlib.sha1(data).hexdigest()}
    if mode == "both":
        return {"integrity": sri("sha512", data), "shasum": hashlib.sha1(data).hexdigest()}
    if mode == "several":
        return {"integrity": f"{sri('sha1', data)} {sri('sha512', data)}?opt"}
    if mode == "unknown-algorithm":
        return {"integrity": "sha3-AAAA", "shasum": hashlib.sha1(data).hexdigest()}
    if mode == "none":
        return {}
    raise AssertionError(mode)


@dataclass
class Route:
    status: int
    body: bytes
    content_type: str
    hold: bool = False


@dataclass
class FakeRegistry:
    """An npm-protocol registry: packuments at ``/<name>``, tarballs at ``/<name>/-/...``."""

    url: str
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    hooks: dict[str, Callable[[], object]] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)

    def add(
        self,
        path: str,
        body: bytes,
        *,
        status: int = 200,
        content_type: str = "application/json",
        hold: bool = False,
    ) -> None:
        self.routes[path] = Route(status, body, content_type, hold)

    def tarball_path(self, name: str, version: str) -> str:
        return f"/{name}/-/{name}-{version}.tgz"

    def publish(
        self,
        name: str,
        tarballs: dict[str, bytes],
        *,
        latest: str | None = None,
        hashes: str = "sha512",
        hashed: dict[str, bytes] | None = None,
        extra_tags: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Serve ``tarballs`` (version → bytes) and their packument; ``hashed`` fakes hashes."""
        versions: dict[str, Any] = {}
        for version, data in tarballs.items():
            path = self.tarball_path(name, version)
            self.add(path, data, content_type="application/octet-stream")
            digest_of = (hashed or {}).get(version, data)
            dist = {"tarball": self.url + path, **dist_hashes(hashes, digest_of)}
            versions[version] = {"name": name, "version": version, "dist": dist}
        tags = {"latest": latest or list(tarballs)[-1], **(extra_tags or {})}
        packument = {"name": name, "dist-tags": tags, "versions": versions}
        self.add(f"/{name}", dump(packument))
        return packument


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that gave up (timeouts) are expected; don't print their broken pipes."""


def make_handler(registry: FakeRegistry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            registry.requests.append(self.path)
            hook = registry.hooks.get(self.path)
            if hook is not None:
                hook()
            route = registry.routes.get(self.path)
            if route is None:
                route = Route(404, b'{"error":"Not found"}', "application/json")
            if route.hold:
                registry.release.wait(10)
            self.send_response(route.status)
            self.send_header("Content-Type", route.content_type)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def registry() -> Iterator[FakeRegistry]:
    fake = FakeRegistry(url="")
    server = QuietServer(("127.0.0.1", 0), make_handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def cache_entries(cache: Path) -> list[str]:
    return sorted(entry.name for entry in cache.iterdir()) if cache.exists() else []


def write_cached(cache: Path, name: str, version: str, marker: str = "") -> Path:
    folder = cache / f"{name}#{version}"
    (folder / "package").mkdir(parents=True)
    (folder / "package" / "package.json").write_bytes(dump({"name": name, "version": version}))
    if marker:
        (folder / "package" / marker).write_text(marker)
    return folder


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# --- installing ----------------------------------------------------------------------


def test_install_then_cached_call_makes_no_request(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())})

    folder = install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert folder == cache / f"{NAME}#1.0.0"
    assert registry.requests == [f"/{NAME}", registry.tarball_path(NAME, "1.0.0")]
    assert cache_entries(cache) == [f"{NAME}#1.0.0"]
    for member_name, content in package_contents().items():
        assert (folder / member_name).read_bytes() == content
    assert [path.name for path in package_files(folder)] == [
        "CodeSystem-colors.json",
        "ValueSet-warm-colors.json",
    ]

    again = install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert again == folder
    assert len(registry.requests) == 2


def test_cached_version_needs_no_registry_configuration(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_cached(cache, NAME, "1.0.0")
    for variable in ("WORKBENCH_PACKAGE_REGISTRY", "NPM_CONFIG_REGISTRY", "npm_config_registry"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    assert install_package(NAME, "1.0.0", cache_dir=cache) == folder
    with pytest.raises(PackageError, match="WORKBENCH_PACKAGE_REGISTRY"):
        install_package(NAME, "2.0.0", cache_dir=cache)


def test_version_none_installs_the_latest_dist_tag(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(
        NAME,
        {
            "1.0.0": make_tgz(package_contents(version="1.0.0")),
            "2.0.0-ballot": make_tgz(package_contents(version="2.0.0-ballot")),
            "1.1.0": make_tgz(package_contents(version="1.1.0")),
        },
        latest="1.1.0",
    )

    folder = install_package(NAME, registry=registry.url + "/", cache_dir=cache)

    assert folder == cache / f"{NAME}#1.1.0"
    assert registry.requests == [f"/{NAME}", registry.tarball_path(NAME, "1.1.0")]

    assert install_package(NAME, registry=registry.url, cache_dir=cache) == folder
    assert registry.requests[2:] == [f"/{NAME}"]


def test_a_dist_tag_name_is_accepted_as_version(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(
        NAME,
        {"1.0.0": make_tgz(package_contents()), "2.0.0-ballot": make_tgz(package_contents())},
        latest="1.0.0",
        extra_tags={"ballot": "2.0.0-ballot"},
    )

    folder = install_package(NAME, "ballot", registry=registry.url, cache_dir=cache)

    assert folder == cache / f"{NAME}#2.0.0-ballot"


def test_a_given_client_is_used_and_left_open(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())})

    with httpx.Client() as client:
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache, client=client)
        assert not client.is_closed

    assert len(registry.requests) == 2


def test_unknown_package_is_not_found(registry: FakeRegistry, cache: Path) -> None:
    with pytest.raises(PackageNotFoundError) as caught:
        install_package("no.such.package", "1.0.0", registry=registry.url, cache_dir=cache)

    assert "no.such.package" in str(caught.value)
    assert registry.url in str(caught.value)
    assert caught.value.status == 404
    assert cache_entries(cache) == []


def test_unknown_version_lists_available_versions(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(
        NAME,
        {
            "1.10.0": make_tgz(package_contents()),
            "1.2.0": make_tgz(package_contents()),
            "1.0.0-ballot": make_tgz(package_contents()),
        },
    )

    with pytest.raises(PackageNotFoundError) as caught:
        install_package(NAME, "3.0.0", registry=registry.url, cache_dir=cache)

    message = str(caught.value)
    assert "3.0.0" in message
    assert NAME in message
    assert "available versions: 1.0.0-ballot, 1.2.0, 1.10.0" in message
    assert registry.requests == [f"/{NAME}"]
    assert cache_entries(cache) == []


@pytest.mark.parametrize(
    "hashes",
    ["sha512", "sha384", "sha256", "sha1", "shasum", "both", "several", "unknown-algorithm"],
)
def test_mismatching_hash_is_rejected_without_trace(
    registry: FakeRegistry, cache: Path, hashes: str
) -> None:
    data = make_tgz(package_contents())
    registry.publish(NAME, {"1.0.0": data}, hashes=hashes, hashed={"1.0.0": data + b"tampered"})

    with pytest.raises(PackageIntegrityError) as caught:
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert NAME in str(caught.value)
    assert registry.tarball_path(NAME, "1.0.0") in str(caught.value)
    assert cache_entries(cache) == []


@pytest.mark.parametrize(
    "hashes",
    [
        "sha512",
        "sha384",
        "sha256",
        "sha1",
        "shasum",
        "both",
        "several",
        "unknown-algorithm",
        "none",
    ],
)
def test_matching_hash_is_accepted(registry: FakeRegistry, cache: Path, hashes: str) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())}, hashes=hashes)

    folder = install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert cache_entries(cache) == [folder.name]


@pytest.mark.parametrize(
    "dist",
    [
        {"integrity": "sha512-not*base64"},
        {"integrity": "sha256-AAAA"},
        {"shasum": "not hex"},
    ],
    ids=["bad-base64", "wrong-length", "bad-shasum"],
)
def test_malformed_hash_is_an_integrity_error(
    registry: FakeRegistry, cache: Path, dist: dict[str, str]
) -> None:
    packument = registry.publish(NAME, {"1.0.0": make_tgz(package_contents())}, hashes="none")
    packument["versions"]["1.0.0"]["dist"].update(dist)
    registry.add(f"/{NAME}", dump(packument))

    with pytest.raises(PackageIntegrityError, match="Malformed"):
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert cache_entries(cache) == []


def corrupt_middle(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


def plain_tar(files: dict[str, bytes]) -> bytes:
    return gzip.decompress(make_tgz(files))


BROKEN_TARBALLS: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("truncated-half", lambda data: data[: len(data) // 2]),
    ("truncated-trailer", lambda data: data[:-4]),
    ("truncated-header", lambda data: data[:5]),
    ("empty", lambda data: b""),
    ("corrupt-byte", corrupt_middle),
    ("not-gzip", lambda data: b"this is not a tarball"),
    ("gzip-of-garbage", lambda data: gzip.compress(b"garbage" * 100)),
]


@pytest.mark.parametrize(
    "breaker", [breaker for _, breaker in BROKEN_TARBALLS], ids=[i for i, _ in BROKEN_TARBALLS]
)
def test_broken_tarball_is_a_load_error(
    registry: FakeRegistry, cache: Path, breaker: Callable[[bytes], bytes]
) -> None:
    registry.publish(NAME, {"1.0.0": breaker(make_tgz(package_contents()))})

    with pytest.raises(LoadError) as caught:
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert registry.tarball_path(NAME, "1.0.0") in str(caught.value)
    assert cache_entries(cache) == []


BIG = b'{"resourceType": "CodeSystem"' + b" " * (2 << 20) + b"}"


@pytest.mark.parametrize(
    ("extra", "limits", "limit", "member"),
    [
        ({"package/CodeSystem-big.json": BIG}, UnpackLimits(), "ratio", "CodeSystem-big.json"),
        (
            {"package/other/big.bin": BIG},
            UnpackLimits(member_bytes=1 << 20, ratio=10**6),
            "member_bytes",
            "other/big.bin",
        ),
        (
            {"package/CodeSystem-big.json": BIG},
            UnpackLimits(resource_bytes=1 << 20, ratio=10**6),
            "resource_bytes",
            "CodeSystem-big.json",
        ),
        ({}, UnpackLimits(total_bytes=500), "total_bytes", ""),
    ],
    ids=["ratio-bomb", "member-bytes", "resource-bytes", "total-bytes"],
)
def test_a_tarball_over_the_unpack_limits_is_refused(
    registry: FakeRegistry,
    cache: Path,
    extra: dict[str, bytes],
    limits: UnpackLimits,
    limit: str,
    member: str,
) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz({**package_contents(), **extra})})

    with unpacking.limits_in_force(limits), pytest.raises(ArchiveLimitError) as caught:
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    error = caught.value
    assert error.limit == limit and error.member.startswith("package/")
    assert error.member.endswith(member)
    assert f"the member {error.member!r}" in str(error) and f"the limit {limit}" in str(error)
    assert registry.tarball_path(NAME, "1.0.0") in str(error)
    assert cache_entries(cache) == []


@pytest.mark.parametrize(
    ("files", "symlinks"),
    [
        ({"package/../../evil.json": b"{}"}, {}),
        ({"../evil.json": b"{}"}, {}),
        ({"/tmp/evil.json": b"{}"}, {}),
        ({"package\\..\\..\\evil.json": b"{}"}, {}),
        ({}, {"package/escape": "../../../evil.json"}),
        ({}, {"package/absolute": "/etc/passwd"}),
    ],
    ids=["dotdot", "leading-dotdot", "absolute", "backslash-dotdot", "symlink-out", "symlink-abs"],
)
def test_unsafe_members_are_rejected(
    registry: FakeRegistry,
    cache: Path,
    tmp_path: Path,
    files: dict[str, bytes],
    symlinks: dict[str, str],
) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz({**package_contents(), **files}, symlinks)})

    with pytest.raises(LoadError) as caught:
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert registry.tarball_path(NAME, "1.0.0") in str(caught.value)
    assert "refusing to extract member" in str(caught.value)
    assert cache_entries(cache) == []
    assert not (tmp_path / "evil.json").exists()


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"package/CodeSystem-colors.json": dump(CODE_SYSTEM)}, "no package/package.json"),
        ({"other/package/package.json": dump({"name": NAME})}, "no package/package.json"),
        ({"package/package.json": b"{not json"}, "not valid JSON"),
        ({"package/package.json": dump({"name": "some.other.package"})}, "some.other.package"),
        ({"package/package.json": dump(["not", "an", "object"])}, "expected"),
    ],
    ids=["no-manifest", "manifest-elsewhere", "manifest-not-json", "other-name", "not-object"],
)
def test_tarball_must_hold_this_package(
    registry: FakeRegistry, cache: Path, files: dict[str, bytes], problem: str
) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(files)})

    with pytest.raises(LoadError, match=problem):
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert cache_entries(cache) == []


def test_losing_a_race_uses_the_winners_folder(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())})
    registry.hooks[registry.tarball_path(NAME, "1.0.0")] = lambda: write_cached(
        cache, NAME, "1.0.0", marker="winner.txt"
    )

    folder = install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert folder == cache / f"{NAME}#1.0.0"
    assert (folder / "package" / "winner.txt").exists()
    assert not (folder / "package" / "CodeSystem-colors.json").exists()
    assert cache_entries(cache) == [f"{NAME}#1.0.0"]


def test_an_incomplete_folder_in_the_way_is_an_error(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())})
    (cache / f"{NAME}#1.0.0" / "package" / "leftover").mkdir(parents=True)

    with pytest.raises(PackageError, match="package cache"):
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert cache_entries(cache) == [f"{NAME}#1.0.0"]


@pytest.mark.parametrize(
    ("setup", "error", "path"),
    [
        (lambda r: r.add(f"/{NAME}", b"oops", status=500), PackageError, f"/{NAME}"),
        (lambda r: r.add(f"/{NAME}", b"<html>", content_type="text/html"), PackageError, "JSON"),
        (lambda r: r.add(f"/{NAME}", b"[]"), PackageError, "JSON object"),
        (lambda r: r.add(f"/{NAME}", dump({"name": NAME})), PackageError, "versions"),
        (
            lambda r: r.add(
                f"/{NAME}", dump({"versions": {"1.0.0": {}}, "dist-tags": {"latest": "1.0.0"}})
            ),
            PackageError,
            "no tarball",
        ),
        (
            lambda r: r.add(
                f"/{NAME}", dump({"versions": {"1.0.0": {}}, "dist-tags": {"beta": "1.0.0"}})
            ),
            PackageNotFoundError,
            "latest",
        ),
        (
            lambda r: r.add(
                f"/{NAME}", dump({"versions": {"1.0.0": {}}, "dist-tags": {"latest": "2.0.0"}})
            ),
            PackageNotFoundError,
            "available versions: 1.0.0",
        ),
        (
            lambda r: r.add(f"/{NAME}", dump({"versions": {}, "dist-tags": {"latest": "../x"}})),
            PackageError,
            "Invalid package version",
        ),
    ],
    ids=[
        "http-500",
        "not-json",
        "not-object",
        "no-versions",
        "no-dist",
        "no-latest",
        "latest-missing",
        "evil-latest",
    ],
)
def test_bad_registry_answers(
    registry: FakeRegistry,
    cache: Path,
    setup: Callable[[FakeRegistry], None],
    error: type[Exception],
    path: str,
) -> None:
    setup(registry)

    with pytest.raises(error) as caught:
        install_package(NAME, registry=registry.url, cache_dir=cache)

    assert path in str(caught.value)
    assert cache_entries(cache) == []


def test_missing_tarball_is_a_package_error(registry: FakeRegistry, cache: Path) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())})
    del registry.routes[registry.tarball_path(NAME, "1.0.0")]

    with pytest.raises(PackageError) as caught:
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache)

    assert registry.tarball_path(NAME, "1.0.0") in str(caught.value)
    assert "404" in str(caught.value)
    assert cache_entries(cache) == []


@pytest.mark.parametrize("slow", ["packument", "tarball"])
def test_timeout_is_a_package_error_naming_the_url(
    registry: FakeRegistry, cache: Path, slow: str
) -> None:
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())})
    slow_path = f"/{NAME}" if slow == "packument" else registry.tarball_path(NAME, "1.0.0")
    registry.routes[slow_path].hold = True

    with pytest.raises(PackageError) as caught:
        install_package(NAME, "1.0.0", registry=registry.url, cache_dir=cache, timeout=0.3)

    assert registry.url + slow_path in str(caught.value)
    assert "Timeout" in str(caught.value)
    assert cache_entries(cache) == []


def test_unreachable_registry_is_a_package_error(cache: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"

    with pytest.raises(PackageError) as caught:
        install_package(NAME, "1.0.0", registry=url, cache_dir=cache, timeout=5)

    assert f"{url}/{NAME}" in str(caught.value)
    assert not isinstance(caught.value, PackageNotFoundError)


@pytest.mark.parametrize(
    ("name", "version"),
    [("Bad Name", "1.0.0"), ("../escape", "1.0.0"), (NAME, "../../x"), (NAME, "")],
)
def test_install_checks_name_and_version(cache: Path, name: str, version: str) -> None:
    with pytest.raises(PackageError, match="Invalid package"):
        install_package(name, version, registry="http://127.0.0.1:9", cache_dir=cache)


# --- configuration -------------------------------------------------------------------

REGISTRY_VARIABLES = ("WORKBENCH_PACKAGE_REGISTRY", "NPM_CONFIG_REGISTRY", "npm_config_registry")


@pytest.fixture
def no_registry_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Clear the registry variables and put an empty folder (returned) on PATH."""
    for variable in REGISTRY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def fake_npm(bin_dir: Path, script: str) -> None:
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\n" + script + "\n")
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)


NPM_PRINTS_REGISTRY = (
    'if [ "$1 $2 $3" = "config get registry" ]; then echo "http://127.0.0.1:4873/"; else exit 3; fi'
)


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        (
            {
                "WORKBENCH_PACKAGE_REGISTRY": "http://127.0.0.1:1/wb//",
                "NPM_CONFIG_REGISTRY": "http://127.0.0.1:2/npm",
                "npm_config_registry": "http://127.0.0.1:3/npm",
            },
            "http://127.0.0.1:1/wb",
        ),
        (
            {"NPM_CONFIG_REGISTRY": "http://127.0.0.1:2/npm/", "npm_config_registry": "x"},
            "http://127.0.0.1:2/npm",
        ),
        ({"npm_config_registry": "http://127.0.0.1:3/npm/"}, "http://127.0.0.1:3/npm"),
        (
            {"WORKBENCH_PACKAGE_REGISTRY": "  ", "npm_config_registry": "http://127.0.0.1:3/"},
            "http://127.0.0.1:3",
        ),
    ],
    ids=["workbench-wins", "npm-upper", "npm-lower", "blank-ignored"],
)
def test_default_registry_environment_precedence(
    monkeypatch: pytest.MonkeyPatch,
    no_registry_config: Path,
    variables: dict[str, str],
    expected: str,
) -> None:
    fake_npm(no_registry_config, NPM_PRINTS_REGISTRY)
    for variable, value in variables.items():
        monkeypatch.setenv(variable, value)

    assert default_registry() == expected


@pytest.mark.skipif(os.name != "posix", reason="the fake npm is a shell script")
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (NPM_PRINTS_REGISTRY, "http://127.0.0.1:4873"),
        (
            'echo "npm notice something" >&2; echo "https://127.0.0.1/npm///"',
            "https://127.0.0.1/npm",
        ),
        ("echo undefined", None),
        ("echo", None),
        ('echo "http://127.0.0.1:4873/"; exit 1', None),
        ("exec sleep 5", None),
    ],
    ids=["prints-url", "noise-on-stderr", "undefined", "empty", "fails", "hangs"],
)
def test_default_registry_asks_npm(
    monkeypatch: pytest.MonkeyPatch, no_registry_config: Path, script: str, expected: str | None
) -> None:
    fake_npm(no_registry_config, script)
    monkeypatch.setattr(packages, "_NPM_TIMEOUT", 0.5)

    if expected is None:
        with pytest.raises(PackageError, match="WORKBENCH_PACKAGE_REGISTRY"):
            default_registry()
    else:
        assert default_registry() == expected


def test_default_registry_without_npm_explains_configuration(no_registry_config: Path) -> None:
    with pytest.raises(PackageError) as caught:
        default_registry()

    assert "WORKBENCH_PACKAGE_REGISTRY" in str(caught.value)
    assert "npm config set registry" in str(caught.value)


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("WORKBENCH_PACKAGE_CACHE", raising=False)
    assert default_cache_dir() == tmp_path / "home" / ".fhir" / "packages"

    monkeypatch.setenv("WORKBENCH_PACKAGE_CACHE", str(tmp_path / "elsewhere"))
    assert default_cache_dir() == tmp_path / "elsewhere"

    monkeypatch.setenv("WORKBENCH_PACKAGE_CACHE", "~/cache")
    assert default_cache_dir() == tmp_path / "home" / "cache"


def test_cache_dir_from_environment_is_used(
    registry: FakeRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_PACKAGE_CACHE", str(tmp_path / "env-cache"))
    registry.publish(NAME, {"1.0.0": make_tgz(package_contents())})

    folder = install_package(NAME, "1.0.0", registry=registry.url)

    assert folder == tmp_path / "env-cache" / f"{NAME}#1.0.0"
    assert cached_package_dir(NAME) == folder


# --- names and versions --------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("hl7.fhir.r4.core#4.0.1", ("hl7.fhir.r4.core", "4.0.1")),
        ("hl7.fhir.r4.core@4.0.1", ("hl7.fhir.r4.core", "4.0.1")),
        ("hl7.terminology.r4", ("hl7.terminology.r4", None)),
        ("  hl7.fhir.us.core#6.1.0\n", ("hl7.fhir.us.core", "6.1.0")),
        ("hl7.fhir.uv.ips#1.0.0-ballot", ("hl7.fhir.uv.ips", "1.0.0-ballot")),
        ("fhir.dicom#2022.4.20221006", ("fhir.dicom", "2022.4.20221006")),
        ("my_pkg-2#current", ("my_pkg-2", "current")),
        ("pkg#1.0.0+build.5", ("pkg", "1.0.0+build.5")),
    ],
)
def test_parse_package_ref(ref: str, expected: tuple[str, str | None]) -> None:
    assert parse_package_ref(ref) == expected


@pytest.mark.parametrize(
    "ref",
    [
        "",
        "   ",
        "#4.0.1",
        "@4.0.1",
        "hl7.fhir.r4.core#",
        "hl7.fhir.r4.core@",
        "HL7.Fhir.R4.Core#4.0.1",
        "@scope/package@1.0.0",
        "../evil#1.0.0",
        "a b#1.0.0",
        ".hidden#1.0.0",
        "-dash#1.0.0",
        "pkg#1.0/../..",
        "pkg#../x",
        "pkg#1#2",
        "pkg@1@2",
        "pkg# 1.0.0",
        "x" * 215,
    ],
)
def test_parse_package_ref_rejects_garbage(ref: str) -> None:
    with pytest.raises(PackageError, match="Invalid package"):
        parse_package_ref(ref)


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.0.0-ballot", "1.0.0"),
        ("1.0.0", "1.0.1"),
        ("1.0.1", "1.1.0"),
        ("1.9.0", "1.10.0"),
        ("1.10.0", "2.0.0-ballot"),
        ("0.9.9", "1.0.0-ballot"),
        ("1.0.0-alpha", "1.0.0-alpha.1"),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
        ("1.0.0-alpha.beta", "1.0.0-beta"),
        ("1.0.0-beta.2", "1.0.0-beta.11"),
        ("1.0.0-ballot", "1.0.0-ballot2"),
        ("1.0.0-rc.1", "1.0.0"),
        ("4.0", "4.0.1"),
        ("9.0", "10.0"),
        ("current", "0.0.1"),
        ("current", "dev"),
        ("r4", "v5"),
        ("1.0.0.0", "0.0.1"),
    ],
)
def test_version_key_ordering(lower: str, higher: str) -> None:
    assert version_key(lower) < version_key(higher)
    assert version_key(higher) > version_key(lower)


def test_version_key_sorts_a_mixed_list() -> None:
    versions = ["1.10.0", "current", "1.0.0", "2.0.0-ballot", "1.0.0-ballot", "1.2.0", "dev"]

    assert sorted(versions, key=version_key) == [
        "current",
        "dev",
        "1.0.0-ballot",
        "1.0.0",
        "1.2.0",
        "1.10.0",
        "2.0.0-ballot",
    ]


@given(
    st.tuples(st.integers(0, 999), st.integers(0, 999), st.integers(0, 999)),
    st.tuples(st.integers(0, 999), st.integers(0, 999), st.integers(0, 999)),
    st.sampled_from(["", "-ballot", "-ballot.2", "-rc.1", "-0"]),
)
def test_version_key_follows_numeric_order(
    first: tuple[int, int, int], second: tuple[int, int, int], prerelease: str
) -> None:
    def text(parts: tuple[int, int, int]) -> str:
        return ".".join(map(str, parts))

    assert (version_key(text(first)) < version_key(text(second))) == (first < second)
    assert version_key(text(first) + prerelease) <= version_key(text(first))


# --- the cache -----------------------------------------------------------------------


def test_cached_package_dir(cache: Path) -> None:
    assert cached_package_dir(NAME, cache_dir=cache) is None
    for version in ["1.0.0", "1.10.0", "1.9.0", "2.0.0-ballot", "current"]:
        write_cached(cache, NAME, version)
    (cache / f"{NAME}#9.9.9" / "package").mkdir(parents=True)
    write_cached(cache, f"{NAME}.extra", "99.0.0")
    (cache / f"{NAME}#").mkdir()
    (cache / "stray-file.txt").write_text("not a package")

    assert cached_package_dir(NAME, cache_dir=cache) == cache / f"{NAME}#2.0.0-ballot"
    assert cached_package_dir(NAME, "1.9.0", cache_dir=cache) == cache / f"{NAME}#1.9.0"
    assert cached_package_dir(NAME, "9.9.9", cache_dir=cache) is None
    assert cached_package_dir(NAME, "3.0.0", cache_dir=cache) is None
    assert cached_package_dir("not.cached", cache_dir=cache) is None


# --- package files and tarball members -------------------------------------------------


def test_package_files_keeps_only_top_level_resources(tmp_path: Path) -> None:
    folder = tmp_path / f"{NAME}#1.0.0"
    for member_name, content in package_contents().items():
        (folder / member_name).parent.mkdir(parents=True, exist_ok=True)
        (folder / member_name).write_bytes(content)
    extra = {".hidden.json": b"{}", "notes.txt": b"", "ImplementationGuide-ig.json": b"{}"}
    for file_name, content in extra.items():
        (folder / "package" / file_name).write_bytes(content)
    (folder / "package" / "folder.json").mkdir()
    (folder / "outside.json").write_bytes(b"{}")
    expected = [
        "CodeSystem-colors.json",
        "ImplementationGuide-ig.json",
        "ValueSet-warm-colors.json",
    ]

    assert [path.name for path in package_files(folder)] == expected
    assert package_files(folder / "package") == package_files(folder)
    assert all(path.parent == folder / "package" for path in package_files(folder))


def test_package_files_of_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="missing"):
        package_files(tmp_path / "missing")


def test_iter_tar_package_members_reads_resources(tmp_path: Path) -> None:
    files = {
        **package_contents(),
        "./package/ValueSet-dotted.json": dump(VALUE_SET),
        "package/.hidden.json": b"{}",
        "package/notes.txt": b"",
        "other/CodeSystem-x.json": b"{}",
        "package/../CodeSystem-x.json": b"{}",
    }
    archive = tmp_path / "example.tgz"
    archive.write_bytes(make_tgz(files, {"package/Link.json": "CodeSystem-colors.json"}))

    members = dict(iter_tar_package_members(archive))

    assert sorted(members) == sorted([*RESOURCE_NAMES, "package/ValueSet-dotted.json"])
    assert json.loads(members["package/CodeSystem-colors.json"]) == CODE_SYSTEM
    assert json.loads(members["package/ValueSet-warm-colors.json"]) == VALUE_SET
    assert list(iter_tar_package_members(str(archive))) == list(iter_tar_package_members(archive))


class ForwardOnly(io.RawIOBase):
    """A stream that can only be read front to back, like a pipe."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(min(len(buffer), 1000))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def test_iter_tar_package_members_reads_a_stream_once() -> None:
    stream = io.BufferedReader(ForwardOnly(make_tgz(package_contents())))

    names = [member_name for member_name, _ in iter_tar_package_members(stream)]

    assert names == RESOURCE_NAMES
    assert not stream.seekable()


@pytest.mark.parametrize(
    "breaker", [breaker for _, breaker in BROKEN_TARBALLS], ids=[i for i, _ in BROKEN_TARBALLS]
)
def test_iter_tar_package_members_on_a_broken_archive(
    tmp_path: Path, breaker: Callable[[bytes], bytes]
) -> None:
    archive = tmp_path / "broken.tgz"
    archive.write_bytes(breaker(make_tgz(package_contents())))

    with pytest.raises(LoadError) as caught:
        list(iter_tar_package_members(archive))

    assert str(archive) in str(caught.value)


def test_iter_tar_package_members_on_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match=r"missing\.tgz"):
        list(iter_tar_package_members(tmp_path / "missing.tgz"))


def test_iter_tar_package_members_needs_gzip(tmp_path: Path) -> None:
    archive = tmp_path / "plain.tar"
    archive.write_bytes(plain_tar(package_contents()))

    with pytest.raises(LoadError, match=r"plain\.tar"):
        list(iter_tar_package_members(archive))
