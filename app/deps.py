"""Dependency providers injected by name into every handler.

``settings``, ``runtime``, ``db_session`` (one transaction per request:
committed when the handler succeeds, rolled back when anything raises) and
``auth`` (the caller's :class:`app.auth.AuthContext`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import Provide
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, Unauthorized
from app.runtime import Runtime
from app.settings import Settings

__all__ = [
    "DEPENDENCIES",
    "provide_auth",
    "provide_db_session",
    "provide_runtime",
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


DEPENDENCIES: dict[str, Provide] = {
    "runtime": Provide(provide_runtime, sync_to_thread=False),
    "settings": Provide(provide_settings, sync_to_thread=False),
    "db_session": Provide(provide_db_session),
    "auth": Provide(provide_auth, sync_to_thread=False),
}
