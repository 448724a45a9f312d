"""Tenet's HTTP layer: the Litestar app, its settings, auth, errors and CLI."""

from __future__ import annotations

__all__: list[str] = []
