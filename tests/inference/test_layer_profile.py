"""Model-side diagnostics: layer hooks on the real model, GPU utilisation where there is none."""

from __future__ import annotations

import pytest
import torch

from inference.diagnostics import LayerProfiler, gpu_utilisation, transformer_layers
from inference.loader import LoadedModel


@pytest.mark.model
def test_layer_hooks_time_every_layer_only_while_enabled(loaded_model: LoadedModel) -> None:
    layers = transformer_layers(loaded_model.model)
    assert len(layers) == loaded_model.model.config.num_hidden_layers
    profiler = LayerProfiler(loaded_model.model)
    ids = torch.arange(16).unsqueeze(0)
    with torch.inference_mode():
        loaded_model.model(input_ids=ids, use_cache=False)
    assert all(r.calls == 0 for r in profiler.timings())
    profiler.enable()
    with torch.inference_mode():
        loaded_model.model(input_ids=ids, use_cache=False)
    profiler.disable()
    rows = profiler.timings()
    assert all(r.calls == 1 and r.seconds > 0 for r in rows)
    hidden = loaded_model.model.config.hidden_size
    assert rows[0].flops == pytest.approx(2 * rows[0].parameters * 16 + 2 * 16 * 16 * hidden)
    assert all(len(m._forward_hooks) == 0 and len(m._forward_pre_hooks) == 0 for _, m in layers)
    with torch.inference_mode():
        loaded_model.model(input_ids=ids, use_cache=False)
    assert [r.calls for r in profiler.timings()] == [1] * len(rows)


def test_gpu_is_reported_unavailable_on_cpu() -> None:
    assert gpu_utilisation("cpu")["available"] is False
