"""The evidence the branches share, prefilled once and forked into each branch (``prefill_branches``'
``shared``): the same logits, prompt keys and decoded tokens as prefilling every suffix whole."""

from __future__ import annotations

import msgspec
import pytest
import torch

from inference.decoder.batch import BatchState, prefill_branches, prefill_prefix
from inference.decoder.decode import decode
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.evidence.model import EvidenceSubgraph
from tests.inference.evidence_samples import fact

pytestmark = pytest.mark.model

PREFIX = "You answer compliance questions briefly and cite the rules you rely on. Question: is it escalated?"
SHARED = "\nEvidence:\n[E7] Rule R7 states Transfers to a PEP are escalated to the MLRO. (2021-03-01)"
RESTS = ("\nEvidence (fund_flow):\n[E2] Acme Ltd sent EUR 2,000,000 to Jon Doe.\nAnswer:", "\nAnswer:")
ALONE = "\nAssumption: the rate is 20%.\nAnswer:"


def _prefill(
    loaded_model: LoadedModel, shared: bool, packed: bool
) -> tuple[BatchState, torch.Tensor, torch.Tensor, int]:
    """Two branches sharing SHARED and one without it: their first logits, one decode step
    and the prompt tokens fed."""
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model, packed=packed)
    prefix = tok.encode(PREFIX, add_special_tokens=False)
    part = tok.encode(SHARED, add_special_tokens=False)
    suffixes = [part + tok.encode(r, add_special_tokens=False) for r in RESTS]
    suffixes.append(tok.encode(ALONE, add_special_tokens=False))
    cut = [len(part), len(part), 0] if shared else []
    with torch.inference_mode():
        kv = prefill_prefix(runner, prefix)
        state, first = prefill_branches(
            runner, len(prefix), kv, suffixes, width=2, max_new_tokens=2, shared=cut
        )
        feed = first.argmax(-1).repeat_interleave(2).unsqueeze(1)  # [N, 1]
        state.mask[:, state.columns] = True
        step = runner.forward(feed, state.positions.unsqueeze(1), state.mask[:, : state.columns + 1],
                              state.cache, purpose="decode", last_only=True)
    assert runner.counters.prefill_tokens <= len(prefix) + 3 * max(len(s) for s in suffixes)
    return state, first, step[:, -1], runner.counters.prefill_tokens


@pytest.mark.parametrize("packed", [True, False], ids=["lean", "library"])
def test_a_forked_shared_part_gives_the_logits_and_keys_of_whole_suffixes(
    loaded_model: LoadedModel, packed: bool
) -> None:
    forked, first, step, fed = _prefill(loaded_model, True, packed)
    whole, first_w, step_w, fed_whole = _prefill(loaded_model, False, packed)
    assert fed < fed_whole
    assert forked.prompt_lengths == whole.prompt_lengths
    assert forked.prompt_last_token == whole.prompt_last_token
    assert torch.equal(forked.positions, whole.positions)
    for branch, branch_w in zip(forked.branch_kv, whole.branch_kv):
        for (k, v), (k_w, v_w) in zip(branch, branch_w):
            assert k.shape == k_w.shape
            torch.testing.assert_close(k, k_w, atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(v, v_w, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(first, first_w, atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(step, step_w, atol=1e-3, rtol=1e-4)
    assert torch.equal(first.argmax(-1), first_w.argmax(-1))
    assert torch.equal(step.argmax(-1), step_w.argmax(-1))
    # The branch outside the group sits after a gap: its last prompt token's column is past it.
    assert forked.prompt_last_column[2] > forked.prompt_lengths[2] - 1


def test_a_shared_part_must_leave_each_branch_a_rest(loaded_model: LoadedModel) -> None:
    runner = ModelRunner(loaded_model.model)
    with pytest.raises(Exception, match="shorter than its suffix"):
        prefill_branches(runner, 0, (), [[1, 2], [1, 2]], width=1, max_new_tokens=1, shared=[2, 2])


def test_decoding_on_the_forked_evidence_gives_the_same_tokens(loaded_model: LoadedModel) -> None:
    rules = (fact("E7", "r", "Rule R7 states Transfers to a PEP are escalated to the MLRO.", modified="2021-03-01"),)
    views = [
        EvidenceSubgraph(view="compliance", relevance=0.9, seeds=(),
                         facts=(fact("E1", "compliance", "Jon Doe is on the PEP list."), *rules)),
        EvidenceSubgraph(view="fund_flow", relevance=0.6, seeds=(),
                         facts=(fact("E2", "fund_flow", "Acme Ltd sent EUR 2,000,000 to Jon Doe."), *rules)),
    ]
    plan = plan_prompt(loaded_model.tokenizer, "Should this transfer be escalated?", [], views)
    assert plan.shared and min(plan.shared) > 0
    options = DecodeOptions(width=2, max_new_tokens=12, prune=False)
    forked = decode(loaded_model.model, loaded_model.tokenizer, plan, options)
    whole = decode(loaded_model.model, loaded_model.tokenizer, msgspec.structs.replace(plan, shared=()), options)
    assert [b.text for b in forked.branches] == [b.text for b in whole.branches]
    assert forked.generated_tokens == whole.generated_tokens


@pytest.mark.parametrize("packed", [True, False], ids=["lean", "library"])
def test_ragged_suffixes_give_the_logits_of_each_prompt_alone(loaded_model: LoadedModel, packed: bool) -> None:
    """Suffixes of 1 to 60 tokens, no prefix: each branch's first logits and prompt keys are
    those of its prompt prefilled alone (pads, gaps and separate forwards change nothing)."""
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model, packed=packed)
    texts = [SHARED * 3, SHARED + RESTS[0], RESTS[1], "Yes"]
    prompts = [tok.encode(t, add_special_tokens=False) for t in texts]
    assert len(prompts[0]) > 60 and len(prompts[3]) == 1
    with torch.inference_mode():
        state, first = prefill_branches(runner, 0, (), prompts, width=2, max_new_tokens=2)
        for b, prompt in enumerate(prompts):
            alone, logits = prefill_branches(runner, 0, (), [prompt], width=1, max_new_tokens=2)
            torch.testing.assert_close(first[b], logits[0], atol=1e-3, rtol=1e-4)
            for (k, v), (k1, v1) in zip(state.branch_kv[b], alone.branch_kv[0]):
                torch.testing.assert_close(k, k1, atol=1e-4, rtol=1e-4)
                torch.testing.assert_close(v, v1, atol=1e-4, rtol=1e-4)
    assert state.prompt_lengths == tuple(len(p) for p in prompts)
    assert torch.isfinite(first).all()
