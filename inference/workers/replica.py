"""One model worker: the model loaded once, its own micro-batcher and prefix cache.

A :class:`DecodeWorker` is what a Ray Serve replica runs (see
:mod:`inference.workers.ray_serve`), but it knows nothing of Ray: it is built
from a :class:`WorkerConfig` (plain data, so the API can ship it to a
cluster), loads and warms up the model in its constructor, and runs encoded
:class:`~inference.workers.job.DecodeJob` s with
:func:`~inference.workers.job.execute`, the call the in-process decode makes.
Concurrent jobs on one worker decode on their own threads and their model
steps are merged by the worker's :class:`~inference.decoder.microbatch.MicroBatcher`.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import torch

from inference.decoder.microbatch import MicroBatcher
from inference.decoder.runner import ModelRunner
from inference.decoder.stream import StepEvent
from inference.decoder.vocab import vocab_tables
from inference.loader import LoadedModel, load_model
from inference.pipeline import Reasoner
from inference.prefix_cache import PrefixCache
from inference.workers.job import WorkerReply, execute, pack_reply, unpack_job
from reasoning.errors import Unavailable

__all__ = ["DecodeWorker", "WorkerConfig"]

#: Most rows (beams of all merged decodes) in one forward pass of a worker.
MAX_BATCH_ROWS = 64


class WorkerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How a worker loads its model and bounds its decodes (the API's settings, as plain data).

    ``weights`` should be the format the API resolved (not ``auto``) so that
    every worker decodes in the same precision as the API would.
    ``torch_threads`` > 0 sets the worker's intra-op threads (one per
    reserved CPU, so replicas on one node do not oversubscribe it).
    """

    model: str = "bundled"
    device: str = "auto"
    weights: str = "float32"
    cache_dir: str | None = None
    packed: bool = True
    kv_cache_bytes: int = 256 * 1024 * 1024
    max_new_tokens_cap: int = 256
    batch_wait_ms: float = 150.0
    prefill_chunk_tokens: int = 512
    prefill_slice_ms: float = 250.0
    torch_threads: int = 0


class DecodeWorker:
    """A loaded model and its reasoner; thread-safe (jobs run on the caller's threads)."""

    def __init__(self, config: WorkerConfig, *, name: str = "") -> None:
        if config.torch_threads > 0:
            torch.set_num_threads(config.torch_threads)
        self.config = config
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        started = time.perf_counter()
        self.model: LoadedModel = load_model(
            config.model,
            device=config.device,
            cache_root=Path(config.cache_dir) if config.cache_dir else None,
            packed=config.packed,
            weights=config.weights,
        )
        _warm_up(self.model, Path(config.cache_dir) if config.cache_dir else None)
        self.load_seconds = time.perf_counter() - started
        self.prefix_cache = PrefixCache(max_bytes=config.kv_cache_bytes)
        self.batcher = MicroBatcher(
            self.model.model,
            ModelRunner(self.model.model).call,
            max_rows=MAX_BATCH_ROWS,
            max_wait_s=config.batch_wait_ms / 1000,
            prefill_chunk=config.prefill_chunk_tokens,
            prefill_slice_s=config.prefill_slice_ms / 1000,
        )
        self.reasoner = Reasoner(
            model=self.model,
            prefix_cache=self.prefix_cache,
            batcher=self.batcher,
            max_new_tokens_cap=config.max_new_tokens_cap,
        )
        self._closed = threading.Event()

    def run(
        self,
        data: bytes,
        on_step: Callable[[StepEvent], None] | None = None,
        *,
        received: float | None = None,
    ) -> bytes:
        """Decode one encoded job and return the encoded :class:`WorkerReply`.

        ``received`` (``time.perf_counter()``) is when the job reached this
        worker's process, if earlier than this call (the hand-over to the
        decoding thread is the worker's time, as it is in the API process).

        Raises:
            Unavailable: the job names another model than this worker's, or the worker is closed.
            TenetError: what the decode raises for the job (as in the API process).
        """
        if self._closed.is_set():
            raise Unavailable("this model worker is shutting down")
        received = time.perf_counter() if received is None else received
        job = unpack_job(data)
        sha = self.model.identity.sha256
        if job.model_sha256 and job.model_sha256 != sha:
            raise Unavailable(
                f"the worker's model ({sha[:12]}) is not the one the run records ({job.model_sha256[:12]})"
            )
        result = execute(self.reasoner, job, on_step)
        stats = self.prefix_cache.stats()
        reply = WorkerReply(
            result=result,
            busy_ms=round((time.perf_counter() - received) * 1000, 3),
            worker=self.name,
            model_sha256=sha,
            prefix_hits=stats.hits,
            prefix_misses=stats.misses,
        )
        return pack_reply(reply)

    def close(self) -> None:
        """Stop the forward thread; later jobs are refused."""
        self._closed.set()
        self.batcher.close()


def _warm_up(loaded: LoadedModel, cache_dir: Path | None) -> None:
    """One short forward pass and the steering's vocabulary tables (kept on disk under
    ``cache_dir``), so the first job pays for no lazy initialisation."""
    inputs = loaded.tokenizer("Hello", return_tensors="pt").to(loaded.device)
    with torch.inference_mode():
        loaded.model(**inputs)
    vocab_tables(
        loaded.tokenizer,
        loaded.device,
        int(loaded.model.get_output_embeddings().out_features),
        cache_dir=cache_dir,
    )
