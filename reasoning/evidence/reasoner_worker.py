"""The child process that runs an OWL 2 RL reasoner for :mod:`materialise`.

Protocol: stdin holds one msgpack map ``{"engine", "triples", "max_triples",
"memory_bytes"}`` (triples as lists of three bare IRIs); stdout receives one
msgpack :class:`WorkerResult` with only the triples the reasoner added. Run as
``python -m reasoning.evidence.reasoner_worker``; it imports no web, model
or database code, so it starts in a fraction of a second.

Limits: before reasoning, the process caps its own address space at
``memory_bytes`` (``RLIMIT_AS``), so a blow-up ends in a MemoryError or the
process's death, never in the host running out of memory; a closure that
holds more than ``max_triples`` triples (asserted plus inferred) is dropped
and reported (``capped``).
"""

from __future__ import annotations

import sys
from typing import Final, Literal

import msgspec

__all__ = ["OWLRL_MAX_TRIPLES", "Engine", "WorkerRequest", "WorkerResult", "main", "run"]

Engine = Literal["auto", "reasonable", "owlrl"]

OWLRL_MAX_TRIPLES: Final = 50_000
"""Above this size the owlrl fallback is not attempted (it would take minutes)."""

UNSUPPORTED_BY_REASONABLE: Final = frozenset({
    "http://www.w3.org/2002/07/owl#propertyChainAxiom",
})
"""OWL 2 RL axioms ``reasonable`` does not apply (rule prp-spo2, checked against owlrl)."""

TAUTOLOGIES: Final = frozenset({
    "http://www.w3.org/2002/07/owl#sameAs",
    "http://www.w3.org/2002/07/owl#equivalentClass",
    "http://www.w3.org/2002/07/owl#equivalentProperty",
    "http://www.w3.org/2000/01/rdf-schema#subClassOf",
    "http://www.w3.org/2000/01/rdf-schema#subPropertyOf",
})
"""Reflexive inferences (``x owl:sameAs x``, ``C rdfs:subClassOf C``) carry no information;
owlrl emits them for every term, so they are dropped from every engine's output."""


class WorkerRequest(msgspec.Struct, frozen=True):
    engine: Engine
    triples: list[tuple[str, str, str]]
    max_triples: int | None = None
    memory_bytes: int | None = None


class WorkerResult(msgspec.Struct, frozen=True):
    engine: str
    inferred: list[tuple[str, str, str]]
    note: str | None = None
    capped: bool = False


def _limit_memory(memory_bytes: int | None) -> None:
    """Cap this process's address space (a no-op where the platform has no RLIMIT_AS)."""
    if memory_bytes is None:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):
        return


def run(request: WorkerRequest) -> WorkerResult:
    """Reason over the request's triples with the chosen engine.

    ``auto`` uses reasonable, except for small ontologies with axioms it does
    not apply (then owlrl, the complete reference), and falls back to owlrl
    when reasonable fails on a small ontology.
    """
    base = set(request.triples)
    note: str | None = None
    needs_owlrl = next((p for _, p, _ in request.triples if p in UNSUPPORTED_BY_REASONABLE), None)
    if request.engine == "owlrl":
        used, result = "owlrl", _run_owlrl(request.triples)
    elif request.engine == "auto" and needs_owlrl and len(request.triples) <= OWLRL_MAX_TRIPLES:
        note = f"owlrl used: the ontology uses <{needs_owlrl}>, which reasonable does not apply"
        used, result = "owlrl", _run_owlrl(request.triples)
    else:
        try:
            used, result = "reasonable", _run_reasonable(request.triples)
        except BaseException as exc:  # noqa: BLE001 - reasonable's Rust panics surface as BaseException
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            if request.engine == "reasonable" or len(request.triples) > OWLRL_MAX_TRIPLES:
                return WorkerResult("reasonable", [],
                                    f"reasonable failed ({reason}); only asserted triples are indexed")
            note = f"reasonable failed ({reason}); owlrl used instead"
            used, result = "owlrl", _run_owlrl(request.triples)
    inferred = [t for t in result
                if t not in base and not (t[0] == t[2] and t[1] in TAUTOLOGIES)]
    if request.max_triples is not None and len(base) + len(inferred) > request.max_triples:
        return WorkerResult(
            used, [],
            f"OWL 2 RL materialisation would hold {len(base) + len(inferred)} triples, over the "
            f"limit of {request.max_triples} (TENET_ONTOLOGY_MAX_TRIPLES); only asserted triples "
            "are indexed",
            capped=True,
        )
    return WorkerResult(used, inferred, note)


def _run_reasonable(triples: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    import reasonable

    reasoner = reasonable.PyReasoner()
    reasoner.from_graph(triples)
    return [(str(s), str(p), str(o)) for s, p, o in reasoner.reason()]


def _run_owlrl(triples: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    import owlrl
    from rdflib import Graph, URIRef

    graph = Graph()
    for s, p, o in triples:
        graph.add((URIRef(s), URIRef(p), URIRef(o)))
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics).expand(graph)
    return [(str(s), str(p), str(o)) for s, p, o in graph
            if isinstance(s, URIRef) and isinstance(p, URIRef) and isinstance(o, URIRef)]


def main() -> None:
    request = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=WorkerRequest)
    _limit_memory(request.memory_bytes)
    try:
        result = run(request)
    except BaseException as exc:  # noqa: BLE001 - the worker reports every failure to its parent
        result = WorkerResult(request.engine, [], f"materialisation failed ({type(exc).__name__}: "
                                                  f"{str(exc)[:200]}); only asserted triples are indexed")
    sys.stdout.buffer.write(msgspec.msgpack.encode(result))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
