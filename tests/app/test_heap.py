"""The serving process freezes its heap once the model is loaded, and only then."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator

import pytest

from app.heap import freeze_heap_once_loaded
from app.runtime import Runtime
from app.settings import Settings
from inference.loader import LoadedModel


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Each test starts and ends with nothing frozen (the test process's heap is not ours)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.model
async def test_a_loaded_model_freezes_the_heap_so_collections_skip_it(
    settings: Settings, loaded_model: LoadedModel, unfrozen: None
) -> None:
    runtime = Runtime(settings)
    try:
        tracked_before = len(gc.get_objects())
        runtime.set_model(loaded_model)
        thread = freeze_heap_once_loaded(runtime, timeout_s=60)
        thread.join(60)
        assert not thread.is_alive()
        # Everything tracked before (the model's objects included) left the collected generations.
        assert gc.get_freeze_count() >= tracked_before
        assert len(gc.get_objects()) < tracked_before // 10
    finally:
        await runtime.close()


async def test_a_failed_load_freezes_nothing(settings: Settings, unfrozen: None) -> None:
    runtime = Runtime(dataclasses.replace(settings, model="/no/such/model", load_model=True))
    try:
        runtime.start_model_loading()
        thread = freeze_heap_once_loaded(runtime, timeout_s=60)
        thread.join(60)
        assert not thread.is_alive()
        assert runtime.model_state == "failed"
        assert gc.get_freeze_count() == 0
    finally:
        await runtime.close()
