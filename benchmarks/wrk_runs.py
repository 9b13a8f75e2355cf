"""``wrk`` runs for the server benchmarks: one bounded run, its figures, a POST script."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

CONNECTIONS = 16
THREADS = 2


@dataclass(frozen=True)
class WrkResult:
    """The figures parsed from one ``wrk --latency`` run."""

    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if match is None:
        raise ValueError(f"unexpected wrk duration {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_wrk(output: str) -> WrkResult:
    """Read requests, req/s, the 50%/99% latencies and the error counts from wrk's text."""

    def find(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise ValueError(f"wrk output has no match for {pattern!r}:\n{output}")
        return match

    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    return WrkResult(
        requests=int(find(r"^\s*(\d+) requests in")[1]),
        rps=float(find(r"^Requests/sec:\s+([\d.]+)")[1]),
        p50_ms=_ms(find(r"^\s+50%\s+(\S+)")[1]),
        p99_ms=_ms(find(r"^\s+99%\s+(\S+)")[1]),
        non_2xx=int(non_2xx[1]) if non_2xx else 0,
        socket_errors=sum(int(g) for g in errors.groups()) if errors else 0,
    )


def post_script(body: bytes, folder: Path) -> Path:
    """A wrk Lua script that POSTs ``body`` as FHIR JSON."""
    path = folder / f"post-{abs(hash(body))}.lua"
    text = body.decode().replace("\\", "\\\\").replace('"', '\\"')
    path.write_text(
        'wrk.method = "POST"\n'
        f'wrk.body = "{text}"\n'
        'wrk.headers["Content-Type"] = "application/fhir+json"\n'
    )
    return path


def process_cpu(pid: int) -> float | None:
    """The processor time (user and system, in seconds) process ``pid`` has used so far, read
    from ``/proc`` (None where there is none). Over a run, divided by its requests, it is
    what one request costs the server, less sensitive to other load on a shared machine than
    its rate."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_wrk(
    wrk: str, url: str, headers: dict[str, str], seconds: int, script: Path | None = None
) -> WrkResult:
    """One bounded wrk run; raises if any response was not 2xx or a socket failed."""
    cmd = [wrk, f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency"]
    for name, value in headers.items():
        cmd += ["-H", f"{name}: {value}"]
    if script is not None:
        cmd += ["-s", str(script)]
    cmd.append(url)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    result = parse_wrk(done.stdout)
    if result.non_2xx or result.socket_errors:
        raise RuntimeError(
            f"wrk saw {result.non_2xx} non-2xx responses and {result.socket_errors} "
            f"socket errors on {url}:\n{done.stdout}"
        )
    return result
