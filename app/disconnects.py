"""Knowing that the client went away, so a request it abandoned is not called a server error.

A client that closes its connection before its request is read (or one whose body was late:
``app.http_protocol`` closes it) makes the framework's body reader raise, which used to be
logged at ERROR as ``HTTP 500 client disconnected prematurely`` and counted as a 5xx.
:func:`watch_disconnect` wraps an ASGI ``receive`` so the scope records the
``http.disconnect``; :func:`client_disconnected` reads it back in the exception handler,
which then answers 499 (nginx's "client closed request"), logs it at INFO and the metrics
count a 499, not a 5xx.
"""

from __future__ import annotations

from typing import Any, Final, cast

from litestar.types import Receive, ReceiveMessage, Scope

__all__ = ["CLIENT_CLOSED_REQUEST", "client_disconnected", "watch_disconnect"]

CLIENT_CLOSED_REQUEST: Final = 499
_KEY: Final = "tenet.client_disconnected"


def watch_disconnect(scope: Scope, receive: Receive) -> Receive:
    """``receive``, marking ``scope`` once the client's ``http.disconnect`` arrives."""
    state = cast(dict[str, Any], scope)

    async def watched() -> ReceiveMessage:
        message = await receive()
        if message["type"] == "http.disconnect":
            state[_KEY] = True
        return message

    return cast(Receive, watched)


def client_disconnected(scope: Scope) -> bool:
    """True when the client of this request has disconnected (see :func:`watch_disconnect`)."""
    return bool(cast(dict[str, Any], scope).get(_KEY))
