"""The OpenAPI document against the real service: schemathesis generates requests for every
operation (the model routes included, with tiny token budgets) and checks each answer.

Fails on any 5xx, any status or content type the document does not list for the operation,
and any body that does not match its documented schema. The app is served by uvicorn on a
loopback port with the session's loaded model, as a client would reach it. The run uses
scoped keys (``bench.robustness.scoped_keys``), never the admin key: a whole-document fuzz
run with an admin key revokes keys and deletes the domains in service, as the API allows.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from bench.robustness import headers_for, scoped_keys
from bench.threaded_server import admin_key, serve_in_thread
from inference.loader import LoadedModel
from tests.conftest import MODEL_CACHE, bearer

pytestmark = pytest.mark.model

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
#: Examples per operation: enough to reach every documented failure path once or twice.
EXAMPLES = 6


class Server:
    """The app on a loopback port in a background thread, with the default tenant's admin key."""

    def __init__(self, settings_: Settings, model: LoadedModel) -> None:
        self.token = asyncio.run(admin_key(settings_.database_url))
        runtime = Runtime(settings_)
        runtime.set_model(model)
        self.app = create_app(settings_, runtime=runtime)
        self.served = serve_in_thread(self.app, log_level="warning")
        self.base_url = self.served.base_url

    def close(self) -> None:
        self.served.close()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_template: Path,
    loaded_model: LoadedModel,
) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("contract")
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    served = Server(
        Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE, device="cpu",
                 max_new_tokens=4),
        loaded_model,
    )
    yield served
    served.close()


def _tiny_budgets(body: Any) -> None:
    """Keep a generated model request to a few tokens (the schema allows hundreds)."""
    if not isinstance(body, dict):
        return
    if isinstance(body.get("options"), dict):
        body["options"]["max_new_tokens"] = 4
        body["options"].pop("beam_width", None)
    for field in ("max_tokens", "max_completion_tokens"):
        if field in body:
            body[field] = 4
    if "n" in body:
        body["n"] = 1


def test_the_service_keeps_its_openapi_contract(server: Server) -> None:
    reader, writer = scoped_keys(server.base_url, bearer(server.token))
    schema = schemathesis.openapi.from_url(f"{server.base_url}/schema/openapi.json")
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        headers = headers_for(operation, reader, writer)

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  phases=[Phase.explicit, Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case: schemathesis.Case) -> None:
            _tiny_budgets(case.body)
            # run() is called in this iteration, so it sees this operation's headers.
            case.call_and_validate(base_url=server.base_url, headers=headers,  # noqa: B023
                                   checks=CHECKS, timeout=120)

        try:
            run()
        except (AssertionError, FailureGroup) as failure:  # collected: one report for all
            failures.append(f"{operation.method.upper()} {operation.path}: {str(failure)[:600]}")
    assert operations >= 35
    assert failures == [], "\n".join(failures[:40])
