"""A preallocated, row-reorderable KV cache for batched beam search.

Hugging Face's ``DynamicCache`` grows every layer with ``torch.cat`` on each
forward (a full copy of the cache per token) and reorders beams with a second
full ``index_select``. ``SlabLayer`` instead allocates ``[rows, heads,
capacity, head_dim]`` once and writes new keys / values by slice; reordering
beams copies only the rows whose parent changed. The layout is "physical
columns": every row writes its token of step ``t`` to the same column, and
rows that are shorter (ragged branch prompts) or rolled back (a repaired step)
simply carry attention-mask zeros on the columns they do not use.

The model sees an ordinary ``transformers.Cache`` (5.x API): ``update``
returns views of the used columns, ``get_seq_length`` reports the column
count, so the library builds the causal mask from our 2D padding mask.

:meth:`SlabCache.allocate` holds every layer's keys (and values) in one
tensor ``[layers, rows, heads, capacity, head_dim]``, each layer's slab a
view of it, so a beam fork copies the rows of all layers in one
``index_select`` / ``index_copy_`` pair rather than one per layer (120
tensor calls a step for a 30-layer model, about 0.8 ms of a 24 ms int4
width-4 step on a 2-core EPYC); the values copied are the same.

A slab may also say which columns several rows hold alike
(:meth:`SlabCache.share`: the beams of one branch hold the same prompt), so
that an attention may read those keys and values once per span of rows
instead of once per row. The claim is kept true or withdrawn: a copy between
spans over shared columns, a reorder or a shortening narrows it.

Sliding-window and hybrid models: by default every layer's slab keeps every column, and
:attr:`SlabCache.windows` says per layer how far back that layer looks
(None: the whole row, ``w``: the ``w`` latest logical positions, the
library's ``q - k < w``). What a layer attends to is therefore a mask, built
by :func:`visible` from the row's 2D padding mask: a row's logical positions
count its unmasked columns (the ragged batch's invariant,
``inference.decoder.batch``), so a window is measured in tokens, not in
physical columns, and a rolled-back or padded column never takes a place in
it. Forks, beam reorders and the prefix cache move whole rows of every layer,
windowed or not, so they need nothing of their own.

A cache made with a ``hold`` (``SlabCache(..., hold=margin)``) keeps, for each sliding layer,
only the columns its window can still reach (:class:`WindowLayer`): memory ``O(window +
margin)`` per row instead of ``O(length)``. Physical column numbers stay global (``length``,
``set_length``, the padding mask and forks speak of the same columns as before); a sliding
layer also has a ``held_from``, the first column it still holds, and its ``keys`` /
``values`` / :meth:`SlabLayer.used` are the columns ``[held_from, length)``. Columns are given
up only in :meth:`SlabCache.hold`, called with the padding mask before each forward: it
keeps, for every row, the columns of the ``window + margin`` logical positions before the
row's first new query, so a row may still roll back up to ``margin`` tokens (forced runs,
drafts, a repaired step) and see its window again; a forward that needs a column already
given up raises rather than attend over less. Whoever attends over a held layer slices its
mask from the layer's ``held_from`` (the runner and the lean forward do).
"""

from __future__ import annotations

import copy
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

from reasoning.errors import InvalidInput, LimitExceeded, Unavailable

__all__ = [
    "ROLLBACK_MARGIN",
    "PrefixKV",
    "SlabCache",
    "SlabLayer",
    "WindowLayer",
    "layer_windows",
    "slab_refusal",
    "supports_slab_cache",
    "visible",
]

#: Tokens a row may roll back and still find its sliding layers' window held: a forced run or a
#: draft given back. A repaired step rolls back to the step's start, which may lie further back:
#: a decode that holds windows must keep that start in reach too (not done yet: the decode's
#: slabs keep every column), or its forward is refused (``SlabCache.hold``).
ROLLBACK_MARGIN = 48

# Per-layer (keys, values), each [1, H, L, D]: a prefilled prompt prefix.
PrefixKV = tuple[tuple[torch.Tensor, torch.Tensor], ...]


def _storage_refs(tensor: torch.Tensor) -> int:
    return int(torch._C._storage_Use_Count(tensor.untyped_storage()._cdata))


class _SlabPool:
    """Zeroed slab buffers, reused: a freed cache's memory serves the next cache of no more size.

    A fresh ``torch.zeros`` of a slab (hundreds of MB for a width-4 decode) faults in every
    page; the prefill's work caches, the counterfactual checks' caches and every request's
    decode cache came new each time (about a tenth of the flagship decode's main thread).
    A buffer is handed out again only when no tensor still views its memory (a prompt's
    keys and values kept past their cache, ``SlabLayer.used``) and is zeroed before, so a
    cache from the pool reads exactly as a new one. A new buffer is made a quarter longer than
    asked (only the part handed out is written), so that a cache a little longer than the last
    one of its kind (the counterfactual checks' grow with the answer) still finds it. At most
    ``limit`` bytes are kept idle.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._idle: list[torch.Tensor] = []  # contiguous buffers whose caches are gone
        self._lock = threading.Lock()
        self._sole = _storage_refs(torch.empty(1))  # the count of a buffer nothing else views

    def zeros(
        self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        numel = 1
        for size in shape:
            numel *= size
        # An inference-mode buffer cannot be written outside inference mode, and one made
        # outside would leak autograd version tracking into inference: each mode reuses its own.
        inference = torch.is_inference_mode_enabled()
        with self._lock:
            best = None
            for i, buffer in enumerate(self._idle):
                if (
                    buffer.dtype == dtype
                    and buffer.device == device
                    and numel <= buffer.numel() <= 2 * numel
                    and buffer.is_inference() == inference
                    and (best is None or buffer.numel() < self._idle[best].numel())
                    and _storage_refs(buffer) == self._sole
                ):
                    best = i
            chosen = self._idle.pop(best) if best is not None else None
        if numel == 0:
            return torch.zeros(shape, dtype=dtype, device=device)
        if (
            chosen is None
        ):  # room for a somewhat longer cache later; pages past numel stay untouched
            chosen = torch.empty(numel + numel // 4, dtype=dtype, device=device)
        return chosen.view(-1)[:numel].view(shape).zero_()

    def give(self, *tensors: torch.Tensor) -> None:
        with self._lock:
            for tensor in tensors:
                buffer = tensor._base if tensor._base is not None else tensor
                if buffer.is_contiguous() and 0 < buffer.nbytes <= self.limit:
                    self._idle.append(buffer)
            while sum(t.nbytes for t in self._idle) > self.limit:
                self._idle.pop(0)  # the oldest go first


#: Idle slab memory kept for reuse: one width-4 flagship decode's keys and values, about.
_POOL = _SlabPool(limit=640 * 2**20)


class SlabLayer(DynamicLayer):
    """One attention layer's keys and values in a fixed-capacity slab."""

    def __init__(self, capacity: int) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.capacity = capacity
        self.length = 0
        self._k: torch.Tensor | None = None  # [N, H, C, D]
        self._v: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        rows, heads, _, kdim = key_states.shape
        vdim = value_states.shape[-1]
        self.device = key_states.device
        self._k = key_states.new_zeros((rows, heads, self.capacity, kdim))
        self._v = value_states.new_zeros((rows, heads, self.capacity, vdim))
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        assert self._k is not None and self._v is not None
        new = key_states.shape[-2]
        end = self.length + new
        if end > self.capacity:
            raise LimitExceeded(f"KV slab full: {end} columns needed, capacity {self.capacity}")
        self._k[:, :, self.length : end] = key_states
        self._v[:, :, self.length : end] = value_states
        self.length = end
        self.keys = self._k[:, :, :end]
        self.values = self._v[:, :, :end]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return self.capacity

    def reset(self) -> None:
        self.length = 0
        self._k = self._v = None
        self.keys = self.values = None
        self.is_initialized = False

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise InvalidInput("crop takes a negative number of columns to remove")
        self.length = max(0, self.length + tokens_to_remove)
        self._refresh_views()

    def copy_rows(self, dst: torch.Tensor, src: torch.Tensor, start: int = 0) -> None:
        """Overwrite rows ``dst`` with rows ``src`` on the used columns from ``start``.

        All sources are read before any destination is written, so a row may
        be both (beam ``a`` takes ``b``'s history while ``b`` takes ``c``'s).
        """
        if self._k is None or self._v is None or self.length <= start:
            return
        pairs = _moves(dst.tolist(), src.tolist())
        for slab in (self._k, self._v):
            _copy_moves(slab[:, :, start : self.length], 0, pairs)

    def load_row(self, row: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Write one prefilled sequence ``[1, H, L, D]`` at the start of ``row``."""
        assert self._k is not None and self._v is not None
        n = keys.shape[-2]
        self._k[row, :, :n] = keys[0]
        self._v[row, :, :n] = values[0]

    def used(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Views of the written columns: keys and values ``[N, H, length, D]``."""
        if self._k is None or self._v is None:
            raise InvalidInput("KV slab used before allocation")
        return self._k[:, :, : self.length], self._v[:, :, : self.length]

    def _refresh_views(self) -> None:
        if self._k is not None and self._v is not None:
            self.keys = self._k[:, :, : self.length]
            self.values = self._v[:, :, : self.length]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        if self._k is None or self._v is None:
            return
        used = self.length
        self._k[:, :, :used] = self._k[:, :, :used].index_select(0, beam_idx)
        self._v[:, :, :used] = self._v[:, :, :used].index_select(0, beam_idx)
        self._refresh_views()


class WindowLayer(SlabLayer):  # type: ignore[no-untyped-call]
    """A sliding layer's slab that holds only the columns ``[held_from, length)``.

    Buffer column ``i`` is physical column ``held_from + i``. In a steady decode the buffer has
    ``base`` columns: the window, the rollback margin and a slack of a quarter window (at least
    16), so that the held columns move down once per slack's worth of steps, not every step
    (about four columns copied per step, against the window's columns each step reads). Columns are given up
    only by :meth:`make_room`, which :meth:`SlabCache.hold` calls with what the rows' padding
    mask still reaches; writing more than the buffer holds otherwise grows it (a long prefill
    in one call, a caller that never calls ``hold``): nothing is lost without the mask's word.
    """

    def __init__(self, capacity: int, window: int, margin: int) -> None:
        super().__init__(capacity)
        self.window = window
        self.margin = margin
        #: The first physical column still held (every earlier one is given up).
        self.held_from = 0
        #: Buffer columns of a steady decode.
        self.base = min(capacity, window + margin + max(16, window // 4))

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        rows, heads, _, kdim = key_states.shape
        self.device = key_states.device
        self._k = key_states.new_zeros((rows, heads, self.base, kdim))
        self._v = value_states.new_zeros((rows, heads, self.base, value_states.shape[-1]))
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        assert self._k is not None and self._v is not None
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            raise LimitExceeded(f"KV slab full: {end} columns needed, capacity {self.capacity}")
        held = self.held_from
        if end - held > self._k.shape[2]:  # grow, with slack: nothing is given up here
            self._resize(held, min(self.capacity - held, max(end - held, 2 * self._k.shape[2])))
        self._k[:, :, self.length - held : end - held] = key_states
        self._v[:, :, self.length - held : end - held] = value_states
        self.length = end
        self._refresh_views()
        return self._held()

    def make_room(self, start: int, end: int) -> None:
        """Give up the columns before ``start`` if the buffer needs the room, so that columns up
        to ``end`` fit; a buffer grown past ``base`` shrinks back once ``base`` is enough."""
        if self._k is None or self._v is None:
            return
        start = min(max(start, self.held_from), self.length)
        size, need = self._k.shape[2], end - start
        if end - self.held_from <= size and (size <= self.base or need > self.base):
            return
        self._resize(start, self.base if need <= self.base else max(need, size))

    def _resize(self, start: int, columns: int) -> None:
        """Hold the columns ``[start, length)`` at the head of a buffer of ``columns`` columns."""
        assert self._k is not None and self._v is not None
        keep, lo = self.length - start, start - self.held_from
        if columns == self._k.shape[2]:
            if lo:
                for slab in (self._k, self._v):
                    slab[:, :, :keep] = slab[:, :, lo : lo + keep].clone()
        else:
            grown = []
            for slab in (self._k, self._v):
                fresh = slab.new_zeros((*slab.shape[:2], columns, slab.shape[-1]))
                fresh[:, :, :keep] = slab[:, :, lo : lo + keep]
                grown.append(fresh)
            self._k, self._v = grown
        self.held_from = start
        self._refresh_views()

    def _held(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._k is None or self._v is None:
            raise InvalidInput("KV slab used before allocation")
        held = self.length - self.held_from
        return self._k[:, :, :held], self._v[:, :, :held]

    def _refresh_views(self) -> None:
        if self._k is not None and self._v is not None:
            self.keys, self.values = self._held()

    def reset(self) -> None:
        super().reset()
        self.held_from = 0

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise InvalidInput("crop takes a negative number of columns to remove")
        self.set_length(max(0, self.length + tokens_to_remove))

    def set_length(self, columns: int) -> None:
        """Set the column count; a column before ``held_from`` cannot be written again."""
        if columns < self.held_from:
            raise LimitExceeded(
                f"a sliding layer holds columns from {self.held_from}; cannot go back to {columns}"
            )
        self.length = columns
        self._refresh_views()

    def copy_rows(self, dst: torch.Tensor, src: torch.Tensor, start: int = 0) -> None:
        if self._k is None or self._v is None or self.length <= start:
            return
        pairs = _moves(dst.tolist(), src.tolist())
        lo, hi = max(start, self.held_from) - self.held_from, self.length - self.held_from
        for slab in (self._k, self._v):
            _copy_moves(slab[:, :, lo:hi], 0, pairs)

    def load_row(self, row: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Write one prefilled sequence ``[1, H, L, D]`` at columns ``[0, L)`` (before any is
        given up; the buffer grows to hold them until the next :meth:`make_room`)."""
        assert self._k is not None and self._v is not None
        if self.held_from:
            raise InvalidInput("a sliding layer that gave up columns cannot load a row from 0")
        n = keys.shape[-2]
        if n > self._k.shape[2]:
            self._resize(0, n)
        self._k[row, :, :n] = keys[0]
        self._v[row, :, :n] = values[0]

    def used(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Views of the held columns ``[held_from, length)``: keys and values ``[N, H, n, D]``."""
        return self._held()

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        if self._k is None or self._v is None:
            return
        held = self.length - self.held_from
        self._k[:, :, :held] = self._k[:, :, :held].index_select(0, beam_idx)
        self._v[:, :, :held] = self._v[:, :, :held].index_select(0, beam_idx)
        self._refresh_views()


class SlabCache(Cache):
    """A ``transformers.Cache`` of ``SlabLayer``s, one per decoder layer."""

    def __init__(
        self,
        num_layers: int,
        capacity: int,
        windows: Sequence[int | None] | None = None,
        *,
        hold: int | None = None,
    ) -> None:
        """``hold``: None keeps every column of every layer; a number (the rollback margin,
        :data:`ROLLBACK_MARGIN`) makes each sliding layer a :class:`WindowLayer` that keeps only
        the columns its window and that many more tokens reach (see :meth:`hold`)."""
        layer_windows_ = (None,) * num_layers if windows is None else tuple(windows)
        if len(layer_windows_) != num_layers:
            raise InvalidInput(f"{len(layer_windows_)} layer windows for {num_layers} layers")
        super().__init__(
            layers=[
                SlabLayer(capacity) if w is None or hold is None else WindowLayer(capacity, w, hold)
                for w in layer_windows_
            ]
        )
        self.capacity = capacity
        #: Per layer, the logical positions it looks back over (None: all; :func:`layer_windows`).
        self.windows: tuple[int | None, ...] = layer_windows_
        #: The rollback margin of the sliding layers' held columns (None: they hold every column).
        self.margin = hold
        self._shared = (0, 1)
        #: Every layer's keys and values, ``[L, N, H, C, D]`` each, when :meth:`allocate` made
        #: them one tensor, and the layers' key slabs it made (its views, while they last).
        self._joint: tuple[torch.Tensor, torch.Tensor] | None = None
        self._joint_views: tuple[torch.Tensor, ...] = ()

    @property
    def shared(self) -> tuple[int, int]:
        """``(columns, span)``: rows ``r`` and ``r'`` with ``r // span == r' // span`` hold equal
        keys and values on columns ``[0, columns)`` of every layer (``(0, 1)``: no claim)."""
        return self._shared

    def share(self, columns: int, span: int) -> None:
        """Declare that every ``span`` consecutive rows hold the same first ``columns`` columns.

        The caller guarantees it when declaring (rows loaded from one prefill);
        the cache keeps it true afterwards through its own operations: new
        columns are written after ``columns`` (never before the current
        length), and whatever could break it narrows or withdraws it
        (:meth:`copy_rows` across spans, ``reorder_cache``, a length set or
        cropped below ``columns``). Writing a layer's slab directly
        (``SlabLayer.load_row``, its tensors) is the caller's affair: declare
        after such writes, not before.
        """
        length = self.slab_layers[0].length if self.slab_layers else 0
        self._shared = (min(columns, length), span) if columns > 0 and span > 1 else (0, 1)

    def _narrow(self, columns: int) -> None:
        if columns < self._shared[0]:
            self._shared = (columns, self._shared[1]) if columns > 0 else (0, 1)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self._shared = (0, 1)  # any row may now hold any other's history
        super().reorder_cache(beam_idx)

    @property
    def slab_layers(self) -> list[SlabLayer]:
        return [layer for layer in self.layers if isinstance(layer, SlabLayer)]

    def allocate(
        self, rows: int, heads: int, head_dim: int, dtype: torch.dtype, device: torch.device
    ) -> None:
        """Allocate every layer's slab up front (rows x capacity), length 0, in one tensor."""
        layers = [layer for layer in self.slab_layers if not isinstance(layer, WindowLayer)]
        shape = (len(layers), rows, heads, self.capacity, head_dim)
        keys = _POOL.zeros(shape, dtype, device)
        values = _POOL.zeros(shape, dtype, device)
        if layers:  # once this cache is gone, its buffers may serve another (see _SlabPool)
            weakref.finalize(self, _POOL.give, keys, values)
        for index, layer in enumerate(layers):
            layer.capacity = self.capacity
            layer._k, layer._v = keys[index], values[index]
            layer.device = device
            layer.is_initialized = True
            layer.length = 0
            layer._refresh_views()
        self._joint = (keys, values) if layers else None
        self._joint_views = tuple(layer._k for layer in layers if layer._k is not None)
        for window in self.held_layers:  # a buffer of its own each (it may grow or shrink)
            window.capacity = self.capacity
            window.base = min(self.capacity, window.base)
            window._k = torch.zeros(
                (rows, heads, window.base, head_dim), dtype=dtype, device=device
            )
            window._v = torch.zeros_like(window._k)
            window.device = device
            window.is_initialized = True
            window.length = window.held_from = 0
            window._refresh_views()

    @property
    def held_layers(self) -> list[WindowLayer]:
        """The sliding layers that hold only their window's columns (none without ``hold``)."""
        return [layer for layer in self.layers if isinstance(layer, WindowLayer)]

    def held_from(self, window: int | None) -> int:
        """The first column the layers of this ``window`` hold (0 for full layers, or without
        ``hold``): a mask over every column is sliced from here for them."""
        for layer in self.held_layers:
            if layer.window == window:
                return layer.held_from
        return 0

    def hold(self, mask: torch.Tensor, new: int) -> None:
        """Before a forward of ``new`` columns whose padding mask is ``mask [B, past + new]``:
        in each held sliding layer, give up (when its buffer needs the room) the columns no row
        can reach any more, and make room for the new ones.

        A row keeps every column from the first one whose logical position lies within its
        window plus :attr:`margin` tokens before the row's first new query, so a later forward
        after a rollback of up to ``margin`` tokens still finds its window held.

        Raises:
            LimitExceeded: a row's window reaches a column already given up (the decode rolled
                back further than the margin): the forward would attend over less than the
                library's, so it does not run.
        """
        held = self.held_layers
        if not held or self.margin is None:
            return
        columns = int(mask.shape[-1])
        position = mask.long().cumsum(-1) - 1  # [B, C]: each column's logical position
        first = position[:, columns - new : columns - new + 1]  # [B, 1]: first new query's
        reach: dict[int, tuple[int, int]] = {}
        for layer in held:
            if layer.window not in reach:
                edge = first - (layer.window - 1)
                reach[layer.window] = (
                    int((position < edge).sum(-1).min()),
                    int((position < edge - self.margin).sum(-1).min()),
                )
            needed, keep_from = reach[layer.window]
            if needed < layer.held_from:
                raise LimitExceeded(
                    f"a sliding layer's window reaches column {needed}, given up already (held "
                    f"from {layer.held_from}): a rollback past the margin of {self.margin} tokens"
                )
            layer.make_room(keep_from, columns)

    def rows(self, lo: int, hi: int) -> SlabCache:
        """Rows ``lo .. hi - 1`` as a slab of their own: views of this cache's tensors, so the
        keys and values a forward writes into it land in these rows (whose length the caller
        sets afterwards). The view keeps this cache's claim of rows that share their prompt
        (:attr:`shared`) when ``lo`` starts a span, and gives up no column itself (this
        cache's ``hold``, when it has one, runs before the view's forward)."""
        view = copy.copy(self)
        view.layers = [copy.copy(layer) for layer in self.layers]
        for layer in view.slab_layers:
            assert layer._k is not None and layer._v is not None
            layer._k, layer._v = layer._k[lo:hi], layer._v[lo:hi]
            layer._refresh_views()
        view._joint, view._joint_views = None, ()
        if getattr(view, "margin", None) is not None:
            view.margin = None
        columns, span = self.shared
        view._shared = (columns, span) if lo % span == 0 else (0, 1)
        return view

    def every(self, step: int) -> SlabCache:
        """A slab over every ``step``-th row: views of this cache's tensors, so the keys and
        values a forward writes into it land in these rows (whose length the caller sets).

        The view gives up no column of its own (its sliding layers hold what this cache's
        do): call :meth:`hold` on this cache, with every row's mask, before the view's forward.
        """
        view = SlabCache(len(self.slab_layers), self.capacity, self.windows, hold=self.margin)
        view.margin = None  # this cache decides what its held layers keep
        for mine, whole in zip(view.slab_layers, self.slab_layers):
            assert whole._k is not None and whole._v is not None
            mine._k, mine._v = whole._k[::step], whole._v[::step]
            mine.device = whole.device
            mine.is_initialized = True
            mine.length = whole.length
            if isinstance(mine, WindowLayer) and isinstance(whole, WindowLayer):
                mine.held_from, mine.base = whole.held_from, whole._k.shape[2]
            mine._refresh_views()
        return view

    def set_length(self, columns: int) -> None:
        self._narrow(columns)
        for layer in self.slab_layers:
            if isinstance(layer, WindowLayer):
                layer.set_length(columns)
            else:
                layer.length = columns
                layer._refresh_views()

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)
        self._narrow(self.slab_layers[0].length if self.slab_layers else 0)

    def copy_rows(self, dst: Sequence[int], src: Sequence[int], start: int = 0) -> None:
        """Make rows ``dst[i]`` copies of rows ``src[i]``: the beam fork, no-op when empty.

        Columns before ``start`` are left alone: the caller guarantees they
        already hold the same keys and values in ``dst`` and ``src`` (a shared
        prompt), so a fork moves only what the rows have generated.
        """
        if not dst:
            return
        columns, span = self._shared
        if start < columns and any(d // span != s // span for d, s in zip(dst, src)):
            self._narrow(start)  # another span's columns now sit in these rows
        pairs = _moves(dst, src)
        if not pairs:
            return
        layers = self.slab_layers
        plain = [layer for layer in layers if not isinstance(layer, WindowLayer)]
        rest: list[SlabLayer] = [layer for layer in layers if isinstance(layer, WindowLayer)]
        length = layers[0].length
        joint = self._joint
        if (
            joint is not None
            and len(self._joint_views) == len(plain)
            and all(
                layer._k is view and layer.length == length
                for layer, view in zip(plain, self._joint_views)
            )
        ):
            if length > start:
                for both in joint:  # every layer at once, one strided copy per moved row
                    _copy_moves(both[:, :, :, start:length], 1, pairs)
        else:
            rest = layers
        if not rest:
            return
        device = layers[0].device
        d = torch.tensor([p[0] for p in pairs], dtype=torch.long, device=device)
        s = torch.tensor([p[1] for p in pairs], dtype=torch.long, device=device)
        for layer in rest:
            layer.copy_rows(d, s, start)

    def nbytes(self) -> int:
        total = 0
        for layer in self.slab_layers:
            if layer._k is not None and layer._v is not None:
                total += layer._k.nbytes + layer._v.nbytes
        return total


def _moves(dst: Sequence[int], src: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """The ``(dst, src)`` row pairs that move something: a row copied onto itself is left out."""
    return tuple((int(d), int(s)) for d, s in zip(dst, src) if int(d) != int(s))


def _copy_moves(window: torch.Tensor, dim: int, pairs: Sequence[tuple[int, int]]) -> None:
    """Rows ``d`` of ``window`` (along ``dim``) take the values rows ``s`` held before any write.

    One strided copy per moved row (a gather over a non-contiguous slab, ``index_select`` /
    ``index_copy_``, takes tens of times longer on the CPU); a source that is also a
    destination is read into a copy first, so the result is the gather's, bit for bit.
    """
    targets = {d for d, _ in pairs}
    staged = {s: window.select(dim, s).clone() for _, s in pairs if s in targets}
    for d, s in pairs:
        source = staged.get(s)
        window.select(dim, d).copy_(source if source is not None else window.select(dim, s))


def _text_config(config: Any) -> Any:
    return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config


def _windows_or_reason(config: Any) -> tuple[tuple[int | None, ...], str | None]:
    text = _text_config(config)
    layers = int(text.num_hidden_layers)
    window = getattr(text, "sliding_window", None)
    if window is not None and not getattr(text, "use_sliding_window", True):
        window = None  # Qwen2's switch, off by default
    kinds = getattr(text, "layer_types", None)
    if not kinds:  # one kind for every layer: the window applies to all when there is one
        return (None if window is None else int(window),) * layers, None
    windows: list[int | None] = []
    for index, kind in enumerate(kinds[:layers]):
        if kind == "full_attention":
            windows.append(None)
        elif kind == "sliding_attention" and window is not None:
            windows.append(int(window))
        else:
            return (), (
                f"the steered decoder serves full and sliding-window attention layers; "
                f"layer {index} of this {getattr(text, 'model_type', 'unknown')!r} model is "
                f"{kind!r}"
            )
    return tuple(windows), None


def slab_refusal(config: Any) -> str | None:
    """Why the slab cannot hold this model's layers (a kind other than full or sliding-window
    attention: state-space, convolution, linear or chunked attention), or None when it can."""
    return _windows_or_reason(config)[1]


def layer_windows(config: Any) -> tuple[int | None, ...]:
    """Per decoder layer, how many latest logical positions it attends to (None: all of them).

    Read as the library reads the configuration: ``layer_types`` names each layer's kind
    (``full_attention`` or ``sliding_attention``, the window ``sliding_window``); without
    it a ``sliding_window`` (unless ``use_sliding_window`` is off) applies to every layer.

    Raises:
        Unavailable: a layer of another kind (:func:`slab_refusal` says which).
    """
    windows, reason = _windows_or_reason(config)
    if reason is not None:
        raise Unavailable(reason, model="unservable")
    return windows


def supports_slab_cache(config: Any) -> bool:
    """True when every decoder layer is full or sliding-window attention (:func:`slab_refusal`)."""
    return slab_refusal(config) is None


def visible(mask: torch.Tensor, new: int, window: int | None) -> torch.Tensor:
    """Which columns each of the last ``new`` columns' queries attends to: ``[B, 1, new, C]`` bool.

    ``mask [B, C]`` is the rows' padding mask including the new columns. A query sees the
    unmasked columns up to its own and, with a ``window``, only those whose logical position
    (the count of unmasked columns before them) is within ``window`` of its own; a query
    always sees itself, so a padding query's attention stays finite.
    """
    columns = mask.shape[-1]
    col = torch.arange(columns, device=mask.device)
    query = columns - new + torch.arange(new, device=mask.device)[:, None]  # [S, 1]
    seen = mask[:, None, :] & (col <= query)  # [B, S, C]
    if window is not None:
        position = mask.long().cumsum(-1) - 1  # [B, C]
        ahead = position[:, columns - new :, None] - position[:, None, :]  # [B, S, C]
        seen &= ahead < window
    return (seen | (col == query))[:, None]
