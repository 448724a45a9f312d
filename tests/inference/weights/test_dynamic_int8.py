"""The large-vocabulary LM head through fbgemm's dynamic int8 product, against the weight-only one."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from inference.weights.dynamic_int8 import (
    DYNAMIC_HEAD_ROWS,
    DynamicInt8Linear,
    dynamic_head,
    fbgemm_available,
)
from inference.weights.kernels import Int8Embedding, Int8Linear, stored_bytes

pytestmark = [
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.skipif(not fbgemm_available(), reason="this torch build has no fbgemm engine"),
]


def _head(rows: int, seed: int = 0) -> Int8Linear:
    gen = torch.Generator().manual_seed(seed)
    return Int8Linear.from_weight(torch.randn(rows, 64, generator=gen) * 0.05, None)


def test_a_large_head_takes_the_dynamic_product_over_its_own_codes() -> None:
    head = _head(DYNAMIC_HEAD_ROWS)
    dynamic = dynamic_head(head)
    assert isinstance(dynamic, DynamicInt8Linear)
    # The same codes and scales (a tied embedding reads them), not a copy.
    assert dynamic.codes.data_ptr() == head.codes.data_ptr()
    assert dynamic.scales.data_ptr() == head.scales.data_ptr()
    # Its packed copy of the codes is counted with the weights held.
    assert stored_bytes(dynamic) >= stored_bytes(head) + head.codes.numel()
    gen = torch.Generator().manual_seed(1)
    x = (torch.randn(4, 1, 64, generator=gen) * 3).to(torch.bfloat16)  # a beam's rows, one step
    weight_only, rounded = head(x).float(), dynamic(x)
    assert rounded.dtype == x.dtype and rounded.shape == (4, 1, DYNAMIC_HEAD_ROWS)
    assert torch.equal(dynamic.direct()(x), rounded)
    kl = F.kl_div(
        F.log_softmax(rounded.float(), -1),
        F.log_softmax(weight_only, -1),
        log_target=True,
        reduction="batchmean",
    )
    assert float(kl) < 0.01, f"KL {float(kl):.4f}"
    assert torch.equal(rounded.float().argmax(-1), weight_only.argmax(-1))
    # A tied embedding over the dynamic head reads the same rows as over the weight-only one.
    ids = torch.tensor([[0, 7, DYNAMIC_HEAD_ROWS - 1]])
    assert torch.equal(Int8Embedding(dynamic)(ids), Int8Embedding(head)(ids))


def test_a_small_head_keeps_the_weight_only_product() -> None:
    head = _head(DYNAMIC_HEAD_ROWS - 1)
    assert dynamic_head(head) is head
