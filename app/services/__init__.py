"""Services behind the HTTP handlers: one per feature, injected as Litestar dependencies."""

from __future__ import annotations

__all__: list[str] = []
