"""Cross-request micro-batching: concurrent decodes share one forward pass per step.

One :class:`MicroBatcher` owns the model on one thread. Each decode opens a
:class:`Lane` for its lifetime and sends every forward pass through it. The
worker runs, in this order:

1. calls that cannot be merged (prefills, counterfactual scoring, any call
   with more than one new token per row, exclusive jobs such as a profiling
   probe), one at a time in arrival order, so a newcomer's prefill waits at
   most one step;
2. one-token decode steps, merged: it waits until every open lane that is
   not waiting on a call has a step pending or until
   ``max_wait_s`` has passed since the first step arrived, then runs all of
   them (up to ``max_rows`` rows) as one forward over a
   :class:`~inference.decoder.grouped_attention.GroupedCache`.

Calls and steps take turns: after a call, the steps pending then run before
the next call. A long prompt's prefill arrives as a call per chunk of at
most ``prefill_chunk`` tokens, sized to take about ``prefill_slice_s`` each
(:class:`~inference.decoder.runner.ModelRunner` splits it), so while it runs
every other decode still steps once per chunk: its latency does not depend
on the long prompt's.

Guarantees: every call submitted gets its own result or its own exception;
only the worker thread runs the model, so forwards never compete for the
CPU's cores with one another; a lane's logits equal those it would get alone
(up to floating-point summation order). A model whose attention cannot be
grouped still works: its steps run one lane at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import torch

from inference.decoder.grouped_attention import GroupedCache, use_grouped_attention
from inference.decoder.kv_slab import SlabCache
from reasoning.errors import InvalidInput, Unavailable

__all__ = ["BatcherStats", "Lane", "MicroBatcher"]

Call = Callable[[], Any]


@dataclass(frozen=True)
class BatcherStats:
    """Counters since start: merged forwards, the lanes and rows they carried, the limits."""

    forwards: int
    merged_forwards: int
    lane_steps: int
    rows: int
    solo_calls: int
    open_lanes: int
    max_rows: int
    mergeable: bool

    @property
    def mean_lanes_per_forward(self) -> float:
        return self.lane_steps / self.forwards if self.forwards else 0.0


@dataclass(eq=False)
class _Job:
    call: Call | None = None  # unmergeable: run as is
    lane: bool = False  # a call of an open lane (that lane has no step pending meanwhile)
    step: tuple[torch.Tensor, torch.Tensor, torch.Tensor, SlabCache] | None = None  # ids, pos, mask, cache
    done: threading.Event = field(default_factory=threading.Event)
    ok: bool = True
    value: Any = None

    @property
    def rows(self) -> int:
        return int(self.step[0].shape[0]) if self.step is not None else 0


class MicroBatcher:
    """The model's one forward thread, shared by every concurrent decode (see module docstring).

    ``forward_step(ids, pos, mask, cache, grouped)`` runs one model call and
    returns logits ``[rows, 1, V]``; ``grouped`` is True when ``cache`` is a
    :class:`GroupedCache` and ``mask`` a placeholder. ``on_forward(lanes, rows)``
    hears every decode forward (metrics).
    """

    def __init__(
        self,
        model: Any,
        forward_step: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Any], torch.Tensor],
        *,
        max_rows: int = 64,
        max_wait_s: float = 0.15,
        prefill_chunk: int = 0,
        prefill_slice_s: float = 0.0,
        on_forward: Callable[[int, int], None] | None = None,
    ) -> None:
        if max_rows < 1:
            raise InvalidInput("max_rows must be at least 1", field="max_rows")
        if prefill_chunk < 0:
            raise InvalidInput("prefill_chunk must not be negative", field="prefill_chunk")
        if prefill_slice_s < 0:
            raise InvalidInput("prefill_slice_s must not be negative", field="prefill_slice_s")
        if max_wait_s < 0:
            raise InvalidInput("max_wait_s must not be negative", field="max_wait_s")
        self.mergeable = use_grouped_attention(model)
        self.max_rows = max_rows
        self.max_wait_s = max_wait_s
        #: Most tokens per prefill call of a lane's decode (0: a prefill is one call).
        self.prefill_chunk = prefill_chunk
        #: Seconds a prefill chunk should take (its size adapts; 0: chunks of prefill_chunk tokens).
        self.prefill_slice_s = prefill_slice_s
        self._forward_step = forward_step
        self._on_forward = on_forward
        self._cond = threading.Condition()
        self._calls: list[_Job] = []
        self._steps: list[_Job] = []
        self._first_step_at = 0.0
        self._open = 0
        self._after_call = False  # the last thing run was a call: pending steps go next
        self._closed = False
        self._forwards = self._merged = self._lane_steps = self._rows = self._solo = 0
        self._thread = threading.Thread(target=self._work, name="tenet-forward", daemon=True)
        self._thread.start()

    # --- callers -----------------------------------------------------------------

    def lane(self) -> Lane:
        """A lane for one decode; use it as a context manager around the decode."""
        return Lane(self)

    def run(self, call: Call) -> Any:
        """Run ``call`` on the forward thread between merged steps (exclusive use of the model)."""
        return self._submit(_Job(call=call))

    def close(self) -> None:
        """Finish what was submitted, then stop the thread; later submissions raise Unavailable."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=60)

    def stats(self) -> BatcherStats:
        with self._cond:
            return BatcherStats(
                forwards=self._forwards,
                merged_forwards=self._merged,
                lane_steps=self._lane_steps,
                rows=self._rows,
                solo_calls=self._solo,
                open_lanes=self._open,
                max_rows=self.max_rows,
                mergeable=self.mergeable,
            )

    def _submit(self, job: _Job) -> Any:
        with self._cond:
            if self._closed:
                raise Unavailable("the model is shutting down")
            if job.step is not None:
                if not self._steps:
                    self._first_step_at = time.monotonic()
                self._steps.append(job)
            else:
                self._calls.append(job)
            self._cond.notify_all()
        job.done.wait()
        if not job.ok:
            raise job.value
        return job.value

    def _enter(self) -> None:
        with self._cond:
            self._open += 1

    def _leave(self) -> None:
        with self._cond:
            self._open -= 1
            self._cond.notify_all()

    # --- the worker ---------------------------------------------------------------

    def _next(self) -> list[_Job] | None:
        """Block until there is work; return one call, or the steps to merge, or None to stop."""
        with self._cond:
            while True:
                if self._calls and not (self._steps and self._after_call):
                    self._after_call = True
                    return [self._calls.pop(0)]
                if self._steps:
                    # A lane waiting on a call sends no step meanwhile; every other open lane
                    # without a pending step is still working out its next token.
                    calling = sum(1 for job in self._calls if job.lane)
                    waited = time.monotonic() - self._first_step_at
                    if (not self.mergeable or len(self._steps) >= self._open - calling
                            or waited >= self.max_wait_s):
                        self._after_call = False
                        return self._take_steps()
                    self._cond.wait(timeout=self.max_wait_s - waited)
                    continue
                if self._closed:
                    return None
                self._cond.wait()

    def _take_steps(self) -> list[_Job]:
        if not self.mergeable:
            batch = [self._steps.pop(0)]
        else:
            batch, rows = [], 0
            while self._steps and (not batch or rows + self._steps[0].rows <= self.max_rows):
                job = self._steps.pop(0)
                batch.append(job)
                rows += job.rows
        if self._steps:
            self._first_step_at = time.monotonic()
        return batch

    def _work(self) -> None:
        try:
            with torch.inference_mode():
                self._serve()
        finally:
            # Whatever ends the thread, nobody is left waiting on it.
            with self._cond:
                self._closed = True
                orphans, self._calls, self._steps = self._calls + self._steps, [], []
            for job in orphans:
                job.ok, job.value = False, Unavailable("the model's forward thread has stopped")
                job.done.set()

    def _serve(self) -> None:
        while (batch := self._next()) is not None:
            try:
                if batch[0].call is not None:
                    with self._cond:
                        self._solo += 1
                    batch[0].value = batch[0].call()
                else:
                    self._run_steps(batch)
            except BaseException as exc:  # noqa: BLE001 - every waiter gets the failure
                for job in batch:
                    job.ok, job.value = False, exc
            for job in batch:
                job.done.set()

    def _run_steps(self, batch: list[_Job]) -> None:
        steps = [job.step for job in batch if job.step is not None]
        if len(steps) == 1:
            ids, pos, mask, cache = steps[0]
            batch[0].value = self._forward_step(ids, pos, mask, cache)
        else:
            grouped = GroupedCache([(cache, mask) for _, _, mask, cache in steps])
            ids = torch.cat([s[0] for s in steps])
            pos = torch.cat([s[1] for s in steps])
            placeholder = torch.ones((ids.shape[0], 1, 1, 1), dtype=torch.bool, device=ids.device)
            logits = self._forward_step(ids, pos, placeholder, grouped)
            for job, (lo, hi) in zip(batch, grouped.bounds):
                job.value = logits[lo:hi]
            with self._cond:
                self._merged += 1
        rows = sum(job.rows for job in batch)
        with self._cond:
            self._forwards += 1
            self._lane_steps += len(batch)
            self._rows += rows
        if self._on_forward is not None:
            self._on_forward(len(batch), rows)


class Lane:
    """One decode's connection to the :class:`MicroBatcher`; open for the decode's lifetime."""

    def __init__(self, batcher: MicroBatcher) -> None:
        self._batcher = batcher

    @property
    def prefill_chunk(self) -> int:
        """Most tokens per prefill call (the batcher's; 0: a prefill is one call)."""
        return self._batcher.prefill_chunk

    @property
    def prefill_slice_s(self) -> float:
        """Seconds a prefill chunk should take (the batcher's; 0: fixed chunks)."""
        return self._batcher.prefill_slice_s

    def __enter__(self) -> Self:
        self._batcher._enter()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._batcher._leave()

    def step(self, ids: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor, cache: SlabCache) -> Any:
        """One token per row (``ids, pos: [n, 1]``, ``mask: [n, C]``): merged with other lanes' steps."""
        return self._batcher._submit(_Job(step=(ids, pos, mask, cache)))

    def call(self, call: Call) -> Any:
        """Any other model call of this decode (prefill, scoring), run alone on the forward thread."""
        return self._batcher._submit(_Job(call=call, lane=True))
