"""Cross-request micro-batching on the bundled model: merged steps equal solo steps, concurrent
decodes give the answers they give alone, failures stay with their caller."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import torch

from inference.decoder.grouped_attention import GroupedCache
from inference.decoder.kv_slab import SlabCache
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.pipeline import Reasoner, ReasonOptions
from inference.prefix_cache import PrefixCache
from reasoning.errors import InvalidInput, Unavailable

pytestmark = pytest.mark.model

PROMPTS = (
    "Explain in one sentence why customer due diligence matters. Do not use commas.",
    "Name two benefits of transaction monitoring in under 20 words.",
    "Describe a suspicious activity report. Answer in lowercase letters only.",
    "Give one reason to verify a customer's address.",
)


@pytest.fixture
def batcher(loaded_model: LoadedModel) -> Iterator[MicroBatcher]:
    b = MicroBatcher(loaded_model.model, ModelRunner(loaded_model.model).call, max_wait_s=0.5)
    yield b
    b.close()


def _prefilled(
    runner: ModelRunner, rows: int, length: int, seed: int
) -> tuple[SlabCache, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    cache = runner.new_cache(rows, length + 4)
    ids = torch.randint(0, 5000, (rows, length), generator=gen).to(runner.device)  # [rows, L]
    pos = torch.arange(length, device=runner.device).unsqueeze(0).expand(rows, -1)
    mask = torch.ones((rows, length + 4), dtype=torch.bool, device=runner.device)  # [rows, C]
    mask[0, 1] = False  # a ragged row: one column it never attends to
    with torch.inference_mode():
        runner.forward(ids, pos, mask[:, :length], cache, purpose="prefill", last_only=True)
    return cache, mask


def _copy(runner: ModelRunner, cache: SlabCache) -> SlabCache:
    twin = runner.new_cache(cache.slab_layers[0].used()[0].shape[0], cache.capacity)
    for dst, src in zip(twin.slab_layers, cache.slab_layers):
        k, v = src.used()
        assert dst._k is not None and dst._v is not None
        dst._k[:, :, : k.shape[2]] = k
        dst._v[:, :, : v.shape[2]] = v
    twin.set_length(cache.slab_layers[0].length)
    return twin


def test_a_merged_step_gives_each_decode_its_own_logits(
    loaded_model: LoadedModel, batcher: MicroBatcher
) -> None:
    runner = ModelRunner(loaded_model.model)
    groups = [(_prefilled(runner, 2, 23, 1), 23), (_prefilled(runner, 3, 9, 2), 9)]
    on = loaded_model.device
    feeds = [torch.tensor([[11], [12]], device=on), torch.tensor([[13], [14], [15]], device=on)]
    alone = []
    with torch.inference_mode():
        for ((cache, mask), length), feed in zip(groups, feeds):
            alone.append(
                runner.call(
                    feed, torch.full_like(feed, length), mask[:, : length + 1], _copy(runner, cache)
                )
            )
        merged_cache = GroupedCache(
            [(cache, mask[:, : length + 1]) for (cache, mask), length in groups]
        )
        ids = torch.cat(feeds)
        pos = torch.cat([torch.full_like(f, length) for f, (_, length) in zip(feeds, groups)])
        merged = runner.call(
            ids, pos, torch.ones((5, 1, 1, 1), dtype=torch.bool, device=on), merged_cache
        )
    assert merged.shape == (5, 1, alone[0].shape[-1])
    torch.testing.assert_close(merged[:2].float(), alone[0].float(), atol=2e-4, rtol=1e-4)
    torch.testing.assert_close(merged[2:].float(), alone[1].float(), atol=2e-4, rtol=1e-4)
    # Each decode's slab took exactly its own new column.
    assert [cache.slab_layers[0].length for (cache, _), _ in groups] == [24, 10]


def test_concurrent_decodes_share_forwards_and_answer_as_they_do_alone(
    loaded_model: LoadedModel, batcher: MicroBatcher
) -> None:
    options = ReasonOptions(max_new_tokens=8)
    alone = Reasoner(model=loaded_model, prefix_cache=PrefixCache(max_bytes=2**26))
    expected = [alone.run(alone.plan(p, options=options), tenant="t").answer for p in PROMPTS]

    shared = Reasoner(
        model=loaded_model, prefix_cache=PrefixCache(max_bytes=2**26), batcher=batcher
    )
    plans = [shared.plan(p, options=options) for p in PROMPTS]
    answers: list[str | None] = [None] * len(plans)
    start = threading.Barrier(len(plans))

    def work(i: int) -> None:
        start.wait()
        answers[i] = shared.run(plans[i], tenant="t").answer

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(plans))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert answers == expected
    stats = batcher.stats()
    assert stats.merged_forwards > 0 and stats.mean_lanes_per_forward > 1.0
    assert stats.open_lanes == 0


def test_a_failing_call_reaches_only_its_caller(batcher: MicroBatcher) -> None:
    def boom() -> None:
        raise InvalidInput("bad call")

    with batcher.lane() as lane, pytest.raises(InvalidInput, match="bad call"):
        lane.call(boom)
    assert batcher.run(lambda: 7) == 7
    assert batcher.stats().open_lanes == 0


def test_a_closed_batcher_refuses_new_work(loaded_model: LoadedModel) -> None:
    b = MicroBatcher(loaded_model.model, ModelRunner(loaded_model.model).call)
    b.close()
    with pytest.raises(Unavailable):
        b.run(lambda: 1)


def test_bad_limits_are_invalid_input(loaded_model: LoadedModel) -> None:
    with pytest.raises(InvalidInput):
        MicroBatcher(loaded_model.model, ModelRunner(loaded_model.model).call, max_rows=0)
