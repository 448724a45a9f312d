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

Jobs and results cross process boundaries as msgpack (:func:`encode_job`,
:func:`decode_job`, :func:`encode_reply`, :func:`decode_reply`); a decoded
job equals the job that was encoded, so a worker decodes exactly the plan
the API recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import msgspec

from inference.decoder.stream import StepEvent
from inference.pipeline import Plan, Reasoner, ReasonResult

__all__ = [
    "DecodeJob",
    "WorkerReply",
    "decode_job",
    "decode_reply",
    "encode_job",
    "encode_reply",
    "execute",
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


_JOB_DECODER = msgspec.msgpack.Decoder(DecodeJob)
_REPLY_DECODER = msgspec.msgpack.Decoder(WorkerReply)
_ENCODER = msgspec.msgpack.Encoder()


def encode_job(job: DecodeJob) -> bytes:
    """``job`` as msgpack bytes (what crosses to the worker)."""
    return _ENCODER.encode(job)


def decode_job(data: bytes) -> DecodeJob:
    """The job :func:`encode_job` encoded (``msgspec.ValidationError`` on anything else)."""
    return _JOB_DECODER.decode(data)


def encode_reply(reply: WorkerReply) -> bytes:
    """``reply`` as msgpack bytes (what crosses back to the API)."""
    return _ENCODER.encode(reply)


def decode_reply(data: bytes) -> WorkerReply:
    """The reply :func:`encode_reply` encoded."""
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
