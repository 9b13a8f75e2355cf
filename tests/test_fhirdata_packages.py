"""read_fhir on real data: the FHIR R4 examples (hl7.fhir.r4.examples 4.0.1, about 5,300
resources of 140 types) and the International Patient Summary examples (hl7.fhir.uv.ips
2.0.0), read as the package's JSON files, written out as NDJSON per type (some gzipped) and
as Bundles; counts per type and every resource read back equal to the JSON written."""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import EXAMPLES
from workbench import packages, read_fhir
from workbench.fhirdata import R4_RESOURCE_TYPES, FhirData

pytestmark = pytest.mark.slow

IPS = ("hl7.fhir.uv.ips", "2.0.0")


@pytest.fixture(scope="session")
def ips_examples() -> Path:
    """The IPS package's example folder (installed once per cache)."""
    folder = packages.install_package(*IPS) / "package" / "example"
    assert len(list(folder.glob("*.json"))) > 30
    return folder


def resources_in(value: Any) -> Iterator[dict[str, Any]]:
    """The resources a JSON value holds, by the rule read_fhir documents: a Bundle is its
    entries' resources (recursively), anything else itself."""
    if value.get("resourceType") == "Bundle":
        for entry in value.get("entry", []):
            if "resource" in entry:
                yield from resources_in(entry["resource"])
    else:
        yield value


def export(folder: Path, out: Path, *, gzipped: tuple[str, ...] = ()) -> Counter[str]:
    """Write the resources of ``folder``'s JSON files (sorted, as read_fhir reads them) as
    ``<Type>.ndjson`` files into ``out``; return the counts per type."""
    lines: dict[str, list[bytes]] = {}
    for path in sorted(folder.glob("*.json")):
        value = orjson.loads(path.read_bytes())
        if "resourceType" in value:
            for resource in resources_in(value):
                lines.setdefault(resource["resourceType"], []).append(orjson.dumps(resource))
    out.mkdir(parents=True, exist_ok=True)
    for name, found in lines.items():
        data = b"\n".join(found) + b"\n"
        if name in gzipped:
            (out / f"{name}.ndjson.gz").write_bytes(gzip.compress(data, compresslevel=1))
        else:
            (out / f"{name}.ndjson").write_bytes(data)
    return Counter({name: len(found) for name, found in lines.items()})


def exported(out: Path, name: str) -> Iterator[dict[str, Any]]:
    path = out / f"{name}.ndjson"
    data = (
        path.read_bytes()
        if path.exists()
        else gzip.decompress((out / f"{name}.ndjson.gz").read_bytes())
    )
    return (orjson.loads(line) for line in data.splitlines())


def assert_round_trip(read: FhirData, out: Path) -> None:
    for name in read.types:
        back = read.resources(name)
        for number, (got, wanted) in enumerate(zip(back, exported(out, name), strict=True)):
            assert got == wanted, f"{name} #{number}"


@pytest.fixture(scope="session")
def r4_export(
    package_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Counter[str]]:
    out = tmp_path_factory.mktemp("r4-ndjson")
    folder = package_dirs[EXAMPLES[0]] / "package"
    counts = export(folder, out, gzipped=("Observation", "ValueSet", "Patient"))
    assert len(counts) > 120 and counts["Observation"] > 60
    return out, counts


def test_r4_examples_as_ndjson_per_type(r4_export: tuple[Path, Counter[str]]) -> None:
    out, counts = r4_export
    read = read_fhir(out)
    assert read.counts == dict(sorted(counts.items()))
    assert read.errors == []
    assert set(read.types) <= set(R4_RESOURCE_TYPES)
    assert_round_trip(read, out)


def test_r4_examples_as_the_package_json_files(
    package_dirs: dict[str, Path], r4_export: tuple[Path, Counter[str]]
) -> None:
    out, counts = r4_export
    read = read_fhir(package_dirs[EXAMPLES[0]] / "package")
    assert read.counts == dict(sorted(counts.items()))
    # package.json is the package's manifest, not a resource: the one record
    assert [(Path(r.source).name, r.line) for r in read.errors] == [("package.json", None)]
    assert "without resourceType" in read.errors[0].reason
    assert_round_trip(read, out)


def test_r4_examples_as_bundles(r4_export: tuple[Path, Counter[str]], tmp_path: Path) -> None:
    out, counts = r4_export
    folder = tmp_path / "bundles"
    folder.mkdir()
    with (folder / "transactions.ndjson").open("wb") as lines:
        for name in sorted(counts):
            entries = [{"resource": r} for r in exported(out, name)]
            for start in range(0, len(entries), 20):  # lines well under max_line_bytes
                part = entries[start : start + 20]
                bundle = {"resourceType": "Bundle", "type": "transaction", "entry": part}
                if name < "M":  # half as JSON files, half as Bundles on NDJSON lines
                    (folder / f"{name}-{start:06d}.json").write_bytes(orjson.dumps(bundle))
                else:
                    lines.write(orjson.dumps(bundle) + b"\n")
    read = read_fhir(folder, batch_bytes=1 << 16, memory_bytes=1 << 22)
    assert read.counts == dict(sorted(counts.items()))
    assert read.errors == []
    assert read._store.spill_folder is not None  # beyond 4 MiB: spilled
    assert_round_trip(read, out)


def test_ips_examples(ips_examples: Path, tmp_path: Path) -> None:
    counts = export(ips_examples, tmp_path / "ndjson")
    assert counts["Composition"] >= 5 and counts["Patient"] >= 5
    for source in (ips_examples, tmp_path / "ndjson"):
        read = read_fhir(source)
        assert read.counts == dict(sorted(counts.items()))
        assert read.errors == []
        assert_round_trip(read, tmp_path / "ndjson")


def test_the_resource_types_are_r4s(package_dirs: dict[str, Path]) -> None:
    folder = package_dirs[EXAMPLES[0]] / "package"
    names = set()
    for path in folder.glob("StructureDefinition-*.json"):
        definition = orjson.loads(path.read_bytes())
        kind = (definition.get("kind"), definition.get("derivation"))
        if kind == ("resource", "specialization") and not definition.get("abstract"):
            names.add(definition["type"])
    assert len(names) == 146
    assert tuple(sorted(names)) == R4_RESOURCE_TYPES
