"""Chunked prefill on the bundled model: a prompt prefilled a few tokens per call into the KV
slab gives the logits and keys of one call, and another decode steps between its chunks."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from inference.decoder.batch import BatchState, prefill_branches, prefill_prefix
from inference.decoder.kv_slab import PrefixKV
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel

pytestmark = pytest.mark.model

PREFIX = "You answer compliance questions briefly and cite the rules you rely on. Question: "
SUFFIXES = (
    "Must a transfer of EUR 2,000,000 be escalated?",
    "Is Jon Doe on the PEP list?",
    "Which rule requires enhanced due diligence for a politically exposed person?",
)


def _prefill(
    loaded_model: LoadedModel, chunk: int | None, packed: bool
) -> tuple[PrefixKV, BatchState, torch.Tensor, torch.Tensor]:
    """Prefix, ragged branch suffixes and one decode step, prefilled ``chunk`` tokens per call."""
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model, packed=packed, prefill_chunk=chunk)
    prefix = tok.encode(PREFIX, add_special_tokens=False)
    suffixes = [tok.encode(s, add_special_tokens=False) for s in SUFFIXES]
    with torch.inference_mode():
        kv = prefill_prefix(runner, prefix)
        state, first = prefill_branches(runner, len(prefix), kv, suffixes, width=1, max_new_tokens=2)
        feed = first.argmax(-1, keepdim=True)  # [B, 1]
        state.mask[:, state.columns] = True
        step = runner.forward(feed, state.positions.unsqueeze(1), state.mask[:, : state.columns + 1],
                              state.cache, purpose="decode", last_only=True)
    assert runner.counters.prefill_tokens == len(prefix) + len(suffixes) * max(len(s) for s in suffixes)
    return kv, state, first, step[:, -1]


@pytest.mark.parametrize("packed", [True, False], ids=["lean", "library"])
def test_a_chunked_prefill_gives_the_logits_and_keys_of_one_call(loaded_model: LoadedModel, packed: bool) -> None:
    kv, state, first, step = _prefill(loaded_model, None, packed)
    kv3, state3, first3, step3 = _prefill(loaded_model, 3, packed)
    assert len(kv3) == len(kv)
    for (k, v), (k3, v3) in zip(kv, kv3):
        torch.testing.assert_close(k3, k, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(v3, v, atol=1e-4, rtol=1e-4)
    for branch, branch3 in zip(state.branch_kv, state3.branch_kv):
        for (k, v), (k3, v3) in zip(branch, branch3):
            torch.testing.assert_close(k3, k, atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(v3, v, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(first3, first, atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(step3, step, atol=1e-3, rtol=1e-4)
    assert torch.equal(first3.argmax(-1), first.argmax(-1))
    assert torch.equal(step3.argmax(-1), step.argmax(-1))


def test_a_short_decode_steps_between_the_chunks_of_a_long_prefill(loaded_model: LoadedModel) -> None:
    """The long prefill (256 tokens, 8 per call) is still running when the short decode has
    prefilled and taken all its steps; prefilled in one call, it would hold them all back."""
    model = loaded_model.model
    batcher = MicroBatcher(model, ModelRunner(model).call, max_wait_s=0.5, prefill_chunk=8)
    long_done = threading.Event()
    errors: list[BaseException] = []

    def long_prefill() -> None:
        try:
            with batcher.lane() as lane:
                runner = ModelRunner(model, lane=lane)
                ids = torch.randint(100, 5000, (256,), generator=torch.Generator().manual_seed(3)).tolist()
                with torch.inference_mode():
                    prefill_prefix(runner, ids)
                assert runner.counters.prefill_tokens == 256
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
        finally:
            long_done.set()

    thread = threading.Thread(target=long_prefill)
    try:
        with batcher.lane() as lane:
            runner = ModelRunner(model, lane=lane)
            assert runner.prefill_chunk == batcher.prefill_chunk
            thread.start()
            # Let the long prefill take the forward thread first.
            while batcher.stats().solo_calls < 2 and not long_done.is_set():
                time.sleep(0.005)
            with torch.inference_mode():
                cache = runner.new_cache(1, 16)
                ids = torch.tensor([[1, 2, 3, 4]], device=runner.device)
                mask = torch.ones((1, 16), dtype=torch.bool, device=runner.device)
                logits = runner.forward(ids, torch.arange(4).unsqueeze(0), mask[:, :4], cache,
                                        purpose="prefill", last_only=True)
                for t in range(4, 8):
                    feed = logits[:, -1].argmax(-1, keepdim=True)
                    logits = runner.forward(feed, torch.tensor([[t]]), mask[:, : t + 1], cache,
                                            purpose="decode", last_only=True)
            assert not long_done.is_set(), "the short decode waited for the whole long prefill"
        thread.join(timeout=120)
    finally:
        batcher.close()
    assert not errors, errors
    assert long_done.is_set()
    assert batcher.stats().solo_calls >= 256 // 8 + 1


@pytest.mark.parametrize(("slice_s", "calls"), [(1e-6, 13), (1000.0, 4)], ids=["tight", "loose"])
def test_chunks_are_sized_by_the_time_the_last_one_took(
    loaded_model: LoadedModel, slice_s: float, calls: int
) -> None:
    """200 tokens, at most 64 a call: a slice no chunk fits keeps every chunk at 16 tokens
    (13 calls); one every chunk fits grows from 16 to 64 at once (16 + 64 + 64 + 56)."""
    model = loaded_model.model
    batcher = MicroBatcher(model, ModelRunner(model).call, prefill_chunk=64, prefill_slice_s=slice_s)
    try:
        with batcher.lane() as lane:
            runner = ModelRunner(model, lane=lane)
            assert (runner.prefill_chunk, runner.prefill_slice_s) == (64, slice_s)
            ids = torch.randint(100, 5000, (200,), generator=torch.Generator().manual_seed(5)).tolist()
            with torch.inference_mode():
                prefill_prefix(runner, ids)
        assert batcher.stats().solo_calls == calls
    finally:
        batcher.close()
