"""``$batch-validate-code`` against single ``$validate-code`` calls, the validator's
``tx-resource`` calls in a client cache, and the memory of many caches.

Run from the repository root::

    .venv/bin/python benchmarks/bench_client_caches.py
    .venv/bin/python benchmarks/bench_client_caches.py --codings 1000 --caches 1000
    .venv/bin/python benchmarks/bench_client_caches.py --data   # caches in SQLite too

One ``server.py`` process on 127.0.0.1 (one worker, the default content, ``--limit
cache_bytes=`` the bound given; with ``--data`` a fresh data folder, so that every cache
is kept in its SQLite database too and each cached call first reads the cache's stamp
there), one keep-alive httpx connection; every figure is measured in this one run.
Printed, each with its target (PASS/MISS):

* ``batch``: codings/s of one ``ValueSet/$batch-validate-code`` of ``--codings`` codings
  (administrative-gender, valid and invalid mixed), the best of ``--repeats``; ``single``:
  codings/s of the same codings sent as one ``$validate-code`` each over keep-alive (the
  bodies encoded before the clock starts, the answers decoded after it stops); targets
  >= 30,000 codings/s and a ratio >= 10; ``distinct``: the same for a batch of codings
  that are all different (no entry answered from an earlier one), no target;
* ``first call``: a validator-shaped ``$validate-code`` (``X-Cache-Id``, ``diagnostics``
  left out) that sends a ``--concepts``-concept CodeSystem and its ValueSet as
  ``tx-resource``, the first call of a fresh cache (median of 20 caches), target <= 20 ms;
  ``by url``: later calls of the cache naming them by url alone, against the same call on
  the same CodeSystem and ValueSet stored on the server (``loaded``), target <= 1.5x;
* ``memory``: the server's resident memory growth after ``--caches`` caches, each sent
  its own ``--concepts``-concept CodeSystem (and used once), against the bound
  (``cache_bytes``), target: within it.

The exit status is 0 when every target is met, 1 on a MISS, 2 when a call fails.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil

ROOT = Path(__file__).resolve().parent.parent
BASE = "/fhir/R4"
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
CS_URL = "http://example.org/fhir/CodeSystem/bench-cache"
VS_URL = "http://example.org/fhir/ValueSet/bench-cache"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def codesystem(concepts: int, url: str = CS_URL) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": url,
        "version": "1",
        "status": "active",
        "content": "complete",
        "concept": [{"code": f"c{i}", "display": f"Concept number {i}"} for i in range(concepts)],
    }


def valueset(cs_url: str = CS_URL, url: str = VS_URL) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": url,
        "status": "active",
        "compose": {"include": [{"system": cs_url}]},
    }


def parameters(*entries: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"resourceType": "Parameters", "parameter": [{"name": n, **v} for n, v in entries]}


def ok(response: httpx.Response) -> dict[str, Any]:
    if response.status_code not in (200, 201):
        print(f"FAILED {response.request.url}: {response.status_code} {response.text[:300]}")
        sys.exit(2)
    return dict(response.json())


def verdict(good: bool) -> str:
    return "PASS" if good else "MISS"


def bench_batch(http: httpx.Client, codings: int, repeats: int) -> list[bool]:
    codes = ["male", "female", "other", "unknown", "nope"]
    items = [{"system": GENDER_CS, "code": codes[i % len(codes)]} for i in range(codings)]
    body = parameters(
        ("url", {"valueUri": GENDER_VS}),
        *[("validation", {"resource": parameters(("coding", {"valueCoding": c}))}) for c in items],
    )
    # the bodies are encoded before the clock starts, the answers read after it stops
    sent = orjson.dumps(body)
    fhir = {"Content-Type": "application/fhir+json"}
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        response = http.post(f"{BASE}/ValueSet/$batch-validate-code", content=sent, headers=fhir)
        best = min(best, time.perf_counter() - started)
        assert len(ok(response)["parameter"]) == codings
    singles = [
        orjson.dumps(parameters(("url", {"valueUri": GENDER_VS}), ("coding", {"valueCoding": c})))
        for c in items
    ]
    started = time.perf_counter()
    answers = [
        http.post(f"{BASE}/ValueSet/$validate-code", content=one, headers=fhir) for one in singles
    ]
    single = time.perf_counter() - started
    for answer in answers:
        ok(answer)
    batch_rate, single_rate = codings / best, codings / single
    ratio = batch_rate / single_rate
    print(f"batch      {batch_rate:10,.0f} codings/s  (>= 30,000: {verdict(batch_rate >= 30_000)})")
    print(f"single     {single_rate:10,.0f} codings/s")
    print(f"ratio      {ratio:10.1f} x          (>= 10: {verdict(ratio >= 10)})")
    return [batch_rate >= 30_000, ratio >= 10]


def bench_distinct(http: httpx.Client, codings: int, repeats: int) -> None:
    """Codings/s of the best of ``repeats`` batches of ``codings`` codings that are all
    different (of a stored CodeSystem of as many concepts, a tenth of them unknown): no
    entry repeats another, so none is answered from an earlier one. The CodeSystem and
    ValueSet are deleted after it (what they hold would stay for the other figures)."""
    url, vs_url = f"{CS_URL}-batch", f"{VS_URL}-batch"
    ok(
        http.put(
            f"{BASE}/CodeSystem/bench-batch", json={**codesystem(codings, url), "id": "bench-batch"}
        )
    )
    ok(
        http.put(
            f"{BASE}/ValueSet/bench-batch", json={**valueset(url, vs_url), "id": "bench-batch"}
        )
    )
    items = [{"system": url, "code": f"c{i}" if i % 10 else f"x{i}"} for i in range(codings)]
    sent = orjson.dumps(
        parameters(
            ("url", {"valueUri": vs_url}),
            *[
                ("validation", {"resource": parameters(("coding", {"valueCoding": c}))})
                for c in items
            ],
        )
    )
    fhir = {"Content-Type": "application/fhir+json"}
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        response = http.post(f"{BASE}/ValueSet/$batch-validate-code", content=sent, headers=fhir)
        best = min(best, time.perf_counter() - started)
        assert len(ok(response)["parameter"]) == codings
    print(f"distinct   {codings / best:10,.0f} codings/s  (every coding another code)")
    for kind in ("ValueSet", "CodeSystem"):
        if http.delete(f"{BASE}/{kind}/bench-batch").status_code not in (200, 204):
            print(f"FAILED to delete {kind}/bench-batch")
            sys.exit(2)


def validate_body(*extra: tuple[str, dict[str, Any]], code: str = "c5") -> dict[str, Any]:
    return parameters(
        ("url", {"valueUri": VS_URL}),
        ("coding", {"valueCoding": {"system": CS_URL, "code": code}}),
        ("abstract", {"valueBoolean": True}),
        *extra,
    )


def timed(http: httpx.Client, body: dict[str, Any], headers: dict[str, str], n: int) -> float:
    """The median seconds of ``n`` calls."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        ok(http.post(f"{BASE}/ValueSet/$validate-code", json=body, headers=headers))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_cache(http: httpx.Client, concepts: int) -> list[bool]:
    sent = [
        ("tx-resource", {"resource": codesystem(concepts)}),
        ("tx-resource", {"resource": valueset()}),
    ]
    firsts = []
    cache_id = ""
    for _ in range(20):
        cache_id = ok(http.post(f"{BASE}/$cache-control?mode=start"))["parameter"][0]["valueId"]
        started = time.perf_counter()
        ok(
            http.post(
                f"{BASE}/ValueSet/$validate-code",
                json=validate_body(*sent),
                headers={"X-Cache-Id": cache_id},
            )
        )
        firsts.append(time.perf_counter() - started)
    first = statistics.median(firsts)
    by_url = timed(http, validate_body(), {"X-Cache-Id": cache_id}, 300)
    cs, vs = codesystem(concepts), valueset()
    ok(http.put(f"{BASE}/CodeSystem/bench-cache", json={**cs, "id": "bench-cache"}))
    ok(http.put(f"{BASE}/ValueSet/bench-cache", json={**vs, "id": "bench-cache"}))
    loaded = timed(http, validate_body(), {}, 300)
    ratio = by_url / loaded
    print(f"first call {first * 1000:10.2f} ms        (<= 20 ms: {verdict(first <= 0.020)})")
    print(f"by url     {by_url * 1000:10.3f} ms")
    print(f"loaded     {loaded * 1000:10.3f} ms")
    print(f"ratio      {ratio:10.2f} x          (<= 1.5: {verdict(ratio <= 1.5)})")
    return [first <= 0.020, ratio <= 1.5]


def bench_memory(
    http: httpx.Client, server: psutil.Process, caches: int, concepts: int, bound: int
) -> list[bool]:
    before = server.memory_info().rss
    for i in range(caches):
        cache_id = ok(http.post(f"{BASE}/$cache-control?mode=start"))["parameter"][0]["valueId"]
        url = f"{CS_URL}-{i}"
        body = parameters(
            ("url", {"valueUri": f"{VS_URL}-{i}"}),
            ("coding", {"valueCoding": {"system": url, "code": "c1"}}),
            ("tx-resource", {"resource": codesystem(concepts, url)}),
            ("tx-resource", {"resource": valueset(url, f"{VS_URL}-{i}")}),
        )
        ok(
            http.post(
                f"{BASE}/ValueSet/$validate-code", json=body, headers={"X-Cache-Id": cache_id}
            )
        )
    grown = server.memory_info().rss - before
    good = grown <= bound
    shown = f"{grown / 1e6:10.1f} MB grown after {caches:,} caches"
    print(f"memory     {shown} (bound {bound / 1e6:,.0f} MB: {verdict(good)})")
    return [good]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--codings", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--concepts", type=int, default=1000)
    parser.add_argument("--caches", type=int, default=1000)
    parser.add_argument("--bound", type=int, default=200_000_000, help="cache_bytes (bytes)")
    parser.add_argument("--data", action="store_true", help="a data folder (SQLite caches)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-caches-") as folder:
        return run(args, Path(folder) / "data" if args.data else None)


def run(args: argparse.Namespace, data: Path | None) -> int:
    """Start the server (over ``data`` when given), run the benchmarks, stop it."""
    port, token = free_port(), "wb" + secrets.token_urlsafe(16)
    command = [sys.executable, str(ROOT / "server.py"), "--port", str(port), "--token", token]
    command += ["--limit", f"cache_bytes={args.bound}"]
    command += [] if data is None else ["--data", str(data)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/fhir+json"}
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers=headers, trust_env=False, timeout=60
        ) as http:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if http.get(f"{BASE}/metadata").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    print("the server did not start")
                    return 2
                time.sleep(0.2)
            results = bench_batch(http, args.codings, args.repeats)
            bench_distinct(http, args.codings, args.repeats)
            results += bench_cache(http, args.concepts)
            results += bench_memory(
                http, psutil.Process(proc.pid), args.caches, args.concepts, args.bound
            )
    finally:
        proc.terminate()
        proc.wait(30)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
