"""OWL 2 RL materialisation under a hard time limit.

``reasonable`` (Rust) does the work; ``owlrl`` (pure Python, the reference
implementation) is the fallback when ``reasonable`` refuses the input, and
can be chosen explicitly to cross-check results.

Why a child process: neither reasoner can be interrupted from Python (the
Rust one holds the GIL-free loop, owlrl a tight Python loop), and a
materialisation can blow up in memory (``owl:sameAs`` cliques). The reasoner
therefore runs in a fresh interpreter (``python -m
reasoning.evidence.reasoner_worker``: no inherited threads, locks or model
weights from the web server, no re-import of the caller's main module) that
reads the triples as msgpack on stdin and answers on stdout. When the
deadline passes the process is killed and the upload keeps its asserted
triples only, with the timeout stated in the report. Nothing is left running.
With ``max_triples`` a closure larger than that is refused the same way
(``capped``), and the child's address space is capped (``memory_bytes``,
by default :func:`reasoner_memory_bytes` of ``max_triples``).

``reasonable`` accepts IRIs only, so literals and blank nodes are replaced by
placeholder IRIs for the run and mapped back afterwards; inferences that
would put a literal in subject position are dropped (they are not RDF).
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time

import msgspec

from reasoning.errors import InvalidInput
from reasoning.evidence.reasoner_worker import Engine, WorkerResult
from reasoning.evidence.terms import Triple, is_iri

__all__ = ["Engine", "Materialisation", "materialise", "reasoner_memory_bytes"]

_BASE_MEMORY_BYTES = 1 << 30
_BYTES_PER_TRIPLE = 1024


def reasoner_memory_bytes(max_triples: int | None) -> int | None:
    """The reasoner process's address-space cap for a closure of ``max_triples``: 1 GiB for the
    interpreter and reasoners plus 1 KiB per triple (None: no cap)."""
    if max_triples is None:
        return None
    return _BASE_MEMORY_BYTES + _BYTES_PER_TRIPLE * max_triples



class Materialisation(msgspec.Struct, frozen=True, kw_only=True):
    """What the reasoner added to the asserted triples, and how it went."""

    inferred: tuple[Triple, ...]
    engine: str
    seconds: float
    timed_out: bool = False
    note: str | None = None
    capped: bool = False


def materialise(
    triples: tuple[Triple, ...] | list[Triple],
    *,
    timeout_s: float = 60.0,
    engine: Engine = "auto",
    max_triples: int | None = None,
    memory_bytes: int | None = None,
) -> Materialisation:
    """Run OWL 2 RL over ``triples`` and return only the new triples.

    Never raises for reasoner failures or timeouts: the upload is still
    usable without inferences, so the outcome is reported in
    :attr:`Materialisation.note` instead. ``timeout_s`` bounds the wall time
    of the reasoning itself (process start-up gets a small grace period).
    ``max_triples`` bounds the closure (asserted plus inferred); past it no
    inference is kept and ``capped`` is set. ``memory_bytes`` caps the
    reasoner's address space (default: from ``max_triples``).
    """
    if timeout_s <= 0:
        raise InvalidInput("materialisation timeout must be positive", field="timeout_s")
    started = time.perf_counter()
    prefix = f"urn:tenet:m{secrets.token_hex(4)}:"
    encoded, placeholders = _encode(triples, prefix)
    if memory_bytes is None:
        memory_bytes = reasoner_memory_bytes(max_triples)
    payload = msgspec.msgpack.encode({"engine": engine, "triples": encoded,
                                      "max_triples": max_triples, "memory_bytes": memory_bytes})
    process = subprocess.Popen(
        [sys.executable, "-m", "reasoning.evidence.reasoner_worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        raw, _ = process.communicate(payload, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return Materialisation(
            inferred=(), engine=_engine_name(engine), seconds=time.perf_counter() - started,
            timed_out=True,
            note=f"OWL 2 RL materialisation exceeded {timeout_s:g} s and was stopped; "
                 "only asserted triples are indexed",
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    try:
        outcome = msgspec.msgpack.decode(raw, type=WorkerResult)
    except msgspec.DecodeError:
        return Materialisation(
            inferred=(), engine=_engine_name(engine), seconds=time.perf_counter() - started,
            note=f"the reasoner process ended without a result (exit code {process.returncode}, "
                 "out of memory?); only asserted triples are indexed",
        )
    inferred = _decode(outcome.inferred, placeholders, prefix)
    return Materialisation(inferred=inferred, engine=outcome.engine,
                           seconds=time.perf_counter() - started, note=outcome.note,
                           capped=outcome.capped)


def _engine_name(engine: Engine) -> str:
    return "reasonable" if engine == "auto" else engine


def _encode(triples: tuple[Triple, ...] | list[Triple], prefix: str
            ) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """Term strings -> bare IRIs, with placeholders for literals and blank nodes."""
    placeholders: dict[str, str] = {}
    reverse: dict[str, str] = {}

    def bare(term: str) -> str:
        if is_iri(term):
            return term[1:-1]
        known = reverse.get(term)
        if known is None:
            known = f"{prefix}{len(reverse)}"
            reverse[term] = known
            placeholders[known] = term
        return known

    return [(bare(s), bare(p), bare(o)) for s, p, o in triples], placeholders


def _decode(inferred: list[tuple[str, str, str]], placeholders: dict[str, str], prefix: str
            ) -> tuple[Triple, ...]:
    out: list[Triple] = []
    for s, p, o in inferred:
        terms = []
        for value in (s, p, o):
            if value.startswith(prefix):
                original = placeholders.get(value)
                if original is None:
                    break
                terms.append(original)
            else:
                terms.append(f"<{value}>")
        else:
            if terms[0].startswith('"') or not is_iri(terms[1]):
                continue
            out.append((terms[0], terms[1], terms[2]))
    return tuple(out)
