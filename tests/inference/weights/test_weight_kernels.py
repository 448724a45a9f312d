"""The weight-only int8 / int4 and packed float32 linears against ``F.linear`` on the weights they hold."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from inference.weights.build import onednn_packs
from inference.weights.kernels import (
    Int4Linear,
    Int8Embedding,
    Int8Linear,
    PackedLinear,
    quantize_int4,
    quantize_int8,
    stored_bytes,
)
from reasoning.errors import InvalidInput

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _weight(rows: int = 64, cols: int = 96, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed))


def test_int8_codes_are_within_half_a_step_of_the_weight() -> None:
    w = _weight()
    codes, scales = quantize_int8(w)
    assert codes.dtype == torch.int8 and int(codes.abs().max()) <= 127
    error = (codes.float() * scales[:, None] - w).abs()
    assert bool((error <= scales[:, None] / 2 + 1e-6).all())


def test_int4_codes_are_within_half_a_step_of_the_weight() -> None:
    w = _weight()
    codes, scales, mins = quantize_int4(w, 32)
    assert int(codes.min()) >= 0 and int(codes.max()) <= 15
    steps = scales.repeat_interleave(32, dim=1)
    error = (codes.float() * steps + mins.repeat_interleave(32, dim=1) - w).abs()
    assert bool((error <= steps / 2 + 1e-5).all())


def test_int4_needs_whole_groups() -> None:
    with pytest.raises(InvalidInput, match="group"):
        quantize_int4(_weight(cols=40), 32)


@pytest.mark.parametrize("rows", [1, 4, 16])
def test_int8_linear_multiplies_by_its_dequantised_weight(rows: int) -> None:
    w, bias = _weight(), torch.randn(64)
    layer = Int8Linear.from_weight(w, bias)
    x = torch.randn(rows, 3, 96)
    expected = F.linear(x, layer.codes.float() * layer.scales.float()[:, None], bias)
    torch.testing.assert_close(layer(x).float(), expected, atol=0.15, rtol=0.02)
    assert layer(x).shape == (rows, 3, 64) and layer(x).dtype == torch.bfloat16


@pytest.mark.parametrize("rows", [1, 4, 16])
def test_int4_linear_multiplies_by_its_dequantised_weight(rows: int) -> None:
    w = _weight()
    codes, scales, mins = quantize_int4(w, 32)
    layer = Int4Linear(codes, scales, mins, None)
    dequantised = codes.float() * scales.repeat_interleave(32, 1) + mins.repeat_interleave(32, 1)
    x = torch.randn(rows, 96)
    torch.testing.assert_close(layer(x).float(), F.linear(x, dequantised), atol=0.25, rtol=0.03)


def test_int4_linear_holds_the_codes_exactly() -> None:
    """With unit scales and zero minimums an identity input reads the packed codes back."""
    codes = torch.randint(0, 16, (64, 96), generator=torch.Generator().manual_seed(3))
    ones, zeros = torch.ones(64, 3), torch.zeros(64, 3)
    layer = Int4Linear(codes, ones, zeros, None, dtype=torch.float32)
    read = layer(torch.eye(96)).T  # [N, K]
    assert torch.equal(read, codes.float())


@pytest.mark.skipif(not onednn_packs(), reason="this torch build does not pack for oneDNN")
def test_packed_linear_equals_f_linear() -> None:
    w, bias = _weight(), torch.randn(64)
    x = torch.randn(4, 2, 96)
    torch.testing.assert_close(PackedLinear(w, bias)(x), F.linear(x, w, bias), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", ["int8", "int4"])
def test_a_band_of_a_fused_kernel_shares_its_codes_and_multiplies_as_its_own_kernel(
    kind: str,
) -> None:
    parts = [_weight(rows, 96, seed) for seed, rows in enumerate((128, 64, 64))]
    fused_weight = torch.cat(parts)
    build = Int8Linear.from_weight if kind == "int8" else Int4Linear.from_weight
    fused = build(fused_weight, None)
    x = torch.randn(4, 96, generator=torch.Generator().manual_seed(7)).bfloat16()
    lo = 0
    for part in parts:
        hi = lo + part.shape[0]
        band = fused.rows(lo, hi)
        assert band is not None and band.out_features == part.shape[0]
        codes = band.codes if isinstance(band, Int8Linear) else band.packed
        whole = fused.codes if isinstance(fused, Int8Linear) else fused.packed
        assert codes.untyped_storage().data_ptr() == whole.untyped_storage().data_ptr()
        # The band computes exactly the fused kernel's rows lo:hi.
        assert torch.equal(band(x), fused(x)[:, lo:hi])
        lo = hi


def test_an_int4_band_off_the_64_row_blocks_is_refused() -> None:
    fused = Int4Linear.from_weight(_weight(128, 64), None)
    assert fused.rows(0, 32) is None and fused.rows(64, 128) is not None


def test_quantising_a_weight_band_by_band_gives_the_same_int8_kernel() -> None:
    w = _weight(300, 64)
    whole = Int8Linear.from_weight(w, None)
    banded = Int8Linear.from_rows(lambda lo, hi: w[lo:hi], (300, 64), chunk=128)
    assert torch.equal(banded.codes, whole.codes) and torch.equal(banded.scales, whole.scales)


def test_the_int8_embedding_looks_up_the_heads_dequantised_rows() -> None:
    w = _weight(50, 32)
    head = Int8Linear.from_weight(w, None)
    embedding = Int8Embedding(head)
    ids = torch.tensor([[3, 49, 0], [7, 7, 12]])
    table = head.codes.float() * head.scales.float()[:, None]
    torch.testing.assert_close(embedding(ids).float(), table[ids], atol=1e-2, rtol=1e-2)
    assert embedding(ids).shape == (2, 3, 32) and embedding(ids).dtype == torch.bfloat16
    # No table of its own: the lookup reads the head's buffers.
    assert stored_bytes(embedding) == stored_bytes(head)


@pytest.mark.parametrize("kind", ["int8", "int4", "packed"])
def test_a_kernels_direct_function_gives_the_module_calls_result_bit_for_bit(kind: str) -> None:
    """The lean forward calls ``direct()``; the library forward calls the module: one result."""
    if kind == "packed" and not onednn_packs():
        pytest.skip("this torch build does not pack for oneDNN")
    w, bias = _weight(128, 96), torch.randn(128, generator=torch.Generator().manual_seed(3))
    kernel: torch.nn.Module
    if kind == "int8":
        kernel = Int8Linear.from_weight(w, bias)
    elif kind == "int4":
        kernel = Int4Linear.from_weight(w, bias)
    else:
        kernel = PackedLinear(w, bias)
    direct = kernel.direct()  # type: ignore[operator]
    dtype = torch.float32 if kind == "packed" else torch.bfloat16
    for shape in ((3, 96), (2, 5, 96), (1, 1, 96)):
        x = torch.randn(shape, generator=torch.Generator().manual_seed(len(shape))).to(dtype)
        assert torch.equal(direct(x), kernel(x))
        assert direct(x).shape == (*shape[:-1], 128)
