"""Parse uploaded RDF without letting the file reach outside the parser.

Accepted: Turtle, RDF/XML, JSON-LD and N-Triples. OWL/XML
(``application/owl+xml``, ``.owx``) is refused with :class:`UnsupportedFormat`
(HTTP 415) naming the accepted formats: it is not an RDF syntax, rdflib has
no parser for it, and no OWL/XML reader we would trust with hostile input
(entity expansion, imports) is among our dependencies. An OWL/XML document
sent as RDF/XML (an ``.owl`` file is usually RDF/XML) is recognised by its
root element and refused the same way, instead of being read as RDF/XML
into meaningless triples. Convert such files with the OWL API or ROBOT
(``robot convert --input onto.owx --output onto.ttl``). What is guaranteed:

- **No DTDs or entities.** RDF/XML is first read by ``defusedxml`` with DTDs,
  entity declarations and external references forbidden; a file with any of
  them is refused (:class:`~reasoning.errors.UnsafeContent`) before rdflib
  sees a byte. Without a DTD no entity can be declared, so "billion laughs"
  and external-entity files cannot expand.
- **No remote JSON-LD contexts.** Every ``@context`` in the document (at
  any depth, including scoped contexts in term definitions) must be inline;
  a string context or ``@import`` is refused with the IRI named. The
  document is then handed to rdflib's JSON-LD algorithm as an already-parsed
  object, so rdflib never resolves a context location itself.
- **``owl:imports`` are reported, never followed**: they come back in
  :attr:`ParsedGraph.imports`; nothing here dereferences an IRI.
- **A network backstop.** While a parse runs, a process-wide audit hook
  refuses ``socket.connect``, ``socket.getaddrinfo`` and ``urllib.Request``
  from the parsing thread, so a parser path we did not foresee still cannot
  reach the network; the file is then refused as unsafe.
- **Caps.** Bytes are checked before parsing; triples are counted as the
  parser emits them and parsing stops at the cap.
- **A time limit**, enforced cooperatively: every parser hands each triple to
  our sink, which checks the deadline every 256 triples and aborts the parse
  by raising. Work between two triples is bounded by the byte cap (a single
  token cannot be longer than the file), so the overrun past the deadline is
  at most the time to scan one cap-sized token. Parsing is pure Python and
  cannot be interrupted from outside without a process per upload; this
  check gives the same bound at no cost.

The result is a list of triples in N-Triples term syntax
(:mod:`reasoning.evidence.terms`), deduplicated, in document order.
"""

from __future__ import annotations

import gc
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import defusedxml.ElementTree as safe_etree
import msgspec
from defusedxml import DefusedXmlException
from rdflib import Graph, URIRef
from rdflib.exceptions import ParserError as NTriplesParseError
from rdflib.plugins.parsers.jsonld import to_rdf as _jsonld_to_rdf
from rdflib.plugins.parsers.notation3 import BadSyntax

from reasoning.errors import InvalidInput, LimitExceeded, TenetError, UnsafeContent
from reasoning.evidence.terms import (
    OWL_IMPORTS,
    Triple,
    encode_literal,
    from_rdflib,
    iri_value,
    literal_parts,
)

__all__ = [
    "MEDIA_TYPES",
    "OWL_XML",
    "ParseLimits",
    "ParsedGraph",
    "UnsupportedFormat",
    "media_type_for",
    "parse_rdf",
]

TURTLE: Final = "text/turtle"
RDF_XML: Final = "application/rdf+xml"
JSON_LD: Final = "application/ld+json"
N_TRIPLES: Final = "application/n-triples"
OWL_XML: Final = "application/owl+xml"

MEDIA_TYPES: Final[tuple[str, ...]] = (TURTLE, RDF_XML, JSON_LD, N_TRIPLES)
"""The canonical media types accepted for upload."""

_ALIASES: Final = {
    "text/turtle": TURTLE,
    "application/x-turtle": TURTLE,
    "application/turtle": TURTLE,
    "application/rdf+xml": RDF_XML,
    "application/owl+rdf": RDF_XML,
    "application/ld+json": JSON_LD,
    "application/n-triples": N_TRIPLES,
    "text/n-triples": N_TRIPLES,
}
_EXTENSIONS: Final = {
    "ttl": TURTLE,
    "turtle": TURTLE,
    "rdf": RDF_XML,
    "owl": RDF_XML,
    "xml": RDF_XML,
    "jsonld": JSON_LD,
    "json": JSON_LD,
    "nt": N_TRIPLES,
}
_RDFLIB_FORMAT: Final = {TURTLE: "turtle", RDF_XML: "xml", N_TRIPLES: "nt"}
_FORMAT_NAMES: Final = {TURTLE: "Turtle", RDF_XML: "RDF/XML", JSON_LD: "JSON-LD",
                        N_TRIPLES: "N-Triples"}
_GENERIC_TYPES: Final = {"", "application/octet-stream", "text/plain", "multipart/form-data"}
_OWL_XML_TYPES: Final = {OWL_XML, "application/owl-xml"}
_OWL_XML_ROOT: Final = "{http://www.w3.org/2002/07/owl#}Ontology"
_DEADLINE_EVERY: Final = 256
#: A parse of a file larger than this is followed by a full garbage collection (see parse_rdf).
_COLLECT_AFTER_BYTES: Final = 1024 * 1024
_MAX_WARNINGS: Final = 50


class UnsupportedFormat(InvalidInput):
    """The file is in a format we do not parse; ``accepted`` lists those we do."""

    def __init__(self, detail: str, **extra: object) -> None:
        accepted = ", ".join(MEDIA_TYPES)
        super().__init__(f"{detail}; accepted: {accepted}", accepted=list(MEDIA_TYPES), **extra)


def _owl_xml_refusal(what: str) -> UnsupportedFormat:
    return UnsupportedFormat(
        f"{what} is OWL/XML, which is not supported: it is not an RDF syntax and the RDF "
        "parser has no reader for it; convert it to Turtle or RDF/XML (e.g. "
        "`robot convert --input onto.owx --output onto.ttl`)",
        field="content_type",
    )


class ParseLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Caps applied to one upload; every field must be positive."""

    max_bytes: int = 64 * 1024 * 1024
    max_triples: int = 2_000_000
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_triples", "timeout_s"):
            if getattr(self, name) <= 0:
                raise InvalidInput(f"ParseLimits.{name} must be positive", field=name)


class ParsedGraph(msgspec.Struct, frozen=True, kw_only=True):
    """The asserted triples of one file and what parsing noticed."""

    media_type: str
    triples: tuple[Triple, ...]
    imports: tuple[str, ...]
    warnings: tuple[str, ...]
    seconds: float


def media_type_for(content_type: str | None, filename: str | None = None) -> str:
    """The canonical media type of an upload, from its header or file name.

    A specific ``Content-Type`` wins; a generic one (``application/octet-stream``,
    ``text/plain``, absent) falls back to the file name's extension. OWL/XML
    and unknown types raise :class:`UnsupportedFormat`.

    >>> media_type_for("text/turtle; charset=utf-8")
    'text/turtle'
    >>> media_type_for("application/octet-stream", "aml.nt")
    'application/n-triples'
    """
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base in _ALIASES:
        return _ALIASES[base]
    if base == "application/json":
        return JSON_LD
    if base in _OWL_XML_TYPES:
        raise _owl_xml_refusal(f"media type {base!r}")
    if base in _GENERIC_TYPES and filename and "." in filename:
        extension = filename.rsplit(".", 1)[1].lower()
        if extension in _EXTENSIONS:
            return _EXTENSIONS[extension]
        if extension == "owx":
            raise _owl_xml_refusal(f"file {filename!r}")
    shown = base or "none"
    raise UnsupportedFormat(
        f"unsupported ontology media type {shown!r}"
        + (f" (file {filename!r})" if filename else ""),
        field="content_type",
    )


def parse_rdf(
    data: bytes,
    media_type: str,
    *,
    limits: ParseLimits | None = None,
    base: str = "urn:tenet:upload:",
) -> ParsedGraph:
    """Parse ``data`` safely into deduplicated N-Triples term tuples.

    Raises :class:`LimitExceeded` over a cap or the time limit,
    :class:`UnsafeContent` for DTDs, entities, remote contexts or a network
    attempt, :class:`UnsupportedFormat` for OWL/XML (also when it is sent as
    RDF/XML), and :class:`InvalidInput` for malformed files (with the line
    where the parser reports one).
    """
    limits = limits or ParseLimits()
    media_type = media_type_for(media_type)
    name = _FORMAT_NAMES[media_type]
    if len(data) > limits.max_bytes:
        raise LimitExceeded(
            f"the file is {len(data)} bytes; the limit is {limits.max_bytes} bytes",
            limit="max_bytes",
        )
    if not data.strip():
        raise InvalidInput(f"the {name} file is empty")
    # rdflib's graphs and parsers (the sink and its namespace manager among them) form
    # reference cycles that keep the collected triples and the decoded text alive until the
    # next full collection: a refused 3-million-triple file kept ~700 MB that long. So after
    # a large file the parse's frames are let go (a refusal is raised without them) and
    # collected at once.
    try:
        parsed = _parse(data, media_type, name, base, limits)
    except TenetError as exc:
        refusal: TenetError | None = exc
        parsed = None
        _forget_frames(exc)
    else:
        refusal = None
    if len(data) > _COLLECT_AFTER_BYTES:
        gc.collect()
    if refusal is not None:
        raise refusal
    assert parsed is not None
    return parsed


def _forget_frames(exc: BaseException) -> None:
    """Drop the tracebacks of ``exc`` and the exceptions chained to it (and so the frames,
    with the parser state, they hold)."""
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        seen.__traceback__ = None
        seen = seen.__cause__ or seen.__context__


def _parse(data: bytes, media_type: str, name: str, base: str, limits: ParseLimits) -> ParsedGraph:
    started = time.perf_counter()
    sink = _GuardedSink(limits, started + limits.timeout_s)
    try:
        return _parse_with(sink, data, media_type, name, base, started)
    finally:
        sink.reset()  # the collected triples go with this call, whatever holds the sink


def _parse_with(
    sink: _GuardedSink, data: bytes, media_type: str, name: str, base: str, started: float
) -> ParsedGraph:
    with _rdflib_warnings() as warnings, _network_forbidden():
        try:
            if media_type == RDF_XML:
                _refuse_unsafe_xml(data)
                sink.parse(data=data, format="xml", publicID=base)
            elif media_type == JSON_LD:
                document = _load_json(data)
                _refuse_remote_contexts(document, path="$")
                _jsonld_to_rdf(document, sink, base=base)
            elif media_type == N_TRIPLES:
                text = _decode_utf8(data, name)
                if not _fast_ntriples(text, sink):
                    sink.reset()
                    sink.parse(data=text, format="nt", publicID=base)
            else:
                text = _decode_utf8(data, name)
                sink.parse(data=text, format=_RDFLIB_FORMAT[media_type], publicID=base)
        except (_CapReached, _DeadlineReached, _NetworkAttempt) as exc:
            raise exc.as_error(name) from None
        except (LimitExceeded, UnsafeContent, InvalidInput):
            raise
        except BadSyntax as exc:
            raise InvalidInput(f"{name} syntax error at line {exc.lines + 1}: {exc._why}",
                               line=exc.lines + 1) from None
        except NTriplesParseError as exc:
            raise InvalidInput(f"{name} syntax error: {_clip(str(exc))}") from None
        except Exception as exc:  # noqa: BLE001 - rdflib raises many unrelated types for bad input
            raise InvalidInput(f"{name} could not be parsed: {_clip(_describe(exc))}") from None
    triples = tuple(sink.triples)
    imports = tuple(iri_value(o) for s, p, o in triples if p == OWL_IMPORTS)
    all_warnings = tuple(sink.warnings) + tuple(warnings)
    if len(all_warnings) > _MAX_WARNINGS:
        extra = len(all_warnings) - _MAX_WARNINGS
        all_warnings = all_warnings[:_MAX_WARNINGS] + (f"... and {extra} more warnings",)
    return ParsedGraph(
        media_type=media_type,
        triples=triples,
        imports=imports,
        warnings=all_warnings,
        seconds=time.perf_counter() - started,
    )


# --- the sink every parser writes into ------------------------------------------------


class _CapReached(Exception):
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def as_error(self, name: str) -> LimitExceeded:
        return LimitExceeded(f"the {name} file holds more than {self.limit} triples",
                             limit="max_triples")


class _DeadlineReached(Exception):
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s

    def as_error(self, name: str) -> LimitExceeded:
        return LimitExceeded(f"parsing the {name} file took longer than {self.timeout_s:g} s",
                             limit="timeout_s")


class _NetworkAttempt(Exception):
    def __init__(self, event: str, target: str) -> None:
        self.event = event
        self.target = target

    def as_error(self, name: str) -> UnsafeContent:
        return UnsafeContent(
            f"parsing the {name} file tried to reach the network ({self.event} {self.target}); "
            "refused", event=self.event)


class _GuardedSink(Graph):
    """An rdflib graph that stores nothing: it encodes, counts and times triples.

    Every rdflib parser writes through ``Graph.add``, so this is the one place
    where the triple cap and the deadline are enforced.
    """

    def __init__(self, limits: ParseLimits, deadline: float) -> None:
        super().__init__()
        self._limits = limits
        self._deadline = deadline
        self._raw = 0
        self._seen: dict[Triple, None] = {}
        self.warnings: list[str] = []

    @property
    def triples(self) -> list[Triple]:  # type: ignore[override]
        return list(self._seen)

    def reset(self) -> None:
        """Forget what was collected (before a second parser reads the same text)."""
        self._raw = 0
        self._seen.clear()
        self.warnings.clear()

    def add_encoded(self, triple: Triple) -> None:
        """Add a triple already in term-string form (the N-Triples fast path)."""
        self._raw += 1
        if self._raw % _DEADLINE_EVERY == 0 and time.perf_counter() > self._deadline:
            raise _DeadlineReached(self._limits.timeout_s)
        self._seen[triple] = None
        if len(self._seen) > self._limits.max_triples:
            raise _CapReached(self._limits.max_triples)

    def add(self, triple: Any) -> _GuardedSink:
        self._raw += 1
        if self._raw % _DEADLINE_EVERY == 0 and time.perf_counter() > self._deadline:
            raise _DeadlineReached(self._limits.timeout_s)
        s, p, o = triple
        encoded = (self._term(s), self._term(p), self._term(o))
        if None in encoded:
            return self
        self._seen[encoded] = None  # type: ignore[index]
        if len(self._seen) > self._limits.max_triples:
            raise _CapReached(self._limits.max_triples)
        return self

    def _term(self, term: Any) -> str | None:
        encoded = from_rdflib(term)
        if encoded is None:
            shown = str(term)[:120] if isinstance(term, URIRef) else type(term).__name__
            self._warn(f"skipped a triple with a term N-Triples cannot hold: {shown!r}")
        return encoded

    def _warn(self, message: str) -> None:
        if len(self.warnings) <= _MAX_WARNINGS:
            self.warnings.append(message)


# --- N-Triples fast path ---------------------------------------------------------------

_IRI_RE = r'<[^<>"{}|^`\\\x00-\x20]*>'
_BNODE_RE = r"_:[A-Za-z0-9_][-A-Za-z0-9_.]*"
_LITERAL_RE = r'"(?:[^"\\\n\r]|\\.)*"(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^' + _IRI_RE + ")?"
_NT_LINE = re.compile(
    rf"[ \t]*({_IRI_RE}|{_BNODE_RE})[ \t]*({_IRI_RE})[ \t]*({_IRI_RE}|{_BNODE_RE}|{_LITERAL_RE})"
    r"[ \t]*\.[ \t]*(?:#.*)?"
)
_NT_SKIP = re.compile(r"[ \t]*(?:#.*)?")
_XSD_STRING_SUFFIX = "^^<http://www.w3.org/2001/XMLSchema#string>"


def _fast_ntriples(text: str, sink: _GuardedSink) -> bool:
    """Parse plain N-Triples without rdflib; False when a line needs the full parser.

    Lines are matched against the N-Triples grammar (IRIs without escapes,
    blank node labels, literals with a language or datatype); literals are
    brought to the canonical form of :func:`encode_literal` so both paths
    give identical terms (lexical forms are kept as written, where rdflib
    would normalise e.g. ``"01"^^xsd:integer``). Any line outside that subset (IRI escapes, an
    error) makes the caller re-parse with rdflib, which reports errors.
    """
    match_line = _NT_LINE.fullmatch
    skip = _NT_SKIP.fullmatch
    add = sink.add_encoded
    for line in text.splitlines():
        found = match_line(line)
        if found is None:
            if skip(line):
                continue
            return False
        s, p, o = found.groups()
        if o[0] == '"':
            o = _canonical_literal(o)
        add((s, p, o))
    return True


def _canonical_literal(term: str) -> str:
    term = term.removesuffix(_XSD_STRING_SUFFIX)
    close = term.rindex('"')
    body, tail = term[1:close], term[close + 1:]
    if tail.startswith("@"):
        tail = tail.lower()
    if "\\" in body or "\t" in body:
        lexical, _, _ = literal_parts('"' + body + '"')
        return encode_literal(lexical) + tail
    return f'"{body}"{tail}'


# --- format-specific checks before rdflib --------------------------------------------


def _refuse_unsafe_xml(data: bytes) -> None:
    """Refuse DTDs, entity declarations, external references and OWL/XML; report bad XML.

    The DTD check comes first, so a hostile OWL/XML file is refused as unsafe
    before its format is looked at.
    """
    try:
        root = safe_etree.fromstring(data, forbid_dtd=True, forbid_entities=True,
                                     forbid_external=True)
    except DefusedXmlException as exc:
        raise UnsafeContent(
            f"RDF/XML with a DTD, entity declaration or external reference is refused ({exc})"
        ) from None
    except safe_etree.ParseError as exc:
        line, column = getattr(exc, "position", (0, 0))
        raise InvalidInput(f"RDF/XML is not well-formed XML at line {line}, column {column}: "
                           f"{_clip(str(exc))}", line=line) from None
    if root.tag == _OWL_XML_ROOT:
        raise _owl_xml_refusal("the file (root element owl:Ontology)")


def _load_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"JSON-LD is not valid JSON at line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg}", line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InvalidInput("JSON-LD must be UTF-8 encoded") from None
    except RecursionError:
        raise UnsafeContent("JSON-LD nesting is too deep to process safely") from None


def _refuse_remote_contexts(node: Any, *, path: str) -> None:
    """Walk the document and refuse any ``@context`` that names a remote document."""
    stack: list[tuple[Any, str]] = [(node, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, dict):
            for key, value in current.items():
                if key == "@context":
                    _check_context(value, f"{where}.@context")
                stack.append((value, f"{where}.{key}"))
        elif isinstance(current, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(current))


def _check_context(value: Any, where: str) -> None:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, str):
            raise UnsafeContent(
                f"JSON-LD remote @context {item!r} at {where} is not fetched; "
                "inline the context in the document", context=item)
        if isinstance(item, dict) and "@import" in item:
            raise UnsafeContent(
                f"JSON-LD @import {item['@import']!r} at {where} is not fetched; "
                "inline the context in the document", context=str(item["@import"]))


def _decode_utf8(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(f"the {name} file is not UTF-8 (invalid byte at line {line})",
                           line=line) from None


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


# --- network backstop and warning capture -----------------------------------------------

_guard = threading.local()
_hook_installed = False
_hook_lock = threading.Lock()
_NETWORK_EVENTS: Final = frozenset({"socket.connect", "socket.getaddrinfo", "urllib.Request"})


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in _NETWORK_EVENTS and getattr(_guard, "active", False):
        raise _NetworkAttempt(event, _clip(repr(args[:2]), 120))


@contextmanager
def _network_forbidden() -> Iterator[None]:
    """Forbid network access from this thread for the duration of the block."""
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            sys.addaudithook(_audit)
            _hook_installed = True
    previous = getattr(_guard, "active", False)
    _guard.active = True
    try:
        yield
    finally:
        _guard.active = previous


class _ThreadWarnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread and len(self.messages) <= _MAX_WARNINGS:
            self.messages.append(_clip(record.getMessage()))


@contextmanager
def _rdflib_warnings() -> Iterator[list[str]]:
    """Collect what rdflib logs at WARNING or above in this thread during the block."""
    logger = logging.getLogger("rdflib")
    handler = _ThreadWarnings()
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
