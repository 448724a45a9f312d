"""The counterfactual check scheduler: distinct claims, partial variants, retries, reasons."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
import torch

from inference.decoder.batch import prefill_prefix
from inference.decoder.checks import SKIP_BUDGET, SKIP_NO_VARIANT, CheckScheduler, claim_rank
from inference.decoder.contrast import window_cost
from inference.decoder.kv_slab import PrefixKV
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PROMPT = "Evidence: Acme Ltd sent EUR 2,000,000 to Jon Doe.\nState one fact:"
CLAIM = "Acme Ltd sent EUR 2,000,000 to Jon Doe."
LEXICON = {"Acme Ltd": "Company", "Globex Corp": "Company"}


@dataclass(frozen=True)
class _Prompt:
    prompt_kv: PrefixKV
    prompt_len: int
    first_logprobs: torch.Tensor


def test_claims_rank_decision_facts_then_quantities_then_entities() -> None:
    assert claim_rank("Globex Corp owns Initech.", ["Initech"]) == 0
    assert claim_rank("Acme Ltd sent EUR 4,000.", ["Initech"]) == 1
    assert claim_rank("Acme Ltd owns Globex Corp.", []) == 2


@pytest.mark.model
def test_scheduler_counts_claims_once_takes_what_fits_and_retries(
    loaded_model: LoadedModel,
) -> None:
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)

    def encode(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    def decode(ids: Sequence[int]) -> str:
        return str(tok.decode(list(ids), skip_special_tokens=True))

    prompt = encode(PROMPT)
    with torch.inference_mode():
        kv = prefill_prefix(runner, prompt)
        first = torch.log_softmax(
            loaded_model.model(torch.tensor([prompt], device=loaded_model.device))
            .logits[0, -1]
            .float(),
            -1,
        )
        base = runner.counters.flops["prefill"]
        per_token = 2.0 * runner.parameters
        # The claim's variants, ranked: the number, then the entity (no negation site).
        ids = encode(CLAIM)
        number = encode(CLAIM.replace("2,000,000", "3,000,000"))
        one = window_cost(ids, [number]) * per_token
        # The share buys the first variant and not both: one is scored, not none.
        options = DecodeOptions(counterfactual_flops_share=(one + per_token / 2) / base)
        prompts = [_Prompt(kv, len(prompt), first)]
        checks = CheckScheduler(runner, options, encode, decode, prompts, LEXICON)
        got = checks.settle(0, CLAIM)
        assert got is not None and got.variants == 1 and got.variant.kind == "number"
        assert runner.counters.flops["counterfactual"] == pytest.approx(one)
        # Met again (another beam): reused, still one claim wanted.
        assert checks.check(0, " " + CLAIM, None) is got
        assert (checks.wanted, checks.scored, checks.reused, checks.skipped) == (1, 1, 1, 0)
        # A second claim finds the share spent: skipped for budget, counted once however often met.
        other = "Acme Ltd sent EUR 5,000 to Jon Doe."
        assert checks.check(0, other, None) is None
        assert checks.check(0, other, None) is None
        assert checks.skip_reasons == {SKIP_BUDGET: 1}
        assert (checks.wanted, checks.skipped) == (2, 1)
        # A claim with nothing to vary is a reason of its own.
        assert checks.check(0, "Jon Doe.", None) is None
        assert checks.skip_reasons == {SKIP_BUDGET: 1, SKIP_NO_VARIANT: 1}
        # The decode goes on (more FLOPs of other purposes): the skipped claim is scored when met.
        prefill_prefix(runner, prompt)
        assert checks.check(0, other, None) is not None
        assert checks.skip_reasons == {SKIP_NO_VARIANT: 1}
        assert (checks.wanted, checks.scored, checks.skipped) == (3, 2, 1)
        spent = runner.counters.flops["counterfactual"]
        others = sum(v for k, v in runner.counters.flops.items() if k != "counterfactual")
        assert spent <= options.counterfactual_flops_share * others
