"""Robustness: hostile input, the OpenAPI contract and injected faults against the real app.

``python -m bench.robustness [--quick]`` serves the app (SQLite, no model: the model routes
answer their documented 503) on a loopback port and

- sends hostile requests (deep nesting and NUL on every JSON route, control characters in
  paths and queries, wrong media types, concurrent key creation for new tenants, tenant
  names with invisible characters) and counts 5xx answers;
- runs schemathesis over the whole OpenAPI document (a few examples per operation with
  ``--quick``) and counts operations whose answers do not match it;
- injects faults (a tampered audit payload and time, a deleted chain tail checked against a
  signed head) and counts those the service answered cleanly.

The last stdout line is one JSON object: ``hostile_cases``, ``five_xx`` (must be 0),
``contract_mismatches`` (must be 0), ``faults_injected``, ``faults_survived``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sqlite3
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import uvicorn

import migrations
from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.settings import Settings
from store.db import create_engine, create_sessionmaker

__all__ = ["main"]

JSON_ROUTES = (
    ("POST", "/v1/keys"), ("POST", "/v1/constraints"), ("POST", "/v1/evidence/query"),
    ("POST", "/v1/reason"), ("POST", "/v1/chat/completions"), ("POST", "/v1/sessions"),
    ("POST", "/v1/sessions/s/turns"), ("PATCH", "/v1/sessions/s/premises/p"),
    ("POST", "/v1/runs/r/feedback"), ("POST", "/v1/confirmations/c"),
)


async def _admin_key(url: str) -> str:
    engine = create_engine(url)
    try:
        token = await bootstrap_admin_key(create_sessionmaker(engine), None)
    finally:
        await engine.dispose()
    assert token is not None
    return token


def _serve(settings: Settings) -> tuple[uvicorn.Server, threading.Thread, str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="critical",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


def _hostile(base: str, headers: dict[str, str]) -> list[int]:
    statuses: list[int] = []
    deep = '{"prompt": "hi", "profile": ' + "[" * 5000 + "]" * 5000 + "}"
    with httpx.Client(base_url=base, timeout=60) as http:
        json_headers = {**headers, "content-type": "application/json"}
        for method, path in JSON_ROUTES:
            for body in (deep, '{"prompt": "a\\u0000b", "tenant": "x\\u0000y", "scopes": ["reason"]}'):
                statuses.append(http.request(method, path, content=body, headers=json_headers).status_code)
            statuses.append(http.request(method, path, content="{}", headers={
                **headers, "content-type": "text/plain"}).status_code)
        for path in ("/v1/sessions/a%00b", "/v1/ontologies?domain=a%00b", "/v1/runs/a%01b",
                     "/v1/keys?tenant=%7f", "/v1/audit/events?cursor=%00"):
            statuses.append(http.get(path, headers=headers).status_code)
        for tenant in ("zero\u200bwidth", "bidi\u202e", "tab\there"):
            statuses.append(http.post("/v1/keys", headers=headers,
                                      json={"tenant": tenant, "scopes": ["reason"]}).status_code)

        def create(i: int) -> int:
            return http.post("/v1/keys", headers=headers,
                             json={"tenant": f"race-{i % 3}", "scopes": ["reason"]}).status_code

        with ThreadPoolExecutor(max_workers=15) as pool:
            statuses += list(pool.map(create, range(30)))
    return statuses


def _contract(base: str, headers: dict[str, str], examples: int) -> int:
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from schemathesis.core.failures import FailureGroup
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    # No model is loaded, so the model routes' documented 503 is the truthful answer; any
    # other 5xx is undocumented and fails status_code_conformance.
    checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
    schema = schemathesis.openapi.from_url(f"{base}/schema/openapi.json")
    mismatches = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            case.call_and_validate(base_url=base, headers=headers, checks=checks, timeout=60)

        try:
            run()
        except (AssertionError, FailureGroup) as failure:
            mismatches += 1
            print(f"mismatch: {operation.method.upper()} {operation.path}: {str(failure)[:300]}")
    return mismatches


def _faults(base: str, headers: dict[str, str], db_path: Path) -> tuple[int, int]:
    injected = survived = 0
    with httpx.Client(base_url=base, timeout=60) as http:
        for i in range(3):
            http.post("/v1/keys", headers=headers, json={"tenant": "default", "name": f"f{i}",
                                                         "scopes": ["reason"]})
        head = http.get("/v1/audit/verify", headers=headers).json()["signed_head"]
        for column, value in (("payload", "{broken"), ("created_at", "not a time")):
            injected += 1
            with sqlite3.connect(db_path) as db:
                db.execute(f"UPDATE audit_events SET {column} = ? WHERE chain_seq = 1 AND tenant_id = "
                           "(SELECT id FROM tenants WHERE name = 'default')", (value,))
            answer = http.get("/v1/audit/verify", headers=headers)
            listed = http.get("/v1/audit/events", headers=headers)
            if (answer.status_code == 200 and answer.json()["first_broken"] is not None
                    and listed.status_code == 200):
                survived += 1
            else:
                print(f"fault not survived: {column}: {answer.status_code} {answer.text[:200]}")
        injected += 1
        with sqlite3.connect(db_path) as db:
            db.execute("DELETE FROM audit_events WHERE seq = (SELECT max(seq) FROM audit_events "
                       "WHERE tenant_id = (SELECT id FROM tenants WHERE name = 'default'))")
        check = http.get("/v1/audit/verify", headers=headers, params={"head": head})
        if check.status_code == 200 and check.json()["head_check"]["holds"] is False:
            survived += 1
    return injected, survived


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few contract examples per operation")
    args = parser.parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="tenet-robustness-"))
    settings = Settings(data_dir=data_dir, load_model=False)
    migrations.upgrade(settings.database_url)
    token = asyncio.run(_admin_key(settings.database_url))
    headers = {"Authorization": f"Bearer {token}"}
    server, thread, base = _serve(settings)
    started = time.perf_counter()
    try:
        statuses = _hostile(base, headers)
        mismatches = _contract(base, headers, 3 if args.quick else 20)
        injected, survived = _faults(base, headers, data_dir / "tenet.db")
    finally:
        server.should_exit = True
        thread.join(timeout=60)
    result = {
        "hostile_cases": len(statuses),
        "five_xx": sum(1 for s in statuses if s >= 500),
        "contract_mismatches": mismatches,
        "faults_injected": injected,
        "faults_survived": survived,
        "seconds": round(time.perf_counter() - started, 1),
        "quick": args.quick,
        "model": "not loaded: model routes answer their documented 503",
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
