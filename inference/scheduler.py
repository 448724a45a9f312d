"""The model's request queue: worker threads, priority classes and admission control.

Every decode of the one model goes through :class:`Scheduler`: up to
``concurrency`` worker threads take jobs from a bounded priority queue
(``interactive`` before ``batch``, FIFO within a class) and run them side by
side; the decodes they run share the model's forward passes through the
runtime's :class:`~inference.decoder.microbatch.MicroBatcher` (cross-request
micro-batching), so ``concurrency`` is the most requests merged into one
forward. Admission is decided once, when a job is submitted:

- the service is shutting down: :class:`ShuttingDown` (with ``retry_after_s``);
- the queue already holds ``max_queue`` waiting jobs: :class:`Overloaded`
  (reason ``queue_full``);
- the predicted wait exceeds the job's deadline: :class:`Overloaded`
  (reason ``deadline``).

The predicted wait is counted in tokens, not in requests: each job carries
its size (prompt tokens plus new tokens, given to :meth:`Scheduler.submit`),
and the scheduler keeps exponentially weighted estimates of the mean and
standard deviation of the seconds a job takes per token, measured at the
concurrency the service runs at. A new job starts when a worker is free:
the running jobs free theirs after their predicted seconds (less those they
have run), and the jobs queued ahead of it (at its priority or higher) take
the workers that free first, in queue order. The prediction is when a worker
frees for the new job plus three standard deviations of that worker's
chain: a p99-style bound that refuses at once instead of timing out. So one
long prompt makes the prediction longer for what queues behind it by its own
tokens only, not every later request by a per-request mean it inflated. A
job of unknown size counts as one of the mean size seen (one token before
any). Before the first job has finished the estimate is zero and only the
queue bound applies.

An accepted job is never dropped: it runs to completion on the worker even
when the awaiting request is cancelled (client gone), and a graceful
shutdown waits for the queue to drain.

Each job's priority and deadline arrive as :class:`JobHints`, an argument of
:meth:`Scheduler.check` and :meth:`Scheduler.submit` (the HTTP layer reads
them from request headers). What the scheduler counts (refusals, queue
depth, queue wait) is reported to a :class:`SchedulerObserver`, so the
service can export it without this module knowing about metrics or HTTP.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from reasoning.errors import InvalidInput, Overloaded

__all__ = [
    "JobHints",
    "LatencyEstimate",
    "Priority",
    "Scheduler",
    "SchedulerObserver",
    "SchedulerStats",
    "ShuttingDown",
]

T = TypeVar("T")


class Priority(StrEnum):
    """Priority classes, highest first."""

    INTERACTIVE = "interactive"
    BATCH = "batch"

    @property
    def rank(self) -> int:
        """Heap order: lower runs first."""
        return 0 if self is Priority.INTERACTIVE else 1


class ShuttingDown(Overloaded):
    """The service is draining for shutdown; retry on another instance or after restart."""


@dataclass(frozen=True)
class JobHints:
    """How one job asks to be scheduled; ``deadline_s`` None means the scheduler's default."""

    priority: Priority = Priority.INTERACTIVE
    deadline_s: float | None = None


class SchedulerObserver(Protocol):
    """What the scheduler reports as it admits, queues and starts jobs (called under its lock:
    implementations must be quick and must not call back into the scheduler)."""

    def refused(self, reason: str) -> None:
        """A job was refused (``queue_full``, ``deadline`` or ``shutting_down``)."""

    def queued(self, priority: Priority, delta: int) -> None:
        """The number of waiting jobs of ``priority`` changed by ``delta``."""

    def started(self, priority: Priority, waited_s: float) -> None:
        """A job of ``priority`` started after waiting ``waited_s`` seconds in the queue."""


class _Unobserved:
    """The observer of a scheduler nobody watches."""

    def refused(self, reason: str) -> None:
        return None

    def queued(self, priority: Priority, delta: int) -> None:
        return None

    def started(self, priority: Priority, waited_s: float) -> None:
        return None


class LatencyEstimate:
    """Exponentially weighted mean and standard deviation of job seconds (thread-safe).

    ``alpha`` is the weight of the newest observation. The first observation
    sets the mean; the variance follows the standard EW update
    ``var = (1 - a) * (var + a * (x - mean_old) ** 2)``.
    """

    def __init__(self, alpha: float = 0.2) -> None:
        if not 0 < alpha <= 1:
            raise InvalidInput("alpha must be in (0, 1]", field="alpha")
        self.alpha = alpha
        self._mean = 0.0
        self._var = 0.0
        self._count = 0
        self._lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        with self._lock:
            if self._count == 0:
                self._mean, self._var = seconds, 0.0
            else:
                delta = seconds - self._mean
                self._mean += self.alpha * delta
                self._var = (1 - self.alpha) * (self._var + self.alpha * delta * delta)
            self._count += 1

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def std(self) -> float:
        return math.sqrt(self._var)

    @property
    def count(self) -> int:
        return self._count

    @property
    def p99(self) -> float:
        """The p99 estimate of one job: mean + 3 std."""
        return self._mean + 3 * self.std

    def wait_for(self, jobs_ahead: int) -> float:
        """Predicted p99 wait behind ``jobs_ahead`` jobs: ``n * mean + 3 * std * sqrt(n)``."""
        if jobs_ahead <= 0:
            return 0.0
        with self._lock:
            return jobs_ahead * self._mean + 3 * math.sqrt(self._var) * math.sqrt(jobs_ahead)


@dataclass(frozen=True)
class SchedulerStats:
    """A snapshot for diagnostics and ``/metrics``."""

    queued_interactive: int
    queued_batch: int
    running: int
    max_queue: int
    max_batch: int
    accepted: int
    completed: int
    refused: dict[str, int]
    job_mean_s: float  # a job of the mean size
    job_p99_s: float
    closing: bool
    paused: bool
    seconds_per_token: float = 0.0
    mean_job_tokens: float = 1.0


@dataclass
class _Job:
    fn: Callable[[], Any]
    priority: Priority
    enqueued: float
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    tokens: int | None = None  # prompt + new tokens; None: unknown
    started: float = 0.0


class Scheduler:
    """Worker threads running submitted jobs side by side, highest priority first."""

    def __init__(
        self,
        *,
        max_queue: int,
        default_deadline_s: float,
        concurrency: int = 1,
        estimate: LatencyEstimate | None = None,
        observer: SchedulerObserver | None = None,
    ) -> None:
        if max_queue < 1:
            raise InvalidInput("max_queue must be at least 1", field="max_queue")
        if concurrency < 1:
            raise InvalidInput("concurrency must be at least 1", field="concurrency")
        self.max_queue = max_queue
        self.max_batch = concurrency
        self.default_deadline_s = default_deadline_s
        self.estimate = estimate or LatencyEstimate()
        self.observer: SchedulerObserver = observer or _Unobserved()
        self._cond = threading.Condition()
        self._heap: list[tuple[int, int, _Job]] = []
        self._seq = itertools.count()
        self._running = 0
        self._active: list[_Job] = []  # running jobs
        self._mean_tokens = 1.0  # EW mean size of the jobs seen (tokens)
        self._sized = 0  # jobs of known size finished
        self._paused = False
        self._closing = False
        self._stopped = False
        self._accepted = 0
        self._completed = 0
        self._refused: dict[str, int] = {}
        self._threads: list[threading.Thread] = []

    # --- admission ---------------------------------------------------------------

    def _tokens(self, job: _Job) -> float:
        return float(job.tokens) if job.tokens is not None else self._mean_tokens

    def _predicted_wait(self, priority: Priority) -> float:
        """Seconds before a new job at ``priority`` starts, p99-style (module docstring)."""
        ahead = [job for rank, _, job in sorted(self._heap, key=lambda e: (e[0], e[1])) if rank <= priority.rank]
        if len(ahead) + len(self._active) < self.max_batch:
            return 0.0
        mean, std = self.estimate.mean, self.estimate.std
        now = time.perf_counter()
        # Per worker: (mean seconds until it is free, variance of that).
        workers = [
            (max(0.0, mean * self._tokens(job) - (now - job.started)), (std * self._tokens(job)) ** 2)
            for job in self._active
        ]
        workers += [(0.0, 0.0)] * max(0, self.max_batch - len(workers))
        heapq.heapify(workers)
        for job in ahead:
            free, var = heapq.heappop(workers)
            size = self._tokens(job)
            heapq.heappush(workers, (free + mean * size, var + (std * size) ** 2))
        free, var = workers[0]
        return free + 3 * math.sqrt(var)

    def _refuse(self, reason: str, exc: Overloaded) -> Overloaded:
        self._refused[reason] = self._refused.get(reason, 0) + 1
        self.observer.refused(reason)
        return exc

    def _admit_locked(self, hints: JobHints) -> None:
        """Raise the refusal for ``hints`` now, or return when the job may queue."""
        if self._closing:
            raise self._refuse(
                "shutting_down",
                ShuttingDown("the service is shutting down; retry shortly", retry_after_s=5.0),
            )
        predicted = self._predicted_wait(hints.priority)
        if len(self._heap) >= self.max_queue:
            retry = max(1.0, predicted)
            raise self._refuse(
                "queue_full",
                Overloaded(
                    f"the model queue is full ({self.max_queue} waiting); retry later",
                    retry_after_s=retry, reason="queue_full", queued=len(self._heap),
                ),
            )
        deadline = hints.deadline_s if hints.deadline_s is not None else self.default_deadline_s
        if predicted > deadline:
            raise self._refuse(
                "deadline",
                Overloaded(
                    f"predicted wait {predicted:.1f} s exceeds the deadline of {deadline:g} s",
                    retry_after_s=max(1.0, predicted - deadline),
                    reason="deadline", predicted_wait_s=round(predicted, 3), deadline_s=deadline,
                ),
            )

    def check(self, hints: JobHints) -> None:
        """Refuse early (before planning) what :meth:`submit` would refuse now."""
        with self._cond:
            self._admit_locked(hints)

    async def submit(self, fn: Callable[[], T], hints: JobHints, tokens: int | None = None) -> T:
        """Queue ``fn`` for the worker and await its result (or its exception).

        ``tokens`` is the job's size (prompt tokens plus new tokens), which
        the wait predictions count; None: unknown (a job of the mean size).
        Raises :class:`Overloaded` / :class:`ShuttingDown` at once when refused.
        Once accepted the job runs to completion even if this coroutine is
        cancelled.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._cond:
            self._admit_locked(hints)
            job = _Job(fn=fn, priority=hints.priority, enqueued=time.perf_counter(), loop=loop, future=future,
                       tokens=tokens if tokens is None else max(1, tokens))
            heapq.heappush(self._heap, (hints.priority.rank, next(self._seq), job))
            self._accepted += 1
            self.observer.queued(hints.priority, 1)
            self._ensure_worker()
            self._cond.notify_all()
        return await asyncio.shield(future)

    # --- the worker --------------------------------------------------------------

    def _ensure_worker(self) -> None:
        self._threads = [t for t in self._threads if t.is_alive()]
        while len(self._threads) < self.max_batch:
            self._stopped = False
            thread = threading.Thread(
                target=self._work, name=f"tenet-model-worker-{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _next_job(self) -> _Job | None:
        with self._cond:
            while not self._heap or self._paused:
                if self._stopped and not self._heap:
                    return None
                self._cond.wait()
            _, _, job = heapq.heappop(self._heap)
            self._running += 1
            job.started = time.perf_counter()
            self._active.append(job)
            self.observer.queued(job.priority, -1)
            return job

    def _work(self) -> None:
        while (job := self._next_job()) is not None:
            started = job.started
            self.observer.started(job.priority, started - job.enqueued)
            outcome: tuple[bool, Any]
            try:
                outcome = (True, job.fn())
            except Exception as exc:  # noqa: BLE001 - delivered to the awaiting request
                outcome = (False, exc)
            with self._cond:
                size = self._tokens(job)
                self.estimate.observe((time.perf_counter() - started) / size)
                if job.tokens is not None:
                    weight = self.estimate.alpha if self._sized else 1.0
                    self._mean_tokens += weight * (job.tokens - self._mean_tokens)
                    self._sized += 1
                self._active.remove(job)
                self._running -= 1
                self._completed += 1
                self._cond.notify_all()
            try:
                job.loop.call_soon_threadsafe(_settle, job.future, outcome)
            except RuntimeError:  # the loop has closed: nobody awaits the result any more
                pass

    # --- control -----------------------------------------------------------------

    def pause(self) -> None:
        """Hold the worker before its next job (maintenance, tests of queue order)."""
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def open(self) -> None:
        """Accept jobs again (start-up; a closed scheduler reopens)."""
        with self._cond:
            self._closing = False
            self._stopped = False

    def close(self) -> None:
        """Stop accepting: every later submit gets :class:`ShuttingDown` (503)."""
        with self._cond:
            self._closing = True

    async def drain(self, timeout_s: float) -> bool:
        """Close, resume and wait up to ``timeout_s`` for queued and running jobs; True when idle."""
        self.close()
        self.resume()
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            with self._cond:
                if not self._heap and not self._running:
                    self._stopped = True
                    self._cond.notify_all()
                    return True
            await asyncio.sleep(0.02)
        return False

    def stats(self) -> SchedulerStats:
        with self._cond:
            return SchedulerStats(
                queued_interactive=sum(1 for r, _, _ in self._heap if r == Priority.INTERACTIVE.rank),
                queued_batch=sum(1 for r, _, _ in self._heap if r == Priority.BATCH.rank),
                running=self._running,
                max_queue=self.max_queue,
                max_batch=self.max_batch,
                accepted=self._accepted,
                completed=self._completed,
                refused=dict(self._refused),
                job_mean_s=self.estimate.mean * self._mean_tokens,
                job_p99_s=self.estimate.p99 * self._mean_tokens,
                seconds_per_token=self.estimate.mean,
                mean_job_tokens=self._mean_tokens,
                closing=self._closing,
                paused=self._paused,
            )


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
