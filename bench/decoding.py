"""How the benchmarks decode one prompt: the library's ``generate`` and our steered decode.

Both return the answer with a :class:`Timed` split at the end of the prefill,
so a benchmark compares the two on positions decided per second, measured the
same way. Shared by the IFEval steering run and the labelled-set run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile import compile_steering

__all__ = ["CHECK_SHARE_NOTE", "Timed", "run_generate", "run_steered"]

#: What ``constraint_check_share`` counts (both steering reports carry it).
CHECK_SHARE_NOTE = (
    "seconds of the steered decodes spent in the token controllers over the seconds of their decode "
    "loops (prefill and the final ranking excluded): the steering's apply on every step (row plans, "
    "masks, reweighing, the landing, the lazy per-candidate checks and any table a hook builds "
    "on first use) and its advance on every candidate the search walks, plus the constraint "
    "verification of step pruning"
)


def _chat_ids(tokenizer: Any, prompt: str) -> torch.Tensor:
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )["input_ids"]
    return ids  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Timed:
    """One decode call's wall time, split at the end of its prefill, and its decided positions.

    A position is one token index decided for every beam at once: the
    prefill forward decides the first, each later forward one more.
    """

    seconds: float
    prefill_s: float
    positions: int


def run_generate(
    model: Any, tokenizer: Any, prompt: str, budget: int, beams: int = 1
) -> tuple[str, Timed]:
    """Plain ``model.generate`` (greedy, or beam search of ``beams``): text and timing.

    Forward hooks count the model calls and time the first (the prefill of
    ``beams`` copies of the prompt, as ``generate`` expands them).
    """
    ids = _chat_ids(tokenizer, prompt)
    marks: list[float] = []
    hook = model.register_forward_hook(lambda *_: marks.append(time.perf_counter()))
    start = time.perf_counter()
    try:
        with torch.inference_mode():
            out = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=budget,
                do_sample=False,
                num_beams=beams,
                pad_token_id=tokenizer.pad_token_id,
            )
    finally:
        hook.remove()
    seconds = time.perf_counter() - start
    new = out[0, ids.shape[1] :]
    prefill_s = marks[0] - start if marks else 0.0
    return tokenizer.decode(new, skip_special_tokens=True), Timed(seconds, prefill_s, len(marks))


def run_steered(
    model: Any,
    tokenizer: Any,
    row: dict[str, Any],
    width: int,
    prune: bool = True,
    packed: bool = True,
) -> dict[str, Any]:
    """Our decode with the row's steering: answer, timings, shares, violations.

    ``packed`` False decodes through the model's library forward even when
    the model is packed for the lean CPU forward (the comparison of the
    search alone with ``generate``, which always runs the library forward).
    """
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    constraints = row["constraints"]
    budget = row["budget"]
    steering = compile_steering(
        constraints,
        tokenizer,
        prompt=row["prompt"],
        device=model.device,
        vocab_size=int(model.config.vocab_size),
        max_new_tokens=budget,
    )
    plan = plan_prompt(tokenizer, row["prompt"], constraints)
    start = time.perf_counter()
    result = decode(
        model,
        tokenizer,
        plan,
        steering=steering,
        options=DecodeOptions(
            width=width, max_new_tokens=budget, prune=prune, packed_forward=packed
        ),
        constraints=constraints,
        request_text=row["prompt"],
    )
    seconds = time.perf_counter() - start
    return {
        "text": result.answer,
        "end": result.end,
        # The prefill decides the first position, every decode forward one more.
        "timed": Timed(seconds, result.timings.prefill_s, result.decode_steps + 1),
        "tokens": result.generated_tokens,
        "steps": result.decode_steps,
        "seconds": seconds,
        "decode_s": result.timings.decode_s,
        "check_s": result.timings.constraint_check_s,
        "forward_s": result.timings.forward_s,
        "constraint_check_share": result.constraint_check_share,
        "counterfactual_flops_share": result.counterfactual_flops_share,
        "violations": list(result.violations),
        "pruned": dict(result.pruning.pruned),
        "repairs": result.pruning.repairs,
        "unrepaired": result.pruning.unrepaired,
    }
