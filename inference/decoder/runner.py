"""One forward pass of a Hugging Face causal LM, with FLOP and call accounting.

The keyword under which a model takes its cache (``cache`` in transformers
5.x, ``past_key_values`` before) is decided once when the runner is built,
never per step. FLOPs are counted with the usual dense estimate
``2 * parameters * tokens`` per forward (attention over the context is left
out: for the short contexts here it is a few percent, and the same estimate
is used for decode and counterfactual scoring so their ratio is fair).
"""

from __future__ import annotations

import inspect
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from inference.decoder.grouped_attention import GROUPED_ATTENTION, GroupedCache
from inference.decoder.kv_slab import SlabCache, layer_windows, visible
from inference.decoder.packed_llama import packed_forward
from inference.forward_health import health_of
from inference.weights.kernels import parameter_count
from reasoning.errors import TenetError, Unavailable

if TYPE_CHECKING:
    from inference.decoder.microbatch import Lane

__all__ = ["MIN_CHUNK", "ForwardCounters", "ModelRunner"]

#: Fewest tokens of a prefill chunk sized by time (and the first chunk's size).
MIN_CHUNK = 16

log = logging.getLogger("tenet.inference")


@dataclass
class ForwardCounters:
    """Mutable tallies of one decode: forwards, tokens processed, FLOPs by purpose."""

    prefill_calls: int = 0
    prefill_tokens: int = 0
    decode_calls: int = 0
    decode_tokens: int = 0
    scoring_calls: int = 0
    scoring_tokens: int = 0
    flops: dict[str, float] = field(
        default_factory=lambda: {"prefill": 0.0, "decode": 0.0, "counterfactual": 0.0}
    )


class ModelRunner:
    """Calls ``model(...)`` with explicit positions and a 2D padding mask.

    Guarantees: inference mode, logits returned as float32 regardless of the
    model dtype (bfloat16 on CUDA), and every call counted in ``counters``.
    A model packed for the lean CPU forward (``packed_llama.pack_model``)
    runs through it unless ``packed`` is False.
    With a ``lane`` every model call goes through the process's
    :class:`~inference.decoder.microbatch.MicroBatcher`: one-token decode
    steps are merged with other decodes' steps, everything else runs alone.
    A prefill into the KV slab longer than ``prefill_chunk`` tokens (the
    lane's, by default) runs as successive calls of at most that many tokens,
    each writing its keys and values after the previous one's, so the forward
    thread serves other decodes' steps between them: one long prompt delays
    another decode's step by one chunk, not by its whole prefill. With a
    ``prefill_slice_s`` (the lane's, by default) the chunks are sized to take
    about that long each: the first has ``MIN_CHUNK`` tokens, each next one
    is scaled by how long the last took on the forward thread (attention over
    a longer context makes later tokens dearer), never above
    ``prefill_chunk``. The logits are those of one call (up to floating-point
    summation order).
    A model with sliding-window layers gets, from the library forward, each
    layer kind's mask built here from the padding mask
    (:func:`~inference.decoder.kv_slab.visible`: windows counted in the rows'
    logical positions, which the library's own mask, counted in columns, is
    not).

    Raises:
        Unavailable: the model has layers the slab cannot hold (state-space, convolution,
            linear attention...): a configuration of the service, never the client's fault.
    """

    def __init__(
        self,
        model: Any,
        counters: ForwardCounters | None = None,
        lane: Lane | None = None,
        *,
        packed: bool = True,
        prefill_chunk: int | None = None,
        prefill_slice_s: float | None = None,
    ) -> None:
        #: Per layer, how far back it attends (None: the whole row), as the slabs are told.
        self.windows = layer_windows(model.config)
        self.model = model
        self.config = model.config.get_text_config(decoder=True)
        self.parameters = parameter_count(model)  # quantised weights included
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        params = inspect.signature(model.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        self.keeps_logits = "logits_to_keep" in params
        self.counters = counters or ForwardCounters()
        self.lane = lane
        #: Most tokens per prefill call into the slab (None or 0: the whole prefill in one call).
        self.prefill_chunk = prefill_chunk if prefill_chunk is not None else (
            lane.prefill_chunk if lane is not None else None)
        self.prefill_slice_s = prefill_slice_s if prefill_slice_s is not None else (
            lane.prefill_slice_s if lane is not None else 0.0)
        self.packed = packed_forward(model) if packed else None
        #: The KV slabs' dtype: the lean forward's choice (float32 on the CPU, where attention
        #: over bfloat16 is several times slower), else the model's.
        self.kv_dtype = self.packed.kv_dtype if self.packed is not None else self.dtype
        #: Every call's outcome is reported here (readiness reads it, ``inference.forward_health``).
        self.health = health_of(model)
        self.num_layers = int(self.config.num_hidden_layers)
        self.kv_heads = int(
            getattr(self.config, "num_key_value_heads", self.config.num_attention_heads)
        )
        self.head_dim = int(
            getattr(self.config, "head_dim", None)
            or self.config.hidden_size // self.config.num_attention_heads
        )

    def new_cache(self, rows: int, capacity: int, *, hold: int | None = None) -> SlabCache:
        """A slab cache allocated for ``rows`` sequences of ``capacity`` columns (with a ``hold``,
        its sliding layers keep only their window and ``hold`` tokens more: ``SlabCache``)."""
        cache = SlabCache(self.num_layers, capacity, self.windows, hold=hold)
        cache.allocate(rows, self.kv_heads, self.head_dim, self.kv_dtype, self.device)
        return cache

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        cache: Any,
        *,
        purpose: str,
        last_only: bool,
    ) -> torch.Tensor:
        """Run the model; return float32 logits ``[B, S, V]`` (``S == 1`` when ``last_only``).

        ``input_ids, position_ids: [B, S]``; ``attention_mask: [B, past + S]``.
        ``purpose`` is one of prefill / decode / counterfactual for accounting.
        """
        if self.lane is not None and purpose == "decode" and input_ids.shape[1] == 1 and isinstance(
            cache, SlabCache
        ):
            logits = self.lane.step(input_ids, position_ids, attention_mask, cache)
        elif purpose == "prefill":
            logits = self._prefill(input_ids, position_ids, attention_mask, cache, last_only)
        else:
            logits = self._turn(input_ids, position_ids, attention_mask, cache, last_only)
        tokens = int(input_ids.numel())
        c = self.counters
        c.flops[purpose] = c.flops.get(purpose, 0.0) + 2.0 * self.parameters * tokens
        if purpose == "prefill":
            c.prefill_calls += 1
            c.prefill_tokens += tokens
        elif purpose == "decode":
            c.decode_calls += 1
            c.decode_tokens += tokens
        else:
            c.scoring_calls += 1
            c.scoring_tokens += tokens
        out: torch.Tensor = logits.float()
        return out

    def _turn(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        cache: Any,
        last_only: bool,
    ) -> torch.Tensor:
        """One model call: on the lane's forward thread (a turn of its own), else here."""
        return self._timed_turn(input_ids, position_ids, attention_mask, cache, last_only)[0]

    def _timed_turn(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        cache: Any,
        last_only: bool,
    ) -> tuple[torch.Tensor, float]:
        """:meth:`_turn` and the seconds the call itself took (not its wait for the thread)."""

        def timed() -> tuple[torch.Tensor, float]:
            started = time.perf_counter()
            out = self.call(input_ids, position_ids, attention_mask, cache, last_only=last_only)
            return out, time.perf_counter() - started

        if self.lane is None:
            return timed()
        result: tuple[torch.Tensor, float] = self.lane.call(timed)
        return result

    def _prefill(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        cache: Any,
        last_only: bool,
    ) -> torch.Tensor:
        """A prefill, in calls of at most ``prefill_chunk`` tokens when the cache is a slab.

        Chunk ``[lo, hi)`` of the ``new`` input columns sees the mask's first
        ``past + hi`` columns (``past``: columns the slab held before), so each
        token attends to what it would in one call, and the slab appends the
        chunk's keys and values after the previous chunk's.
        """
        chunk = self.prefill_chunk or 0
        new = int(input_ids.shape[1])
        if chunk <= 0 or new <= chunk or not isinstance(cache, SlabCache):
            return self._turn(input_ids, position_ids, attention_mask, cache, last_only)
        past = int(attention_mask.shape[1]) - new
        slice_s = self.prefill_slice_s
        size = min(chunk, MIN_CHUNK) if slice_s > 0 else chunk
        parts: list[torch.Tensor] = []
        lo = 0
        while lo < new:
            hi = min(new, lo + size)
            part, seconds = self._timed_turn(
                input_ids[:, lo:hi], position_ids[:, lo:hi], attention_mask[:, : past + hi], cache,
                last_only,
            )
            parts.append(part)
            if slice_s > 0:
                size = max(MIN_CHUNK, min(chunk, int((hi - lo) * slice_s / max(seconds, 1e-4))))
            lo = hi
        return parts[-1] if last_only else torch.cat(parts, dim=1)

    def call(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        cache: Any,
        *,
        last_only: bool = True,
    ) -> torch.Tensor:
        """The bare model call, no accounting: logits ``[B, S, V]`` in the model's dtype.

        A failure inside the model's forward (out of memory, a device error, a fault of the
        weights) is logged with its traceback and raised as :class:`Unavailable`: the decode
        that needed it cannot finish, the service itself is not broken, and callers never see
        a raw framework exception. Every outcome is counted in :attr:`health`.
        """
        try:
            logits = self._forward(input_ids, position_ids, attention_mask, cache, last_only)
        except TenetError:
            raise
        except Exception as exc:
            self.health.failed(exc)
            log.exception("the model's forward failed")
            raise Unavailable(
                "the model failed during this decode; retry the request",
                model="forward failed",
            ) from exc
        self.health.succeeded()
        return logits

    def _forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        cache: Any,
        last_only: bool,
    ) -> torch.Tensor:
        if isinstance(cache, SlabCache):  # held sliding layers give up what no row reaches
            cache.hold(attention_mask, int(input_ids.shape[1]))
        if self.packed is not None and isinstance(cache, (SlabCache, GroupedCache)):
            packed: torch.Tensor = self.packed(
                input_ids, position_ids, attention_mask, cache, last_only=last_only
            )
            return packed
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "position_ids": position_ids,
            "attention_mask": self._library_mask(attention_mask, cache, input_ids.shape[1]),
            self.cache_kw: cache,
            "use_cache": True,
        }
        if last_only and self.keeps_logits:
            kwargs["logits_to_keep"] = 1
        logits: torch.Tensor = self.model(**kwargs).logits
        return logits[:, -1:, :] if last_only else logits

    def _library_mask(self, attention_mask: torch.Tensor, cache: Any, new: int) -> Any:
        """The mask the library forward takes: the 2D padding mask for full attention only,
        else each layer kind's 4D mask (a dict by ``layer_types`` where the model names them).

        A merged step's grouped cache carries its groups' masks itself (per layer window).
        """
        if all(w is None for w in self.windows) or not isinstance(cache, SlabCache):
            return attention_mask
        kinds = getattr(self.config, "layer_types", None)
        windows = dict(zip(kinds, self.windows)) if kinds else {"": self.windows[0]}
        masks = {
            kind: self._as_library(visible(attention_mask, new, w)[..., cache.held_from(w) :])
            for kind, w in windows.items()
        }
        return masks if kinds else masks[""]

    def _as_library(self, seen: torch.Tensor) -> torch.Tensor:
        """A boolean ``[B, 1, S, C]`` mask as the model's attention takes it (SDPA: as is;
        eager and others: additive, the dtype's lowest value where a column is hidden)."""
        if getattr(self.config, "_attn_implementation", None) in ("sdpa", GROUPED_ATTENTION):
            return seen
        additive = torch.zeros(seen.shape, dtype=self.dtype, device=seen.device)
        return additive.masked_fill_(~seen, torch.finfo(self.dtype).min)
