"""The prefix KV cache: LRU by bytes, per tenant, and a real decode that skips the prefix prefill."""

from __future__ import annotations

import pytest
import torch

from inference.decoder.decode import decode
from inference.decoder.options import DecodeOptions
from inference.loader import LoadedModel
from inference.prefix_cache import PrefixCache, PrefixScope
from inference.prompting import plan_prompt
from reasoning.errors import InvalidInput

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _kv(layers: int = 2, tokens: int = 4) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
    return tuple(
        (torch.randn(1, 2, tokens, 8), torch.randn(1, 2, tokens, 8)) for _ in range(layers)
    )


def _size(kv: tuple[tuple[torch.Tensor, torch.Tensor], ...]) -> int:
    return sum(k.nbytes + v.nbytes for k, v in kv)


def test_hit_miss_and_lru_eviction_by_bytes() -> None:
    one = _kv()
    cache = PrefixCache(max_bytes=2 * _size(one))
    assert cache.get("t1", "m", [1, 2, 3]) is None
    assert cache.put("t1", "m", [1, 2, 3], one)
    assert cache.put("t1", "m", [4, 5], _kv())
    assert cache.get("t1", "m", [1, 2, 3]) is one  # now most recently used
    assert cache.put("t1", "m", [6], _kv())  # evicts [4, 5]
    assert cache.get("t1", "m", [4, 5]) is None
    assert cache.get("t1", "m", [1, 2, 3]) is one
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.evictions, stats.entries) == (2, 2, 1, 2)
    assert stats.bytes == 2 * _size(one) <= stats.max_bytes


def test_entries_never_cross_tenants_or_models() -> None:
    cache = PrefixCache()
    kv = _kv()
    cache.put("tenant-a", "model-1", [7, 8, 9], kv)
    assert cache.get("tenant-b", "model-1", [7, 8, 9]) is None
    assert cache.get("tenant-a", "model-2", [7, 8, 9]) is None
    assert cache.get("tenant-a", "model-1", [7, 8]) is None
    assert cache.get("tenant-a", "model-1", [7, 8, 9]) is kv
    assert cache.clear_tenant("tenant-a") == 1
    assert cache.get("tenant-a", "model-1", [7, 8, 9]) is None


def test_an_entry_larger_than_the_bound_is_refused() -> None:
    kv = _kv(tokens=64)
    cache = PrefixCache(max_bytes=_size(kv) - 1)
    assert not cache.put("t", "m", [1], kv)
    assert cache.stats().entries == 0


def test_a_scope_reads_and_fills_only_its_tenant_and_model() -> None:
    cache = PrefixCache()
    kv = _kv()
    scope = PrefixScope(cache, "tenant-a", "model-1")
    assert scope.get([1, 2]) is None
    assert scope.put([1, 2], kv)
    assert scope.get([1, 2]) is kv and cache.get("tenant-a", "model-1", [1, 2]) is kv
    assert PrefixScope(cache, "tenant-b", "model-1").get([1, 2]) is None
    assert PrefixScope(cache, "tenant-a", "model-2").get([1, 2]) is None


@pytest.mark.parametrize(("tenant", "model_id"), [("", "model-1"), ("tenant-a", "")])
def test_a_scope_without_a_tenant_or_a_model_is_refused(tenant: str, model_id: str) -> None:
    with pytest.raises(InvalidInput, match="tenant and a model identity"):
        PrefixScope(PrefixCache(), tenant, model_id)


@pytest.mark.model
def test_reuse_gives_identical_output_and_skips_the_prefix_prefill(
    loaded_model: LoadedModel,
) -> None:
    tok = loaded_model.tokenizer
    plan = plan_prompt(tok, "Name one duty of a bank towards a politically exposed person.")
    cache = PrefixCache()
    options = DecodeOptions(width=1, max_new_tokens=10)
    scope = PrefixScope(cache, "t1", loaded_model.identity.sha256)
    first = decode(loaded_model.model, tok, plan, options, prefix=scope)
    second = decode(loaded_model.model, tok, plan, options, prefix=scope)
    assert not first.prefix_cache_hit and second.prefix_cache_hit
    assert second.answer == first.answer
    assert [s.text for s in second.steps] == [s.text for s in first.steps]
    params = loaded_model.identity.parameters
    suffix_tokens = sum(len(s) for s in plan.suffixes)
    assert first.flops["prefill"] == pytest.approx(
        2 * params * (len(plan.prefix_ids) + suffix_tokens)
    )
    assert second.flops["prefill"] == pytest.approx(2 * params * suffix_tokens)
    other = decode(
        loaded_model.model,
        tok,
        plan,
        options,
        prefix=PrefixScope(cache, "t2", loaded_model.identity.sha256),
    )
    assert not other.prefix_cache_hit and other.answer == first.answer
    assert cache.stats().hits == 1
