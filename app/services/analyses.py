"""Prompt analyses (stages 1-3) batched across concurrent requests, with bounded waiting.

Why batching: parsing dominates an uncached analysis, and spaCy parses a
batch of prompts (``nlp.pipe``) in about half the CPU time of parsing them one
call at a time. :class:`AnalysisBatcher` therefore collects the analyses
that arrive while a batch is running and hands the next batch to one worker
thread: the batch's English prompts are parsed in one pass
(``parse_english_many``) and each analysis then reuses its parse for
extraction and for domain linking. A request that arrives at an idle batcher
starts a batch of one at once: batching adds no delay, it only takes what
piled up anyway.

Why bounded waiting: a check is worth little once it waits longer than the
caller would have waited for the whole answer. Each request may wait at
most ``max_wait_s`` (its ``X-Tenet-Deadline-S`` when smaller); when the
analyses ahead of it would take longer (their number times the recent mean
cost of one), it is refused at once with :class:`Overloaded`
(429 and ``Retry-After``), like the decode queue's admission. So under
overload the latency of answered requests stays bounded and the refused
clients learn when to come back instead of piling up.

Guarantees: every submitted analysis ends in its result or its own error
(an error in one prompt never fails the others of its batch); at most
``workers`` batches run at once; batches never exceed ``max_batch``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from anyio import CapacityLimiter, to_thread
from spacy.tokens import Doc

from reasoning.constraints.extraction import parse_english_many
from reasoning.errors import Overloaded

__all__ = ["AnalysisBatcher", "BatchStats"]

T = TypeVar("T")

#: Mean cost of one analysis assumed until one was measured (seconds).
_INITIAL_COST_S = 0.006
#: Weight of the newest batch in the running mean cost per analysis.
_EWMA = 0.2


@dataclass
class BatchStats:
    """What the batcher did so far (for tests and diagnostics)."""

    batches: int = 0
    analyses: int = 0
    refused: int = 0
    largest: int = 0


@dataclass
class _Job(Generic[T]):
    prompt: str
    run: Callable[[Doc | None], T]
    future: asyncio.Future[T] = field(repr=False)


class AnalysisBatcher(Generic[T]):
    """Runs ``job(doc)`` callables in batches that share one spaCy pass (see the module doc)."""

    def __init__(self, *, max_batch: int = 16, max_wait_s: float = 0.1, workers: int = 1) -> None:
        if max_batch < 1 or workers < 1 or not max_wait_s > 0:
            raise ValueError("max_batch and workers must be >= 1 and max_wait_s > 0")
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self._limiter = CapacityLimiter(workers)
        self._workers = workers
        self._queue: deque[_Job[T]] = deque()
        self._running = 0
        self._in_flight = 0
        self._cost_s = _INITIAL_COST_S
        self._lock = threading.Lock()
        self.stats = BatchStats()

    @property
    def cost_s(self) -> float:
        """The running mean wall time per analysis of a batch's whole cycle (seconds):
        hand-over, parse, analyses and the hand-back, under whatever else holds the GIL."""
        return self._cost_s

    def predicted_wait_s(self) -> float:
        """How long a request submitted now would wait for its answer (queued and running work)."""
        ahead = len(self._queue) + self._in_flight
        return (ahead + 1) * self._cost_s / self._workers

    async def submit(
        self, prompt: str, run: Callable[[Doc | None], T], *, deadline_s: float | None = None
    ) -> T:
        """``run(doc)`` with ``doc`` the English parse of ``prompt`` from a shared batch
        (None when the prompt has no English to parse, or is over a limit: ``run``
        then parses, or raises, as extraction does alone).

        Raises:
            Overloaded: the predicted wait exceeds ``min(max_wait_s, deadline_s)``.
        """
        limit = self.max_wait_s if deadline_s is None else min(self.max_wait_s, deadline_s)
        predicted = self.predicted_wait_s()
        if predicted > limit and (self._queue or self._in_flight):
            self.stats.refused += 1
            raise Overloaded(
                f"prompt checks would wait about {predicted * 1000:.0f} ms; the limit is {limit * 1000:.0f} ms",
                retry_after_s=1.0,
                reason="analysis_queue_full",
                queued=len(self._queue),
            )
        loop = asyncio.get_running_loop()
        job = _Job(prompt=prompt, run=run, future=loop.create_future())
        self._queue.append(job)
        if self._running < self._workers:
            self._running += 1
            loop.create_task(self._drain())
        return await asyncio.shield(job.future)

    async def _drain(self) -> None:
        """Run batches until the queue is empty (one of at most ``workers`` such loops)."""
        try:
            while self._queue:
                batch = [
                    self._queue.popleft() for _ in range(min(self.max_batch, len(self._queue)))
                ]
                self._in_flight += len(batch)
                started = time.perf_counter()
                try:
                    outcomes = await to_thread.run_sync(
                        self._run_batch, batch, limiter=self._limiter
                    )
                except BaseException:  # cancelled (shutdown): no job may wait for ever
                    for job in (*batch, *self._queue):
                        if not job.future.done():
                            job.future.set_exception(
                                Overloaded("the service is shutting down", retry_after_s=5.0)
                            )
                    self._queue.clear()
                    raise
                finally:
                    self._in_flight -= len(batch)
                for job, outcome in zip(batch, outcomes):
                    if job.future.done():
                        continue
                    if isinstance(outcome, BaseException):
                        job.future.set_exception(outcome)
                    else:
                        job.future.set_result(outcome)
                # Let the answered handlers write their responses before the next batch
                # takes the GIL; the cycle, hand-overs included, is the cost measured.
                await asyncio.sleep(0)
                self._measured(len(batch), time.perf_counter() - started)
        finally:
            self._running -= 1

    def _measured(self, size: int, seconds: float) -> None:
        with self._lock:
            self._cost_s = (1 - _EWMA) * self._cost_s + _EWMA * seconds / size
            self.stats.batches += 1
            self.stats.analyses += size
            self.stats.largest = max(self.stats.largest, size)

    def _run_batch(self, batch: Sequence[_Job[T]]) -> list[T | BaseException]:
        try:
            docs: Sequence[Doc | None] = parse_english_many([job.prompt for job in batch])
        except Exception:  # noqa: BLE001 - each prompt is parsed alone then: one bad prompt must not fail the batch
            docs = [None] * len(batch)
        outcomes: list[T | BaseException] = []
        for job, doc in zip(batch, docs):
            try:
                outcomes.append(job.run(doc))
            except Exception as exc:  # noqa: BLE001 - the error is the job's own result, raised to its caller
                outcomes.append(exc)
        return outcomes
