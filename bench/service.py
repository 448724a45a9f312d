"""Service benchmark: the real server on loopback under a bounded concurrent load.

``python -m bench.service [--quick] [--port N] [--keep-data] [--phases ...] [--open-rate R]``

Starts ``tenet serve`` (uvicorn, the model loaded) in a subprocess on a free
loopback port with its own temporary data directory (the model's
safetensors cache is shared with ``var/models`` so nothing is converted
again), waits for ``/readyz``, then drives it with an httpx load generator:
``C`` concurrent clients, each sending its next request as soon as the last
answered, until ``N`` requests were sent or ``T`` seconds passed (whichever
comes first; a request already sent is always awaited). Phases:

1. ``POST /v1/constraints`` at 32 clients (four prompts with constraints, round robin:
   after the first four the extraction comes from the analysis cache);
2. ``POST /v1/constraints`` at 32 clients with a distinct prompt per request
   (``constraints_unique_*``: every request parses and extracts, nothing cached);
3. ``POST /v1/constraints`` in an open loop with a distinct prompt per request
   (``constraints_unique_open_*``): requests are sent at a fixed offered rate
   (``--open-rate``, default 150/s, Poisson arrivals with a fixed seed) whether
   or not the earlier ones were answered, and latency runs from each
   request's *scheduled* send time, so queueing anywhere counts;
4. ``POST /v1/reason`` at 1 client, then at 8 clients
   (``options.max_new_tokens`` 16, beams as the budget decides), same prompts.

Why both ``/v1/constraints`` loops: a closed loop of 32 clients measures
capacity (``constraints_unique_rps``); its latency is not a latency target's
figure, since by Little's law it is about 32 / throughput whatever the
service does (p99 <= 100 ms would need 320 requests/s). "Serves R
requests/s with p99 <= X ms" is measured by the open loop at R:
``constraints_unique_open_offered_rps`` (R), ``constraints_unique_open_rps``
(answered per second, refusals excluded), ``constraints_unique_open_p50_ms`` /
``_p99_ms``, ``_refused`` and ``_send_lag_p99_ms`` (how late the load
generator itself sent against its schedule: on a busy machine it shares the
CPU, and its lateness is counted in the latency). The open loop's prompts
are distinct from the closed loop's, so neither is served from the other's cache.

The ``/v1/constraints`` phases are driven by ``bench.loadgen`` in a process of
its own: an httpx client in this process spent more CPU per request (about
2.5 ms) than the server (about 0.6 ms) and shared the 2 cores with it, so it
measured itself. ``constraints_client_cpu_ms`` and ``constraints_server_cpu_ms``
(CPU per answered request, Linux) show who used the machine. The reason
phases keep the in-process httpx client: their requests take seconds.

In the closed loops latency is measured per request from send to full
response (in the open loop from the scheduled send, see above). ``errors``
counts every non-2xx answer by status (429 and 503 included), ``refused``
only the admission refusals (429/503 with ``Retry-After``); refused requests
are not counted in the throughput, and a refused client backs off for
``Retry-After`` (at most 2 s) like a well-behaved client (in the open loop
refusals are counted and the schedule goes on: users do not slow down
together). The machine's load
average is reported: on a shared machine the figures say more about the
neighbours than about the service. ``batching_gain`` = reason_rps_8 /
reason_rps_1: concurrent decodes (up to ``TENET_MAX_BATCH``) run side by side
and their one-token steps are merged into shared forward passes, so the gain
measures cross-request micro-batching. The server is stopped
with SIGTERM at the end (graceful shutdown) and its exit status is reported.

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
MODEL_CACHE = REPO_ROOT / "var" / "models"

CONSTRAINT_PROMPTS = (
    (
        "Write a short note to the compliance team about the new onboarding checks. "
        "Use fewer than 80 words, do not use the word 'urgent', and end with 'Regards'."
    ),
    "Summarise the quarterly risk review in exactly three bullet points and mention the word 'exposure' twice.",
    "Draft a reply to a customer asking about a delayed transfer. Write in German and keep it under 50 words.",
    "Describe the sanctions screening process in two paragraphs separated by ***. Do not use any commas.",
)
#: The load phases, in the order they run (``--phases`` picks some; the others report zeros).
PHASES = ("constraints", "constraints_unique", "constraints_unique_open", "reason")
#: Offered rate of the open-loop phase (requests/s) unless ``--open-rate`` says otherwise.
OPEN_RATE = 150.0
#: The most connections the open loop opens (a request waits for one beyond that).
OPEN_MAX_CONNECTIONS = 256
#: First index of the open loop's prompts: after every closed-loop prompt, so none is cached.
OPEN_PROMPTS_START = 100_000
#: Longest back-off a refused client takes before its next request.
RETRY_CAP_S = 2.0
_TASKS = (
    "Write a short note to the compliance team about {topic}.",
    "Summarise {topic} for the board.",
    "Draft a reply to a customer who asked about {topic}.",
    "Explain {topic} to a new analyst.",
    "Describe {topic} in plain language.",
)
_TOPICS = (
    "the new onboarding checks",
    "the quarterly risk review",
    "a delayed transfer",
    "the sanctions screening process",
    "customer due diligence",
    "transaction monitoring alerts",
    "the last internal audit",
    "vendor risk assessments",
    "politically exposed persons",
    "record keeping obligations",
    "the fraud reporting line",
)
_RULES = (
    "Do not use the word 'urgent'.",
    "End with 'Regards'.",
    "Mention the word 'exposure' twice.",
    "Answer in exactly three bullet points.",
    "Write in German.",
    "Do not use any commas.",
    "Use two paragraphs separated by ***.",
    "Answer in lowercase letters only.",
)
REASON_PROMPTS = (
    "Explain in two sentences why customer due diligence matters. Do not use commas.",
    "List three benefits of automated transaction monitoring in under 40 words.",
    "Describe what a suspicious activity report is. Answer in lowercase letters only.",
    "Give one reason to verify a customer's address. Use at most 30 words.",
)


@dataclass
class PhaseResult:
    """What one load phase measured."""

    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    refused: int = 0
    elapsed_s: float = 0.0
    client_cpu_s: float | None = None
    server_cpu_s: float | None = None
    send_lag_ms: list[float] = field(default_factory=list)
    connections: int = 0

    @property
    def ok(self) -> int:
        return len(self.latencies_ms)

    def cpu_ms_per_request(self, seconds: float | None) -> float | None:
        """``seconds`` of CPU spread over the answered requests (None when unmeasured)."""
        return round(seconds * 1000 / self.ok, 3) if seconds is not None and self.ok else None

    @property
    def rps(self) -> float:
        return self.ok / self.elapsed_s if self.elapsed_s else 0.0

    def percentile(self, q: float) -> float:
        return _percentile(self.latencies_ms, q)


def _percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank; 0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def unique_constraint_prompts(count: int, start: int = 0) -> list[str]:
    """``count`` distinct prompts with constraints: a task, a word limit and one more rule.

    The i-th prompt (``start <= i < start + count``) has the word limit ``40 + i``,
    so no two are equal and none can be served from the analysis cache; tasks,
    topics and rules rotate at co-prime periods so the extracted constraint sets vary too.
    """
    prompts = []
    for i in range(start, start + count):
        task = _TASKS[i % len(_TASKS)].format(topic=_TOPICS[i % len(_TOPICS)])
        prompts.append(f"{task} Use fewer than {40 + i} words. {_RULES[i % len(_RULES)]}")
    return prompts


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of process ``pid`` (all its threads), or None off Linux."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def drive_in_process(
    port: int,
    path: str,
    bodies: Sequence[dict[str, Any]],
    headers: dict[str, str],
    *,
    clients: int,
    max_requests: int,
    max_seconds: float,
    server_pid: int | None = None,
    rate: float = 0.0,
) -> PhaseResult:
    """``drive``'s closed loop, run by ``bench.loadgen`` in a separate process; with
    ``rate`` > 0 its open loop at that offered rate (``clients`` is then the most
    connections it opens; see ``bench.loadgen``).

    With ``server_pid`` the server's CPU time over the phase is measured too.
    """
    spec = {
        "host": "127.0.0.1", "port": port, "path": path, "bodies": list(bodies), "headers": headers,
        "clients": clients, "max_requests": max_requests, "max_seconds": max_seconds,
        "retry_cap_s": RETRY_CAP_S, "rate": rate, "arrivals": "poisson", "seed": 19,
    }
    server_cpu0 = process_cpu_seconds(server_pid) if server_pid else None
    done = subprocess.run(
        [sys.executable, "-m", "bench.loadgen"], input=json.dumps(spec).encode("utf-8"),
        capture_output=True, cwd=REPO_ROOT, timeout=max_seconds + 600, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the load generator failed: {done.stderr.decode(errors='replace')[-2000:]}")
    outcome = json.loads(done.stdout)
    result = PhaseResult(
        latencies_ms=outcome["latencies_ms"],
        statuses=Counter({int(k): v for k, v in outcome["statuses"].items()}),
        refused=outcome["refused"],
        elapsed_s=outcome["elapsed_s"],
        client_cpu_s=outcome["cpu_s"],
        send_lag_ms=outcome["send_lag_ms"],
        connections=outcome["connections"],
    )
    server_cpu1 = process_cpu_seconds(server_pid) if server_pid else None
    if server_cpu0 is not None and server_cpu1 is not None:
        result.server_cpu_s = server_cpu1 - server_cpu0
    return result


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def drive(
    base: str,
    path: str,
    bodies: Sequence[dict[str, Any]],
    headers: dict[str, str],
    *,
    clients: int,
    max_requests: int,
    max_seconds: float,
) -> PhaseResult:
    """``clients`` concurrent loops sending ``bodies`` round-robin, bounded by count and time."""
    result = PhaseResult()
    sent = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=300.0, limits=limits) as client:
        started = time.perf_counter()
        end = started + max_seconds

        async def loop() -> None:
            nonlocal sent
            while sent < max_requests and time.perf_counter() < end:
                body = bodies[sent % len(bodies)]
                sent += 1
                t0 = time.perf_counter()
                try:
                    response = await client.post(path, json=body)
                    status = response.status_code
                except httpx.HTTPError:
                    status = 0
                result.statuses[status] += 1
                if 200 <= status < 300:
                    result.latencies_ms.append((time.perf_counter() - t0) * 1000)
                elif status in (429, 503) and response.headers.get("retry-after"):
                    result.refused += 1
                    # A well-behaved client backs off (capped so the phase stays bounded).
                    await asyncio.sleep(min(float(response.headers["retry-after"]), RETRY_CAP_S))

        await asyncio.gather(*(loop() for _ in range(clients)))
        result.elapsed_s = time.perf_counter() - started
    return result


def start_server(data_dir: Path, port: int, log: Path, *, load_model: bool = True) -> subprocess.Popen[bytes]:
    """``tenet serve`` on ``port``; without ``load_model`` the model is not loaded (no reason phase)."""
    env = {
        **os.environ,
        "TENET_LOAD_MODEL": "true" if load_model else "false",
        "TENET_DATA_DIR": str(data_dir),
        "TENET_DEVICE": "cpu",
        "TENET_LOG_LEVEL": "WARNING",
        "TENET_QUEUE_MAX": os.environ.get("TENET_QUEUE_MAX", "64"),
    }
    if MODEL_CACHE.is_dir():
        env["TENET_MODEL_CACHE_DIR"] = str(MODEL_CACHE)
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )


def wait_ready(base: str, process: subprocess.Popen[bytes], timeout_s: float, *, model: bool = True) -> None:
    """Wait for ``/readyz`` (without ``model``: for the database and the admin key only)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode} before it was ready")
        try:
            report = httpx.get(f"{base}/readyz", timeout=2.0).json()
            if report.get("ready") or (not model and report.get("database") == "ok"):
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server was not ready within {timeout_s:.0f} s")


def stop_server(process: subprocess.Popen[bytes], grace_s: float = 60.0) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def run(
    quick: bool, port: int | None, keep_data: bool, phases: Sequence[str] = PHASES, open_rate: float = OPEN_RATE
) -> dict[str, Any]:
    open_seconds = 10.0 if quick else 30.0
    budget = {
        "constraints": (600, 20.0) if quick else (3000, 60.0),
        "constraints_unique": (600, 20.0) if quick else (3000, 60.0),
        "constraints_unique_open": (round(open_rate * open_seconds), open_seconds),
        "reason_1": (6, 40.0) if quick else (20, 120.0),
        "reason_8": (24, 60.0) if quick else (80, 240.0),
    }
    data_dir = Path(tempfile.mkdtemp(prefix="tenet-bench-service-"))
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    log = data_dir / "server.log"
    with_model = "reason" in phases
    process = start_server(data_dir, port, log, load_model=with_model)
    try:
        wait_ready(base, process, timeout_s=240.0, model=with_model)
        key = (data_dir / "admin-key.txt").read_text(encoding="utf-8").strip()
        headers = {"Authorization": f"Bearer {key}"}
        constraints_body = [{"prompt": p} for p in CONSTRAINT_PROMPTS]
        reason_bodies = [
            {"prompt": p, "options": {"max_new_tokens": 16}} for p in REASON_PROMPTS
        ]
        # Warm-up: the first request of each kind pays for lazy initialisation, not measured.
        # Each constraints prompt once (it was three of the four: the fourth was then parsed
        # inside the measured phase by every client that sent it before the first answer).
        asyncio.run(drive(base, "/v1/constraints", constraints_body, headers, clients=1,
                          max_requests=len(constraints_body), max_seconds=30))
        cons = uniq = uopen = r1 = r8 = PhaseResult()
        if "reason" in phases:
            asyncio.run(drive(base, "/v1/reason", reason_bodies, headers, clients=1, max_requests=1,
                              max_seconds=60))
        if "constraints" in phases:
            n, t = budget["constraints"]
            cons = drive_in_process(port, "/v1/constraints", constraints_body, headers, clients=32,
                                    max_requests=n, max_seconds=t, server_pid=process.pid)
        if "constraints_unique" in phases:
            n, t = budget["constraints_unique"]
            unique_body = [{"prompt": p} for p in unique_constraint_prompts(n)]
            uniq = drive_in_process(port, "/v1/constraints", unique_body, headers, clients=32,
                                    max_requests=n, max_seconds=t, server_pid=process.pid)
        if "constraints_unique_open" in phases:
            n, t = budget["constraints_unique_open"]
            open_body = [{"prompt": p} for p in unique_constraint_prompts(n, start=OPEN_PROMPTS_START)]
            uopen = drive_in_process(port, "/v1/constraints", open_body, headers,
                                     clients=OPEN_MAX_CONNECTIONS, max_requests=n, max_seconds=t,
                                     server_pid=process.pid, rate=open_rate)
        if "reason" in phases:
            n, t = budget["reason_1"]
            r1 = asyncio.run(drive(base, "/v1/reason", reason_bodies, headers, clients=1, max_requests=n,
                                   max_seconds=t))
            n, t = budget["reason_8"]
            r8 = asyncio.run(drive(base, "/v1/reason", reason_bodies, headers, clients=8, max_requests=n,
                                   max_seconds=t))
    finally:
        exit_status = stop_server(process)
        server_log = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.exists() else ""
        if not keep_data:
            for path in sorted(data_dir.rglob("*"), reverse=True):
                path.unlink() if path.is_file() or path.is_symlink() else path.rmdir()
            data_dir.rmdir()
    errors: Counter[int] = Counter()
    for phase in (cons, uniq, uopen, r1, r8):
        errors.update({s: c for s, c in phase.statuses.items() if not 200 <= s < 300})
    return {
        "quick": quick,
        "phases": list(phases),
        "constraints_clients": 32,
        "constraints_requests": cons.ok,
        "constraints_rps": round(cons.rps, 2),
        "constraints_p50_ms": round(cons.percentile(0.5), 2),
        "constraints_p99_ms": round(cons.percentile(0.99), 2),
        "constraints_client_cpu_ms": cons.cpu_ms_per_request(cons.client_cpu_s),
        "constraints_server_cpu_ms": cons.cpu_ms_per_request(cons.server_cpu_s),
        "constraints_unique_requests": uniq.ok,
        "constraints_unique_rps": round(uniq.rps, 2),
        "constraints_unique_p50_ms": round(uniq.percentile(0.5), 2),
        "constraints_unique_p99_ms": round(uniq.percentile(0.99), 2),
        "constraints_unique_server_cpu_ms": uniq.cpu_ms_per_request(uniq.server_cpu_s),
        "constraints_unique_open_offered_rps": open_rate if "constraints_unique_open" in phases else 0.0,
        "constraints_unique_open_requests": uopen.ok,
        "constraints_unique_open_rps": round(uopen.rps, 2),
        "constraints_unique_open_p50_ms": round(uopen.percentile(0.5), 2),
        "constraints_unique_open_p99_ms": round(uopen.percentile(0.99), 2),
        "constraints_unique_open_refused": uopen.refused,
        "constraints_unique_open_send_lag_p99_ms": round(_percentile(uopen.send_lag_ms, 0.99), 2),
        "constraints_unique_open_connections": uopen.connections,
        "constraints_unique_open_server_cpu_ms": uopen.cpu_ms_per_request(uopen.server_cpu_s),
        "reason_requests_1": r1.ok,
        "reason_rps_1": round(r1.rps, 3),
        "reason_p50_ms_1": round(r1.percentile(0.5), 1),
        "reason_requests_8": r8.ok,
        "reason_rps_8": round(r8.rps, 3),
        "reason_p50_ms_8": round(r8.percentile(0.5), 1),
        "reason_p99_ms_8": round(r8.percentile(0.99), 1),
        "reason_mean_ms_8": round(statistics.fmean(r8.latencies_ms), 1) if r8.latencies_ms else 0.0,
        "errors": {str(k): v for k, v in sorted(errors.items())},
        "refused": cons.refused + uniq.refused + uopen.refused + r1.refused + r8.refused,
        "batching_gain": round(r8.rps / r1.rps, 3) if r1.rps else 0.0,
        "server_graceful_exit": exit_status in (0, -signal.SIGTERM),
        "server_exit_status": exit_status,
        "server_log_tail": server_log if exit_status not in (0, -signal.SIGTERM) else "",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cpu_count": os.cpu_count(),
        "notes": (
            "up to TENET_MAX_BATCH decodes run at once and their one-token steps share forward passes "
            "(cross-request micro-batching); prefills run alone between merged steps. max_new_tokens 16. "
            "constraints_* cycle four prompts (cached analysis); constraints_unique_* send a distinct "
            "prompt per request (every request parsed), closed loop at 32 clients (capacity); "
            "constraints_unique_open_* the same at a fixed offered rate, Poisson arrivals, latency from "
            "the scheduled send time (latency at that load)."
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller request counts (under 5 minutes)")
    parser.add_argument("--port", type=int, default=None, help="loopback port (default: a free one)")
    parser.add_argument("--keep-data", action="store_true", help="keep the temporary data directory")
    parser.add_argument(
        "--phases", default=",".join(PHASES),
        help=f"comma-separated phases to run, of {', '.join(PHASES)} (default: all; skipped ones report zeros)",
    )
    parser.add_argument(
        "--open-rate", type=float, default=OPEN_RATE,
        help=f"offered requests/s of the open-loop phase (default {OPEN_RATE:g})",
    )
    args = parser.parse_args(argv)
    if not args.open_rate > 0:
        parser.error("--open-rate must be > 0")
    phases = tuple(p for p in args.phases.split(",") if p)
    unknown = sorted(set(phases) - set(PHASES))
    if unknown:
        parser.error(f"unknown phases: {', '.join(unknown)}")
    report = run(args.quick, args.port, args.keep_data, phases, args.open_rate)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
