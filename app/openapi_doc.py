"""Completes the generated OpenAPI document so that it describes what the service really sends.

Litestar documents each route's success response and a generic 400 of its
own shape; the service answers every failure as an RFC 9457
``application/problem+json`` body (``app.errors``). :func:`complete_openapi`
rewrites the document once, when it is first served:

- every documented failure status is a ``Problem`` (a shared component);
- each operation lists the statuses it can answer: 400 (every route: path and
  query checks, ``app.request_checks``), 401 and 403 (routes needing a key),
  404 (keyed routes: unknown or another tenant's resources, unknown domains),
  413 and 415 (routes taking a body), 409, 429 and 503 (routes that run the
  model), 422 (ontology uploads: unsafe content), 503 for readiness and the
  model listing;
- public routes (``opt={"public": True}``) carry ``security: []``;
- ``POST /v1/ontologies`` documents its body (RDF media types or a
  multipart form with the file and the domain);
- the streaming routes (``stream: true``) document ``text/event-stream``;
- the routes with a ``format`` parameter document each format's media type
  and body (``GET /v1/runs/{id}/provenance`` and ``GET /v1/audit/export``:
  PROV-JSON object, PROV-N, PROV-XML, PROV-O Turtle and JSON-LD;
  ``GET /v1/sessions/{id}/graph``: JSON, Turtle, JSON-LD) and the values
  ``format`` takes;
- ``POST /v1/ontologies`` documents its 200 (identical bytes: the existing
  version, a deleted one restored) beside the 201.

The contract test (``tests/e2e/test_contract.py``) holds the document to the
service's behaviour.
"""

from __future__ import annotations

from typing import Any, Final

from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.handlers import HTTPRouteHandler

from app.errors import PROBLEM_MEDIA_TYPE

__all__ = ["PROBLEM_SCHEMA", "complete_openapi", "install_openapi_completion"]

PROBLEM_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "description": "RFC 9457 problem details; problem-specific members may follow.",
    "required": ["type", "title", "status", "detail", "instance", "request_id"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
        "request_id": {"type": "string"},
    },
    "additionalProperties": True,
}

_DESCRIPTIONS: Final = {
    "400": "Invalid input: malformed or invalid parameters or body",
    "401": "Missing, malformed, unknown or revoked API key",
    "403": "The key lacks the scope, or the tenant may not do this",
    "404": "No such resource for this tenant",
    "409": "The request conflicts with the resource's current state",
    "413": "The body or the work it asks for is over a limit",
    "415": "The body's media type is not one this route takes",
    "422": "The file was refused as unsafe to parse",
    "429": "Too many requests: the API key's rate limit or quota is used up, or the decode "
    "queue is full (see Retry-After)",
    "503": "Not available: no model loaded, the database or the shared rate-limit store does "
    "not answer, or shutting down",
}

#: Operations that run the model (admission, queue and model state apply).
_MODEL_OPERATIONS: Final = frozenset({
    "create_reasoning", "create_chat_completion", "create_turn", "retract_premise",
    "amend_premise", "resolve_confirmation", "create_run_feedback",
})
_UNAVAILABLE_OPERATIONS: Final = frozenset({
    "get_readiness", "head_readiness", "list_models", "get_diagnostics", "get_layer_chart",
})
_STREAMING_OPERATIONS: Final = frozenset({"create_reasoning", "create_chat_completion"})
_PROV_CONTENT: Final[dict[str, Any]] = {
    "application/json": {"schema": {"type": "object", "description": "PROV-JSON (format=json)"}},
    "text/provenance-notation": {"schema": {"type": "string", "description": "PROV-N (format=provn)"}},
    "application/xml": {"schema": {"type": "string", "description": "PROV-XML (format=xml)"}},
    "text/turtle": {"schema": {"type": "string", "description": "PROV-O as Turtle (format=ttl)"}},
    "application/ld+json": {"schema": {"description": "PROV-O as JSON-LD (format=jsonld)"}},
}
_GRAPH_CONTENT: Final[dict[str, Any]] = {
    "application/json": {"schema": {"type": "object", "description": "The session's DAG (format=json)"}},
    "text/turtle": {"schema": {"type": "string", "description": "The DAG as RDF Turtle (format=turtle)"}},
    "application/ld+json": {"schema": {"description": "The DAG as JSON-LD (format=jsonld)"}},
}
#: operation id -> (the 200's content by media type, the values of its ``format`` parameter).
_FORMAT_OPERATIONS: Final[dict[str, tuple[dict[str, Any], list[str]]]] = {
    "get_run_provenance": (_PROV_CONTENT, ["provn", "json", "xml", "ttl", "jsonld"]),
    "export_provenance": (_PROV_CONTENT, ["provn", "json", "xml", "ttl", "jsonld"]),
    "get_session_graph": (_GRAPH_CONTENT, ["json", "turtle", "jsonld"]),
}
_RDF_TYPES: Final = (
    "text/turtle", "application/rdf+xml", "application/ld+json", "application/n-triples",
)


def _problem_response(status: str) -> dict[str, Any]:
    return {
        "description": _DESCRIPTIONS[status],
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


def _statuses(operation_id: str, public: bool, has_body: bool) -> list[str]:
    statuses = ["400"]
    if not public:
        # Every keyed request counts against the key's limits (app.ratelimits): 429 past one,
        # 503 while a configured Redis does not answer.
        statuses += ["401", "403", "404", "429", "503"]
    if has_body or operation_id == "create_ontology":
        statuses += ["413", "415"]
    if operation_id == "create_ontology":
        statuses.append("422")
    if operation_id in _MODEL_OPERATIONS:
        statuses += ["409", "429", "503"]
    if operation_id in _UNAVAILABLE_OPERATIONS:
        statuses.append("503")
    return sorted(set(statuses))


def _ontology_body() -> dict[str, Any]:
    binary = {"type": "string", "format": "binary"}
    content: dict[str, Any] = {media: {"schema": binary} for media in _RDF_TYPES}
    content["multipart/form-data"] = {
        "schema": {
            "type": "object",
            "required": ["file"],
            "properties": {"file": binary, "domain": {"type": "string"}},
        }
    }
    return {
        "required": True,
        "description": "The ontology file (at most TENET_ONTOLOGY_MAX_BYTES), raw or as a form",
        "content": content,
    }


def complete_openapi(document: dict[str, Any], public_operations: set[str]) -> dict[str, Any]:
    """``document`` with the failures, security and bodies this module describes (in place)."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = PROBLEM_SCHEMA
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            operation_id = str(operation.get("operationId", ""))
            public = operation_id in public_operations
            if public:
                operation["security"] = []
            if operation_id == "create_ontology":
                operation["requestBody"] = _ontology_body()
            responses = operation["responses"]
            if operation_id in _STREAMING_OPERATIONS:
                for ok in (r for code, r in responses.items() if code.startswith("2")):
                    ok.setdefault("content", {})["text/event-stream"] = {
                        "schema": {"type": "string", "description": "server-sent events"}
                    }
            if operation_id in _FORMAT_OPERATIONS:
                _document_formats(operation, *_FORMAT_OPERATIONS[operation_id])
            if operation_id == "create_ontology" and "201" in responses:
                responses["200"] = {
                    "description": "The same bytes were uploaded before: the existing version "
                    "(a deleted one is restored, with an ontology.restored audit event)",
                    "content": responses["201"].get("content", {}),
                }
            for status in _statuses(operation_id, public, "requestBody" in operation):
                responses[status] = _problem_response(status)
    return document


def _document_formats(operation: dict[str, Any], content: dict[str, Any], formats: list[str]
                      ) -> None:
    ok = operation["responses"].setdefault("200", {"description": "The document"})
    ok["content"] = {media: dict(value) for media, value in content.items()}
    for parameter in operation.get("parameters", []):
        if parameter.get("name") == "format" and parameter.get("in") == "query":
            parameter.setdefault("schema", {})["enum"] = list(formats)


def _public_operations(app: Litestar) -> set[str]:
    found: set[str] = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if isinstance(handler, HTTPRouteHandler) and handler.opt.get("public"):
                operation_id = handler.operation_id
                if isinstance(operation_id, str):
                    found.add(operation_id)
    return found


class _CompletingOpenAPIPlugin(OpenAPIPlugin):
    """Litestar's OpenAPI plugin serving the completed document, built on first use.

    Building the document walks every route's signature and costs about as much as the rest
    of ``create_app`` together; most apps (one per test, a CLI run) never serve it. Both
    builds are deterministic, so two requests racing for the first build get equal documents.
    """

    __slots__ = ()

    def provide_openapi_schema(self) -> dict[str, Any]:
        if self._openapi_schema is None:
            document = self.provide_openapi().to_schema()
            self._openapi_schema = complete_openapi(document, _public_operations(self.app))
        return self._openapi_schema


def install_openapi_completion(app: Litestar) -> None:
    """Make ``app``'s schema routes serve the completed OpenAPI document (built on first use)."""
    plugin = app.plugins.get(OpenAPIPlugin)
    # Same slots, only a method overridden: the plugin object stays registered as it is.
    plugin.__class__ = _CompletingOpenAPIPlugin
