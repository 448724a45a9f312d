"""The model worker's queue: priority order, admission control, cancellation and shutdown."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from inference.scheduler import (
    JobHints,
    LatencyEstimate,
    Priority,
    Scheduler,
    ShuttingDown,
)
from reasoning.errors import InvalidInput, Overloaded

INTERACTIVE = JobHints(Priority.INTERACTIVE)
BATCH = JobHints(Priority.BATCH)


def scheduler(max_queue: int = 8, deadline_s: float = 60.0) -> Scheduler:
    return Scheduler(max_queue=max_queue, default_deadline_s=deadline_s)


async def wait_until_queued(s: Scheduler, count: int) -> None:
    for _ in range(400):
        stats = s.stats()
        if stats.queued_interactive + stats.queued_batch >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{count} jobs never queued: {s.stats()}")


async def test_interactive_overtakes_queued_batch_and_fifo_within_a_class() -> None:
    s = scheduler()
    s.pause()
    order: list[str] = []

    def job(name: str) -> str:
        order.append(name)
        return name

    tasks = [
        asyncio.create_task(s.submit(lambda: job("batch-1"), BATCH)),
        asyncio.create_task(s.submit(lambda: job("batch-2"), BATCH)),
        asyncio.create_task(s.submit(lambda: job("interactive-1"), INTERACTIVE)),
        asyncio.create_task(s.submit(lambda: job("interactive-2"), INTERACTIVE)),
    ]
    await wait_until_queued(s, 4)
    assert s.stats().queued_batch == 2 and s.stats().queued_interactive == 2
    s.resume()
    results = await asyncio.gather(*tasks)
    assert order == ["interactive-1", "interactive-2", "batch-1", "batch-2"]
    assert results == ["batch-1", "batch-2", "interactive-1", "interactive-2"]
    assert await s.drain(5)


async def test_full_queue_refuses_at_once_with_retry_after_and_loses_no_accepted_job() -> None:
    s = scheduler(max_queue=3)
    s.estimate.observe(2.0)
    s.pause()
    accepted = [asyncio.create_task(s.submit(lambda i=i: i, INTERACTIVE)) for i in range(3)]
    await wait_until_queued(s, 3)
    t0 = time.perf_counter()
    with pytest.raises(Overloaded) as refused:
        await s.submit(lambda: -1, INTERACTIVE)
    assert time.perf_counter() - t0 < 0.5
    assert type(refused.value) is Overloaded
    assert refused.value.extra["reason"] == "queue_full"
    assert refused.value.retry_after_s >= 6.0  # three jobs of about 2 s ahead
    s.resume()
    assert await asyncio.gather(*accepted) == [0, 1, 2]
    stats = s.stats()
    assert stats.completed == 3 and stats.refused == {"queue_full": 1}


async def test_predicted_wait_beyond_the_deadline_is_refused_but_a_lower_queue_is_not() -> None:
    s = scheduler(max_queue=50, deadline_s=3.0)
    for seconds in (1.0, 1.2, 0.8, 1.0):
        s.estimate.observe(seconds)
    s.pause()
    patient_batch = JobHints(Priority.BATCH, deadline_s=600)
    queued = [asyncio.create_task(s.submit(lambda: None, patient_batch)) for _ in range(5)]
    await wait_until_queued(s, 5)
    with pytest.raises(Overloaded) as refused:
        s.check(BATCH)
    assert refused.value.extra["reason"] == "deadline"
    assert refused.value.extra["predicted_wait_s"] > 3.0
    # An interactive request is not behind the batch jobs: nothing ahead of it.
    interactive = asyncio.create_task(s.submit(lambda: "first", INTERACTIVE))
    # A longer deadline of its own admits a batch request behind the queue.
    patient = asyncio.create_task(s.submit(lambda: "patient", patient_batch))
    await wait_until_queued(s, 7)
    s.resume()
    assert await interactive == "first"
    assert await patient == "patient"
    await asyncio.gather(*queued)


async def test_cancelled_caller_does_not_cancel_its_accepted_job() -> None:
    s = scheduler()
    s.pause()
    ran = threading.Event()
    task = asyncio.create_task(s.submit(ran.set, INTERACTIVE))
    await wait_until_queued(s, 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    s.resume()
    assert await s.drain(5)
    assert ran.is_set()
    assert s.stats().completed == 1


async def test_job_exceptions_reach_the_caller_and_the_worker_keeps_going() -> None:
    s = scheduler()

    def boom() -> None:
        raise InvalidInput("bad plan")

    with pytest.raises(InvalidInput, match="bad plan"):
        await s.submit(boom, INTERACTIVE)
    assert await s.submit(lambda: 42, INTERACTIVE) == 42


async def test_shutdown_refuses_new_jobs_with_503_and_finishes_accepted_ones() -> None:
    s = scheduler()
    started = threading.Event()
    release = threading.Event()

    def slow() -> str:
        started.set()
        release.wait(5)
        return "done"

    running = asyncio.create_task(s.submit(slow, INTERACTIVE))
    await asyncio.to_thread(started.wait, 5)
    queued = asyncio.create_task(s.submit(lambda: "queued", BATCH))
    await wait_until_queued(s, 1)
    drained = asyncio.create_task(s.drain(10))
    await asyncio.sleep(0.05)
    with pytest.raises(ShuttingDown) as refused:
        await s.submit(lambda: "late", INTERACTIVE)
    assert isinstance(refused.value, ShuttingDown) and refused.value.retry_after_s > 0
    assert not drained.done()
    release.set()
    assert await drained
    assert await running == "done" and await queued == "queued"
    s.open()
    assert await s.submit(lambda: "again", INTERACTIVE) == "again"


async def test_drain_reports_false_when_the_grace_runs_out() -> None:
    s = scheduler()
    release = threading.Event()
    task = asyncio.create_task(s.submit(lambda: release.wait(5), INTERACTIVE))
    await asyncio.sleep(0.05)
    assert await s.drain(0.1) is False
    release.set()
    assert await task is True


def test_latency_estimate_tracks_mean_and_spread() -> None:
    e = LatencyEstimate(alpha=0.5)
    assert e.wait_for(3) == 0.0
    e.observe(1.0)
    assert (e.mean, e.std) == (1.0, 0.0)
    e.observe(3.0)
    assert e.mean == pytest.approx(2.0)
    assert e.std == pytest.approx(1.0)  # (1 - .5) * (0 + .5 * 4) = 1
    assert e.p99 == pytest.approx(5.0)
    assert e.wait_for(4) == pytest.approx(4 * 2.0 + 3 * 1.0 * 2)


async def test_concurrency_runs_jobs_side_by_side_up_to_its_limit() -> None:
    s = Scheduler(max_queue=8, default_deadline_s=60.0, concurrency=2)
    together = threading.Barrier(2, timeout=5)
    running = 0
    peak = 0
    lock = threading.Lock()

    def job(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        if i < 2:
            together.wait()  # only passes when both first jobs run at the same time
        time.sleep(0.05)
        with lock:
            running -= 1
        return i

    assert await asyncio.gather(*(s.submit(lambda i=i: job(i), INTERACTIVE) for i in range(5))) == [
        0, 1, 2, 3, 4,
    ]
    assert peak == 2
    assert await s.drain(5)


async def test_predicted_wait_counts_rounds_of_the_concurrent_workers() -> None:
    s = Scheduler(max_queue=50, default_deadline_s=60.0, concurrency=2)
    s.estimate.observe(2.0)
    s.pause()
    queued = [asyncio.create_task(s.submit(lambda: None, BATCH)) for _ in range(4)]
    await wait_until_queued(s, 4)
    # Four queued on two workers: the next job starts after two rounds of about 2 s.
    with pytest.raises(Overloaded) as refused:
        s.check(JobHints(Priority.BATCH, deadline_s=3.0))
    assert refused.value.extra["predicted_wait_s"] == pytest.approx(4.0)
    s.check(JobHints(Priority.BATCH, deadline_s=5.0))
    s.resume()
    await asyncio.gather(*queued)
    assert await s.drain(5)


async def test_predicted_wait_counts_the_tokens_ahead_not_the_requests() -> None:
    s = Scheduler(max_queue=50, default_deadline_s=60.0, concurrency=1)
    s.estimate.observe(0.01)  # seconds per token
    s.pause()
    queued = [asyncio.create_task(s.submit(lambda: None, BATCH, tokens=n)) for n in (100, 200)]
    await wait_until_queued(s, 2)
    with pytest.raises(Overloaded) as refused:
        s.check(JobHints(Priority.BATCH, deadline_s=2.5))
    assert refused.value.extra["predicted_wait_s"] == pytest.approx(3.0)  # 300 tokens at 10 ms
    queued.append(asyncio.create_task(s.submit(lambda: None, BATCH, tokens=10_000)))
    await wait_until_queued(s, 3)
    with pytest.raises(Overloaded) as refused:
        s.check(JobHints(Priority.BATCH, deadline_s=60.0))
    assert refused.value.extra["predicted_wait_s"] == pytest.approx(103.0)
    s.check(INTERACTIVE)  # nothing of a higher or equal priority is ahead of it
    s.resume()
    await asyncio.gather(*queued)
    assert await s.drain(5)


async def test_a_long_job_makes_the_rate_per_token_not_every_jobs_duration() -> None:
    """After a long job (10,000 tokens, 0.2 s) the rate is per token: a short job queued ahead
    is predicted at its own 50 tokens, where a per-request mean would predict 0.2 s for it."""
    s = Scheduler(max_queue=50, default_deadline_s=0.05, concurrency=1)

    def long_job() -> str:
        time.sleep(0.2)
        return "long"

    assert await s.submit(long_job, INTERACTIVE, tokens=10_000) == "long"
    stats = s.stats()
    assert stats.mean_job_tokens == 10_000
    assert 0.2 / 10_000 <= stats.seconds_per_token < 1.0 / 10_000
    s.pause()
    short = asyncio.create_task(s.submit(lambda: "short", INTERACTIVE, tokens=50))
    await wait_until_queued(s, 1)
    s.check(INTERACTIVE)  # about 50 * 2e-5 s ahead, within 0.05 s
    s.resume()
    assert await short == "short"
    assert s.stats().mean_job_tokens == pytest.approx(10_000 + 0.2 * (50 - 10_000))
    assert await s.drain(5)
