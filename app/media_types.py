"""The ``Content-Type`` a response is given, as Litestar will send it.

Litestar appends ``; charset=utf-8`` to every ``text/*`` media type a
response names; a constant that already carries its charset (the PROV and
graph formats name theirs, since the bytes are UTF-8) would go out as
``text/turtle; charset=utf-8; charset=utf-8``. Responses pass their media
type through :func:`response_media_type` so the header names it once.
"""

from __future__ import annotations

__all__ = ["response_media_type"]


def response_media_type(media_type: str) -> str:
    """``media_type`` without a charset parameter when Litestar adds one itself (``text/*``)."""
    if not media_type.startswith("text/"):
        return media_type
    kept = [part for part in media_type.split(";")
            if not part.strip().lower().startswith("charset=")]
    return ";".join(kept).strip()
