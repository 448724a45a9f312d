"""Process-wide state of one app: settings, database engine and the loaded model.

One :class:`Runtime` per app, created by the factory and reachable as the
``runtime`` dependency. The model loads in a background thread at start-up
(so ``/healthz`` answers at once) and is warmed up with one short forward
pass; until then :attr:`Runtime.model` is None and ``/readyz`` says why.
A model the steered decoder cannot serve (``inference.servable``: a one-token
steered probe at load) is never installed: ``/readyz`` is 503 with state
``unservable`` and the reason, and every model route answers 503 with it.
It holds the process's resources (engine, model, reasoner, micro-batcher,
decode scheduler, ontology index cache); the services built on them live in
the app's :class:`~app.services.container.Services`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import torch
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.metrics import ADMISSION_REFUSED, BATCH_SIZE, QUEUE_DEPTH, QUEUE_WAIT_SECONDS
from app.ratelimits import KeyLimits
from app.settings import Settings
from inference.decoder.boundaries import boundary_table
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.runner import ModelRunner
from inference.decoder.vocab import vocab_tables
from inference.forward_health import health_of
from inference.loader import LoadedModel, load_model
from inference.pipeline import Reasoner
from inference.prefix_cache import PrefixCache
from inference.scheduler import Priority, Scheduler
from inference.servable import steered_probe
from inference.workers.ray_serve import RayOptions, RayWorkers
from inference.workers.replica import WorkerConfig
from reasoning.errors import TenetError, Unavailable
from reasoning.evidence.cache import IndexCache
from reasoning.evidence.ingest import IngestLimits
from reasoning.evidence.safe_parse import ParseLimits
from reasoning.nlp import warm_up as warm_up_nlp
from store.db import create_engine, create_sessionmaker, ping, sqlite_disk_state
from store.key_events import RevocationListener

__all__ = ["QueueMetrics", "Runtime"]

log = logging.getLogger("tenet.runtime")

READINESS_PING_S = 2.0  # longest a /readyz probe waits for the database
#: After this many forward passes failed in a row the model is reported ``failing`` (not ready).
UNREADY_AFTER_FORWARD_FAILURES = 3
#: Longest a /readyz check waits for its probe forward of a failing model.
PROBE_FORWARD_S = 10.0
#: Seconds between attempts to reach the Ray model workers (TENET_WORKERS=ray).
WORKERS_RETRY_S = 5.0
#: Most rows (beams of all merged decodes) in one forward pass.
MAX_BATCH_ROWS = 64


class QueueMetrics:
    """The scheduler's events as the ``tenet_queue_*`` and ``tenet_admission_refused`` metrics."""

    def refused(self, reason: str) -> None:
        ADMISSION_REFUSED.labels(reason=reason).inc()

    def queued(self, priority: Priority, delta: int) -> None:
        QUEUE_DEPTH.labels(priority=priority.value).inc(delta)

    def started(self, priority: Priority, waited_s: float) -> None:
        QUEUE_WAIT_SECONDS.labels(priority=priority.value).observe(waited_s)


class Runtime:
    """Holds what every request shares; thread-safe for the model hand-over."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine: AsyncEngine = create_engine(settings.database_url)
        self.sessionmaker: async_sessionmaker[AsyncSession] = create_sessionmaker(self.engine)
        self.model: LoadedModel | None = None
        self.load_error: str | None = None
        #: Why the steered decoder cannot serve the loaded model (its probe at load), or None.
        self.unservable: str | None = None
        self.model_load_seconds: float | None = None
        self.ontology_indexes = IndexCache()
        self.ontology_limits = IngestLimits(
            parse=ParseLimits(
                max_bytes=settings.ontology_max_bytes,
                max_triples=settings.ontology_max_triples,
                timeout_s=settings.ontology_parse_timeout_s,
            ),
            materialise_timeout_s=settings.ontology_materialise_timeout_s,
        )
        self.model_loaded_at: int = 0
        #: Per-key request limits (TENET_KEY_RATE_LIMITS), counted in Redis when TENET_REDIS_URL is set.
        self.key_limits = KeyLimits.from_settings(settings)
        #: This app's listener for key revocations made through other replicas (PostgreSQL, while
        #: the app runs; set by the factory's lifespan); None on SQLite or outside the lifespan.
        self.revocations: RevocationListener | None = None
        #: The Ray Serve model workers decodes go to (TENET_WORKERS=ray); None: decoded in process.
        self.workers: RayWorkers | None = _ray_workers(settings) if settings.workers == "ray" else None
        self._workers_starting: threading.Thread | None = None
        self._workers_stop = threading.Event()
        self._loading: threading.Thread | None = None
        self._loaded = threading.Event()
        self._probing = threading.Lock()  # one readiness probe forward at a time
        self._reasoner: Reasoner | None = None
        self._reasoner_lock = threading.Lock()
        #: The one forward thread of the loaded model: concurrent decodes' steps are merged here.
        self.batcher: MicroBatcher | None = None
        #: Every decode is queued here (priorities, admission control), run up to TENET_MAX_BATCH at once.
        self.scheduler = Scheduler(
            max_queue=settings.queue_max,
            default_deadline_s=settings.default_deadline_s,
            concurrency=settings.max_batch,
            observer=QueueMetrics(),
        )

    @property
    def ready(self) -> bool:
        """True once the model is loaded and warmed up (the database is checked by ``readiness``)."""
        return self.model is not None

    @property
    def model_state(self) -> str:
        """One of ``loaded``, ``loading``, ``failed``, ``unservable``, ``disabled``, ``not_started``."""
        if self.model is not None:
            return "loaded"
        if self.unservable is not None:
            return "unservable"
        if self.load_error is not None:
            return "failed"
        if self._loading is not None and self._loading.is_alive():
            return "loading"
        return "disabled" if not self.settings.load_model else "not_started"

    def set_model(self, model: LoadedModel) -> None:
        """Install an already loaded model (tests share one across apps)."""
        self.model = model
        self.model_loaded_at = int(time.time())
        self.load_error = self.unservable = None
        self._loaded.set()

    def load_model_now(self) -> LoadedModel:
        """Load and warm up the configured model in the calling thread, and probe that the steered
        decoder serves it.

        Raises:
            Unavailable: the steered decoder cannot serve the model (kept in :attr:`unservable`;
                the model is not installed).
        """
        started = time.perf_counter()
        try:
            loaded = load_model(
                self.settings.model,
                device=self.settings.device,
                cache_root=self.settings.model_cache_dir,
                packed=self.settings.packed_forward,
                weights=self.settings.weights,
            )
            _warm_up(loaded, self.settings.model_cache_dir)
            reason = steered_probe(loaded.model, loaded.tokenizer)
        except TenetError as exc:
            self.load_error = exc.detail
            self._loaded.set()
            raise
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            self._loaded.set()
            raise
        if reason is not None:
            self.unservable = f"the steered decoder cannot serve {loaded.identity.name}: {reason}"
            log.error("%s", self.unservable)
            self._loaded.set()
            raise Unavailable(self.unservable, model="unservable")
        self.model_load_seconds = time.perf_counter() - started
        log.info("model %s loaded in %.1f s", loaded.identity.name, self.model_load_seconds)
        self.set_model(loaded)
        return loaded

    def start_model_loading(self) -> None:
        """Load the model in a daemon thread (idempotent; failures are kept in ``load_error``)."""
        if self.model is not None or (self._loading is not None and self._loading.is_alive()):
            return

        def work() -> None:
            try:
                self.load_model_now()
            except Exception:
                log.exception("model loading failed")

        self._loading = threading.Thread(target=work, name="tenet-model-loader", daemon=True)
        self._loading.start()

    def start_workers(self) -> None:
        """With ``TENET_WORKERS=ray``, start the model workers in a daemon thread (idempotent).

        The workers start once this process's model has loaded, and load it in
        the weight format it resolved, so a worker decodes in the precision the
        run records. Until they answer, ``/readyz`` reports ``workers`` not ok
        and decodes are refused with 503 and Retry-After (never run locally).
        """
        workers = self.workers
        if workers is None or (self._workers_starting is not None and self._workers_starting.is_alive()):
            return

        def work() -> None:
            self._loaded.wait()
            model = self.model
            if model is None:
                return
            config = msgspec.structs.replace(workers.config, weights=model.identity.weights)
            # An unreachable head (the cluster starting after the API, say) is tried again until
            # the runtime closes; workers.state says why meanwhile, for /readyz.
            while not self._workers_stop.is_set():
                try:
                    workers.start(config)
                    break
                except Unavailable:
                    self._workers_stop.wait(WORKERS_RETRY_S)
            # A local cluster's processes die with the thread that started them (Linux parent-death
            # signal): this thread lives until the runtime has closed the workers.
            self._workers_stop.wait()

        self._workers_starting = threading.Thread(target=work, name="tenet-workers-start", daemon=True)
        self._workers_starting.start()

    def wait_for_model(self, timeout: float | None = None) -> LoadedModel:
        """Block until loading ends; raise Unavailable when it failed or timed out."""
        self._loaded.wait(timeout)
        return self.require_model()

    def require_model(self) -> LoadedModel:
        """The loaded model, or Unavailable (503) explaining why there is none."""
        if self.model is not None:
            return self.model
        state = self.model_state
        if state == "failed":
            raise Unavailable(f"the model failed to load: {self.load_error}", model=state)
        if state == "unservable":
            raise Unavailable(str(self.unservable), model=state)
        if state == "disabled":
            raise Unavailable("model loading is disabled (TENET_LOAD_MODEL=false)", model=state)
        raise Unavailable("the model is still loading; retry shortly", model=state)

    def reasoner(self, model: LoadedModel | None = None) -> Reasoner:
        """The one reasoner on the loaded model, with the tenant-scoped prefix KV cache and the
        model's micro-batcher (503 while loading).

        ``model`` is the loaded model as the request looked it up once
        (:meth:`require_model`); None looks it up here.
        """
        model = model if model is not None else self.require_model()
        with self._reasoner_lock:
            if self._reasoner is None or self._reasoner.model is not model:
                if self.batcher is not None:
                    self.batcher.close()
                self.batcher = MicroBatcher(
                    model.model,
                    ModelRunner(model.model).call,
                    max_rows=MAX_BATCH_ROWS,
                    max_wait_s=self.settings.batch_wait_ms / 1000,
                    prefill_chunk=self.settings.prefill_chunk_tokens,
                    prefill_slice_s=self.settings.prefill_slice_ms / 1000,
                    on_forward=lambda lanes, rows: BATCH_SIZE.observe(lanes),
                )
                self._reasoner = Reasoner(
                    model=model,
                    prefix_cache=PrefixCache(max_bytes=self.settings.kv_cache_bytes),
                    max_new_tokens_cap=self.settings.max_new_tokens,
                    batcher=self.batcher,
                )
            return self._reasoner

    async def readiness(self) -> dict[str, Any]:
        """Model state, database reachability and the rate-limit store, as ``/readyz`` reports
        them (a configured Redis that does not answer makes the replica not ready)."""
        try:
            # A probe must answer promptly: a database that does not answer within
            # the bound is reported unreachable rather than stalling the probe.
            await asyncio.wait_for(ping(self.engine), timeout=READINESS_PING_S)
            database = sqlite_disk_state(self.settings.database_url) or "ok"
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            database = f"unreachable: {type(exc).__name__}"
        model: dict[str, Any] = {"state": self.model_state}
        if self.load_error or self.unservable:
            model["error"] = self.load_error or self.unservable
        if self.model is not None:
            model["name"] = self.model.identity.name
            failing = await self._forward_failure(self.model)
            if failing is not None:
                model["state"], model["error"] = "failing", failing
        rate_limits = await self.key_limits.state()
        if self.revocations is None:
            key_revocations = "local"
        else:
            key_revocations = "listening" if self.revocations.listening else "deaf"
        workers = "local" if self.workers is None else await self.workers.readiness(READINESS_PING_S)
        return {
            "ready": self.ready and model["state"] == "loaded" and database == "ok"
            and rate_limits != "unreachable"
            and workers in ("local", "ok"),
            "model": model,
            "database": database,
            "rate_limits": rate_limits,
            "key_revocations": key_revocations,
            "workers": workers,
        }

    async def _forward_failure(self, loaded: LoadedModel) -> str | None:
        """Why the loaded model is not fit to serve (its last forwards all failed), or None.

        Past :data:`UNREADY_AFTER_FORWARD_FAILURES` failures in a row, each check runs one
        probe forward (on the forward thread, one at a time): a replica taken out of rotation
        gets no traffic to prove itself with, so readiness must see the recovery itself.
        """
        health = health_of(loaded.model)
        if health.state().consecutive_failures < UNREADY_AFTER_FORWARD_FAILURES:
            return None
        if self._probing.acquire(blocking=False):
            try:
                await asyncio.wait_for(asyncio.to_thread(self._probe_forward, loaded),
                                       timeout=PROBE_FORWARD_S)
            except (TimeoutError, TenetError):
                pass  # still failing: the probe could not run or did not finish in time
            finally:
                self._probing.release()
        state = health.state()
        if state.consecutive_failures < UNREADY_AFTER_FORWARD_FAILURES:
            return None
        return (f"the last {state.consecutive_failures} forward passes failed "
                f"({state.last_error}); each readiness check retries one")

    def _probe_forward(self, loaded: LoadedModel) -> None:
        """One short forward of ``loaded``, its outcome counted in the model's forward health."""
        health = health_of(loaded.model)

        def forward() -> None:
            inputs = loaded.tokenizer("Hello", return_tensors="pt").to(loaded.device)
            try:
                with torch.inference_mode():
                    loaded.model(**inputs)
            except Exception as exc:  # noqa: BLE001 - any failure of the forward is the probe's answer
                health.failed(exc)
                log.warning("the readiness probe forward failed: %s", type(exc).__name__)
            else:
                health.succeeded()

        batcher = self.batcher
        if batcher is not None:
            batcher.run(forward)  # exclusive use of the model, between merged decode steps
        else:
            forward()

    async def close(self) -> None:
        """Stop the forward thread and release the database pool (the model is freed with the process)."""
        with self._reasoner_lock:
            batcher, self.batcher, self._reasoner = self.batcher, None, None
        if batcher is not None:
            await asyncio.to_thread(batcher.close)
        if self.workers is not None:
            # The scheduler has stopped admitting; jobs already with the workers get the grace.
            await asyncio.to_thread(self.workers.close, self.settings.shutdown_grace_s)
            self._workers_stop.set()
        await self.key_limits.close()
        await self.engine.dispose()


def _ray_workers(settings: Settings) -> RayWorkers:
    """The Ray Serve workers the settings describe (not started)."""
    options = RayOptions(
        address=settings.ray_address,
        num_cpus=settings.ray_num_cpus,
        replicas=settings.ray_replicas,
        max_replicas=settings.ray_max_replicas,
        replica_cpus=settings.ray_replica_cpus,
        replica_gpus=settings.ray_replica_gpus,
        max_ongoing=settings.ray_max_ongoing,
        max_queued=settings.ray_max_queued,
        timeout_s=settings.ray_timeout_s,
    )
    config = WorkerConfig(
        model=settings.model,
        device=settings.device,
        weights=settings.weights,
        cache_dir=str(settings.model_cache_dir) if settings.model_cache_dir else None,
        packed=settings.packed_forward,
        kv_cache_bytes=settings.kv_cache_bytes,
        max_new_tokens_cap=settings.max_new_tokens,
        batch_wait_ms=settings.batch_wait_ms,
        prefill_chunk_tokens=settings.prefill_chunk_tokens,
        prefill_slice_ms=settings.prefill_slice_ms,
        torch_threads=max(1, int(settings.ray_replica_cpus)),
    )
    return RayWorkers(options, config)


def _warm_up(loaded: LoadedModel, cache_dir: Path | None) -> None:
    """One short forward pass, the steering's vocabulary tables and the step-boundary table
    (kept on disk under ``cache_dir``, built once per tokenizer) and the NLP pipelines, so the
    first request pays for no lazy initialisation."""
    inputs = loaded.tokenizer("Hello", return_tensors="pt").to(loaded.device)
    with torch.inference_mode():
        loaded.model(**inputs)
    width = int(loaded.model.get_output_embeddings().out_features)
    vocab_tables(loaded.tokenizer, loaded.device, width, cache_dir=cache_dir)
    boundary_table(loaded.tokenizer, width)
    warm_up_nlp()
