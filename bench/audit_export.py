"""Peak memory of a streamed time-range provenance export.

Run ``python -m bench.audit_export [--quick] [--runs N] [--format FMT]``.

1. A child process seeds a fresh SQLite database with N recorded runs
   (``store.runs.record_run``: run, steps, PROV bundle, audit event each).
2. For the full range and for a tenth of it, a fresh child process builds the
   real app and sends ``GET /v1/audit/export`` through its ASGI interface; the
   response body goes to a file as it streams (nothing is kept in memory).
   The child reports its peak RSS (``resource.getrusage``) before and after
   the request: the growth is what the export cost.
3. The parent checks that the exported file is one valid document holding
   exactly the requested runs.

If the export held the whole range in memory, the growth for N runs would be
about ten times the growth for N/10; a streamed export keeps both about
equal. The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["main", "measure_export", "run", "seed"]

_TENANT = "bench"


def _record(tenant_id: str, at: datetime, n: int) -> Any:
    from reasoning.constraints.model import Constraint, Kind, Verdict
    from reasoning.evidence.model import EvidenceFact
    from reasoning.provenance import (
        ActivitySpan,
        ModelAgent,
        PruningDecision,
        RunKind,
        RunRecord,
        StepTrace,
    )

    stages = ("parse", "extract", "graph", "evidence", "prefill", "decode", "verify")
    ms = timedelta(milliseconds=1)
    facts = tuple(
        EvidenceFact(
            id=f"E{i}", subject=f"aml:Entity{i}", predicate="aml:relatedTo", object=f"aml:Entity{i + 1}",
            text=f"Entity {i} is related to entity {i + 1} (transfer {n})", view="fund_flow",
            score=0.9 - i / 10, hops=1 + i % 3, ontology_version="aml-2026-03",
        )
        for i in range(1, 5)
    )
    steps = tuple(
        StepTrace(
            id=f"S{i}", text=f"Step {i} of transfer {n} rests on E{i} [E{i}].",
            started_at=at + 60 * ms + 20 * i * ms, ended_at=at + 80 * ms + 20 * i * ms,
            confidence=0.8, view="fund_flow", evidence_ids=(f"E{i}",),
        )
        for i in range(1, 5)
    )
    return RunRecord(
        tenant_id=tenant_id, key_id=None, kind=RunKind.REASON, status="ok",
        prompt=f"Should transfer {n} of EUR 2,000,000 to a PEP be escalated? Cite the rules.",
        started_at=at, finished_at=at + 200 * ms,
        result={"answer": f"Escalate transfer {n} [E1][E2]."},
        model=ModelAgent(name="SmolLM2-135M-Instruct", sha256="5a" * 32, dtype="float32"),
        activities=tuple(
            ActivitySpan(name=s, started_at=at + 8 * i * ms, ended_at=at + 8 * i * ms + 7 * ms)
            for i, s in enumerate(stages)
        ),
        constraints=(
            Constraint(id="C1", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 80}),
            Constraint(id="C2", kind=Kind.CITE_SOURCES, params={"min": 1}),
        ),
        evidence=facts,
        steps=steps,
        pruning=(PruningDecision(rule="entropy_bound", at=at + 100 * ms, beam=2, score=0.91),),
        answer=f"Escalate transfer {n} [E1][E2].",
        verdicts=(Verdict(constraint_id="C1", satisfied=True), Verdict(constraint_id="C2", satisfied=True)),
    )


def seed(url: str, runs: int, start: datetime) -> str:
    """Migrate ``url``, record ``runs`` runs a second apart; return an audit:read key."""
    import migrations
    from store import keys
    from store.db import create_engine, create_sessionmaker, transaction
    from store.runs import record_run

    async def main() -> str:
        engine = create_engine(url)
        await migrations.upgrade_engine(engine)
        factory = create_sessionmaker(engine)
        async with transaction(factory) as db:
            tenant = await keys.get_or_create_tenant(db, _TENANT)
            token = (await keys.create_key(db, tenant.id, "bench", ["audit:read"])).token
        for offset in range(0, runs, 500):
            async with transaction(factory) as db:
                for n in range(offset, min(runs, offset + 500)):
                    await record_run(db, _record(tenant.id, start + timedelta(seconds=n), n))
        await engine.dispose()
        return token

    return asyncio.run(main())


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure_export(data_dir: str, token: str, query: str, out: str) -> dict[str, Any]:
    """In this process: build the app, stream one export to ``out``, report memory."""
    from app.factory import create_app
    from app.settings import Settings

    async def request(app: Any, query_string: str, sink: Any) -> tuple[int, dict[str, str]]:
        done = asyncio.Event()
        sent_request = False
        status = 0
        headers: dict[str, str] = {}

        async def receive() -> dict[str, Any]:
            nonlocal sent_request
            if not sent_request:
                sent_request = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers.update({k.decode(): v.decode() for k, v in message["headers"]})
            elif message["type"] == "http.response.body":
                sink.write(message.get("body", b""))
                if not message.get("more_body", False):
                    done.set()

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": "/v1/audit/export", "raw_path": b"/v1/audit/export",
            "root_path": "", "query_string": query_string.encode(),
            "headers": [(b"authorization", f"Bearer {token}".encode()), (b"host", b"bench")],
            "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "state": {},
        }
        await app(scope, receive, send)
        return status, headers

    async def main() -> dict[str, Any]:
        app = create_app(Settings(data_dir=Path(data_dir), load_model=False, log_level="WARNING"))
        try:
            # The sinks are local files written by the only task running: a blocking open is fine.
            with open(Path(tempfile.gettempdir()) / "tenet-bench-warmup", "wb") as warm:  # noqa: ASYNC230
                await request(app, "format=json&limit=5", warm)
            before = _max_rss_mb()
            started = time.perf_counter()
            with open(out, "wb") as sink:  # noqa: ASYNC230
                status, headers = await request(app, query, sink)
            seconds = time.perf_counter() - started
            after = _max_rss_mb()
        finally:
            await app.state.runtime.close()
        return {
            "status": status,
            "next_cursor": headers.get("x-next-cursor"),
            "seconds": round(seconds, 2),
            "rss_before_mb": round(before, 1),
            "peak_rss_mb": round(after, 1),
            "growth_mb": round(after - before, 1),
            "body_mb": round(Path(out).stat().st_size / 2**20, 2),
        }

    return asyncio.run(main())


def _in_child(function: Any, *args: Any) -> Any:
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        return pool.apply(function, args)


def _count_runs(path: str, fmt: str) -> int:
    text = Path(path).read_text(encoding="utf-8")
    if fmt == "json":
        return len(json.loads(text)["bundle"])
    if fmt == "jsonld":
        return sum(1 for item in json.loads(text) if str(item.get("@id", "")).startswith("urn:tenet:bundle:"))
    if fmt == "ttl":
        import rdflib

        graph = rdflib.Graph().parse(data=text, format="turtle")
        kind = rdflib.URIRef("urn:tenet:ns#ReasonRun")
        return len(set(graph.subjects(rdflib.RDF.type, kind)))
    from reasoning.provenance import parse

    return len(list(parse(text, fmt).bundles))


def run(runs: int, fmt: str) -> dict[str, Any]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory(prefix="tenet-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        url = f"sqlite+aiosqlite:///{data_dir / 'tenet.db'}"
        seeded = time.perf_counter()
        token = _in_child(seed, url, runs, start)
        seed_seconds = time.perf_counter() - seeded
        end = (start + timedelta(seconds=runs)).isoformat()
        window = f"from={start.isoformat()}&to={end}".replace("+", "%2B")
        full_out, small_out = str(Path(tmp) / f"full.{fmt}"), str(Path(tmp) / f"small.{fmt}")
        small_runs = max(1, runs // 10)
        full = _in_child(measure_export, str(data_dir), token, f"format={fmt}&limit={runs}&{window}", full_out)
        small = _in_child(measure_export, str(data_dir), token, f"format={fmt}&limit={small_runs}&{window}", small_out)
        exported = _count_runs(full_out, fmt)
        exported_small = _count_runs(small_out, fmt)
    return {
        "benchmark": "audit_export",
        "database": "sqlite",
        "format": fmt,
        "runs": runs,
        "seed_seconds": round(seed_seconds, 1),
        "export": {**full, "runs_exported": exported, "runs_per_s": round(exported / max(full["seconds"], 1e-9), 1)},
        "export_tenth": {**small, "runs_exported": exported_small},
        "growth_ratio_full_vs_tenth": round(full["growth_mb"] / max(small["growth_mb"], 0.1), 2),
        "memory_measure": "ru_maxrss of the exporting process, before and after the request",
        "valid": exported == runs and exported_small == small_runs and full["status"] == 200,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 runs instead of 10,000")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--format", default="json", choices=["provn", "json", "xml", "ttl", "jsonld"])
    args = parser.parse_args(argv)
    runs = args.runs or (1000 if args.quick else 10_000)
    result = run(runs, args.format)
    print(json.dumps(result))
    return 0 if result["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
