"""A decode job: the plan the pipeline built, as plain data a model worker can run.

The API plans a request (stages 1-4: analysis, evidence, branch layout,
decode options); a model worker runs stages 5-6 of that plan. A
:class:`DecodeJob` is everything the worker needs and nothing live: the
:class:`~inference.pipeline.Plan` (its constraints, premises, branches,
statement and :class:`~inference.decoder.options.DecodeOptions`), the tenant
whose prefix cache it may use and, for a partial re-run, the previous
result. The token controllers (steering) are not shipped: the worker
compiles them again from the plan's constraints on its own tokenizer, as the
in-process decode does, so a job carries no tensors, closures or locks.

Jobs and results cross process boundaries as msgpack, packed and unpacked
(:func:`pack_job`, :func:`unpack_job`, :func:`pack_reply`, :func:`unpack_reply`;
"decode" here always means generating text); an unpacked job equals the job
that was packed, so a worker decodes exactly the plan the API recorded. Two parts of a plan on a domain with decision rules are
checks, not data: the claim guard of the pruning judge and the statement's
contradiction check read the domain's decision engine. They travel as the
domain's index (the ontology version the API planned on, pickled: the
workers are inside the service's trust boundary) and are bound again on
the worker by the same functions that built them (:func:`claim_guard`; the
engine's ``check_claim``), the index unpickled once per version per worker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable

import msgspec

from inference.decisions import claim_guard, decision_engine
from inference.decoder.stream import StepEvent
from inference.decoder.token_controllers.stating import Statement
from inference.pipeline import Plan, Reasoner, ReasonResult
from reasoning.evidence.index import OntologyIndex
from reasoning.rules.model import Decision

__all__ = [
    "DecodeJob",
    "WorkerReply",
    "execute",
    "pack_job",
    "pack_reply",
    "unpack_job",
    "unpack_reply",
]


class DecodeJob(msgspec.Struct, frozen=True, kw_only=True):
    """One decode to run: ``plan`` for ``tenant``; a re-run of ``previous`` when it is set.

    ``session_id`` names the session the run belongs to (empty outside one);
    :attr:`affinity` is the key requests are routed on so that a job lands
    where its prefix is cached. ``model_sha256`` is the identity of the model
    the API records for the run: a worker with another model refuses the job.
    """

    plan: Plan
    tenant: str
    previous: ReasonResult | None = None
    session_id: str = ""
    model_sha256: str = ""
    #: The domain index the plan's checks read (its decision engine); None without a decision.
    index: OntologyIndex | None = None

    @property
    def affinity(self) -> str:
        """The routing key: the session, else the tenant and the plan's shared prefix.

        Jobs with equal keys share a prefix cache entry (the cache is keyed by
        tenant and prefix tokens; a session keeps its question and constraints
        across turns), so routing equal keys to one worker makes its cache hit.
        The key is a digest: it never carries the prompt's text.
        """
        if self.session_id:
            return f"session:{self.session_id}"
        digest = hashlib.sha256(f"{self.tenant}\x00{self.plan.shared_key!r}".encode()).hexdigest()
        return f"prefix:{digest[:32]}"


class WorkerReply(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker answers: the result, how long it worked on it, and who it is.

    ``busy_ms`` is the time between the worker receiving the job and the
    result being ready, so the caller's round trip minus ``busy_ms`` is the
    cost of the hop (serialisation, routing, transport). ``prefix_hits`` /
    ``prefix_misses`` are the worker's prefix-cache counters after the job.
    """

    result: ReasonResult
    busy_ms: float
    worker: str
    model_sha256: str
    prefix_hits: int = 0
    prefix_misses: int = 0


class _WireJob(msgspec.Struct, frozen=True, kw_only=True):
    """A job as it crosses: the plan without its checks, the statement's data, the index pickled."""

    plan: Plan
    tenant: str
    previous: ReasonResult | None = None
    session_id: str = ""
    model_sha256: str = ""
    statement_text: str | None = None
    statement_sources: tuple[str, ...] = ()
    statement_grounds: tuple[str, ...] = ()
    statement_briefs: tuple[str, ...] = ()
    index: bytes | None = None


_JOB_DECODER = msgspec.msgpack.Decoder(_WireJob)
_REPLY_DECODER = msgspec.msgpack.Decoder(WorkerReply)
_ENCODER = msgspec.msgpack.Encoder()
#: Unpickled domain indexes by the digest of their bytes (one per ontology version in use), so
#: the decision engine built on one is reused across jobs (it is cached per index object).
_INDEXES: OrderedDict[str, OntologyIndex] = OrderedDict()
_INDEXES_KEPT = 16
_INDEXES_LOCK = threading.Lock()


def pack_job(job: DecodeJob) -> bytes:
    """``job`` as msgpack bytes (what crosses to the worker).

    Raises:
        ValueError: the plan carries a decision but the job no index to check it on.
    """
    plan, statement = job.plan, job.plan.statement
    if job.index is None and (plan.claims is not None or statement is not None):
        raise ValueError("a plan with a decision's checks needs its domain index in the job")
    wire = _WireJob(
        plan=dataclasses.replace(plan, claims=None, statement=None),
        tenant=job.tenant,
        previous=job.previous,
        session_id=job.session_id,
        model_sha256=job.model_sha256,
        statement_text=statement.text if statement is not None else None,
        statement_sources=statement.sources if statement is not None else (),
        statement_grounds=statement.grounds if statement is not None else (),
        statement_briefs=statement.briefs if statement is not None else (),
        index=pickle.dumps(job.index)
        if job.index is not None and plan.decision is not None
        else None,
    )
    return _ENCODER.encode(wire)


def unpack_job(data: bytes) -> DecodeJob:
    """The job :func:`pack_job` packed, its checks bound again on the shipped index
    (``msgspec.ValidationError`` on anything else)."""
    wire = _JOB_DECODER.decode(data)
    plan = wire.plan
    index = _index(wire.index) if wire.index is not None else None
    if index is not None and plan.decision is not None:
        statement = None
        if wire.statement_text is not None:
            statement = Statement(
                text=wire.statement_text,
                contradicts=_contradicts(plan.decision, index),
                sources=wire.statement_sources,
                grounds=wire.statement_grounds,
                briefs=wire.statement_briefs,
            )
        plan = dataclasses.replace(
            plan, claims=claim_guard(plan.decision, index), statement=statement
        )
    return DecodeJob(
        plan=plan,
        tenant=wire.tenant,
        previous=wire.previous,
        session_id=wire.session_id,
        model_sha256=wire.model_sha256,
        index=index,
    )


def _contradicts(decision: Decision, index: OntologyIndex) -> Callable[[str], bool]:
    """The statement's check of one sentence against ``decision`` (as ``statement_of`` binds it)."""
    engine = decision_engine(index)
    return lambda text: engine.check_claim(text, decision).contradicts


def _index(data: bytes) -> OntologyIndex:
    key = hashlib.sha256(data).hexdigest()
    with _INDEXES_LOCK:
        index = _INDEXES.get(key)
        if index is not None:
            _INDEXES.move_to_end(key)
            return index
    loaded = pickle.loads(data)  # from the API, inside the service's trust boundary
    if not isinstance(loaded, OntologyIndex):
        raise msgspec.ValidationError("the job's index is not an ontology index")
    with _INDEXES_LOCK:
        index = _INDEXES.setdefault(key, loaded)
        while len(_INDEXES) > _INDEXES_KEPT:
            _INDEXES.popitem(last=False)
    return index


def pack_reply(reply: WorkerReply) -> bytes:
    """``reply`` as msgpack bytes (what crosses back to the API)."""
    return _ENCODER.encode(reply)


def unpack_reply(data: bytes) -> WorkerReply:
    """The reply :func:`pack_reply` packed."""
    return _REPLY_DECODER.decode(data)


def execute(
    reasoner: Reasoner, job: DecodeJob, on_step: Callable[[StepEvent], None] | None = None
) -> ReasonResult:
    """Run ``job`` on ``reasoner``: the whole plan, or a partial re-run of ``job.previous``.

    The same call decodes in the API process (local workers) and on a Ray
    replica, so both give the same result for the same job. ``on_step``
    hears a fresh run's steps as they settle (a re-run streams none).
    """
    if job.previous is not None:
        return reasoner.rerun(job.previous, job.plan, tenant=job.tenant)
    return reasoner.run(job.plan, tenant=job.tenant, on_step=on_step)
