"""One forward pass over the beams of several independent decodes, each on its own KV slab.

Concurrent decodes hold separate :class:`~inference.decoder.kv_slab.SlabCache` s of
different column counts. Copying them into one tensor per step would cost as
much as the step itself, so the merged forward keeps them apart: the token
projections, MLPs and the LM head run once over all rows (where batching
pays), and only the attention is computed group by group against each
decode's own slab and padding mask.

The mechanism is transformers' own extension point: an attention function
registered under :data:`GROUPED_ATTENTION` (with the SDPA mask builder). For
ordinary tensors it is exactly ``sdpa_attention_forward``, so a model switched
to it decodes solo as before; when :class:`GroupedCache` is the cache, its
``update`` writes every group's new keys and values into that group's slab and
hands the attention function a :class:`GroupedKV` instead of one tensor.
Guarantee: a row's logits equal those of the same row decoded alone, up to
floating-point summation order.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

from inference.decoder.kv_slab import SlabCache, visible

__all__ = ["GROUPED_ATTENTION", "GroupedCache", "GroupedKV", "use_grouped_attention"]

GROUPED_ATTENTION = "tenet_grouped_sdpa"


@dataclass(frozen=True)
class GroupedKV:
    """One layer's keys and values per group, with each group's rows and padding mask."""

    keys: tuple[torch.Tensor, ...]  # per group [n_g, H_kv, C_g, D]
    values: tuple[torch.Tensor, ...]
    masks: tuple[torch.Tensor, ...]  # per group [n_g, 1, 1, C_g] bool: True = attend
    bounds: tuple[tuple[int, int], ...]  # per group: its row range in the merged batch


class GroupedCache(Cache):
    """The cache of a merged forward: routes each group's rows to that group's slab.

    ``groups`` pairs every decode's slab with its 2D padding mask ``[n_g, C_g]``
    already including the column the new token will be written to. A layer with a
    sliding window (the slabs' :attr:`~SlabCache.windows`) reads the groups' masks for
    that window (:meth:`masks_for`).
    """

    def __init__(self, groups: Sequence[tuple[SlabCache, torch.Tensor]]) -> None:
        num_layers = len(groups[0][0].layers)
        super().__init__(layers=[DynamicLayer() for _ in range(num_layers)])  # type: ignore[no-untyped-call]
        self.groups = tuple(groups)
        for cache, mask in self.groups:  # held sliding layers give up what no row reaches
            cache.hold(mask, 1)
        bounds: list[tuple[int, int]] = []
        start = 0
        for _, mask in self.groups:
            bounds.append((start, start + int(mask.shape[0])))
            start += int(mask.shape[0])
        self.bounds = tuple(bounds)
        self.masks = tuple(mask[:, None, None, :] for _, mask in self.groups)
        self.windows = self.groups[0][0].windows
        self._windowed = {
            w: tuple(visible(mask, 1, w)[..., cache.held_from(w) :] for cache, mask in self.groups)
            for w in set(self.windows)
            if w is not None
        }

    def masks_for(self, window: int | None) -> tuple[torch.Tensor, ...]:
        """Every group's mask ``[n_g, 1, 1, C_g]`` for a layer attending over ``window``."""
        return self.masks if window is None else self._windowed[window]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any
    ) -> tuple[Any, Any]:
        keys: list[torch.Tensor] = []
        values: list[torch.Tensor] = []
        for (cache, _), (lo, hi) in zip(self.groups, self.bounds):
            layer: Any = cache.layers[layer_idx]  # a SlabLayer: slab caches hold nothing else
            k, v = layer.update(key_states[lo:hi], value_states[lo:hi])
            keys.append(k)
            values.append(v)
        masks = self.masks_for(self.windows[layer_idx])
        grouped = GroupedKV(tuple(keys), tuple(values), masks, self.bounds)
        return grouped, grouped

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return 0


def _attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: Any,
    value: Any,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if not isinstance(key, GroupedKV):
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    outputs = [
        sdpa_attention_forward(module, query[lo:hi], k, v, mask, **kwargs)[0]
        for k, v, mask, (lo, hi) in zip(key.keys, key.values, key.masks, key.bounds)
    ]
    return torch.cat(outputs, dim=0), None


@functools.cache
def _register() -> None:
    """Register the attention with the library, once, when a library forward first needs it
    (its modules cost about 75 MB resident; a model on the lean forward never imports them)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(GROUPED_ATTENTION, _attention)
    AttentionMaskInterface.register(GROUPED_ATTENTION, sdpa_mask)


def use_grouped_attention(model: Any) -> bool:
    """Switch ``model`` to the grouped attention when it runs SDPA; True when it now does.

    Models on another attention implementation (eager, flash) are left alone
    and then decode without cross-request merging.
    """
    config = model.config
    current = getattr(config, "_attn_implementation", None)
    if current == GROUPED_ATTENTION:
        return True
    if current != "sdpa":
        return False
    _register()
    model.set_attn_implementation(GROUPED_ATTENTION)
    return True
