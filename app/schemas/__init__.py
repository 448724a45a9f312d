"""Request and response schemas (msgspec Structs), one module per feature."""

from __future__ import annotations

__all__: list[str] = []
