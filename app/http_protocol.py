"""uvicorn's h11 protocol with a request-header deadline and a request-body deadline.

uvicorn bounds only the idle time *between* requests (``timeout_keep_alive``); a client that
opens a connection and sends nothing, or sends a request's headers a byte at a time, holds
its connection (a socket and a slot) for as long as it likes. Many such half-open connections
exhaust the server without sending a single complete request (slowloris).

:class:`HeaderDeadlineProtocol` guarantees: from the moment a connection opens, and again from
the moment a response completes, the next request's complete head (request line and headers)
must arrive within ``header_timeout_s`` seconds, or the connection is closed without an
answer. Once a head is in, the rest of that request's body must arrive within
``body_timeout_s`` seconds (``TENET_BODY_TIMEOUT_S``): a body dripped a byte at a time
would otherwise hold its connection open without limit. A connection still sending its body
at the deadline is closed; the app sees the client go away (``http.disconnect``) and the
request is logged at INFO and counted as a 499 (``app.errors``). Responses are not bounded
here (the decode deadlines bound those).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "HeaderDeadlineProtocol",
    "header_deadline_protocol",
]

DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 60.0


class HeaderDeadlineProtocol(H11Protocol):
    """An :class:`H11Protocol` that closes connections whose request head is late."""

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._body_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        self._disarm_body_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before or self.conn.their_state is not h11.IDLE:
            self._disarm_head_deadline()
        if self.conn.their_state is h11.SEND_BODY:
            if self._body_deadline is None:
                self._body_deadline = self.loop.call_later(self.body_timeout_s, self._body_late)
        else:
            self._disarm_body_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_head_deadline()

    def _arm_head_deadline(self) -> None:
        self._disarm_head_deadline()
        self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_late)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _disarm_body_deadline(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _body_late(self) -> None:
        self._body_deadline = None
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.transport.close()

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def header_deadline_protocol(
    header_timeout_s: float, body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
) -> type[HeaderDeadlineProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` with these header and body deadlines."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,),
                {"header_timeout_s": header_timeout_s, "body_timeout_s": body_timeout_s})
