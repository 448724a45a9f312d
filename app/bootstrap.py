"""First start: a default tenant, an admin key and the sample domains, so a new user can call the API at once.

The admin token is returned once (the CLI prints it) and written to
``<data_dir>/admin-key.txt`` with mode 0600; the database holds only its hash.
Nothing happens when any key already exists. Replicas starting at once on one
PostgreSQL database bootstrap one after the other (``store.locks``), so the
first creates the key and the domains and the others find them.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.services.ontologies import load_bundled_ontologies
from store.db import transaction
from store.keys import DEFAULT_TENANT, count_keys, create_key, get_or_create_tenant
from store.locks import hold

__all__ = ["bootstrap_admin_key", "bootstrap_domains", "write_secret_file"]

_BOOTSTRAP_LOCK = "bootstrap"


def write_secret_file(path: Path, content: str) -> None:
    """Write ``content`` to ``path`` readable by the owner only (0600 from creation)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


async def bootstrap_admin_key(
    sessionmaker: async_sessionmaker[AsyncSession], key_file: Path | None
) -> str | None:
    """Create the default tenant's admin key when the database has no key; return its token."""
    async with transaction(sessionmaker) as session:
        await hold(session, _BOOTSTRAP_LOCK)
        if await count_keys(session) > 0:
            return None
        tenant = await get_or_create_tenant(session, DEFAULT_TENANT)
        created = await create_key(session, tenant.id, "bootstrap admin", ["admin"])
    if key_file is not None:
        write_secret_file(key_file, created.token + "\n")
    return created.token


async def bootstrap_domains(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    """Load the bundled AML and clinical domains for the default tenant (idempotent:
    a domain the tenant already has in service, bundled or uploaded, is left alone)."""
    async with transaction(sessionmaker) as session:
        await hold(session, _BOOTSTRAP_LOCK)
        tenant = await get_or_create_tenant(session, DEFAULT_TENANT)
        await load_bundled_ontologies(session, tenant.id)
