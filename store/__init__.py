"""Persistence: SQLAlchemy models, the async engine, and one repository module per feature."""

from __future__ import annotations

__all__: list[str] = []
