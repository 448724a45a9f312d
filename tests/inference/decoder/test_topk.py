"""``row_topk``: the values of ``torch.topk`` over vocabulary-sized rows, each index holding its value."""

from __future__ import annotations

import pytest
import torch

from inference.decoder.topk import row_topk


@pytest.mark.parametrize("width", [49_152, 262_144, 100_003, 300])
@pytest.mark.parametrize("k", [1, 8, 128])
def test_row_topk_gives_torch_topk_values(width: int, k: int) -> None:
    gen = torch.Generator().manual_seed(width + k)
    x = torch.randn(4, width, generator=gen)
    x[0, torch.rand(width, generator=gen) < 0.9] = float("-inf")  # mostly masked
    x[1] = float("-inf")
    x[1, width - 3 :] = 1.0  # only the ragged tail survives, with ties
    x[2, :: 997] = 5.0  # ties at the top, spread over many chunks
    values, indices = row_topk(x, k)
    expected = torch.topk(x, min(k, width), dim=-1).values
    assert torch.equal(values, expected)
    assert torch.equal(x.gather(1, indices), values)
    finite = torch.isfinite(values)
    for r in range(4):  # the finite picks are distinct tokens
        picked = indices[r][finite[r]].tolist()
        assert len(set(picked)) == len(picked)
