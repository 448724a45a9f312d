"""The Ray Serve deployment of Tenet's decoder: one :class:`DecodeWorker` per replica.

Imported only where Ray is installed (the ``ray`` extra). Each replica
builds its worker once (the model loaded and warmed up, its own
micro-batcher and prefix cache) and runs encoded jobs on worker threads, so
up to ``max_ongoing_requests`` decodes of one replica merge their steps in
its micro-batcher. Requests are routed by Ray Serve's consistent-hash router
on the job's affinity key (passed as the handle's ``session_id``), so a
session's jobs reach the replica that holds its prefix.

:func:`build_app` is the application builder a Serve config names
(``import_path: inference.workers.ray_replica:build_app``), e.g. in a
KubeRay ``RayService``; :func:`decoder_deployment` is what
:class:`~inference.workers.ray_serve.RayWorkers` deploys itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from ray import serve
from ray.serve import Application
from ray.serve.deployment import Deployment

from inference.decoder.stream import StepEvent
from inference.workers.replica import DecodeWorker, WorkerConfig

__all__ = [
    "CONSISTENT_HASH_ROUTER",
    "DEPLOYMENT_NAME",
    "DecoderDeployment",
    "build_app",
    "decoder_deployment",
]

DEPLOYMENT_NAME = "tenet-decoder"
#: Ray Serve's consistent-hash request router (session stickiness on ``session_id``).
CONSISTENT_HASH_ROUTER = "ray.serve.experimental.consistent_hash_router:ConsistentHashRouter"
#: Frames of :meth:`DecoderDeployment.decode_stream`: a step, or the encoded reply (last).
STEP, REPLY = "step", "reply"


class DecoderDeployment:
    """One replica: a :class:`DecodeWorker` built from the plain-data config it is bound to."""

    def __init__(self, config: dict[str, Any]) -> None:
        name = serve.get_replica_context().replica_id.unique_id
        self.worker = DecodeWorker(msgspec.convert(config, WorkerConfig), name=name)

    async def decode(self, data: bytes) -> bytes:
        """Run one encoded job; the encoded reply."""
        received = time.perf_counter()
        return await asyncio.to_thread(self.worker.run, data, received=received)

    async def decode_stream(self, data: bytes) -> AsyncIterator[tuple[str, Any]]:
        """Run one encoded job, yielding ``("step", [id, branch, text])`` as steps settle and
        ``("reply", bytes)`` last."""
        loop = asyncio.get_running_loop()
        steps: asyncio.Queue[StepEvent] = asyncio.Queue()

        def on_step(event: StepEvent) -> None:
            loop.call_soon_threadsafe(steps.put_nowait, event)

        received = time.perf_counter()
        work = asyncio.ensure_future(
            asyncio.to_thread(self.worker.run, data, on_step, received=received)
        )
        while not work.done() or not steps.empty():
            getter = asyncio.ensure_future(steps.get())
            done, _ = await asyncio.wait({getter, work}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                event = getter.result()
                yield STEP, [event.id, event.branch, event.text]
            else:
                getter.cancel()
        yield REPLY, await work

    async def describe(self) -> dict[str, Any]:
        """This replica's name, model and prefix-cache counters."""
        stats = self.worker.prefix_cache.stats()
        return {
            "worker": self.worker.name,
            "model_sha256": self.worker.model.identity.sha256,
            "weights": self.worker.model.identity.weights,
            "load_seconds": round(self.worker.load_seconds, 3),
            "prefix_hits": stats.hits,
            "prefix_misses": stats.misses,
        }

    def __del__(self) -> None:
        worker = getattr(self, "worker", None)
        if worker is not None:
            worker.close()


def decoder_deployment(
    *,
    replicas: int,
    max_replicas: int = 0,
    replica_cpus: float = 1.0,
    replica_gpus: float = 0.0,
    max_ongoing: int = 8,
    max_queued: int = 64,
) -> Deployment:
    """The decoder deployment with Tenet's scaling, back-pressure and routing options.

    ``max_replicas`` > ``replicas`` turns on Ray Serve's autoscaling between the
    two, targeting ``max_ongoing`` / 2 ongoing decodes per replica (so a
    replica is added before the busiest ones refuse work).
    """
    options: dict[str, Any] = {
        "name": DEPLOYMENT_NAME,
        "ray_actor_options": {"num_cpus": replica_cpus, "num_gpus": replica_gpus},
        "max_ongoing_requests": max_ongoing,
        "max_queued_requests": max_queued,
        # Strict affinity: a key goes to its ring owner only. Ray's default of two fallback
        # replicas also moves a request when the owner's queue-length probe is not answered
        # within Serve's deadline (0.1 s at first, which a loaded replica misses), so identical
        # requests landed on another replica and missed the prefix the owner held. With none, a
        # busy or slow owner is probed again with a longer deadline and the request waits for
        # it; a dead owner leaves the ring when the controller reports the set without it.
        "request_router_config": {
            "request_router_class": CONSISTENT_HASH_ROUTER,
            "request_router_kwargs": {"num_fallback_replicas": 0},
        },
        "health_check_period_s": 5.0,
    }
    if max_replicas > replicas:
        options["autoscaling_config"] = {
            "min_replicas": replicas,
            "max_replicas": max_replicas,
            "target_ongoing_requests": max(1, max_ongoing // 2),
        }
    else:
        options["num_replicas"] = replicas
    return serve.deployment(**options)(DecoderDeployment)


def build_app(args: dict[str, Any]) -> Application:
    """The Serve application of a config file: ``args`` holds ``worker`` (a :class:`WorkerConfig`
    as a mapping) and the keywords of :func:`decoder_deployment`."""
    args = dict(args)
    worker = args.pop("worker", {})
    return decoder_deployment(**args).bind(
        msgspec.to_builtins(msgspec.convert(worker, WorkerConfig))
    )
