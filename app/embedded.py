"""The app started inside the caller's event loop, for in-process clients.

``Litestar.lifespan()`` enters a task group that must be left by the task that
entered it, while a pytest-asyncio fixture or a benchmark's context manager may
set up and tear down in different tasks. :func:`running` holds the lifespan in
a task of its own, so start-up, requests (``httpx.ASGITransport``) and shutdown
all run in one loop, which asyncpg's loop-bound connections need.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar

__all__ = ["running"]


@asynccontextmanager
async def running(app: Litestar) -> AsyncIterator[None]:
    """``app`` started for the duration of the block and shut down after it.

    A start-up failure is raised here, before the block runs; shutdown waits for
    the lifespan to finish.
    """
    started, stop = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with app.lifespan():
            started.set()
            await stop.wait()

    task = asyncio.create_task(hold())
    waiter = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()
    try:
        yield
    finally:
        stop.set()
        await task
