"""The Registry: latest-version ordering, canonical resolution, ids, listeners, duplicates."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.errors import DuplicateCanonicalError, ResourceNotFoundError
from workbench.registry import Change, Registry
from workbench.resources import latest

URL = "http://example.org/fhir/CodeSystem/reg"
OTHER = "http://example.org/fhir/CodeSystem/other"
VS_URL = "http://example.org/fhir/ValueSet/reg"


def cs(version: str | None = None, rid: str | None = None, **extra: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"resourceType": "CodeSystem", "url": URL, "content": "complete"}
    if rid is not None:
        r["id"] = rid
    if version is not None:
        r["version"] = version
    r.update(extra)
    return r


def versions(*items: str | tuple[str, str]) -> list[dict[str, Any]]:
    out = []
    for i, item in enumerate(items):
        version, date = (item, None) if isinstance(item, str) else item
        out.append(cs(version, f"r{i}", **({"date": date} if date else {})))
    return out


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(("1.9.0", "1.10.0", "1.2.0"), "1.10.0", id="semver-not-lexical"),
        pytest.param(("2.0.0", "10.0.0"), "10.0.0", id="semver-major"),
        pytest.param(("1.0.0-ballot", "1.0.0", "0.9.9"), "1.0.0", id="release-beats-pre-release"),
        pytest.param(("1.0.0", "1.0.1-ballot"), "1.0.1-ballot", id="newer-pre-release"),
        pytest.param(("1.0.0-alpha.2", "1.0.0-alpha.10"), "1.0.0-alpha.10", id="numeric-pre"),
        pytest.param(("1.0.0-alpha", "1.0.0-alpha.1"), "1.0.0-alpha.1", id="longer-pre"),
        pytest.param(("1.0.0-alpha.1", "1.0.0-beta"), "1.0.0-beta", id="pre-alpha-vs-beta"),
        pytest.param(("1.0.0-rc.1", "1.0.0-1"), "1.0.0-rc.1", id="alnum-pre-beats-numeric"),
        pytest.param(("1.2", "1.1.9"), "1.2", id="short-semver"),
        pytest.param(("v1.0.0", "v2.0.0"), "v2.0.0", id="v-prefix"),
        pytest.param(("1.0.0+build.9", "1.0.1+build.1"), "1.0.1+build.1", id="build-metadata"),
        pytest.param(
            (("current", "2020-01-01"), ("draft", "2021-06-01"), ("ballot", "2019-12-31")),
            "draft",
            id="dates-when-not-semver",
        ),
        pytest.param(
            (("1.0.0", "2022-01-01"), ("R5", "2020-01-01")),
            "1.0.0",
            id="dates-when-mixed",
        ),
        pytest.param((("a", "2020-01-01"), ("b", "2020-01-01")), "b", id="same-date-by-version"),
        pytest.param(("alpha", "beta", "R4"), "beta", id="lexical-fallback"),
        pytest.param(("R4", "1.0.0"), "R4", id="lexical-mixed"),
        pytest.param((("1.0.0", "2020-01-01"), "R5"), "R5", id="lexical-when-a-date-is-missing"),
    ],
)
def test_latest(items: tuple[str | tuple[str, str], ...], expected: str) -> None:
    resources = versions(*items)
    assert latest(resources)["version"] == expected
    assert latest(reversed(resources))["version"] == expected
    registry = Registry()
    registry.add_many(resources)
    assert registry.get("CodeSystem", URL)["version"] == expected


def test_unversioned_sorts_below_versioned() -> None:
    registry = Registry()
    registry.add_many([cs(None, "plain"), cs("0.0.1", "v")])
    assert registry.get("CodeSystem", URL)["id"] == "v"
    assert latest([]) is None
    assert latest([cs(None, "x"), cs(None, "y")])["id"] == "y"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        pytest.param(None, "10.0.0-ballot", id="latest"),
        pytest.param("1.0.3", "1.0.3", id="exact"),
        pytest.param("1.0", "1.0.10", id="partial-takes-latest-match"),
        pytest.param("1", "1.0.10", id="partial-major"),
        pytest.param("2", "2.0.0", id="partial-other-major"),
        pytest.param("3.0.0", None, id="version-of-another-url"),
        pytest.param("1.0.", None, id="not-a-prefix"),
        pytest.param("1.0.1", None, id="1.0.1-is-no-prefix-of-1.0.10"),
    ],
)
def test_get_version(version: str | None, expected: str | None) -> None:
    registry = Registry()
    registry.add_many(versions("1.0.3", "1.0.10", "2.0.0", "10.0.0-ballot"))
    registry.add_many([cs("3.0.0", "elsewhere", url=OTHER)])
    found = registry.get("CodeSystem", URL, version)
    assert (found["version"] if found else None) == expected


def test_get_unknown_and_url_pipe_version_through_engine() -> None:
    from workbench import Workbench

    wb = Workbench()
    wb.load(
        [
            {"resourceType": "ValueSet", "url": VS_URL, "version": v, "id": f"vs{i}"}
            for i, v in enumerate(("1.0.3", "1.0.10", "2.0.0"))
        ]
    )
    assert wb.registry.get("ValueSet", "http://nope") is None
    assert wb.resource("ValueSet", VS_URL)["version"] == "2.0.0"
    assert wb.resource("ValueSet", f"{VS_URL}|1.0")["version"] == "1.0.10"
    assert wb.resource("ValueSet", VS_URL, "1.0.3")["id"] == "vs0"
    assert sorted(wb.registry.versions("ValueSet", VS_URL)) == ["1.0.10", "1.0.3", "2.0.0"]


@pytest.mark.parametrize(
    ("stored", "incoming", "expected_id"),
    [
        pytest.param(cs("1.0.0", "x"), cs("2.0.0", "x"), "x-2.0.0", id="other-version"),
        pytest.param(cs("1.0.0", "x"), cs("1.0.0", "x", url=OTHER), "x-1.0.0", id="other-url"),
        pytest.param(cs(None, "x"), cs(None, "x", url=OTHER), "x-2", id="unversioned"),
        pytest.param(cs("1.0.0", "x"), cs("1.0.0", "x"), "x", id="same-canonical-replaces"),
        pytest.param(cs("1.0.0", "x"), cs("1.0.0", "y"), "y", id="new-id-same-canonical"),
        pytest.param(cs("1.0.0", "x"), cs("1.0.0"), "x", id="no-id-same-canonical"),
        pytest.param(cs("1.0.0", "x"), cs("1 0/0", "x"), "x-1-0-0", id="version-cleaned"),
    ],
)
def test_id_collision(stored: dict[str, Any], incoming: dict[str, Any], expected_id: str) -> None:
    registry = Registry()
    registry.add_many([stored])
    (added,) = registry.add_many([incoming])
    assert added["id"] == expected_id
    assert registry.read("CodeSystem", expected_id) is incoming
    same = stored.get("url") == incoming.get("url") and stored.get("version") == incoming.get(
        "version"
    )
    assert len(registry) == (1 if same else 2)


def test_missing_id_gets_one() -> None:
    registry = Registry()
    (added,) = registry.add_many([cs("1.0.0")])
    assert len(added["id"]) == 32 + len("-1.0.0")
    assert added["id"].endswith("-1.0.0")


def test_same_canonical_twice_in_one_batch_keeps_the_later() -> None:
    registry = Registry()
    registry.add_many([cs("1.0.0", "first"), cs("1.0.0", "second")])
    assert [r["id"] for r in registry.all("CodeSystem")] == ["second"]


def recorder(registry: Registry) -> list[frozenset[tuple[str, str]]]:
    seen: list[frozenset[tuple[str, str]]] = []

    def listener(change: Change) -> None:
        seen.append(change.urls)

    registry.subscribe(listener)
    return seen


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        pytest.param(
            lambda r: r.put(cs("3.0.0", "new")),
            [frozenset({("CodeSystem", URL)})],
            id="put-create",
        ),
        pytest.param(
            lambda r: r.put(cs("1.0.0", "a", url=OTHER)),
            [frozenset({("CodeSystem", URL), ("CodeSystem", OTHER)})],
            id="put-moves-url",
        ),
        pytest.param(
            lambda r: r.delete("ValueSet", "v"),
            [frozenset({("ValueSet", VS_URL)})],
            id="delete",
        ),
        pytest.param(
            lambda r: r.add_many(
                [cs("9", "n1"), {"resourceType": "ValueSet", "id": "v2", "url": VS_URL + "2"}]
            ),
            [frozenset({("CodeSystem", URL), ("ValueSet", VS_URL + "2")})],
            id="add-many-notifies-once",
        ),
        pytest.param(
            lambda r: r.put({"resourceType": "ValueSet", "id": "nourl"}),
            [frozenset()],
            id="no-url",
        ),
    ],
)
def test_listeners(action: Any, expected: list[frozenset[tuple[str, str]]]) -> None:
    registry = Registry()
    registry.add_many([cs("1.0.0", "a"), {"resourceType": "ValueSet", "id": "v", "url": VS_URL}])
    seen = recorder(registry)
    generation = registry.generation
    action(registry)
    assert seen == expected
    assert registry.generation == generation + 1


@pytest.mark.parametrize(
    ("resource", "created"),
    [
        pytest.param(cs("1.0.0", "a", title="changed"), False, id="replace-same-id"),
        pytest.param(cs("2.0.0", "b"), True, id="create"),
    ],
)
def test_put(resource: dict[str, Any], created: bool) -> None:
    registry = Registry()
    registry.add_many([cs("1.0.0", "a")])
    stored, was_created = registry.put(resource)
    assert (stored is resource, was_created) == (True, created)
    assert registry.read("CodeSystem", resource["id"]) is resource


def test_put_duplicate_canonical_changes_nothing() -> None:
    registry = Registry()
    original = cs("1.0.0", "a")
    registry.add_many([original, cs("2.0.0", "b")])
    seen = recorder(registry)
    before = (len(registry), registry.generation, registry.all("CodeSystem"))
    with pytest.raises(DuplicateCanonicalError) as info:
        registry.put(cs("1.0.0", "b", title="clash"))
    assert str(info.value) == f"CodeSystem {URL}|1.0.0 already exists as CodeSystem/a"
    assert (info.value.status, info.value.code) == (409, "duplicate")
    assert (len(registry), registry.generation, registry.all("CodeSystem")) == before
    assert registry.read("CodeSystem", "b")["version"] == "2.0.0"
    assert registry.get("CodeSystem", URL, "1.0.0") is original
    assert seen == []


def test_add_many_without_replace_raises_and_changes_nothing() -> None:
    registry = Registry()
    registry.add_many([cs("1.0.0", "a")])
    with pytest.raises(DuplicateCanonicalError):
        registry.add_many([cs("5.0.0", "c"), cs("1.0.0", "z")], replace_canonical=False)
    assert [r["id"] for r in registry.all("CodeSystem")] == ["a"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda r: r.read("CodeSystem", "nope"), "CodeSystem/nope not found", id="read"
        ),
        pytest.param(
            lambda r: r.delete("ValueSet", "nope"), "ValueSet/nope not found", id="delete"
        ),
    ],
)
def test_not_found(call: Any, message: str) -> None:
    registry = Registry()
    with pytest.raises(ResourceNotFoundError) as info:
        call(registry)
    assert str(info.value) == message


def test_delete_falls_back_to_previous_latest() -> None:
    registry = Registry()
    registry.add_many(versions("1.0.0", "2.0.0"))
    assert registry.get("CodeSystem", URL)["version"] == "2.0.0"
    registry.delete("CodeSystem", "r1")
    assert registry.get("CodeSystem", URL)["version"] == "1.0.0"
    registry.delete("CodeSystem", "r0")
    assert registry.get("CodeSystem", URL) is None
    assert registry.versions("CodeSystem", URL) == []
