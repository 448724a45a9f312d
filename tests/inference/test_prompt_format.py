"""Base models: a tokenizer without a chat template gets the plain layout at load, and the prompt
planner renders through it with its shared-prefix split intact; a chat model keeps its own."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inference.prompt_format import PLAIN_TEMPLATE, choose_prompt_format
from inference.prompting import plan_prompt
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph

pytestmark = pytest.mark.model  # the bundled tokenizer


def _base(tokenizer: Any) -> Any:
    base = copy.deepcopy(tokenizer)
    base.chat_template = None
    return base


def test_a_chat_models_template_is_kept(tokenizer: Any) -> None:
    chat = copy.deepcopy(tokenizer)
    template = chat.chat_template
    assert template and choose_prompt_format(chat) == "chat_template"
    assert chat.chat_template == template


def test_a_base_model_gets_the_plain_layout(tokenizer: Any) -> None:
    base = _base(tokenizer)
    assert choose_prompt_format(base) == "plain" and base.chat_template == PLAIN_TEMPLATE
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}]
    text = base.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    bos = base.bos_token or ""
    assert text == f"{bos}Be brief.\n\nRequest:\nWhy?\n\nAnswer:\n"


def test_the_planner_splits_a_plain_prompt_into_prefix_and_branches(tokenizer: Any) -> None:
    base = _base(tokenizer)
    choose_prompt_format(base)
    views = [
        EvidenceSubgraph(
            view=view,
            relevance=1.0,
            seeds=(),
            facts=(
                EvidenceFact(
                    id=f"E{i}",
                    subject="s",
                    predicate="p",
                    object="o",
                    text=f"Fact {view} holds.",
                    view=view,
                    score=1.0,
                    hops=1,
                    ontology_version="1",
                ),
            ),
        )
        for i, view in enumerate(("first", "second"), start=1)
    ]
    plan = plan_prompt(base, "Summarise the facts.", subgraphs=views)
    for branch, text in enumerate(plan.texts):
        assert text.endswith("Answer:\n") and "Request:\nSummarise the facts." in text
        assert list(plan.branch_ids(branch)) == base(text, add_special_tokens=False)["input_ids"]
    assert plan.prefix_ids and all(plan.suffixes)
