"""The ``tenet`` command line.

``tenet serve``            migrate, bootstrap the first admin key, serve over HTTP
``tenet db upgrade``       apply migrations (``downgrade REV``, ``current``)
``tenet model prepare``    convert a GGUF model once into the safetensors cache
``tenet keys create``      create an API key for a tenant
``tenet ask "PROMPT"``     run one POST /v1/reason in-process and print the result
``tenet diagnose``         print GET /v1/diagnostics of a running server (admin key)

Settings come from ``TENET_*`` environment variables (see README). Errors
are printed as one line on stderr with exit status 1, never as a traceback.

Each sub-command imports what it needs inside it: the service's modules pull in torch,
spaCy, rdflib and alembic (seconds of CPU), which ``--help``, ``keys create`` or
``diagnose`` never use.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import itertools
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Self, TextIO

from app.settings import Settings
from reasoning.errors import InvalidInput, TenetError, Unavailable

__all__ = ["build_parser", "format_answer", "main"]


def _settings() -> Settings:
    settings = Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return settings


def _check_data_dir(settings: Settings) -> None:
    """Refuse to start (Unavailable, a clean one-line message) when the data directory is not
    writable: the database, the model cache and the audit-head key live there."""
    directory = settings.data_dir
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".tenet-write-check-"):
            pass
    except OSError as exc:
        raise Unavailable(
            f"the data directory {directory} is not writable ({exc.strerror or exc}); "
            "give the service a writable TENET_DATA_DIR"
        ) from None


def _check_database_files(settings: Settings) -> None:
    """Refuse to start (Unavailable, one line) when a SQLite database, its ``-wal`` or its
    ``-shm`` file cannot be written (``store.db.sqlite_unwritable``): found at start, not as
    a failed write or a SIGBUS later."""
    from store.db import sqlite_unwritable

    problem = sqlite_unwritable(settings.database_url)
    if problem is not None:
        raise Unavailable(
            f"{problem}; make it writable by this user or point TENET_DATABASE_URL elsewhere"
        )


def _migrate(settings: Settings) -> None:
    import migrations

    migrations.upgrade(settings.database_url)


def _bootstrap(settings: Settings, out: TextIO) -> None:
    from app.bootstrap import bootstrap_admin_key, bootstrap_domains
    from store.db import create_engine, create_sessionmaker

    async def run() -> str | None:
        engine = create_engine(settings.database_url)
        try:
            sessionmaker = create_sessionmaker(engine)
            token = await bootstrap_admin_key(sessionmaker, settings.admin_key_file)
            await bootstrap_domains(sessionmaker)
            return token
        finally:
            await engine.dispose()

    token = asyncio.run(run())
    if token is not None:
        print(
            "\nFirst start: created an admin API key for the tenant 'default'.\n"
            f"  {token}\n"
            f"It is shown only now; a copy is in {settings.admin_key_file} (mode 0600).\n",
            file=out,
            flush=True,
        )


def _quiet_model_loading() -> None:
    """Our spinner reports model loading; transformers' own progress bars would interleave."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.factory import create_app
    from app.heap import freeze_heap_once_loaded
    from app.http_protocol import header_deadline_protocol

    # A fatal signal (SIGSEGV, SIGBUS from a mapped file, SIGABRT) writes every thread's
    # Python stack to stderr instead of ending the process without a line.
    if not faulthandler.is_enabled() and sys.__stderr__ is not None:
        faulthandler.enable(file=sys.__stderr__)  # the process's own stderr, even if redirected
    settings = _settings()
    _check_data_dir(settings)
    _check_database_files(settings)
    _migrate(settings)
    _bootstrap(settings, sys.stdout)
    _quiet_model_loading()
    app = create_app(settings)
    if settings.load_model:
        freeze_heap_once_loaded(app.state.runtime)
    uvicorn.run(
        app, host=args.host, port=args.port, log_level=settings.log_level.lower(), access_log=False,
        http=header_deadline_protocol(settings.header_timeout_s, settings.body_timeout_s),
    )
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    import migrations

    settings = _settings()
    if args.db_command == "upgrade":
        migrations.upgrade(settings.database_url, args.revision)
    elif args.db_command == "downgrade":
        migrations.downgrade(settings.database_url, args.revision)
    print(f"database at revision {migrations.current_revision(settings.database_url) or 'base'}")
    return 0


def cmd_model_prepare(args: argparse.Namespace) -> int:
    from inference.loader import prepare_cache

    settings = _settings()
    assert settings.model_cache_dir is not None
    _quiet_model_loading()
    started = time.perf_counter()
    with Spinner(f"preparing model {settings.model}"):
        cached = prepare_cache(settings.model, settings.model_cache_dir)
    if cached is None:
        print(f"model {settings.model} needs no conversion")
    else:
        print(f"model cache ready at {cached} ({time.perf_counter() - started:.1f} s)")
    return 0


def cmd_keys_create(args: argparse.Namespace) -> int:
    from store import keys as key_store
    from store.db import create_engine, create_sessionmaker, transaction

    settings = _settings()
    _migrate(settings)

    async def run() -> str:
        engine = create_engine(settings.database_url)
        try:
            async with transaction(create_sessionmaker(engine)) as session:
                tenant = await key_store.get_or_create_tenant(session, args.tenant)
                created = await key_store.create_key(
                    session, tenant.id, args.name, args.scopes.split(",")
                )
            return created.token
        finally:
            await engine.dispose()

    token = asyncio.run(run())
    print(token)
    print(
        f"(tenant {args.tenant}, scopes {args.scopes}; the secret is shown only now)",
        file=sys.stderr,
    )
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    from litestar.testing import TestClient

    from app.bootstrap import bootstrap_domains
    from app.factory import create_app
    from app.runtime import Runtime
    from store import keys as key_store
    from store.db import transaction

    settings = replace(_settings(), load_model=False)
    _migrate(settings)
    _quiet_model_loading()
    runtime = Runtime(settings)
    with Spinner(f"loading model {settings.model}"):
        runtime.load_model_now()
    app = create_app(settings, runtime=runtime)
    body = {
        "prompt": args.prompt,
        "domain": args.domain,
        "options": {"max_new_tokens": args.max_new_tokens},
    }
    with TestClient(app=app) as client:
        portal = client.blocking_portal

        async def temporary_key() -> tuple[str, str]:
            async with transaction(runtime.sessionmaker) as session:
                tenant = await key_store.get_or_create_tenant(session, args.tenant)
                created = await key_store.create_key(
                    session, tenant.id, "tenet ask (temporary)", ["reason"]
                )
            return created.key.id, created.token

        async def revoke(key_id: str) -> None:
            async with transaction(runtime.sessionmaker) as session:
                await key_store.revoke_key(session, key_id, None)

        key_id, token = portal.call(temporary_key)
        if args.domain:
            portal.call(bootstrap_domains, runtime.sessionmaker)
        try:
            with Spinner("reasoning"):
                response = client.post(
                    "/v1/reason", json=body, headers={"Authorization": f"Bearer {token}"}
                )
        finally:
            portal.call(revoke, key_id)
    payload = response.json()
    if args.json:
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    if response.status_code >= 400:
        print(
            f"error {response.status_code} {payload.get('title', '')}: {payload.get('detail', '')}",
            file=sys.stderr,
        )
        return 1
    if not args.json:
        print(format_answer(payload))
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Ask a running server: the figures are the serving process's own, not a fresh one's."""
    import httpx

    key = args.key or _admin_key()
    params = {"profile_layers": "true"} if args.profile_layers else {}
    try:
        response = httpx.get(
            f"{args.url.rstrip('/')}/v1/diagnostics",
            params=params,
            headers={"Authorization": f"Bearer {key}"},
            timeout=args.timeout,
        )
    except httpx.HTTPError as exc:
        print(f"tenet: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 1
    payload = response.json()
    if response.status_code >= 400:
        print(f"error {response.status_code} {payload.get('title', '')}: {payload.get('detail', '')}",
              file=sys.stderr)
        return 1
    print(json.dumps(payload, indent=2, ensure_ascii=False))
    return 0


def _admin_key() -> str:
    """TENET_ADMIN_KEY, else the bootstrap key file of the data directory."""
    import os

    if key := os.environ.get("TENET_ADMIN_KEY", "").strip():
        return key
    path = Settings.from_env().admin_key_file
    if not path.exists():
        raise InvalidInput(f"no admin key: pass --key, set TENET_ADMIN_KEY or create {path}")
    return path.read_text(encoding="utf-8").strip()


def format_answer(payload: dict[str, Any]) -> str:
    """Render a /v1/reason response for a terminal: the decision and its grounds, answer, status,
    verdicts, confidences."""
    lines = [*_decision_lines(payload.get("decision")), *_grounds_lines(payload),
             str(payload.get("answer") or "").strip() or "(no answer)", ""]
    lines.append(f"status: {payload.get('status', '?')}    run: {payload.get('run_id', '?')}")
    if payload.get("detail"):
        lines.append(f"detail: {payload['detail']}")
    for conflict in payload.get("conflicts") or []:
        spans = [
            span.get("text", "") for span in conflict.get("spans") or [] if isinstance(span, dict)
        ]
        lines.append(
            f"conflict: {' vs '.join(f'«{text}»' for text in spans)}  {conflict.get('reason', '')}"
        )
    constraints = payload.get("constraints") or []
    if constraints:
        lines.append("constraints:")
        for item in constraints:
            verdict = item.get("verdict")
            mark = "n/a " if not verdict else ("ok  " if verdict.get("satisfied") else "FAIL")
            source = item.get("source") if isinstance(item.get("source"), dict) else {}
            text = source.get("text", "") if source else ""
            detail = verdict.get("detail", "") if verdict else ""
            lines.append(
                f"  [{mark}] {item.get('kind', '?')}"
                + (f"  «{text}»" if text else "")
                + (f"  {detail}" if detail else "")
            )
    confidences = payload.get("confidence_by_step") or {}
    if isinstance(confidences, dict) and confidences:
        rendered = ", ".join(f"{step}={value:.2f}" for step, value in confidences.items())
        lines.append(f"confidence by step: {rendered}")
    return "\n".join(lines)


def _decision_lines(decision: Any) -> list[str]:
    """The decision of the domain's rules first: status, each conclusion with its rule and facts."""
    if not isinstance(decision, dict):
        return []
    lines = [f"decision: {decision.get('status', '?')}  {decision.get('statement', '')}".rstrip()]
    for conclusion in decision.get("conclusions") or []:
        cited = ", ".join(conclusion.get("evidence_ids") or [])
        lines.append(f"  {conclusion.get('rule_id', '?')}: {conclusion.get('statement', '')}"
                     + (f"  [{cited}]" if cited else ""))
        facts = [f["span"]["text"] for f in conclusion.get("case_facts") or []
                 if isinstance(f, dict) and isinstance(f.get("span"), dict) and f["span"].get("text")]
        if facts:
            lines.append("    because: " + "; ".join(f"«{t}»" for t in dict.fromkeys(facts)))
    for missing in decision.get("missing") or []:
        lines.append(f"  missing: {missing.get('label', missing.get('input', '?'))}")
        for outcome in missing.get("outcomes") or []:
            if isinstance(outcome, dict) and outcome.get("statement"):
                lines.append(f"    {outcome['statement']}")
    nearest = decision.get("nearest")
    if isinstance(nearest, dict) and nearest.get("statement"):
        lines.append(f"  why not: {nearest['statement']}")
    return [*lines, ""]


def _grounds_lines(payload: dict[str, Any]) -> list[str]:
    """The grounds the answer states (its steps of kind ``grounds``), one a line."""
    path = set(payload.get("reasoning_path") or [])
    grounds = [s.get("text", "").strip() for s in payload.get("steps") or []
               if isinstance(s, dict) and s.get("kind") == "grounds" and s.get("id") in path]
    grounds = [g for g in dict.fromkeys(grounds) if g]
    return ["grounds:", *(f"  {g}" for g in grounds), ""] if grounds else []


class Spinner:
    """A progress indicator on stderr while a blocking step runs (a plain line when not a TTY)."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0

    def __enter__(self) -> Self:
        self._started = time.perf_counter()
        if self.stream.isatty():
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        else:
            print(f"{self.label} ...", file=self.stream, flush=True)
        return self

    def _spin(self) -> None:
        for frame in itertools.cycle("|/-\\"):
            if self._stop.wait(0.1):
                return
            elapsed = time.perf_counter() - self._started
            self.stream.write(f"\r{frame} {self.label} ({elapsed:.0f} s)")
            self.stream.flush()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self.stream.write("\r\033[K")
        elapsed = time.perf_counter() - self._started
        outcome = "failed" if exc[0] is not None else "done"
        print(f"{self.label}: {outcome} in {elapsed:.1f} s", file=self.stream, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tenet", description="Tenet constraint-graph reasoning service"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="migrate, bootstrap and serve the HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.set_defaults(func=cmd_serve)

    db = sub.add_parser("db", help="database migrations")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    up = db_sub.add_parser("upgrade", help="apply migrations up to a revision")
    up.add_argument("revision", nargs="?", default="head")
    down = db_sub.add_parser("downgrade", help="revert migrations down to a revision ('base': all)")
    down.add_argument("revision")
    db_sub.add_parser("current", help="print the current revision")
    db.set_defaults(func=cmd_db)

    model = sub.add_parser("model", help="model management")
    model_sub = model.add_subparsers(dest="model_command", required=True)
    model_sub.add_parser(
        "prepare", help="convert the GGUF model into the safetensors cache"
    ).set_defaults(func=cmd_model_prepare)

    keys = sub.add_parser("keys", help="API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create an API key (prints the secret once)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--scopes", required=True, help="comma-separated: reason,ontology:read,...")
    create.add_argument("--name", default="cli")
    create.set_defaults(func=cmd_keys_create)

    ask = sub.add_parser("ask", help="answer one prompt in-process through POST /v1/reason")
    ask.add_argument("prompt")
    ask.add_argument("--domain", default=None)
    ask.add_argument("--tenant", default="default")
    ask.add_argument("--max-new-tokens", type=int, default=128)
    ask.add_argument("--json", action="store_true", help="print the raw JSON response")
    ask.set_defaults(func=cmd_ask)

    diagnose = sub.add_parser("diagnose", help="print the diagnostics of a running server (admin key)")
    diagnose.add_argument("--url", default="http://127.0.0.1:8000")
    diagnose.add_argument("--key", default=None, help="admin API key (default: TENET_ADMIN_KEY or admin-key.txt)")
    diagnose.add_argument("--profile-layers", action="store_true", help="run one per-layer probe first")
    diagnose.add_argument("--timeout", type=float, default=120.0)
    diagnose.set_defaults(func=cmd_diagnose)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tenet`` script; returns the exit status."""
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except TenetError as exc:
        from app.errors import problem_title

        print(f"tenet: {problem_title(exc).lower()}: {exc.detail}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
