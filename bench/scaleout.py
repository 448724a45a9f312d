"""Scale-out benchmark: ``/v1/reason`` with local workers, one Ray worker replica and two.

``python -m bench.scaleout [--quick] [--requests N] [--concurrency C] [--no-postgres]``

Each mode serves the real app in this process (its lifespan and an httpx
ASGI client in one event loop, so concurrent requests are concurrent) on a
fresh SQLite database, with the bundled model loaded once and shared:

- ``local``: decodes in the API process (``TENET_WORKERS=local``);
- ``ray_1`` / ``ray_2``: decodes on a local Ray cluster started for the mode
  (``TENET_WORKERS=ray``, 2 CPUs, one or two worker replicas of one CPU each),
  shut down after it.

The load: ``C`` clients, each sending its next request as soon as the last
answered, ``N`` requests in all, short budgets (8 new tokens, greedy). The
prompts cycle through a few distinct ones, so each prompt's shared prefix is
prefilled once and then found in a prefix cache: ``prefix_hit_rate`` is the
share of the load's answered runs whose prefix came from the cache
(``pruning.prefix_cache_hit``), after each prompt was run once alone (which
fills its prefix where its affinity routes it). With session affinity (Ray
Serve's consistent-hash router on the job's prefix key) two replicas hit as
often as one; without it a prefix would be found on the other replica only
by chance. ``ray_hop_p50_ms`` is the median cost of the hop to a worker
beyond the decode (the handle's round trip minus the replica's own time),
over ``--hop-requests`` runs of ``ray_1`` sent one at a time after the load;
each mode also reports ``hop_p50_ms_under_load`` (queueing and the API
process's own work included). ``errors`` counts every non-200 answer.

``api2_ray2`` (skipped with ``--no-postgres`` or when PostgreSQL does not
answer at ``TENET_BENCH_POSTGRES_URL``): two API apps on one fresh
PostgreSQL database, the second attached to the first's Ray cluster of two
worker replicas, 64 concurrent requests split between them.
``audit_chain_intact`` is true when every mode's tenant audit chain verifies
(``GET /v1/audit/verify``) after its load.

On a 2-core machine two replicas cannot be faster than one (they share the
same two cores); the figures are the per-request costs to project from.
The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import torch

from store.admin import accepts_connections, execute_on_server

REPO_ROOT = Path(__file__).resolve().parent.parent
MODEL_CACHE = REPO_ROOT / "var" / "models"
POSTGRES_URL = os.environ.get(
    "TENET_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
PROMPTS = (
    "Explain in two sentences why banks check the identity of new customers.",
    "List three risks of paying suppliers in advance. Answer in under 40 words.",
    "Describe what a transaction monitoring alert is. Do not use the word 'money'.",
    "Why do auditors sample invoices? Answer in one short paragraph.",
)
OPTIONS = {"max_new_tokens": 8, "num_beams": 1}
READY_WITHIN_S = 300.0


@dataclass
class Load:
    """What one load phase measured."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    hits: int = 0
    wall_s: float = 0.0

    def report(self) -> dict[str, Any]:
        answered = len(self.latencies_ms)
        ordered = sorted(self.latencies_ms)
        return {
            "rps": round(answered / self.wall_s, 3) if self.wall_s else 0.0,
            "p50_ms": round(statistics.median(ordered), 1) if ordered else None,
            "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)
            if ordered
            else None,
            "errors": self.errors,
            "answered": answered,
        }

    @property
    def hit_rate(self) -> float | None:
        answered = len(self.latencies_ms)
        return round(self.hits / answered, 3) if answered else None


async def drive(
    clients: Sequence[tuple[httpx.AsyncClient, dict[str, str]]], requests: int, concurrency: int
) -> Load:
    """``concurrency`` clients send ``requests`` runs in all (round robin over ``clients``)."""
    load = Load()
    counter = iter(range(requests))

    async def client_loop() -> None:
        for i in counter:
            client, headers = clients[i % len(clients)]
            body = {"prompt": PROMPTS[i % len(PROMPTS)], "options": OPTIONS}
            t0 = time.perf_counter()
            try:
                response = await client.post("/v1/reason", json=body, headers=headers, timeout=300)
            except httpx.HTTPError:
                load.errors += 1
                continue
            if response.status_code != 200:
                load.errors += 1
                continue
            load.latencies_ms.append((time.perf_counter() - t0) * 1000)
            pruning = response.json().get("pruning") or {}
            load.hits += bool(pruning.get("prefix_cache_hit"))

    started = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(concurrency)))
    load.wall_s = time.perf_counter() - started
    return load


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """``app`` started (its lifespan in a task of its own) with an in-loop HTTP client."""
    from app.embedded import running

    async with running(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            yield client


async def wait_ready(client: httpx.AsyncClient) -> float:
    """Seconds until ``/readyz`` answers 200 (the workers up)."""
    t0 = time.perf_counter()
    while (response := await client.get("/readyz")).status_code != 200:
        if time.perf_counter() - t0 > READY_WITHIN_S:
            raise RuntimeError(f"not ready after {READY_WITHIN_S:g} s: {response.text}")
        await asyncio.sleep(0.5)
    return time.perf_counter() - t0


async def admin_headers(runtime: Any) -> dict[str, str]:
    from app.bootstrap import bootstrap_admin_key

    token = await bootstrap_admin_key(runtime.sessionmaker, None)
    if token is None:
        raise RuntimeError("the bench database already had keys")
    return {"Authorization": f"Bearer {token}"}


async def chain_intact(client: httpx.AsyncClient, headers: dict[str, str]) -> bool:
    response = await client.get("/v1/audit/verify", headers=headers)
    return response.status_code == 200 and bool(response.json().get("intact"))


def sqlite_settings(data_dir: Path, template: Path, **overrides: Any) -> Any:
    from app.settings import Settings

    data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, data_dir / "tenet.db")
    return Settings(
        data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE, device="cpu", **overrides
    )


async def run_mode(
    name: str, settings: Any, model: Any, requests: int, concurrency: int, hop_requests: int
) -> tuple[dict[str, Any], float | None, list[float], bool, float]:
    """One mode's load; (report, prefix hit rate, hop samples, chain intact, seconds to ready)."""
    from app.factory import create_app
    from app.runtime import Runtime

    runtime = Runtime(settings)
    runtime.set_model(model)
    app = create_app(settings, runtime=runtime)
    async with served(app) as client:
        ready_s = await wait_ready(client)
        headers = await admin_headers(runtime)
        # Each prompt once, alone: its prefix is filled where its affinity routes it.
        await drive([(client, headers)], len(PROMPTS), 1)
        load = await drive([(client, headers)], requests, concurrency)
        under_load = list(runtime.workers.hop_samples()) if runtime.workers is not None else []
        # The hop alone: requests one at a time, nothing queued anywhere.
        await drive([(client, headers)], hop_requests, 1)
        hops = list(runtime.workers.hop_samples())[len(under_load) :] if runtime.workers else []
        intact = await chain_intact(client, headers)
    print(
        f"{name}: {load.report()} hit_rate={load.hit_rate} ready_s={ready_s:.1f}",
        file=sys.stderr,
        flush=True,
    )
    report = {**load.report(), "hop_p50_ms_under_load": _median(under_load[len(PROMPTS) :])}
    return report, load.hit_rate, hops, intact, ready_s


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None




async def run_two_apis(
    tmp: Path, model: Any, requests: int, concurrency: int
) -> tuple[dict[str, Any], bool]:
    """Two API apps on one PostgreSQL database and one Ray cluster of two worker replicas."""
    import migrations
    from app.factory import create_app
    from app.runtime import Runtime
    from app.settings import Settings

    name = f"tenet_scaleout_{uuid.uuid4().hex[:10]}"
    await execute_on_server(POSTGRES_URL, f'CREATE DATABASE "{name}"')
    url = f"{POSTGRES_URL.rsplit('/', 1)[0]}/{name}"
    try:
        await asyncio.to_thread(migrations.upgrade, url)
        common: dict[str, Any] = {
            "database_url": url,
            "load_model": False,
            "model_cache_dir": MODEL_CACHE,
            "device": "cpu",
            "workers": "ray",
            "ray_replicas": 2,
            "ray_num_cpus": 2,
        }
        first = Settings(data_dir=tmp / "api-a", **common)
        # The second API replica joins the cluster the first started and attaches to its workers.
        second = Settings(data_dir=tmp / "api-b", ray_address="auto", **common)
        runtimes = [Runtime(first), Runtime(second)]
        for runtime in runtimes:
            runtime.set_model(model)
        app_a, app_b = (create_app(s, runtime=r) for s, r in zip((first, second), runtimes))
        async with served(app_a) as client_a:
            await wait_ready(client_a)
            async with served(app_b) as client_b:
                await wait_ready(client_b)
                headers = await admin_headers(runtimes[0])
                load = await drive(
                    [(client_a, headers), (client_b, headers)], requests, concurrency
                )
                intact = await chain_intact(client_a, headers) and await chain_intact(
                    client_b, headers
                )
        print(f"api2_ray2: {load.report()} intact={intact}", file=sys.stderr, flush=True)
        return load.report(), intact
    finally:
        await execute_on_server(POSTGRES_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    import migrations
    from inference.loader import load_model

    torch.set_num_threads(2)
    started = time.perf_counter()
    model = await asyncio.to_thread(load_model, "bundled", device="cpu", cache_root=MODEL_CACHE)
    modes: dict[str, Any] = {}
    hit_rates: dict[str, float | None] = {}
    ready: dict[str, float] = {}
    intact_all = True
    hops: list[float] = []
    with tempfile.TemporaryDirectory(prefix="tenet-scaleout-") as tmpdir:
        tmp = Path(tmpdir)
        template = tmp / "template.db"
        await asyncio.to_thread(migrations.upgrade, f"sqlite+aiosqlite:///{template}")
        plans = [
            ("local", {}),
            ("ray_1", {"workers": "ray", "ray_replicas": 1, "ray_num_cpus": 2}),
            ("ray_2", {"workers": "ray", "ray_replicas": 2, "ray_num_cpus": 2}),
        ]
        for name, overrides in plans:
            settings = sqlite_settings(tmp / name, template, **overrides)
            report, hit_rate, samples, intact, ready_s = await run_mode(
                name, settings, model, args.requests, args.concurrency, args.hop_requests
            )
            modes[name], hit_rates[name], ready[name] = report, hit_rate, round(ready_s, 1)
            intact_all = intact_all and intact
            if name == "ray_1":
                hops = samples
        api2: dict[str, Any] | None = None
        if not args.no_postgres and accepts_connections(POSTGRES_URL):
            api2, intact = await run_two_apis(tmp, model, args.api2_requests, args.api2_concurrency)
            intact_all = intact_all and intact
    return {
        "bench": "scaleout",
        "quick": args.quick,
        "requests": args.requests,
        "concurrency": args.concurrency,
        "options": OPTIONS,
        "modes": modes,
        "ray_hop_p50_ms": _median(hops),
        "ray_hop_samples": len(hops),
        "prefix_hit_rate": {
            "ray_1": hit_rates.get("ray_1"),
            "ray_2": hit_rates.get("ray_2"),
            "local": hit_rates.get("local"),
        },
        "api2_ray2": api2,
        "audit_chain_intact": intact_all,
        "ready_s": ready,
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small loads (fits in 10 minutes on 2 cores)"
    )
    parser.add_argument("--requests", type=int, default=None, help="requests per mode")
    parser.add_argument("--concurrency", type=int, default=None, help="concurrent clients per mode")
    parser.add_argument("--api2-requests", type=int, default=64)
    parser.add_argument("--api2-concurrency", type=int, default=64)
    parser.add_argument(
        "--hop-requests", type=int, default=8, help="sequential runs timing the hop"
    )
    parser.add_argument("--no-postgres", action="store_true", help="skip the two-API-replica phase")
    args = parser.parse_args(argv)
    args.requests = args.requests or (16 if args.quick else 64)
    args.concurrency = args.concurrency or (4 if args.quick else 8)
    report = asyncio.run(main_async(args))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
