"""Storage failures say so (issue 38, point 5; issue 39, point 5): with the ``--data`` folder
gone, a file in its place, its database a folder, the folder read-only or the disk full, a
PUT (of a resource there or a new one), POST or DELETE is a 5xx OperationOutcome that says the
write was not stored and why (no path), memory is unchanged (a GET answers the previous
version), and once the folder is back the same write works. Against the real server (uvicorn
on 127.0.0.1) with a data folder.

Tests run as root, where ``chmod`` does not stop a write: the folder is made read-only by a
read-only bind mount over it, and the disk full by a small tmpfs filled up (both need
``mount``; without it those two cases are skipped). A database file made a folder stands for
a database that cannot be written."""

from __future__ import annotations

import contextlib
import errno
import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import FHIR_JSON, HOST, TOKEN, assert_outcome, client, free_port
from test_server_process import CONTENT, STOP_SECONDS, environment, wait_ready

from workbench import Workbench
from workbench.server.database.sqlite import FILE

ROOT = Path(__file__).resolve().parent.parent
VALUESETS = ROOT / "valuesets"
DEMO = "/ValueSet/workbench-demo-all"
NEW_URL = "http://example.org/fhir/ValueSet/storage-test"


@dataclass
class Disk:
    """The test's data folder and the mounts made for it (unmounted at the end)."""

    base: Path
    data: Path
    mounts: list[Path] = field(default_factory=list)

    def mount(self, *args: str) -> None:
        target = Path(args[-1])
        done = subprocess.run(["mount", *args], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"mount is not available here: {done.stderr.decode().strip()}")
        if not any(a.startswith("remount") for a in args):  # (a remount is the same mount)
            self.mounts.append(target)

    def unmount(self, target: Path) -> None:
        subprocess.run(["umount", str(target)], check=True)
        self.mounts.remove(target)


def _on_tmpfs(disk: Disk) -> None:
    (disk.base / "disk").mkdir()
    disk.mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk.base / "disk"))
    disk.data = disk.base / "disk" / "data"


def _remove(disk: Disk) -> Callable[[], None]:
    shutil.rmtree(disk.data)
    return disk.data.mkdir


def _replace_by_file(disk: Disk) -> Callable[[], None]:
    aside = disk.base / "aside"
    disk.data.rename(aside)
    disk.data.write_text("not a folder")

    def repair() -> None:
        disk.data.unlink()
        aside.rename(disk.data)

    return repair


def _database_a_folder(disk: Disk) -> Callable[[], None]:
    database, aside = disk.data / FILE, disk.base / "database-aside"
    database.rename(aside)
    database.mkdir()

    def repair() -> None:
        database.rmdir()
        aside.rename(database)

    return repair


def _read_only(disk: Disk) -> Callable[[], None]:
    disk.mount("--bind", str(disk.data), str(disk.data))
    disk.mount("-o", "remount,bind,ro", str(disk.data))
    return lambda: disk.unmount(disk.data)


def _fill(disk: Disk) -> Callable[[], None]:
    filler = disk.data.parent / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as out:
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    with pytest.raises(OSError) as full:  # the disk is full indeed
        (disk.data.parent / "probe").write_bytes(b"\0" * 65536)
    assert full.value.errno == errno.ENOSPC
    (disk.data.parent / "probe").unlink(missing_ok=True)
    return filler.unlink


@dataclass(frozen=True)
class Cause:
    """How the storage fails (``fail`` returns how it comes back), what the answer says."""

    fail: Callable[[Disk], Callable[[], None]]
    status: int
    reason: str
    prepare: Callable[[Disk], None] | None = None


CAUSES = {
    "folder-removed": Cause(_remove, 500, r"the data folder \(or a file in it\) is gone"),
    "folder-a-file": Cause(_replace_by_file, 500, r"the data folder is no longer a folder"),
    "database-a-folder": Cause(_database_a_folder, 500, r"a folder took the place of a file"),
    "read-only": Cause(_read_only, 500, r"the data folder is read-only"),
    "disk-full": Cause(_fill, 507, r"the disk is full", prepare=_on_tmpfs),
}
WRITES = ["PUT", "PUT-new", "POST", "DELETE"]
NEW_ID = "/ValueSet/storage-new"


def _send(http: httpx.Client, method: str, before: dict[str, Any]) -> httpx.Response:
    if method == "DELETE":
        return http.delete(DEMO)
    headers = {"Content-Type": FHIR_JSON}
    if method == "PUT":
        body = {**before, "title": "Stored at last"}
        return http.put(DEMO, content=json.dumps(body), headers=headers)
    body = {"resourceType": "ValueSet", "url": NEW_URL, "status": "active", "name": "New"}
    if method == "PUT-new":
        body = {**body, "id": NEW_ID.rsplit("/", 1)[1]}
        return http.put(NEW_ID, content=json.dumps(body), headers=headers)
    return http.post("/ValueSet", content=json.dumps(body), headers=headers)


def _unchanged(http: httpx.Client, before: dict[str, Any]) -> None:
    assert http.get(DEMO).json() == before
    assert http.get("/ValueSet", params={"url": NEW_URL}).json()["total"] == 0
    assert http.get(NEW_ID).status_code == 404


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    found = Disk(tmp_path, tmp_path / "data")
    try:
        yield found
    finally:
        for target in reversed(found.mounts):
            subprocess.run(["umount", "-l", str(target)], check=False)


@pytest.mark.parametrize("method", WRITES)
@pytest.mark.parametrize("cause_id", list(CAUSES))
def test_a_write_the_storage_refuses_says_so_and_changes_nothing(
    disk: Disk, cause_id: str, method: str
) -> None:
    cause = CAUSES[cause_id]
    if cause.prepare is not None:
        cause.prepare(disk)
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    with (
        wb.serve(port=0, token=TOKEN, data_dir=disk.data) as handle,
        client(handle.url) as http,
    ):
        # a first write, so that the database holds a history
        first = http.put(DEMO, json={**http.get(DEMO).json(), "title": "First"})
        assert first.status_code == 200, first.text
        before = http.get(DEMO).json()
        repair = cause.fail(disk)
        response = _send(http, method, before)
        body = assert_outcome(
            response,
            cause.status,
            "exception",
            rf"^The write was not stored: {cause.reason}.*; nothing was changed$",
        )
        (message_id,) = body["issue"][0]["extension"]  # operationoutcome-message-id
        assert message_id["valueString"] == "WB-STORE-001"
        for leak in (str(disk.base), FILE, "sqlite3."):
            assert leak not in response.text
        _unchanged(http, before)
        repair()
        again = _send(http, method, before)
        assert again.status_code in (200, 201, 204), again.text
        if method == "DELETE":
            assert http.get(DEMO).status_code == 410
        elif method == "PUT":
            assert http.get(DEMO).json()["title"] == "Stored at last"
        else:
            assert http.get("/ValueSet", params={"url": NEW_URL}).json()["total"] == 1


def test_every_worker_of_server_py_says_so(tmp_path: Path) -> None:
    """``server.py --workers 2``: with the data folder a file, writes on fresh connections
    (either worker) are the same storage error and leave the resource as it was; once the
    folder is back, a write on one worker is read on fresh connections."""
    port, data, aside = free_port(), tmp_path / "data", tmp_path / "aside"
    command = [sys.executable, str(ROOT / "server.py"), "--port", str(port), "--token", TOKEN]
    command += [*CONTENT, "--data", str(data), "--workers", "2"]
    url = f"http://{HOST}:{port}/fhir/R4"
    gender = "/ValueSet/administrative-gender"
    with (tmp_path / "server.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment())
        try:
            wait_ready(process, url)
            with client(url) as http:
                before = http.get(gender).json()
            data.rename(aside)
            data.write_text("not a folder")
            for _ in range(6):
                with client(url) as http:  # a new connection: either worker
                    response = http.put(gender, json={**before, "title": "Later"})
                    assert_outcome(
                        response, 500, "exception", r"^The write was not stored: the data folder"
                    )
                    assert str(tmp_path) not in response.text
                    assert http.get(gender).json() == before
            data.unlink()
            aside.rename(data)
            with client(url) as http:
                assert http.put(gender, json={**before, "title": "Later"}).status_code == 200
            for _ in range(6):
                with client(url) as http:
                    assert http.get(gender).json()["title"] == "Later"
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_SECONDS)
