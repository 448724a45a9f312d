"""How one loaded model's forward passes have been going: the evidence readiness rests on.

A model that loaded and warmed up can still fail on every later forward (a device
lost, memory exhausted for good, corrupted weights). Each such decode is answered
with a 503 problem, but a probe that only asked "is a model loaded?" would keep
routing traffic to a replica that can no longer decode. :class:`ForwardHealth`
counts the outcomes of every forward of one model (the runner reports each one);
the service decides from the count when the model is no longer fit to serve.

What is guaranteed: outcomes are counted atomically from any thread; one
success resets the run of consecutive failures; :func:`health_of` gives the
same tracker for the same model object for as long as that object lives, and
forgets it with the model.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

__all__ = ["ForwardHealth", "ForwardHealthState", "health_of"]


@dataclass(frozen=True, slots=True)
class ForwardHealthState:
    """One consistent reading of a model's forward outcomes.

    ``consecutive_failures`` counts failures since the last success (0 after a
    success); ``last_error`` names the most recent failure's exception type and
    ``last_failure_at`` is its ``time.monotonic()`` reading (None: never failed).
    """

    consecutive_failures: int
    failures: int
    successes: int
    last_error: str | None
    last_failure_at: float | None


class ForwardHealth:
    """Thread-safe tallies of one model's forward passes (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._consecutive = 0
        self._failures = 0
        self._successes = 0
        self._last_error: str | None = None
        self._last_failure_at: float | None = None

    def succeeded(self) -> None:
        """Record a forward that returned logits: the run of failures ends."""
        with self._lock:
            self._successes += 1
            self._consecutive = 0

    def failed(self, error: BaseException | str) -> None:
        """Record a forward that raised ``error`` (kept by its type name, never its message,
        which may quote input)."""
        name = error if isinstance(error, str) else type(error).__name__
        with self._lock:
            self._failures += 1
            self._consecutive += 1
            self._last_error = name
            self._last_failure_at = time.monotonic()

    def state(self) -> ForwardHealthState:
        """The tallies as one snapshot."""
        with self._lock:
            return ForwardHealthState(
                consecutive_failures=self._consecutive,
                failures=self._failures,
                successes=self._successes,
                last_error=self._last_error,
                last_failure_at=self._last_failure_at,
            )


_trackers: weakref.WeakKeyDictionary[Any, ForwardHealth] = weakref.WeakKeyDictionary()
_trackers_lock = threading.Lock()


def health_of(model: Any) -> ForwardHealth:
    """The forward tracker of ``model`` (a torch module), created on first use.

    Keyed by the model object itself (weakly): every runner of one model, whichever
    thread or decode built it, reports to the same tracker.
    """
    with _trackers_lock:
        tracker = _trackers.get(model)
        if tracker is None:
            tracker = ForwardHealth()
            _trackers[model] = tracker
        return tracker
