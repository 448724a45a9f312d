"""Sliding layers that hold only their window: the same logits, memory of the window's size.

A tiny random-weight Gemma 3 (window 16; sliding, full and sliding layers) decodes three ragged
rows (one padded in the middle, one at the start) over a prompt six times the window, through
the library forward and the lean forward, into two slabs: one that keeps every column and one
whose sliding layers keep only their window and a rollback margin (``SlabCache(hold=...)``).
Along the way: a fork, a row rolled back by masking (a repaired step), columns given back and
rewritten (a forced run left), a merged step of two decodes. Every step's logits equal the full
slab's and the library forward's over each row's tokens alone; the held slab's sliding layers
stay at their steady size. A rollback past the margin is refused.

Equal to float32 rounding, not bit for bit: attention over the held columns sums the same terms
as over every column less the masked ones (exact zeros), in another grouping, so a logit may
differ in its last bits (1.2e-6 at most seen here); before any column is given up the two are
bit for bit the same, which the first chunk's logits check.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, Gemma3TextConfig

from inference.decoder.grouped_attention import GroupedCache, use_grouped_attention
from inference.decoder.kv_slab import SlabCache, WindowLayer
from inference.decoder.runner import ModelRunner
from inference.weights.build import convert
from reasoning.errors import LimitExceeded

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WINDOW, MARGIN, VOCAB, PROMPT = 16, 6, 300, 96


def _tiny() -> Any:
    torch.manual_seed(0)
    config = Gemma3TextConfig(
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=3,
        vocab_size=VOCAB,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=WINDOW,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    )
    config._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # wider than the initialiser's scale: logits that differ by token
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(4.0)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


@pytest.fixture(scope="module")
def model() -> Any:
    return _tiny()


class _Rows:
    """Three rows' tokens per column and their padding mask, fed to two slabs alike."""

    def __init__(self, runner: ModelRunner, capacity: int) -> None:
        self.runner = runner
        self.full = runner.new_cache(3, capacity)
        self.held = runner.new_cache(3, capacity, hold=MARGIN)
        self.ids = torch.zeros((3, capacity), dtype=torch.long)
        self.mask = torch.zeros((3, capacity), dtype=torch.bool)
        self.columns = 0

    def feed(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write ``ids [3, S]`` (``mask``: which are tokens) after the used columns into both."""
        lo, hi = self.columns, self.columns + ids.shape[1]
        self.ids[:, lo:hi], self.mask[:, lo:hi] = ids, mask
        pos = (self.mask[:, :hi].long().cumsum(-1) - 1).clamp(min=0)[:, lo:hi]
        out = []
        for cache in (self.full, self.held):
            out.append(
                self.runner.forward(
                    ids, pos, self.mask[:, :hi], cache, purpose="prefill", last_only=False
                )
            )
        self.columns = hi
        return out[0], out[1]

    def step(self, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return self.feed(
            torch.randint(1, VOCAB, (3, 1), generator=gen), torch.ones((3, 1), dtype=torch.bool)
        )

    def rewind(self, columns: int) -> None:
        """Give back the last ``columns`` columns of every row (rewritten by the next feeds)."""
        self.columns -= columns
        self.mask[:, self.columns :] = False
        for cache in (self.full, self.held):
            cache.set_length(self.columns)

    def check_alone(self, model: Any, logits: torch.Tensor) -> None:
        """Each row's last logits equal the library forward over that row's tokens alone."""
        for row in range(3):
            tokens = self.ids[row, : self.columns][self.mask[row, : self.columns]]
            expected = model(input_ids=tokens[None]).logits[0, -1].float()
            torch.testing.assert_close(logits[row, -1], expected, atol=1e-4, rtol=1e-4)


def _prompt(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(1, VOCAB, (3, PROMPT), generator=gen)
    mask = torch.ones((3, PROMPT), dtype=torch.bool)
    mask[1, 40:52] = False  # padding in the middle of row 1 (a ragged branch)
    mask[2, :20] = False  # row 2 starts later
    return ids, mask


def _same(full: torch.Tensor, held: torch.Tensor) -> None:
    torch.testing.assert_close(held, full, atol=1e-5, rtol=1e-5)


def _sliding_columns(cache: SlabCache) -> set[int]:
    return {layer.used()[0].shape[2] for layer in cache.held_layers}


@pytest.mark.parametrize("lean", [False, True])
def test_held_sliding_layers_give_the_logits_of_a_slab_that_keeps_every_column(
    model: Any, lean: bool
) -> None:
    if lean:
        model = _tiny()
        convert(model)
    runner = ModelRunner(model, packed=lean, prefill_chunk=24)
    assert (runner.packed is not None) == lean
    gen = torch.Generator().manual_seed(7)
    rows = _Rows(runner, PROMPT + 64)
    assert [isinstance(layer, WindowLayer) for layer in rows.held.layers] == [True, False, True]
    with torch.inference_mode():
        full, held = rows.feed(*_prompt(gen))  # four chunks of 24: the window moves inside
        assert torch.equal(full[:, :24], held[:, :24])  # nothing given up yet: the same bits
        _same(full, held)
        rows.check_alone(model, held)
        for step in range(40):
            if step == 10:  # beam fork: row 0 takes row 1's history
                for cache in (rows.full, rows.held):
                    cache.copy_rows([0], [1])
                rows.ids[0], rows.mask[0] = rows.ids[1], rows.mask[1]
            if step == 20:  # row 2 abandons its last MARGIN tokens (a repaired step)
                rows.mask[2, rows.columns - MARGIN : rows.columns] = False
            if step == 30:  # columns fed ahead and given back
                rows.step(gen)
                rows.step(gen)
                rows.rewind(2)
            full, held = rows.step(gen)
            _same(full, held)
            if step in (21, 39):
                rows.check_alone(model, held)
    assert rows.held.held_from(WINDOW) > 0  # columns were given up ...
    assert max(_sliding_columns(rows.held)) <= WINDOW + MARGIN + 16  # ... and stayed given up
    assert rows.held.nbytes() < rows.full.nbytes()


@pytest.mark.parametrize("lean", [False, True])
def test_a_merged_step_reads_each_decodes_held_columns(lean: bool) -> None:
    model = _tiny()
    if lean:
        convert(model)
    else:
        assert use_grouped_attention(model)
    runner = ModelRunner(model, packed=lean)
    assert (runner.packed is not None) == lean
    gen = torch.Generator().manual_seed(11)
    with torch.inference_mode():
        first, second = _Rows(runner, PROMPT + 8), _Rows(runner, PROMPT + 8)
        first.feed(*_prompt(gen))
        ids, mask = _prompt(gen)
        second.feed(ids[:, :70], mask[:, :70])
        for rows in (first, second):
            rows.mask[:, rows.columns] = True
        feed = torch.randint(1, VOCAB, (6, 1), generator=gen)
        pos = torch.cat([(r.mask[:, : r.columns].sum(-1) - 0)[:, None] for r in (first, second)])
        got = {}
        for kind in ("full", "held"):
            merged = GroupedCache(
                [(getattr(r, kind), r.mask[:, : r.columns + 1]) for r in (first, second)]
            )
            ones = torch.ones((6, 1, 1, 1), dtype=torch.bool)
            got[kind] = runner.call(feed, pos, ones, merged)
        assert first.held.held_from(WINDOW) > 0
        _same(got["full"], got["held"])


def test_a_rollback_past_the_margin_is_refused_not_attended_short(model: Any) -> None:
    runner = ModelRunner(model, packed=False)
    gen = torch.Generator().manual_seed(3)
    rows = _Rows(runner, PROMPT + 8)
    with torch.inference_mode():
        rows.feed(*_prompt(gen))  # one call: the buffer grows to the prompt, gives up nothing
        assert rows.held.held_from(WINDOW) == 0
        rows.step(gen)  # the next forward shrinks it back to the window and margin
        assert rows.held.held_from(WINDOW) > 0 and _sliding_columns(rows.held) == {WINDOW + MARGIN}
        rows.mask[0, rows.columns - 3 * WINDOW : rows.columns] = False  # back past window + margin
        with pytest.raises(LimitExceeded, match="margin"):
            rows.step(gen)


def test_rows_sharing_a_prompt_read_its_held_part_once_on_the_lean_forward() -> None:
    """Two beams of one prompt (``SlabCache.share``): the lean forward reads the shared columns
    once per span; in a held layer only those it still holds."""
    model = _tiny()
    convert(model)
    runner = ModelRunner(model)
    gen = torch.Generator().manual_seed(5)
    prompt = torch.randint(1, VOCAB, (PROMPT,), generator=gen)
    capacity = PROMPT + 24
    mask = torch.ones((2, capacity), dtype=torch.bool)
    logits: dict[str, list[torch.Tensor]] = {"full": [], "held": []}
    with torch.inference_mode():
        for kind, hold in (("full", None), ("held", MARGIN)):
            cache = runner.new_cache(2, capacity, hold=hold)
            pos = torch.arange(PROMPT)[None].expand(2, -1)
            ids = prompt[None].expand(2, -1)
            runner.forward(ids, pos, mask[:, :PROMPT], cache, purpose="prefill", last_only=True)
            cache.share(PROMPT, 2)
            steps = torch.Generator().manual_seed(9)
            for step in range(24):
                feed = torch.randint(1, VOCAB, (2, 1), generator=steps)
                at = PROMPT + step
                logits[kind].append(
                    runner.forward(
                        feed,
                        torch.full((2, 1), at),
                        mask[:, : at + 1],
                        cache,
                        purpose="decode",
                        last_only=True,
                    )
                )
            assert cache.shared == (PROMPT, 2)
            if hold is not None:
                assert 0 < cache.held_from(WINDOW) < PROMPT  # part of the shared prompt held
    for full, held in zip(logits["full"], logits["held"]):
        _same(full, held)
