"""A data folder written by the storage engine before the database (issue 39, point 3) is
imported on the first start and moved aside: every version is found again (read, vread,
``_history``), deletions are 410, and the old files are in ``before-database/``, unchanged;
the old client caches' folder (``tx-caches/``) is deleted.

``old_layout`` writes the folder exactly as that engine's ``server/history.py`` and
``journal.py`` did: one file per version, ``{type}-{id}/{versionId}.json`` (the resource as
``jsonio.dumps`` wrote it) or ``{versionId}.deleted`` (``{"resourceType", "id", "meta"}``), a
``.journal`` line ``{type}/{id}/{version}`` per write and an empty ``.lock``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from http_support import TOKEN, assert_outcome, client, stored_versions

from workbench import Workbench, jsonio

ROOT = Path(__file__).resolve().parent.parent
VALUESETS = ROOT / "valuesets"
DEMO_ALL = "ValueSet/workbench-demo-all"


def vs(rid: str, n: int, title: str) -> dict[str, Any]:
    meta = {"versionId": str(n), "lastUpdated": f"2026-01-0{n}T10:00:00.000Z"}
    return {"resourceType": "ValueSet", "id": rid, "status": "draft", "title": title, "meta": meta}


def gone(rtype: str, rid: str, n: int) -> dict[str, Any]:
    meta = {"versionId": str(n), "lastUpdated": f"2026-01-0{n}T10:00:00.000Z"}
    return {"resourceType": rtype, "id": rid, "meta": meta}


def old_layout(folder: Path, shipped: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Write the old engine's folder; return each resource's versions, oldest first."""
    written = {
        "ValueSet/kept": [vs("kept", 1, "one"), vs("kept", 2, "two"), vs("kept", 3, "three")],
        "ValueSet/gone": [vs("gone", 1, "one"), gone("ValueSet", "gone", 2)],
        "ValueSet/back": [
            vs("back", 1, "one"),
            gone("ValueSet", "back", 2),
            vs("back", 3, "again"),
        ],
        # a shipped resource's first write also recorded the loaded version
        DEMO_ALL: [shipped, {**shipped, "title": "Changed", "meta": vs("x", 2, "")["meta"]}],
    }
    journal = []
    for path, versions in written.items():
        rtype, rid = path.split("/")
        where = folder / f"{rtype}-{rid}"
        where.mkdir(parents=True)
        for version in versions:
            number = version["meta"]["versionId"]
            suffix = ".deleted" if "title" not in version and "url" not in version else ".json"
            (where / f"{number}{suffix}").write_bytes(jsonio.dumps(version))
            journal.append(f"{path}/{number}\n")
    (folder / ".journal").write_text("".join(journal))
    (folder / ".lock").write_bytes(b"")
    return written


def test_an_old_data_folder_is_imported_and_moved_aside(tmp_path: Path) -> None:
    data = tmp_path / "data"
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    shipped = {**wb.registry.read("ValueSet", "workbench-demo-all"), "meta": {"versionId": "1"}}
    written = old_layout(data, shipped)
    before = {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()}
    old_cache = data / "tx-caches" / "old-cache"  # the client caches' old folder: deleted
    old_cache.mkdir(parents=True)
    (old_cache / "0a1b.json").write_bytes(jsonio.dumps(vs("cached", 1, "cached")))
    (old_cache / ".sealed").write_bytes(b"")
    with wb.serve(port=0, token=TOKEN, data_dir=data) as handle, client(handle.url) as http:
        assert not (data / "tx-caches").exists()
        unknown = http.post(
            "/$cache-control", params={"mode": "end"}, headers={"X-Cache-Id": "old-cache"}
        )
        assert_outcome(unknown, 404, "not-found", "is not known")
        for path, versions in written.items():
            history = http.get(f"/{path}/_history").json()
            assert history["total"] == len(versions), path
            numbers = [e["response"]["etag"] for e in history["entry"]]
            assert numbers == [f'W/"{n}"' for n in range(len(versions), 0, -1)]
            for version in versions:
                n = version["meta"]["versionId"]
                if version.get("title") is None and "url" not in version:
                    assert_outcome(http.get(f"/{path}/_history/{n}"), 410, "deleted", "deleted")
                else:
                    assert http.get(f"/{path}/_history/{n}").json() == version
        assert http.get("/ValueSet/kept").json()["title"] == "three"
        assert http.get("/ValueSet/back").json()["title"] == "again"
        assert_outcome(http.get("/ValueSet/gone"), 410, "deleted", "was deleted")
        assert http.get(f"/{DEMO_ALL}").json()["title"] == "Changed"
        # writing goes on from the imported versions
        next_put = http.put("/ValueSet/kept", json={**written["ValueSet/kept"][-1], "title": "4"})
        assert next_put.json()["meta"]["versionId"] == "4"
    # the old files are aside, byte for byte; the folder holds the database
    aside = data / "before-database"
    assert {p.relative_to(aside): p.read_bytes() for p in aside.rglob("*") if p.is_file()} == before
    assert not list(data.glob("ValueSet-*")) and not (data / ".journal").exists()
    assert len(stored_versions(data)) == sum(map(len, written.values())) + 1
    # a second start imports nothing again, and finds everything
    again = Workbench()
    again.load(VALUESETS, progress=False)
    with again.serve(port=0, token=TOKEN, data_dir=data) as handle, client(handle.url) as http:
        assert http.get("/ValueSet/kept/_history").json()["total"] == 4
        assert http.get("/ValueSet/gone/_history/1").json() == written["ValueSet/gone"][0]
    assert len(stored_versions(data)) == sum(map(len, written.values())) + 1
