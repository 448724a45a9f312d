"""Checks every request passes before a handler, a decoder or the database sees it.

Guarantees, for every matched route:

- **No control characters in the path or query.** A decoded path or query
  string holding a C0 control character (``U+0000``-``U+001F``) or ``DEL``
  answers 400. Path and query values are identifiers, names, formats and
  times; none of them may carry one, and PostgreSQL refuses a NUL in text
  outright (which used to surface as a 500).
- **JSON bodies are JSON.** A route that decodes a JSON body (its handler
  takes ``data``) answers 415 to a body sent with any other ``Content-Type``
  than ``application/json`` or ``application/*+json`` (a request without the
  header is read as JSON).
- **Bounded nesting, no NUL.** Such a body nested deeper than
  :data:`MAX_JSON_DEPTH` arrays and objects, or holding the escape ``\\u0000``
  in a string, answers 400 before it is decoded: the JSON decoder recurses per
  level (a thousand levels raised ``RecursionError``, a 500), and no store
  keeps a NUL.
- **Wrong JSON types are 400.** Litestar converts a handler's arguments in
  its lax mode (``strict=False``, which query strings need), so a body field
  declared ``int`` would accept ``"8"``. The body is decoded here strictly
  (msgspec ``strict=True``) against the handler's ``data`` type first: a
  string where a number, boolean or object is declared answers 400 naming
  the field (``$.options.max_new_tokens``), as the documentation says.

The body is read here within the route's size limit (413 past it) and left in
the request's cache, where the handler's decoder reads it; the scan is linear
in the body's size and runs in C (regular expressions, ``bytes.translate``,
numpy), a few milliseconds for the largest accepted body.
"""

from __future__ import annotations

import re
from typing import Any, Final
from urllib.parse import unquote_to_bytes

import msgspec
import numpy as np
from litestar import Request
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException, ValidationException
from litestar.types import ASGIApp, Receive, Scope, Send

from app.disconnects import watch_disconnect
from reasoning.errors import InvalidInput

__all__ = [
    "MAX_JSON_DEPTH",
    "RequestChecksMiddleware",
    "check_json_body",
    "check_json_types",
    "check_path_and_query",
    "json_depth",
]

MAX_JSON_DEPTH: Final = 64
"""Deepest nesting of arrays and objects a JSON request body may have."""

_CONTROL: Final = re.compile(rb"[\x00-\x1f\x7f]")
# A JSON string, or an unterminated one up to the end (so no position is scanned twice).
_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.DOTALL)
_OPEN_CLOSE: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKET: Final = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in ``body``, brackets inside strings ignored.

    Defined for any bytes; for valid JSON it is the document's depth.

    >>> json_depth(b'{"a": [1, {"b": "[[["}]}')
    3
    """
    brackets = _STRING.sub(b"", body).translate(_OPEN_CLOSE, _NOT_BRACKET)
    if not brackets:
        return 0
    # steps: [N] of +1 (opening) and -1 (closing)
    steps = np.frombuffer(brackets, dtype=np.int8)
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def check_json_body(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`InvalidInput` when ``body`` nests deeper than ``max_depth`` or holds a NUL."""
    depth = json_depth(body)
    if depth > max_depth:
        raise InvalidInput(
            f"the JSON body nests {depth} levels of arrays and objects; at most {max_depth} "
            "are accepted",
            limit="max_json_depth",
        )
    # An even run of backslashes is escaped backslashes: drop them, and what is left of
    # "\u0000" is the NUL escape itself.
    if b"\\u0000" in body.replace(b"\\\\", b""):
        raise InvalidInput(
            "the JSON body holds a NUL character (\\u0000) in a string; "
            "NUL is not accepted anywhere"
        )


def check_path_and_query(path: str, query_string: bytes) -> None:
    """Raise :class:`InvalidInput` when the decoded path or query holds a control character."""
    if _CONTROL.search(path.encode("utf-8", "surrogatepass")):
        raise InvalidInput(
            "the path holds a control character (such as NUL); identifiers never do", part="path"
        )
    if query_string and _CONTROL.search(unquote_to_bytes(query_string.replace(b"+", b" "))):
        raise InvalidInput(
            "the query string holds a control character (such as NUL); query values never do",
            part="query",
        )


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    if not media:
        return True
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _takes_json(scope: Scope) -> bool:
    handler: Any = scope.get("route_handler")
    signature = getattr(handler, "parsed_fn_signature", None)
    return signature is not None and "data" in signature.parameters


_DECODERS: dict[Any, msgspec.json.Decoder[Any] | None] = {}


def _strict_decoder(annotation: Any) -> msgspec.json.Decoder[Any] | None:
    """A strict decoder for ``annotation`` (None for a type msgspec cannot decode by itself)."""
    try:
        return _DECODERS[annotation]
    except KeyError:
        pass
    except TypeError:  # an unhashable annotation: not cached
        return None
    try:
        decoder: msgspec.json.Decoder[Any] | None = msgspec.json.Decoder(annotation, strict=True)
    except (TypeError, ValueError):
        decoder = None  # a custom type Litestar decodes with its own hooks
    _DECODERS[annotation] = decoder
    return decoder


def check_json_types(body: bytes, annotation: Any) -> None:
    """400 when ``body`` holds a value of the wrong JSON type for ``annotation`` (strict decode).

    Malformed JSON and an empty body are left to the handler's decoder, which
    answers them as before.
    """
    if not body.strip():
        return
    decoder = _strict_decoder(annotation)
    if decoder is None:
        return
    try:
        decoder.decode(body)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `$")
        key = where.rstrip("`").lstrip(".")
        raise ValidationException(
            detail=f"the request body is invalid: {exc}",
            extra=[{"message": message, "key": key, "source": "body"}],
        ) from None
    except msgspec.DecodeError:
        return


class RequestChecksMiddleware:
    """Applies the module's checks; failures reach the app's problem handler as exceptions."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            receive = watch_disconnect(scope, receive)
            check_path_and_query(scope["path"], scope.get("query_string", b""))
            if _takes_json(scope):
                request: Request[Any, Any, Any] = Request(scope, receive)
                if not _is_json(request.headers.get("content-type", "")):
                    raise HTTPException(
                        status_code=415,
                        detail="this route takes a JSON body; send it with "
                        "'Content-Type: application/json'",
                    )
                body = await request.body()
                check_json_body(body)
                handler: Any = scope.get("route_handler")
                check_json_types(body, handler.parsed_fn_signature.parameters["data"].annotation)
        await self.app(scope, receive, send)
