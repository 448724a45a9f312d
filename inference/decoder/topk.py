"""Top-k over vocabulary-sized rows in two short passes instead of one long one.

``torch.topk`` over a 262,144-token row costs several times a plain pass over
it on the CPU (its selection is branchy work per element); the steering and
the beam search ask for a few dozen of the best entries of such rows every
step. :func:`row_topk` first takes each chunk's maximum (one vectorised pass),
keeps the ``k`` chunks with the highest maxima, and selects among their
entries only. On an accelerator ``torch.topk`` (a radix select) is used as it
is: there the extra launches would cost more than they save.

Guarantee: the values returned are exactly ``torch.topk(x, k)``'s (sorted,
largest first) and each index holds its value; indices may differ from
``torch.topk``'s only among equal values. Why: an entry above the k-th
largest value ``v`` lies in a chunk whose maximum exceeds ``v``; were that
chunk not kept, the ``k`` kept chunks' maxima would exceed ``v`` too, ``k + 1``
distinct entries above the k-th largest.
"""

from __future__ import annotations

import math

import torch

__all__ = ["row_topk"]

#: Below this many chunks per row the plain ``torch.topk`` is as fast.
_MIN_CHUNKS_PER_K = 8


def row_topk(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(values, indices)`` of the ``k`` largest entries of each row of ``x: [R, V]``, sorted."""
    rows, width = x.shape
    k = min(k, width)
    chunk = 1 << max(4, round(math.log2(math.sqrt(width / max(k, 1)))))
    whole = width // chunk
    if k <= 0 or whole < _MIN_CHUNKS_PER_K * k or x.device.type != "cpu":
        values, indices = torch.topk(x, k, dim=-1)
        return values, indices
    x = x.contiguous()
    best = x[:, : whole * chunk].view(rows, whole, chunk).amax(dim=-1)  # [R, n]
    chunks = best.topk(k, dim=-1).indices  # [R, k]
    offsets = torch.arange(chunk, device=x.device)
    cols = (chunks[..., None] * chunk + offsets).view(rows, k * chunk)  # [R, k * chunk]
    if width % chunk:
        rest = torch.arange(whole * chunk, width, device=x.device).expand(rows, -1)
        cols = torch.cat([cols, rest], dim=1)
    values, picked = x.gather(1, cols).topk(k, dim=-1)
    return values, cols.gather(1, picked)
