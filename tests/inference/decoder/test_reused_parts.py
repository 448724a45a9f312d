"""The evidence a group of branches shares, kept in the tenant's prefix cache beside the prefix
(``DecodeOptions.reuse_parts``): a later decode of the same prompt finds it and prefills only the
branches' own evidence, with the same answers (bundled model)."""

from __future__ import annotations

import pytest

from inference.decoder.decode import DecodeResult, decode
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.prefix_cache import PrefixCache, PrefixScope
from inference.prompting import PromptPlan, plan_prompt
from reasoning.evidence.model import EvidenceSubgraph
from tests.inference.evidence_samples import fact

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

RULES = (
    fact("E7", "r", "Rule R7 states Transfers to a PEP are escalated to the MLRO.", modified="2021-03-01"),
    fact("E8", "r", "Rule R8 states Enhanced due diligence applies to politically exposed persons."),
)


def _plan(model: LoadedModel) -> PromptPlan:
    views = [
        EvidenceSubgraph(view="compliance", relevance=0.9, seeds=(),
                         facts=(fact("E1", "compliance", "Jon Doe is on the PEP list."), *RULES)),
        EvidenceSubgraph(view="fund_flow", relevance=0.6, seeds=(),
                         facts=(fact("E2", "fund_flow", "Acme Ltd sent EUR 2,000,000 to Jon Doe."), *RULES)),
    ]
    plan = plan_prompt(model.tokenizer, "Should this transfer be escalated?", [], views)
    assert plan.shared and min(plan.shared) > 0
    return plan


def _decode(model: LoadedModel, plan: PromptPlan, scope: PrefixScope | None, reuse: bool) -> DecodeResult:
    options = DecodeOptions(width=2, max_new_tokens=12, prune=False, reuse_parts=reuse)
    return decode(model.model, model.tokenizer, plan, options, prefix=scope)


def _same(a: DecodeResult, b: DecodeResult) -> None:
    assert a.answer == b.answer
    assert [x.text for x in a.branches] == [x.text for x in b.branches]
    assert [x.score for x in a.branches] == [x.score for x in b.branches]


def test_a_shared_part_found_in_the_cache_is_not_prefilled_again(loaded_model: LoadedModel) -> None:
    plan = _plan(loaded_model)
    scope = PrefixScope(PrefixCache(), "tenant-a", "bundled")
    first = _decode(loaded_model, plan, scope, True)
    again = _decode(loaded_model, plan, scope, True)
    plain = _decode(loaded_model, plan, PrefixScope(PrefixCache(), "tenant-a", "bundled"), False)
    _same(again, first)
    _same(again, plain)
    # The first decode prefilled the prefix and the part, the second neither of them.
    assert not first.prefix_cache_hit and again.prefix_cache_hit
    assert "prefill_reused" not in first.flops and again.flops["prefill_reused"] > 0
    per_token = 2.0 * ModelRunner(loaded_model.model).parameters
    saved = first.flops["prefill"] - again.flops["prefill"]
    assert saved == pytest.approx(per_token * len(plan.prefix_ids) + again.flops["prefill_reused"])
    assert again.flops["prefill_reused"] >= per_token * max(plan.shared)
    # What the found part saved is counted as reused: the counterfactual budget's base is the
    # same as when it is prefilled again with the prefix found (``reuse_parts`` off).
    plain_again = _decode(loaded_model, plan, scope, False)
    assert plain_again.prefix_cache_hit and "prefill_reused" not in plain_again.flops
    assert sum(again.flops.values()) == pytest.approx(sum(plain_again.flops.values()))
    _same(plain_again, plain)


def test_another_tenant_does_not_find_the_part(loaded_model: LoadedModel) -> None:
    plan = _plan(loaded_model)
    cache = PrefixCache()
    _decode(loaded_model, plan, PrefixScope(cache, "tenant-a", "bundled"), True)
    other = _decode(loaded_model, plan, PrefixScope(cache, "tenant-b", "bundled"), True)
    assert not other.prefix_cache_hit and "prefill_reused" not in other.flops
