"""Decode jobs on Ray Serve model workers: the client the run service hands its jobs to.

:class:`RayWorkers` joins a Ray cluster (``address``) or starts a local one
(``num_cpus``), starts Serve without its HTTP proxy (Tenet talks to its
workers through a deployment handle; the proxy would take port 8000), and
attaches to the decoder application, deploying it when it is not running.
Each :meth:`RayWorkers.submit` sends one encoded
:class:`~inference.workers.job.DecodeJob` through the handle, routed by the
job's affinity key, and maps what can go wrong to Tenet's errors:

- the workers refuse more work (Ray Serve's ``BackPressureError``: the
  handle's queue of ``max_queued`` is full): :class:`Overloaded`, which the
  API answers with 429 and ``Retry-After``;
- the replica died mid-decode (killed, out of memory, its node lost): the
  job is sent once more (the router no longer picks the dead replica); a
  second failure, or no answer within ``timeout_s``, or an unreachable
  cluster: :class:`Unavailable` with ``retry_after_s`` (503 and
  ``Retry-After``). A failed job returns no result, so the caller records
  nothing for it;
- an error of Tenet's own raised by the decode (a limit, say): re-raised as it is.

Ray is imported only here and in :mod:`inference.workers.ray_replica`, and
only when the workers start (the ``ray`` extra).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from inference.decoder.stream import StepEvent
from inference.pipeline import ReasonResult
from inference.workers.job import DecodeJob, WorkerReply, pack_job, unpack_reply
from inference.workers.replica import WorkerConfig
from reasoning.errors import Overloaded, TenetError, Unavailable

__all__ = ["RayOptions", "RayWorkers", "WorkerRun"]

log = logging.getLogger("tenet.workers")

APP_NAME = "tenet-workers"
#: What a refused or failed request is told to wait before retrying (seconds).
BUSY_RETRY_S = 1.0
DOWN_RETRY_S = 5.0
#: Hops kept for :meth:`RayWorkers.hop_samples`.
_HOPS_KEPT = 4096


@dataclass(frozen=True)
class RayOptions:
    """Where the workers run and how they scale (``TENET_RAY_*``)."""

    address: str = ""
    num_cpus: int = 2
    replicas: int = 2
    max_replicas: int = 0
    replica_cpus: float = 1.0
    replica_gpus: float = 0.0
    max_ongoing: int = 8
    max_queued: int = 64
    timeout_s: float = 120.0
    app_name: str = APP_NAME


@dataclass(frozen=True)
class WorkerRun:
    """A decoded job: its result, the replica that decoded it and the hop's cost in ms."""

    result: ReasonResult
    worker: str
    hop_ms: float
    attempts: int


class RayWorkers:
    """The handle to the decoder deployment; thread-safe, usable from any event loop."""

    def __init__(self, options: RayOptions, config: WorkerConfig) -> None:
        self.options = options
        self.config = config
        self._handle: Any = None
        self._error: str | None = None
        self._started_cluster = False
        self._deployed = False
        self._lock = threading.Lock()
        self._hops: deque[float] = deque(maxlen=_HOPS_KEPT)
        self._in_flight = 0
        self._probing = threading.Lock()

    @property
    def in_flight(self) -> int:
        """Jobs this process has sent to the workers and not yet had answered."""
        return self._in_flight

    @property
    def state(self) -> str:
        """``ready``, ``starting`` or ``failed: <why>``."""
        if self._handle is not None:
            return "ready"
        return f"failed: {self._error}" if self._error else "starting"

    def start(self, config: WorkerConfig | None = None) -> None:
        """Join or start the cluster and attach to (or deploy) the decoder; blocks until it is ready.

        ``config`` replaces the worker config given at construction (the API
        passes the weight format its own model resolved). A local cluster's
        processes are tied to the calling thread (Ray starts them with a
        parent-death signal): call this from a thread that outlives the
        workers, up to :meth:`close`.

        Raises:
            Unavailable: Ray is not installed, the cluster cannot be reached or the deployment failed.
        """
        with self._lock:
            if self._handle is not None:
                return
            if config is not None:
                self.config = config
            try:
                self._handle = self._connect()
                self._error = None
            except Exception as exc:
                self._error = f"{type(exc).__name__}: {exc}"
                log.exception("the Ray model workers did not start")
                raise Unavailable(f"the model workers did not start: {self._error}") from exc

    def _connect(self) -> Any:
        try:
            import ray
            from ray import serve
            from ray.serve.exceptions import RayServeException
        except ImportError as exc:
            raise Unavailable(
                "TENET_WORKERS=ray needs the ray extra (pip install 'tenet[ray]')"
            ) from exc
        from inference.workers.ray_replica import decoder_deployment

        opts = self.options
        if opts.address:
            _probe_head(opts.address)
        if not ray.is_initialized():
            if opts.address:
                ray.init(address=opts.address, log_to_driver=False, configure_logging=False)
            else:
                # A cluster of this process's own, never someone else's found on the machine.
                ray.init(
                    address="local",
                    num_cpus=opts.num_cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
                self._started_cluster = True
        serve.start(proxy_location="Disabled")
        if opts.address:
            try:
                handle = serve.get_app_handle(opts.app_name)
                log.info("attached to the running model workers %r", opts.app_name)
                return handle
            except RayServeException:  # no application of that name yet
                log.info("no running model workers %r: deploying them", opts.app_name)
        deployment = decoder_deployment(
            replicas=opts.replicas,
            max_replicas=opts.max_replicas,
            replica_cpus=opts.replica_cpus,
            replica_gpus=opts.replica_gpus,
            max_ongoing=opts.max_ongoing,
            max_queued=opts.max_queued,
        )
        started = time.perf_counter()
        handle = serve.run(
            deployment.bind(msgspec.to_builtins(self.config)), name=opts.app_name, route_prefix=None
        )
        self._deployed = True
        log.info("model workers %r ready in %.1f s", opts.app_name, time.perf_counter() - started)
        return handle

    def _ready_handle(self) -> Any:
        if self._handle is None:
            raise Unavailable(
                f"the model workers are not available ({self.state})", retry_after_s=DOWN_RETRY_S
            )
        return self._handle

    async def submit(
        self, job: DecodeJob, *, on_step: Callable[[StepEvent], None] | None = None
    ) -> WorkerRun:
        """Decode ``job`` on a worker replica (module docstring: routing, errors, the one retry).

        ``on_step`` hears the steps as the replica settles them (called on
        the caller's event loop). A job whose steps were already streamed is
        not retried (the listener would hear them twice): it fails with 503.

        Raises:
            Overloaded: the workers refuse more work now.
            Unavailable: no worker could decode the job (see the module).
            TenetError: the decode's own error.
        """
        handle = self._ready_handle().options(session_id=job.affinity)
        data = pack_job(job)
        self._in_flight += 1
        try:
            return await self._submit(handle, job, data, on_step)
        finally:
            self._in_flight -= 1

    async def _submit(
        self, handle: Any, job: DecodeJob, data: bytes, on_step: Callable[[StepEvent], None] | None
    ) -> WorkerRun:
        from ray.exceptions import RayActorError, RayError, RayTaskError
        from ray.serve.exceptions import (
            BackPressureError,
            DeploymentUnavailableError,
            ReplicaUnavailableError,
        )

        last: BaseException | None = None
        for attempt in (1, 2):
            streamed = [False]
            started = time.perf_counter()
            try:
                async with asyncio.timeout(self.options.timeout_s):
                    if on_step is None:
                        raw = await handle.decode.remote(data)
                    else:
                        raw = await self._streamed(handle, data, on_step, streamed)
            except BackPressureError as exc:
                raise Overloaded(
                    "the model workers are at capacity; retry shortly", retry_after_s=BUSY_RETRY_S
                ) from exc
            except RayTaskError as exc:
                if isinstance(exc.cause, TenetError):
                    raise exc.cause from None
                if isinstance(exc.cause, RayActorError):
                    last = exc
                    continue
                raise
            except (RayActorError, ReplicaUnavailableError) as exc:
                last = exc
                log.warning(
                    "model worker lost mid-decode (attempt %d): %s", attempt, type(exc).__name__
                )
                if streamed[0]:
                    break
                continue
            except TimeoutError as exc:
                raise Unavailable(
                    f"no model worker answered within {self.options.timeout_s:g} s",
                    retry_after_s=DOWN_RETRY_S,
                ) from exc
            except (DeploymentUnavailableError, RayError) as exc:
                raise Unavailable(
                    f"the model workers are unreachable: {type(exc).__name__}",
                    retry_after_s=DOWN_RETRY_S,
                ) from exc
            reply = unpack_reply(raw)
            return self._accepted(job, reply, started, attempt)
        raise Unavailable(
            "a model worker failed while decoding the run; nothing was recorded, retry",
            retry_after_s=DOWN_RETRY_S,
            cause=type(last).__name__ if last is not None else "unknown",
        )

    async def _streamed(
        self, handle: Any, data: bytes, on_step: Callable[[StepEvent], None], streamed: list[bool]
    ) -> bytes:
        from inference.workers.ray_replica import REPLY, STEP

        raw: bytes | None = None
        async for kind, payload in handle.options(stream=True).decode_stream.remote(data):
            if kind == STEP:
                streamed[0] = True
                on_step(StepEvent(id=payload[0], branch=payload[1], text=payload[2]))
            elif kind == REPLY:
                raw = payload
        if raw is None:
            raise Unavailable(
                "the model worker's stream ended without a result", retry_after_s=DOWN_RETRY_S
            )
        return raw

    def _accepted(
        self, job: DecodeJob, reply: WorkerReply, started: float, attempt: int
    ) -> WorkerRun:
        wall_ms = (time.perf_counter() - started) * 1000
        if job.model_sha256 and reply.model_sha256 != job.model_sha256:
            raise Unavailable("a model worker answered with another model than the run records")
        hop = round(max(0.0, wall_ms - reply.busy_ms), 3)
        self._hops.append(hop)
        return WorkerRun(result=reply.result, worker=reply.worker, hop_ms=hop, attempts=attempt)

    def hop_samples(self) -> tuple[float, ...]:
        """The latest hops' costs in ms (round trip minus the replica's own time), oldest first."""
        return tuple(self._hops)

    async def describe(self, timeout_s: float = 2.0, affinity: str = "probe") -> dict[str, Any]:
        """The description of the replica ``affinity`` routes to (a job's
        :attr:`~inference.workers.job.DecodeJob.affinity` reaches the same one).

        Raises:
            Unavailable: no replica answered within ``timeout_s``.
        """
        handle = self._ready_handle().options(session_id=affinity)
        try:
            async with asyncio.timeout(timeout_s):
                described: dict[str, Any] = await handle.describe.remote()
                return described
        except Exception as exc:
            raise Unavailable(
                f"the model workers are unreachable: {type(exc).__name__}",
                retry_after_s=DOWN_RETRY_S,
            ) from exc

    async def readiness(self, timeout_s: float = 2.0) -> str:
        """``ok`` while the cluster answers within ``timeout_s`` and at least one decoder replica
        runs; else why not (for ``/readyz``).

        The check asks Serve's controller for the application's status rather
        than sending a request, so busy replicas (and a full queue) do not
        make the API look unready. One check runs at a time: while an earlier
        one has not returned (a cluster that stopped answering), the next
        reports the cluster unreachable at once.
        """
        if self._handle is None:
            return self.state
        if not self._probing.acquire(blocking=False):
            return "unreachable: the Ray cluster has not answered the previous check"
        probe = asyncio.ensure_future(asyncio.to_thread(self._running_replicas))
        probe.add_done_callback(lambda _: self._probing.release())
        try:
            running = await asyncio.wait_for(asyncio.shield(probe), timeout_s)
        except TimeoutError:
            return f"unreachable: the Ray cluster did not answer within {timeout_s:g} s"
        except Exception as exc:  # noqa: BLE001 - any failure to reach the controller is the answer
            return f"unreachable: {type(exc).__name__}"
        return "ok" if running else "no running decoder replica"

    def _running_replicas(self) -> int:
        """Replicas of the decoder application in state RUNNING (Serve's controller's view)."""
        import ray
        from ray import serve

        if not ray.is_initialized():  # serve.status() would start a cluster of its own
            return 0
        app = serve.status().applications.get(self.options.app_name)
        if app is None:
            return 0
        return sum(
            count
            for deployment in app.deployments.values()
            for state, count in deployment.replica_states.items()
            if state == "RUNNING"
        )

    def close(self, drain_s: float = 0.0) -> None:
        """Stop the local cluster this process started, once its jobs in flight have been
        answered (waiting at most ``drain_s``); workers on a cluster this process joined are
        left running for the other API replicas.
        """
        deadline = time.monotonic() + drain_s
        while self._in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        with self._lock:
            handle, self._handle = self._handle, None
            if handle is None or not self._started_cluster:
                return
            try:
                import ray
                from ray import serve

                serve.shutdown()  # type: ignore[no-untyped-call]
                ray.shutdown()
            except Exception:
                log.exception("stopping the local Ray cluster failed")


def _probe_head(address: str, timeout_s: float = 3.0) -> None:
    """Fail fast when a ``host:port`` (or ``ray://host:port``) head does not accept connections:
    ``ray.init`` would retry an unreachable head for minutes.

    Raises:
        Unavailable: nothing listens at the address.
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" or a name Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise Unavailable(
            f"the Ray head at {address} is unreachable ({exc.strerror or exc})"
        ) from exc
