"""Robustness: hostile input, the OpenAPI contract and injected faults against the real app.

``python -m bench.robustness [--quick]`` serves the app (SQLite, no model: the model routes
answer their documented 503) on a loopback port and

- sends hostile requests (deep nesting and NUL on every JSON route, control characters in
  paths and queries, wrong media types, concurrent key creation for new tenants, tenant
  names with invisible characters) and counts 5xx answers;
- runs the hardening cases of :mod:`bench.robustness_hardening` (SERVICE in targets and
  conditions, a catastrophic regex with ``/healthz`` probed meanwhile, delete-and-restore,
  dripped bodies, look-alike tenant names);
- runs the long-prefill case of :mod:`bench.robustness_prefill` on a ``tenet serve`` of its
  own with the bundled model (a 4,000-token Chinese prompt beside short requests:
  ``short_request_p50_s_beside_long_prefill``; a burst after it; the token limit's 413;
  ``--skip-long-prefill`` leaves it out);
- runs schemathesis over the whole OpenAPI document (a few examples per operation with
  ``--quick``) and counts operations whose answers do not match it. It runs with scoped
  keys (:func:`scoped_keys`), never the admin key: a whole-document fuzz run with an admin
  key revokes keys and deletes the domains in service, as the API allows an admin to;
- injects faults and counts those the service answered cleanly: a tampered audit payload and
  time, a deleted chain tail checked against a signed head, the database locked by another
  writer past the busy timeout (503 ``database busy``, nothing half-written, writes resume),
  half-open connections (closed within the header timeout), and ``tenet serve`` started on an
  unwritable SQLite database, ``-wal`` or ``-shm`` file (a one-line refusal, never a
  traceback or a SIGBUS). A fault this machine cannot inject (making a file unwritable needs
  a non-root user or a bind mount) is listed under ``faults_skipped``.

The last stdout line is one JSON object: ``hostile_cases``, ``five_xx`` (must be 0),
``contract_mismatches`` (must be 0), ``faults_injected``, ``faults_survived``,
``faults_skipped``, ``healthz_max_ms`` (the slowest ``/healthz`` while the regex rule ran),
``hardening`` (each hardening case's findings), ``short_request_p50_s_beside_long_prefill``
and ``long_prefill`` (that case's findings); only the long-prefill case loads the model.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

import migrations
from app.cli import main as cli_main
from app.factory import create_app
from app.settings import Settings
from bench.robustness_hardening import run_hardening
from bench.robustness_prefill import run_long_prefill
from bench.threaded_server import admin_key, serve_in_thread, served_protocol
from store.db import sqlite_unwritable

__all__ = ["main"]

#: The header deadline the bench serves with (``tenet serve`` defaults to 10 s).
HEADER_TIMEOUT_S = 1.0
#: The body deadline the bench serves with (``tenet serve`` defaults to 60 s).
BODY_TIMEOUT_S = 1.0

JSON_ROUTES = (
    ("POST", "/v1/keys"), ("POST", "/v1/constraints"), ("POST", "/v1/evidence/query"),
    ("POST", "/v1/reason"), ("POST", "/v1/chat/completions"), ("POST", "/v1/sessions"),
    ("POST", "/v1/sessions/s/turns"), ("PATCH", "/v1/sessions/s/premises/p"),
    ("POST", "/v1/runs/r/feedback"), ("POST", "/v1/confirmations/c"),
)


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


#: The operations the contract run drives with the writer key (a scratch tenant of its own).
WRITE_OPERATIONS = frozenset({"create_ontology", "delete_ontology"})
READER_SCOPES = ["reason", "ontology:read", "audit:read"]


def scoped_keys(base: str, admin: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(reader, writer)`` headers for a whole-document fuzz run, made with the admin key.

    A fuzz run drives every operation with generated input, DELETE and revoke included: with
    an admin key it revokes keys (the admin's own among them) and deletes the domains in
    service (the API working as designed). The reader (the default tenant; ``reason``,
    ``ontology:read``, ``audit:read``) cannot change what others rely on; the writer
    (``ontology:write`` in a scratch tenant) uploads and deletes only its own versions.
    Admin operations answer their documented 403.
    """
    with httpx.Client(base_url=base, timeout=60) as http:
        reader = http.post("/v1/keys", headers=admin, json={
            "tenant": "default", "name": "contract-reader", "scopes": READER_SCOPES})
        writer = http.post("/v1/keys", headers=admin, json={
            "tenant": "contract-scratch", "name": "contract-writer",
            "scopes": ["ontology:write", "ontology:read"]})
    assert reader.status_code == writer.status_code == 201, (reader.text, writer.text)
    return ({"Authorization": f"Bearer {reader.json()['key']}"},
            {"Authorization": f"Bearer {writer.json()['key']}"})


def headers_for(operation: Any, reader: dict[str, str], writer: dict[str, str]) -> dict[str, str]:
    """The scoped key a fuzz run uses for ``operation`` (see :func:`scoped_keys`)."""
    return writer if operation.definition.raw.get("operationId") in WRITE_OPERATIONS else reader


def _contract(base: str, admin: dict[str, str], examples: int) -> int:
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
    reader, writer = scoped_keys(base, admin)
    schema = schemathesis.openapi.from_url(f"{base}/schema/openapi.json")
    mismatches = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        headers = headers_for(operation, reader, writer)

        @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            # run() is called in this iteration, so it sees this operation's headers.
            case.call_and_validate(base_url=base, headers=headers,  # noqa: B023
                                   checks=checks, timeout=60)

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
        injected += 1
        if _locked_database(http, headers, db_path):
            survived += 1
    injected += 1
    if _half_open(base, HEADER_TIMEOUT_S):
        survived += 1
    return injected, survived


def _locked_database(http: httpx.Client, headers: dict[str, str], db_path: Path) -> bool:
    """Another connection holds the write lock past SQLite's busy timeout during a write."""
    blocker = sqlite3.connect(db_path, isolation_level=None, timeout=0)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        refused = http.post("/v1/keys", headers=headers,
                            json={"tenant": "locked-out", "scopes": ["reason"]})
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    resumed = http.post("/v1/keys", headers=headers, json={"tenant": "after-lock", "scopes": ["reason"]})
    listed = http.get("/v1/keys", headers=headers, params={"limit": "1000"})
    tenants = {k["tenant"] for k in listed.json()["data"]} if listed.status_code == 200 else set()
    ok = (refused.status_code == 503
          and refused.headers.get("content-type", "").startswith("application/problem+json")
          and refused.json().get("storage") == "database busy"
          and resumed.status_code == 201 and "locked-out" not in tenants)
    if not ok:
        print(f"fault not survived: locked database: {refused.status_code} {refused.text[:200]} "
              f"then {resumed.status_code}")
    return ok


def _half_open(base: str, timeout_s: float, connections: int = 50) -> bool:
    """Connections that never send a request head are closed by the server within the deadline."""
    host, port = base.removeprefix("http://").split(":")
    sockets = [socket.create_connection((host, int(port)), timeout=10) for _ in range(connections)]
    try:
        sockets[0].sendall(b"GET /healthz HTTP/1.1\r\nHost: x")  # a head that never completes
        time.sleep(timeout_s + 1.5)
        closed = 0
        for sock in sockets:
            sock.settimeout(2)
            try:
                closed += sock.recv(1) == b""
            except ConnectionResetError:
                closed += 1
            except TimeoutError:
                pass  # still open
    finally:
        for sock in sockets:
            sock.close()
    if closed != connections:
        print(f"fault not survived: half-open connections: {closed} of {connections} closed")
    return closed == connections


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[bool]:
    """``path`` cannot be opened for writing inside the block (a read-only bind mount for root,
    chmod 0444 otherwise); yields False when this machine cannot do that."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        try:
            yield True
        finally:
            path.chmod(0o600)
        return
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(path), str(path)],
                             capture_output=True, check=False).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", str(path)], check=False)


def _refusals_to_start(template: Path) -> tuple[int, int, list[str]]:
    """``tenet serve`` on an unwritable database, -wal or -shm file must refuse in one line."""
    injected = survived = 0
    skipped: list[str] = []
    for suffix in ("", "-wal", "-shm"):
        data_dir = Path(tempfile.mkdtemp(prefix="tenet-robustness-start-"))
        database = data_dir / "tenet.db"
        shutil.copy(template, database)
        target = Path(f"{database}{suffix}")
        target.touch()
        err = io.StringIO()
        with _read_only(target) as injectable:
            # Never start a real server: the fault must be in place before tenet serve runs.
            if not injectable or sqlite_unwritable(f"sqlite+aiosqlite:///{database}") is None:
                skipped.append(f"unwritable tenet.db{suffix}: cannot make a file read-only here")
                continue
            injected += 1
            saved = {k: os.environ.get(k) for k in ("TENET_DATA_DIR", "TENET_LOAD_MODEL",
                                                   "TENET_DATABASE_URL")}
            os.environ.update(TENET_DATA_DIR=str(data_dir), TENET_LOAD_MODEL="false")
            os.environ.pop("TENET_DATABASE_URL", None)
            try:
                with contextlib.redirect_stderr(err):
                    status = cli_main(["serve", "--port", "0"])
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
        lines = err.getvalue().strip().splitlines()
        if status == 1 and len(lines) == 1 and f"{target} is not writable" in lines[0]:
            survived += 1
        else:
            print(f"fault not survived: unwritable tenet.db{suffix}: status {status}: {lines[-3:]}")
    return injected, survived, skipped


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few contract examples per operation")
    parser.add_argument("--skip-long-prefill", action="store_true",
                        help="leave out the long-prefill case (the only one that loads the model; "
                             "the test suite covers chunked prefill on its own)")
    args = parser.parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="tenet-robustness-"))
    settings = Settings(data_dir=data_dir, load_model=False, header_timeout_s=HEADER_TIMEOUT_S,
                        body_timeout_s=BODY_TIMEOUT_S)
    migrations.upgrade(settings.database_url)
    template = Path(tempfile.mkdtemp(prefix="tenet-robustness-template-")) / "tenet.db"
    shutil.copy(data_dir / "tenet.db", template)
    token = asyncio.run(admin_key(settings.database_url))
    headers = {"Authorization": f"Bearer {token}"}
    served = serve_in_thread(create_app(settings), http=served_protocol(settings))
    base = served.base_url
    started = time.perf_counter()
    try:
        statuses = _hostile(base, headers)
        hardening_statuses, hardening = run_hardening(base, headers, BODY_TIMEOUT_S)
        statuses += hardening_statuses
        mismatches = _contract(base, headers, 3 if args.quick else 20)
        injected, survived = _faults(base, headers, data_dir / "tenet.db")
    finally:
        served.close()
    prefill: dict[str, Any] = {"short_request_p50_s_beside_long_prefill": None, "skipped": True}
    if not args.skip_long_prefill:
        prefill_statuses, prefill = run_long_prefill(quick=args.quick)
        statuses += prefill_statuses
    start_injected, start_survived, skipped = _refusals_to_start(template)
    injected += start_injected
    survived += start_survived
    result = {
        "hostile_cases": len(statuses),
        "five_xx": sum(1 for s in statuses if s >= 500),
        "contract_mismatches": mismatches,
        "faults_injected": injected,
        "faults_survived": survived,
        "faults_skipped": skipped,
        "healthz_max_ms": hardening["healthz_max_ms"],
        "hardening": hardening,
        "short_request_p50_s_beside_long_prefill": prefill["short_request_p50_s_beside_long_prefill"],
        "long_prefill": prefill,
        "seconds": round(time.perf_counter() - started, 1),
        "quick": args.quick,
        "model": "not loaded: model routes answer their documented 503",
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
