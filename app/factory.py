"""``create_app``: the one place the Litestar application is assembled."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.datastructures import State
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from app.auth import ApiKeyMiddleware, revocation_listener
from app.controllers import CONTROLLERS
from app.deps import DEPENDENCIES
from app.errors import handle_exception
from app.logs import RequestContextMiddleware, before_send, configure_logging
from app.openapi_doc import install_openapi_completion
from app.request_checks import RequestChecksMiddleware
from app.runtime import Runtime
from app.services.container import Services
from app.settings import Settings
from app.tracing import Tracing, TracingMiddleware

__all__ = ["OPENAPI_PATH", "create_app"]

OPENAPI_PATH = "/schema"
log = logging.getLogger("tenet.app")
#: Longest start-up waits for the key revocation listener to connect (PostgreSQL only).
_LISTEN_WAIT_S = 3.0


def create_app(
    settings: Settings | None = None, runtime: Runtime | None = None, tracing: Tracing | None = None
) -> Litestar:
    """Build the app for ``settings`` (default: ``Settings.from_env()``).

    The database must already be migrated (``tenet db upgrade``; ``tenet
    serve`` does it). On start-up the model begins loading in a background
    thread unless ``settings.load_model`` is false; on shutdown the database
    pool is released. On PostgreSQL the app listens for key revocations made
    through other replicas while it runs (``app.auth.revocation_listener``). Pass ``runtime`` to share one (and its loaded model)
    between apps, as the test suite does; ``tracing`` to export spans somewhere
    other than ``TENET_OTLP_ENDPOINT`` (tests: an in-memory exporter).
    """
    settings = settings or Settings.from_env()
    configure_logging(settings)
    runtime = runtime or Runtime(settings)
    tracing = tracing or Tracing(settings)

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        if settings.load_model:
            runtime.start_model_loading()
        runtime.start_workers()
        runtime.scheduler.open()
        revocations = runtime.revocations = revocation_listener(settings.database_url)
        if revocations is not None:
            revocations.start()
            # Until it listens, cached keys are bypassed (correct, only slower): wait briefly.
            await revocations.wait_listening(_LISTEN_WAIT_S)
        try:
            yield
        finally:
            if revocations is not None:
                await revocations.stop()
                runtime.revocations = None
            # Graceful shutdown: new decodes get 503, accepted ones finish within the grace period.
            if not await runtime.scheduler.drain(settings.shutdown_grace_s):
                log.warning("shutdown grace of %.0f s ran out with decodes pending", settings.shutdown_grace_s)
            await runtime.close()
            tracing.shutdown()

    app = Litestar(
        route_handlers=CONTROLLERS,
        dependencies=DEPENDENCIES,
        middleware=[
            DefineMiddleware(TracingMiddleware, tracing=tracing),
            RequestContextMiddleware,
            DefineMiddleware(
                ApiKeyMiddleware, exclude=[f"^{OPENAPI_PATH}"], exclude_from_auth_key="public"
            ),
            RequestChecksMiddleware,
        ],
        exception_handlers={Exception: handle_exception},
        before_send=[before_send],
        request_max_body_size=settings.max_body_bytes,
        lifespan=[lifespan],
        state=State({"runtime": runtime, "tracing": tracing, "services": Services(runtime)}),
        openapi_config=OpenAPIConfig(
            title="Tenet",
            version="0.1.0",
            description="Constraint-graph reasoning middleware.",
            path=OPENAPI_PATH,
            components=Components(
                security_schemes={
                    "apiKey": SecurityScheme(
                        type="http", scheme="bearer", description="tnt_<prefix>_<secret>"
                    )
                }
            ),
            security=[{"apiKey": []}],
        ),
        logging_config=None,
        debug=False,
    )
    install_openapi_completion(app)
    return app
