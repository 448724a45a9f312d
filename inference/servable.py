"""Whether the steered decoder can serve a loaded model: a one-token probe through its own path.

A model can load, answer a plain forward and still be unservable by the steered decoder: its
layers may be of a kind the KV slab cannot hold (state-space, convolution, linear attention),
or its forward may not accept the slab, the decoder's positions or its masks. The service must
say so at load (``/readyz``), not let every request fail. :func:`steered_probe` runs what a
steered decode runs, on a short prompt: the runner over the model (the lean forward where one
is attached), a prefill of a shared prefix, a two-beam branch prefill on it and one decode
step, then compares that step's logits with the model's plain forward over the same tokens.
A model with sliding-window layers whose smallest window is short enough (a prompt of at most
:data:`PROBE_MAX_TOKENS` tokens passes it) is probed over a prompt longer than that window, so
the window itself is compared, not only what fits inside it; a longer window keeps the short
probe (the load must not prefill thousands of tokens).

Guarantees: it returns None only when every stage ran, the logits are finite and they agree
with the plain forward (within :data:`PROBE_TOLERANCE` of the plain logits' range, loose enough
for low-precision kernels, far below the error of a wrong attention); otherwise a sentence
naming the stage and the cause. It never raises for a model that fails: the failure is the
answer.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from inference.decoder.batch import prefill_branches, prefill_prefix
from inference.decoder.beam import decode_step
from inference.decoder.runner import ModelRunner
from reasoning.errors import TenetError

__all__ = ["PROBE_MAX_TOKENS", "PROBE_TEXT", "PROBE_TOLERANCE", "steered_probe"]

log = logging.getLogger("tenet.inference")

#: The probe's prompt: a few tokens in any tokenizer.
PROBE_TEXT = "The steered decoder probes this model with one short sentence."
#: Largest difference between the decoder's and the plain forward's logits, as a share of the
#: plain logits' range.
PROBE_TOLERANCE = 0.05
#: The longest prompt the probe runs to pass a sliding window (Gemma 3's 512 fits).
PROBE_MAX_TOKENS = 640


def steered_probe(model: Any, tokenizer: Any) -> str | None:
    """Why the steered decoder cannot serve ``model`` (see the module docstring), or None."""
    try:
        runner = ModelRunner(model)
    except TenetError as exc:
        return exc.detail
    shortest = min((w for w in runner.windows if w is not None), default=PROBE_MAX_TOKENS)
    wanted = shortest + 8 if shortest + 8 <= PROBE_MAX_TOKENS else 0
    text = PROBE_TEXT
    ids = [int(t) for t in tokenizer(text)["input_ids"]]
    while len(ids) < wanted:  # the sentence again and again: past the window
        text = f"{text} {PROBE_TEXT}"
        ids = [int(t) for t in tokenizer(text)["input_ids"]]
    ids = ids[:wanted] if wanted else ids
    if len(ids) < 4:
        return f"the tokenizer gives the probe {len(ids)} tokens; it needs 4"
    try:
        with torch.inference_mode():
            prefix = ids[:-2]
            kv = prefill_prefix(runner, prefix)
            state, _ = prefill_branches(
                runner, len(prefix), kv, [ids[-2:-1]], width=2, max_new_tokens=1
            )
            feed = torch.full((state.rows,), ids[-1], dtype=torch.long, device=runner.device)
            steered = decode_step(runner, state, feed)[0].float()
            # Only the last position's logits (262,144 x 640 per position in Gemma 3: all of
            # them cost a 500 MB tensor and seconds at load for nothing).
            last = {"logits_to_keep": 1} if runner.keeps_logits else {}
            tokens = torch.tensor([ids], device=runner.device)
            plain = model(input_ids=tokens, **last).logits[0, -1].float()
    except Exception as exc:  # any failure of the model under the decoder is the answer
        log.warning("the steered probe failed", exc_info=True)
        detail = exc.detail if isinstance(exc, TenetError) else f"{type(exc).__name__}: {exc}"
        return f"a steered decode step failed on this model ({detail})"
    if not bool(torch.isfinite(steered).all()):
        return "a steered decode step gave non-finite logits"
    spread = float(plain.max() - plain.min())
    gap = float((steered - plain).abs().max())
    if gap > PROBE_TOLERANCE * max(spread, 1e-6):
        return (
            f"the steered decoder's logits differ from the model's own forward by {gap:.3g} "
            f"(range {spread:.3g}): this architecture's attention is not reproduced"
        )
    return None
