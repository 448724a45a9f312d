"""Dependency providers injected by name into every handler.

``settings``, ``runtime``, ``db_session`` (one transaction per request:
committed when the handler succeeds, rolled back when anything raises),
``auth`` (the caller's :class:`app.auth.AuthContext`), ``hints`` (the
request's :class:`~inference.scheduler.JobHints`, see :mod:`app.hints`) and
the services of the app's :class:`~app.services.container.Services`:
``services``, ``runs``, ``diagnostics``, and per request ``sessions`` and
``confirmations`` (on the caller's identity and hints).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import Provide
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, Unauthorized
from app.diagnostics import Diagnostics
from app.hints import hints_of
from app.runtime import Runtime
from app.services.confirmations import ConfirmationService
from app.services.container import Services
from app.services.runs import RunService
from app.services.sessions import SessionService
from app.settings import Settings
from inference.scheduler import JobHints

__all__ = [
    "DEPENDENCIES",
    "provide_auth",
    "provide_confirmations",
    "provide_db_session",
    "provide_diagnostics",
    "provide_hints",
    "provide_runs",
    "provide_runtime",
    "provide_services",
    "provide_sessions",
    "provide_settings",
]


def provide_runtime(state: State) -> Runtime:
    runtime: Runtime = state.runtime
    return runtime


def provide_settings(state: State) -> Settings:
    runtime: Runtime = state.runtime
    return runtime.settings


async def provide_db_session(state: State) -> AsyncGenerator[AsyncSession, None]:
    """Yield a session in a transaction; commit on success, roll back on any error."""
    runtime: Runtime = state.runtime
    async with runtime.sessionmaker() as session:
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        else:
            await session.commit()


def provide_auth(request: Request[Any, Any, Any]) -> AuthContext:
    """The authenticated caller; public routes that ask for it get 401."""
    user = request.scope.get("user")
    if not isinstance(user, AuthContext):
        raise Unauthorized("this route needs an API key")
    return user


def provide_hints(request: Request[Any, Any, Any]) -> JobHints:
    """The request's scheduling hints, as the authentication middleware read them."""
    return hints_of(request)


def provide_services(state: State) -> Services:
    services: Services = state.services
    return services


def provide_runs(services: Services) -> RunService:
    return services.runs


def provide_diagnostics(services: Services) -> Diagnostics:
    return services.diagnostics


def provide_sessions(services: Services, auth: AuthContext, hints: JobHints) -> SessionService:
    return services.sessions(auth, hints)


def provide_confirmations(services: Services, auth: AuthContext, hints: JobHints) -> ConfirmationService:
    return services.confirmations(auth, hints)


DEPENDENCIES: dict[str, Provide] = {
    "runtime": Provide(provide_runtime, sync_to_thread=False),
    "settings": Provide(provide_settings, sync_to_thread=False),
    "db_session": Provide(provide_db_session),
    "auth": Provide(provide_auth, sync_to_thread=False),
    "hints": Provide(provide_hints, sync_to_thread=False),
    "services": Provide(provide_services, sync_to_thread=False),
    "runs": Provide(provide_runs, sync_to_thread=False),
    "diagnostics": Provide(provide_diagnostics, sync_to_thread=False),
    "sessions": Provide(provide_sessions, sync_to_thread=False),
    "confirmations": Provide(provide_confirmations, sync_to_thread=False),
}
