"""The run service: one prompt through the pipeline, admitted, decoded, recorded and answered.

Every run of the service goes through :class:`RunService`, so each one is
admitted, decoded, recorded and traced alike:

- ``POST /v1/reason`` (answered at once or streamed), ``POST
  /v1/chat/completions`` and the continuation of a resolved constraint
  conflict call :meth:`RunService.answer` with a :class:`RunRequest`;
- session turns (:mod:`app.services.sessions`) keep their own premises, DAG
  and state, and take the same parts: :meth:`RunService.check_tokens` and
  :meth:`RunService.admit` before planning, :meth:`RunService.plan_and_decode`
  with the session's planning as its hook, :meth:`RunService.response` and
  :meth:`RunService.record` in the session's own transaction.

A request looks the loaded model up once (``Runtime.require_model``: 503
while none is loaded) and passes it to every part that needs it (the token
check, the reasoner, the decode job, the response, the record), so one
request's parts all name the same model.

The sequence of :meth:`RunService.answer`: the domain's index, the early
admission check (an overloaded service refuses before any planning, with
the scheduler's ``Overloaded`` / ``ShuttingDown``), the plan (with any
settled conflicts applied), the decode through the scheduler (under the
caller's :class:`~inference.scheduler.JobHints`), the public response, the
run record (run, steps, PROV bundle and audit event), a pending confirmation
when the constraints conflict, and the GenAI trace span.

The parts that need no service state are functions here: the input checks
(:func:`check_prompt`, :func:`check_prompt_tokens`), the domain's index
(:func:`lookup_domain_index`) and the profile's defaults, which ``POST
/v1/constraints`` (stages 1-3 only) uses too; what a run gives out, its
public response and its record, is built in :mod:`app.services.run_output`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec
from anyio import to_thread
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext
from app.metrics import observe_decode, observe_stages, observe_worker_hop
from app.runtime import Runtime
from app.schemas.constraints import Profile
from app.schemas.reason import ReasonResponse
from app.services.ontologies import load_index
from app.services.pending import PendingConfirmations
from app.services.run_output import build_response, run_record
from app.tracing import trace_run
from inference.decoder.stream import StepEvent
from inference.loader import LoadedModel
from inference.pipeline import Plan, Reasoner, ReasonOptions, ReasonResult
from inference.scheduler import JobHints
from inference.workers.job import DecodeJob, execute
from reasoning.constraints.model import Constraint, Origin
from reasoning.errors import InvalidInput, LimitExceeded
from reasoning.evidence.index import OntologyIndex
from reasoning.provenance import RunKind, RunRecord
from reasoning.regraph import settle_conflict
from store.db import transaction
from store.models import new_id
from store.runs import record_run

__all__ = [
    "RunRequest",
    "RunService",
    "Settlement",
    "check_prompt",
    "check_prompt_tokens",
    "job_tokens",
    "lookup_domain_index",
    "new_run_id",
    "profile_defaults",
]


@dataclasses.dataclass(frozen=True)
class Settlement:
    """A person's choice of a confirmation: ``chosen`` overrides each of ``losers``."""

    chosen: str
    losers: tuple[str, ...]

    def to_builtins(self) -> dict[str, Any]:
        """As stored in a confirmation's request (``settled``)."""
        return {"chosen": self.chosen, "losers": list(self.losers)}


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """One prompt to answer outside a session.

    ``stored`` is what the run record keeps as its request; a confirmation
    opened on the run re-runs from its ``prompt``, ``domain``, ``profile`` and
    ``options``. ``settled`` are earlier choices applied to the plan (and
    stored with a new confirmation so a person settles each conflict once).
    ``kind`` names the run in the store, ``origin`` the confirmation's origin.
    """

    prompt: str
    options: ReasonOptions
    stored: Mapping[str, Any]
    domain: str | None = None
    profile: Profile | None = None
    kind: RunKind = RunKind.REASON
    origin: str = "reason"
    settled: tuple[Settlement, ...] = ()
    temperature: float | None = None


#: Called in the run's transaction once it is recorded (e.g. to close the confirmation it continues).
OnRecorded = Callable[[AsyncSession, ReasonResponse], Awaitable[None]]


def profile_defaults(profile: Profile | None) -> tuple[Constraint, ...]:
    """Profile defaults as constraints of origin ``profile`` (ids ``d1``, ``d2``...)."""
    if profile is None:
        return ()
    return tuple(
        Constraint(id=f"d{i}", kind=d.kind, params=d.params, hardness=d.hardness, origin=Origin.PROFILE)
        for i, d in enumerate(profile.defaults, start=1)
    )


def check_prompt(prompt: str, max_chars: int) -> None:
    """Refuse an empty or oversized prompt before any work is spent on it."""
    if not prompt.strip():
        raise InvalidInput("prompt must not be empty", field="prompt")
    if len(prompt) > max_chars:
        raise LimitExceeded(
            f"prompt has {len(prompt)} characters; the limit is {max_chars}", field="prompt", limit=max_chars
        )


def check_prompt_tokens(prompt: str, max_tokens: int, tokenizer: Any) -> None:
    """Refuse a prompt longer than ``max_tokens`` of the model's tokens before it is planned.

    Characters alone do not bound the prefill: 8,000 Chinese characters are
    8,000 to 16,000 tokens, four to eight times English text of the same length. The
    413 names the limit (``limit``, ``unit: "tokens"``).
    """
    count = len(tokenizer.encode(prompt, add_special_tokens=False))
    if count > max_tokens:
        raise LimitExceeded(
            f"prompt has {count} tokens; the limit is {max_tokens} tokens", field="prompt", limit=max_tokens,
            unit="tokens",
        )


async def lookup_domain_index(
    runtime: Runtime, tenant_id: str, domain: str | None
) -> OntologyIndex | None:
    """The tenant's current index of ``domain`` (404 when it has none); None without a domain.

    The index is read in a short database session of its own, so no pooled
    connection stays checked out while the request waits for and runs its
    decode; the database is not touched at all when no domain is named.
    """
    if domain is None:
        return None
    async with runtime.sessionmaker() as session:
        return await load_index(session, runtime.ontology_indexes, tenant_id, domain)


def new_run_id() -> str:
    """A fresh run id (the store's id format)."""
    return new_id()


class RunService:
    """The run sequence on one app's runtime (one per app, on the service container)."""

    def __init__(self, runtime: Runtime, pending: PendingConfirmations) -> None:
        self.runtime = runtime
        self.pending = pending

    async def index_for(self, auth: AuthContext, domain: str | None) -> OntologyIndex | None:
        """The tenant's current index of ``domain`` (``NotFound`` when it has none); None without one."""
        return await lookup_domain_index(self.runtime, auth.tenant_id, domain)

    def check_tokens(self, prompt: str, model: LoadedModel) -> None:
        """Refuse (413) a prompt longer than ``TENET_MAX_PROMPT_TOKENS`` of ``model``'s tokens."""
        check_prompt_tokens(prompt, self.runtime.settings.max_prompt_tokens, model.tokenizer)

    def admit(self, hints: JobHints) -> None:
        """Refuse now what the decode scheduler would refuse (``Overloaded`` / ``ShuttingDown``)."""
        self.runtime.scheduler.check(hints)

    async def decode(
        self, work: Callable[[], ReasonResult], hints: JobHints, tokens: int | None = None
    ) -> ReasonResult:
        """Run one decode (``work``, a call of the runtime's reasoner) on the decode scheduler.

        The job is admitted and prioritised by ``hints``, its size (``tokens``:
        prompt plus new tokens) counted in the scheduler's predictions; an accepted job runs
        to completion even if the caller is cancelled, and the decode's
        metrics are recorded on the worker thread before the result is handed
        back. An exception of ``work`` reaches the caller unchanged.
        """

        def observed() -> ReasonResult:
            result = work()
            observe_decode(result.decode)
            return result

        return await self.runtime.scheduler.submit(observed, hints, tokens)

    async def run_job(
        self, job: DecodeJob, hints: JobHints, model: LoadedModel,
        on_step: Callable[[StepEvent], None] | None = None,
    ) -> ReasonResult:
        """Decode ``job`` where the service's decodes run (``TENET_WORKERS``).

        ``local``: on this process's scheduler and reasoner (:meth:`decode`).
        ``ray``: on a model worker replica (``Runtime.workers``), whose
        back-pressure replaces the local queue; ``on_step`` then hears the
        steps as the replica streams them. Either way the job is decoded by
        :func:`~inference.workers.job.execute`, so the result is the same,
        and a job that fails returns nothing to record.

        Raises:
            Overloaded: the scheduler or the workers refuse the job now (429).
            Unavailable: no model worker could decode it (503 with Retry-After).
        """
        workers = self.runtime.workers
        if workers is None:
            reasoner = self.runtime.reasoner(model)
            tokens = job_tokens(job.plan, reasoner.model.tokenizer)
            return await self.decode(lambda: execute(reasoner, job, on_step), hints, tokens)
        done = await workers.submit(job, on_step=on_step)
        observe_decode(done.result.decode)
        observe_worker_hop(done.hop_ms)
        return done.result

    async def plan_and_decode(
        self,
        planner: Callable[[Reasoner], Plan],
        model: LoadedModel,
        hints: JobHints,
        tenant: str,
        *,
        index: OntologyIndex | None,
        on_plan: Callable[[Plan], None] | None = None,
        on_step: Callable[[StepEvent], None] | None = None,
        **fields: Any,
    ) -> tuple[Plan, ReasonResult]:
        """Stages 1-7 of one admitted run: its plan, then its decode.

        ``planner`` plans on the runtime's reasoner in a worker thread: a plain
        request's plan, or a session turn's under the session's premises and
        feedback policy (the session's hook). ``on_plan`` hears the plan
        before its decode job (``fields``: a session id, the previous result a
        re-run reuses) runs where the service's decodes run (:meth:`run_job`).
        """
        reasoner = self.runtime.reasoner(model)
        plan = await to_thread.run_sync(planner, reasoner)
        if on_plan is not None:
            on_plan(plan)
        result = await self.run_job(self.job(plan, model, tenant, index=index, **fields), hints, model, on_step)
        return plan, result

    def job(self, plan: Plan, model: LoadedModel, tenant: str, **fields: Any) -> DecodeJob:
        """The decode job of ``plan`` for ``tenant``, naming ``model`` (``fields``: the
        other :class:`~inference.workers.job.DecodeJob` fields)."""
        return DecodeJob(plan=plan, tenant=tenant, model_sha256=model.identity.sha256, **fields)

    def response(
        self, run_id: str, plan: Plan, result: ReasonResult, model: LoadedModel, *, session_id: str | None = None
    ) -> ReasonResponse:
        """The public shape of a run on ``model``."""
        identity = msgspec.to_builtins(model.identity.__dict__)
        return build_response(run_id, plan, result, identity, session_id=session_id)

    async def record(self, db_session: AsyncSession, record: RunRecord, run_id: str) -> float:
        """Store the run and export its stage times; returns the milliseconds recording took.

        Every run the service makes is stored through here, so this is the one
        place ``tenet_stage_seconds`` is recorded: each run's stages
        (``record.timings``, with this recording as ``record``) are observed
        exactly once.
        """
        t0 = time.perf_counter()
        await record_run(db_session, record, run_id=run_id)
        record_ms = round((time.perf_counter() - t0) * 1000, 3)
        observe_stages({**record.timings, "record": record_ms})
        return record_ms

    async def answer(
        self,
        request: RunRequest,
        *,
        auth: AuthContext,
        hints: JobHints,
        db_session: AsyncSession | None = None,
        model: LoadedModel | None = None,
        index: OntologyIndex | None = None,
        run_id: str | None = None,
        on_plan: Callable[[Plan], None] | None = None,
        on_step: Callable[[StepEvent], None] | None = None,
        on_recorded: OnRecorded | None = None,
    ) -> ReasonResponse:
        """Run ``request`` through the whole sequence (module docstring) and answer it.

        The run is recorded in ``db_session``'s transaction, or in one of its
        own (opened only after the decode) when None. ``model`` is the loaded
        model when the caller looked it up already (looked up here when None). ``index`` is the
        domain's index when the caller looked it up already (a stream does,
        so that an unknown domain is a plain 404). ``on_plan`` hears the
        plan before decoding starts and ``on_step`` every branch's steps as the
        decode settles them (on the decoding thread: it must only hand the
        event over). ``on_recorded`` runs in the recording transaction.

        Raises:
            Unavailable: no model is loaded.
            LimitExceeded: the prompt is longer than ``TENET_MAX_PROMPT_TOKENS`` tokens (413).
            NotFound: the tenant has no ontology of ``request.domain``.
            Overloaded: admission refused the run (``ShuttingDown`` while draining).
            ConflictError: a settled choice no longer matches the prompt's constraints.
        """
        runtime = self.runtime
        model = model if model is not None else runtime.require_model()
        self.check_tokens(request.prompt, model)
        started = datetime.now(UTC)
        if index is None:
            index = await self.index_for(auth, request.domain)
        self.admit(hints)
        plan, result = await self.plan_and_decode(
            lambda reasoner: _plan(reasoner, request, index, auth.tenant_id), model, hints, auth.tenant_id,
            index=index, on_plan=on_plan, on_step=on_step,
        )
        run_id = run_id or new_run_id()
        response = self.response(run_id, plan, result, model)
        record = run_record(
            plan, result, model.identity, response, tenant_id=auth.tenant_id,
            key_id=auth.key_id, started=started, kind=request.kind, request=request.stored, domain=request.domain,
        )
        if db_session is None:
            async with transaction(runtime.sessionmaker) as db:
                response = await self._keep(db, auth, request, record, response, on_recorded)
        else:
            response = await self._keep(db_session, auth, request, record, response, on_recorded)
        trace_run(response, started=started, prompt=request.prompt, temperature=request.temperature)
        return response

    async def _keep(
        self,
        db: AsyncSession,
        auth: AuthContext,
        request: RunRequest,
        record: RunRecord,
        response: ReasonResponse,
        on_recorded: OnRecorded | None,
    ) -> ReasonResponse:
        """Record the run, open a confirmation when its constraints conflict, then ``on_recorded``."""
        record_ms = await self.record(db, record, response.run_id)
        response = msgspec.structs.replace(response, timings={**response.timings, "record": record_ms})
        reopen = dict(request.stored)
        if request.settled:
            reopen["settled"] = [s.to_builtins() for s in request.settled]
        response = await self.pending.open_conflict(db, auth, response, reopen, origin=request.origin)
        if on_recorded is not None:
            await on_recorded(db, response)
        return response


def job_tokens(plan: Plan, tokenizer: Any) -> int:
    """A decode's size as admission counts it: prompt tokens plus new tokens.

    The prompt is the request's tokens plus, per branch, the evidence it may
    show (``options.evidence_token_budget``, the bound the evidence stage
    keeps); the new tokens are ``max_new_tokens`` per branch.
    """
    branches = max(1, len(plan.branches))
    evidence = plan.options.evidence_token_budget * sum(1 for b in plan.branches if b.facts)
    prompt = len(tokenizer.encode(plan.prompt, add_special_tokens=False)) + evidence
    return prompt + plan.decode_options.max_new_tokens * branches


def _plan(reasoner: Reasoner, request: RunRequest, index: OntologyIndex | None, tenant: str) -> Plan:
    """Stages 1-4 of ``request`` (a worker thread's job, on the tenant's extraction cache), its
    settled conflicts applied in order."""
    plan = reasoner.plan(
        request.prompt, options=request.options, domain_index=index, defaults=profile_defaults(request.profile),
        tenant=tenant,
    )
    for settlement in request.settled:
        analysis = settle_conflict(plan.analysis, settlement.chosen, settlement.losers, prompt=plan.prompt)
        plan = dataclasses.replace(plan, analysis=analysis)
    return plan
