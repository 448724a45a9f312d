"""The KV slab's beam fork: chained forks read every source before writing, shared columns stay;
the claim that spans of rows hold their first columns alike narrows when it could break."""

from __future__ import annotations

import pytest
import torch

from inference.decoder import kv_slab
from inference.decoder.kv_slab import SlabCache


def _slab(rows: int, columns: int) -> SlabCache:
    cache = SlabCache(num_layers=2, capacity=columns + 4)
    cache.allocate(rows, heads=2, head_dim=3, dtype=torch.float32, device=torch.device("cpu"))
    for layer in cache.slab_layers:
        assert layer._k is not None and layer._v is not None
        for r in range(rows):
            layer._k[r] = float(r)
            layer._v[r] = float(-r)
    cache.set_length(columns)
    return cache


def test_chained_forks_copy_the_old_rows() -> None:
    cache = _slab(rows=3, columns=5)
    cache.copy_rows([0, 1], [1, 2])  # 0 takes 1's history while 1 takes 2's
    for layer in cache.slab_layers:
        keys, values = layer.used()
        assert keys[0].unique().tolist() == [1.0]
        assert keys[1].unique().tolist() == [2.0]
        assert keys[2].unique().tolist() == [2.0]
        assert values[0].unique().tolist() == [-1.0]


def test_fork_leaves_shared_columns_and_unused_capacity_alone() -> None:
    cache = _slab(rows=2, columns=5)
    cache.copy_rows([1], [0], start=3)
    for layer in cache.slab_layers:
        assert layer._k is not None
        assert layer._k[1, :, :3].unique().tolist() == [1.0]
        assert layer._k[1, :, 3:5].unique().tolist() == [0.0]
        assert layer._k[1, :, 5:].unique().tolist() == [1.0]


def test_a_shared_prefix_claim_narrows_with_whatever_could_break_it() -> None:
    cache = _slab(rows=4, columns=6)
    cache.share(8, span=2)  # never beyond the columns written
    assert cache.shared == (6, 2)
    cache.copy_rows([1], [0], start=2)  # within a span: the claim holds
    assert cache.shared == (6, 2)
    cache.copy_rows([2], [1], start=4)  # another span's columns 4.. now sit in row 2
    assert cache.shared == (4, 2)
    cache.set_length(3)
    assert cache.shared == (3, 2)
    cache.crop(-3)
    assert cache.shared == (0, 1)
    cache.set_length(6)
    cache.share(6, span=2)
    cache.reorder_cache(torch.tensor([1, 0, 3, 2]))
    assert cache.shared == (0, 1)


def test_a_fork_over_the_one_tensor_of_all_layers_equals_a_fork_layer_by_layer() -> None:
    """allocate() holds every layer in one tensor and forks all of them in one copy; a cache
    whose layer was re-initialised on its own forks layer by layer: the same keys and values."""
    gen = torch.Generator().manual_seed(0)
    caches = []
    for joint in (True, False):
        cache = SlabCache(num_layers=3, capacity=9)
        cache.allocate(4, heads=2, head_dim=3, dtype=torch.float32, device=torch.device("cpu"))
        if not joint:  # a layer slab replaced after allocation: no longer a view of the joint one
            layer = cache.slab_layers[1]
            layer.reset()
            layer.lazy_initialization(torch.empty(4, 2, 0, 3), torch.empty(4, 2, 0, 3))
        for layer in cache.slab_layers:
            layer.update(torch.randn(4, 2, 7, 3, generator=gen), torch.randn(4, 2, 7, 3, generator=gen))
        caches.append(cache)
    for layer_a, layer_b in zip(*(c.slab_layers for c in caches)):  # the same contents first
        for a, b in zip(layer_a.used(), layer_b.used()):
            b.copy_(a)
    before = [[t.clone() for t in layer.used()] for layer in caches[0].slab_layers]
    for cache in caches:
        cache.copy_rows([0, 1, 3], [1, 2, 0], start=2)  # a chain and a swap-like move
    assert caches[0]._joint is not None
    for layer_a, layer_b, old in zip(*(c.slab_layers for c in caches), before):
        for a, b, o in zip(layer_a.used(), layer_b.used(), old):
            assert torch.equal(a, b)
            assert torch.equal(a[[0, 1, 3], :, 2:], o[[1, 2, 0], :, 2:])
            assert torch.equal(a[:, :, :2], o[:, :, :2]) and torch.equal(a[2], o[2])


def test_a_fork_with_swaps_and_self_copies_equals_one_gather() -> None:
    """Rows that trade places (a cycle) and rows copied onto themselves: the same keys and
    values as gathering every source row before writing any (index_select, index_copy_)."""
    gen = torch.Generator().manual_seed(1)
    cache = SlabCache(num_layers=2, capacity=8)
    cache.allocate(5, heads=2, head_dim=3, dtype=torch.float32, device=torch.device("cpu"))
    for layer in cache.slab_layers:
        layer.update(torch.randn(5, 2, 6, 3, generator=gen), torch.randn(5, 2, 6, 3, generator=gen))
    dst, src = [0, 1, 2, 3], [1, 0, 2, 1]
    expected = []
    for layer in cache.slab_layers:
        pair = []
        for slab in layer.used():
            window = slab[:, :, 1:].clone()
            window.index_copy_(0, torch.tensor(dst), window.index_select(0, torch.tensor(src)))
            pair.append(torch.cat([slab[:, :, :1], window], dim=2))
        expected.append(pair)
    cache.copy_rows(dst, src, start=1)
    for layer, pair in zip(cache.slab_layers, expected):
        for got, want in zip(layer.used(), pair):
            assert torch.equal(got, want)


def test_a_freed_slab_serves_the_next_cache_zeroed_unless_still_viewed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache's memory comes back for a later cache once nothing views it, reading all zeros;
    keys kept past their cache (a prompt's ``used()`` views) keep theirs untouched. (A pool of
    its own: the process's pool holds whatever earlier tests freed, which a smaller fit would win.)"""
    monkeypatch.setattr(kv_slab, "_POOL", kv_slab._SlabPool(limit=kv_slab._POOL.limit))
    cpu = torch.device("cpu")
    first = SlabCache(num_layers=2, capacity=40)
    first.allocate(3, heads=2, head_dim=4, dtype=torch.float32, device=cpu)
    for written in first.slab_layers:
        written.update(torch.full((3, 2, 30, 4), 7.0), torch.full((3, 2, 30, 4), -7.0))
    del written  # a layer outliving its cache keeps its memory from the pool as a view does
    assert first._joint is not None
    address = first._joint[0].data_ptr()
    kept = first.slab_layers[0].used()  # views that outlive their cache
    del first
    second = SlabCache(num_layers=2, capacity=40)
    second.allocate(3, heads=2, head_dim=4, dtype=torch.float32, device=cpu)
    assert second._joint is not None and second._joint[0].data_ptr() != address
    assert bool((kept[0] == 7.0).all()) and bool((kept[1] == -7.0).all())
    del kept, second
    third = SlabCache(num_layers=2, capacity=40)
    third.allocate(3, heads=2, head_dim=4, dtype=torch.float32, device=cpu)
    assert third._joint is not None
    assert {third._joint[0].data_ptr(), third._joint[1].data_ptr()} & {address}
    assert not third._joint[0].any() and not third._joint[1].any()


def test_a_slab_freed_in_inference_mode_serves_only_inference_mode() -> None:
    """A buffer made under ``torch.inference_mode`` cannot be written outside it: a cache
    allocated outside gets a buffer of its own mode (it failed with an in-place update error)."""
    cpu = torch.device("cpu")
    with torch.inference_mode():
        inside = SlabCache(num_layers=2, capacity=24)
        inside.allocate(2, heads=2, head_dim=4, dtype=torch.float32, device=cpu)
        assert inside._joint is not None and inside._joint[0].is_inference()
        del inside
    outside = SlabCache(num_layers=2, capacity=24)
    outside.allocate(2, heads=2, head_dim=4, dtype=torch.float32, device=cpu)
    assert outside._joint is not None and not outside._joint[0].is_inference()
    outside._joint[0].add_(1.0)  # writable outside inference mode
    with torch.inference_mode():
        again = SlabCache(num_layers=2, capacity=24)
        again.allocate(2, heads=2, head_dim=4, dtype=torch.float32, device=cpu)
        assert again._joint is not None and not again._joint[0].any()
