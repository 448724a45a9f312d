"""The web console: one static page and its assets under ``/console``.

Public on purpose: the page holds no data. The person pastes an API key, the
browser keeps it in ``sessionStorage`` and calls the same ``/v1`` API as any
client, so every guard and tenant filter of the API applies unchanged.
Only the files listed in :data:`ASSETS` are served (no path from the URL
reaches the file system), each with a content security policy that allows
scripts, styles and connections from this origin only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from litestar import Controller, MediaType, Response, get

from app.auth import PUBLIC
from reasoning.errors import NotFound

__all__ = ["ASSETS", "ConsoleController"]

CONSOLE_DIR: Final = Path(__file__).resolve().parent.parent / "console"

#: URL name -> (file under app/console, media type). Nothing else is served. Litestar adds
#: ``; charset=utf-8`` to these ``text/*`` types itself.
ASSETS: Final[dict[str, tuple[str, str]]] = {
    "console.js": ("console.js", "text/javascript"),
    "api.js": ("api.js", "text/javascript"),
    "graphs.js": ("graphs.js", "text/javascript"),
    "console.css": ("console.css", "text/css"),
    "cytoscape.min.js": ("vendor/cytoscape.min.js", "text/javascript"),
}

_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _read(relative: str) -> bytes:
    return (CONSOLE_DIR / relative).read_bytes()


class ConsoleController(Controller):
    path = "/console"
    tags = ("console",)
    opt = PUBLIC
    include_in_schema = False

    @get(operation_id="get_console", summary="The web console page")
    async def get_console(self) -> Response[bytes]:
        return Response(_read("index.html"), media_type=MediaType.HTML, headers=_HEADERS)

    @get("/{name:str}", operation_id="get_console_asset", summary="A console asset")
    async def get_console_asset(self, name: str) -> Response[bytes]:
        asset = ASSETS.get(name)
        if asset is None:
            raise NotFound(f"no console asset {name!r}")
        relative, media_type = asset
        return Response(_read(relative), media_type=media_type, headers=_HEADERS)
