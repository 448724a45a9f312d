"""Keep the cyclic garbage collector off the loaded model's heap.

Loading the model, the tokenizer and the NLP pipelines leaves millions of
long-lived Python objects. CPython's full (generation 2) collection walks
every one of them, and it runs whenever enough new long-lived objects have
accumulated: under load that is every few seconds, and each one stopped the
serving process for 300-500 ms (measured on the 2-core bench machine). That
pause was the whole p99 tail of ``/v1/constraints`` (p50 20 ms, p99 500 ms).

``gc.freeze()`` moves every object tracked at that moment into the permanent
generation, which collections skip, so once the heap is settled a full
collection only walks what requests and caches created since. Garbage still
in the heap at freeze time is kept for the life of the process; after
loading there is next to none (a few hundred objects were found by the
collections this replaces), so no ``gc.collect()`` runs first: it would itself
be one more long pause just as the service becomes ready.

Only the serving process does this (``tenet serve``): the test suite and
other embedders create apps in processes whose heap is not theirs to freeze.
"""

from __future__ import annotations

import gc
import logging
import threading

from app.runtime import Runtime
from reasoning.errors import TenetError

__all__ = ["freeze_heap", "freeze_heap_once_loaded"]

log = logging.getLogger("tenet.heap")


def freeze_heap() -> int:
    """Move every tracked object to the permanent generation; returns how many are frozen now."""
    gc.freeze()
    return gc.get_freeze_count()


def freeze_heap_once_loaded(runtime: Runtime, timeout_s: float | None = None) -> threading.Thread:
    """Start a daemon thread that freezes the heap when the model has loaded.

    If loading fails (or ``timeout_s`` passes first) nothing is frozen: the
    service is then not ready anyway. Returns the started thread.
    """

    def work() -> None:
        try:
            runtime.wait_for_model(timeout_s)
        except TenetError:
            return
        log.info("heap frozen after model loading: %d objects skip garbage collection", freeze_heap())

    thread = threading.Thread(target=work, name="tenet-heap-freeze", daemon=True)
    thread.start()
    return thread
