"""The prompt the model sees, and its split into a shared prefix and per-branch suffixes.

Layout (through the model's own chat template):

- system: the role, the active constraints restated plainly (the catalog's
  ``restate``, in the response language), and, when there is evidence, how
  to cite it;
- user: the request, then -- per branch -- the evidence facts of that view,
  numbered for citation (``[E1] ...``) with their dates;
- the template's generation prompt.

Everything before the evidence block is identical across branches, so it is
a shared prefix whose KV is computed once (and cached across requests by
``inference.prefix_cache``). The split is computed on token ids -- the longest
common token prefix of all branch prompts and of the evidence-free prompt --
so a BPE merge across the boundary can never make the "prefix" differ from
the start of a branch's real tokenisation. Every suffix is non-empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from reasoning.constraints.catalog import restate
from reasoning.constraints.model import Constraint
from reasoning.errors import InvalidInput
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph

__all__ = [
    "PromptPlan",
    "common_prefix_length",
    "evidence_block",
    "instruction_sentences",
    "messages_for",
    "plan_prompt",
    "system_message",
]

_SYSTEM = {
    "en": "You are a careful assistant for compliance-bound work. Answer the request directly.",
    "zh": "你是一名严谨的合规助理。请直接回答请求。",
}
_RULES = {
    "en": "Follow every one of these requirements exactly:",
    "zh": "必须严格遵守以下全部要求：",
}
_CITE = {
    "en": "Base the answer on the evidence given with the request and cite it by id in brackets, e.g. [E1].",
    "zh": "依据请求所附的证据作答，并用方括号注明证据编号，例如 [E1]。",
}
_EVIDENCE = {"en": "Evidence", "zh": "证据"}


class PromptPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Token ids of the shared prefix and of every branch suffix, with what they show."""

    prefix_ids: tuple[int, ...]
    suffixes: tuple[tuple[int, ...], ...]
    views: tuple[str, ...]
    relevance: tuple[float, ...]
    facts: tuple[tuple[EvidenceFact, ...], ...]
    texts: tuple[str, ...]
    language: str = "en"
    #: What the model is told to do: the system message and the request's sentences that hold a constraint
    #: (an answer must not copy them; the facts a request states may be restated).
    instructions: str = ""

    def branch_ids(self, branch: int) -> tuple[int, ...]:
        """The full prompt of ``branch`` as token ids (prefix + suffix)."""
        return self.prefix_ids + self.suffixes[branch]


def _lang(language: str) -> str:
    return "zh" if language.startswith("zh") else "en"


def system_message(constraints: Sequence[Constraint], language: str, with_evidence: bool) -> str:
    """The role, the restated constraints, and the citation rule when evidence is shown."""
    lang = _lang(language)
    parts = [_SYSTEM[lang]]
    if constraints:
        parts.append(_RULES[lang] + "\n" + "\n".join(f"- {restate(c, lang)}" for c in constraints))
    if with_evidence:
        parts.append(_CITE[lang])
    return "\n\n".join(parts)


_SENTENCE_END = ".!?。！？\n"


def instruction_sentences(request: str, constraints: Sequence[Constraint]) -> list[str]:
    """The sentences of ``request`` that hold a constraint's source text, each once, in order."""
    found: dict[int, str] = {}
    for c in constraints:
        said = c.source.text if c.source is not None else ""
        at = request.find(said) if said else -1
        if at < 0:
            continue
        start = max(request.rfind(ch, 0, at) for ch in _SENTENCE_END) + 1
        ends = [i for i in (request.find(ch, at + len(said)) for ch in _SENTENCE_END) if i >= 0]
        found[start] = request[start : min(ends, default=len(request) - 1) + 1].strip()
    return [found[k] for k in sorted(found) if found[k]]


def evidence_block(subgraph: EvidenceSubgraph, language: str) -> str:
    """The facts of one view, one per line, each with its id and its date when known."""
    lines = [f"{_EVIDENCE[_lang(language)]} ({subgraph.view}):"]
    for fact in subgraph.facts:
        dated = fact.effective or fact.modified
        lines.append(f"[{fact.id}] {fact.text}" + (f" ({dated})" if dated else ""))
    return "\n".join(lines)


def messages_for(
    request: str,
    constraints: Sequence[Constraint],
    subgraph: EvidenceSubgraph | None,
    language: str,
    with_evidence: bool,
    notes: Sequence[str] = (),
) -> list[dict[str, str]]:
    """Chat messages of one branch (``subgraph`` None: the evidence-free prompt).

    ``notes`` are branch-only lines after the evidence (the premises this
    branch was given), so the shared prefix never holds them.
    """
    blocks = [request]
    if subgraph is not None and subgraph.facts:
        blocks.append(evidence_block(subgraph, language))
    if notes:
        blocks.append("\n".join(notes))
    return [
        {"role": "system", "content": system_message(constraints, language, with_evidence)},
        {"role": "user", "content": "\n\n".join(blocks)},
    ]


def common_prefix_length(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of token id sequences."""
    if not sequences:
        return 0
    shortest = min(len(s) for s in sequences)
    for i in range(shortest):
        token = sequences[0][i]
        if any(s[i] != token for s in sequences[1:]):
            return i
    return shortest


def _tokens(tokenizer: Any, messages: list[dict[str, str]], generation_prompt: bool) -> list[int]:
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=generation_prompt
    )
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def plan_prompt(
    tokenizer: Any,
    request: str,
    constraints: Sequence[Constraint] = (),
    subgraphs: Sequence[EvidenceSubgraph] = (),
    *,
    language: str = "en",
    notes: Sequence[Sequence[str]] | None = None,
) -> PromptPlan:
    """Render every branch (one per evidence view; one branch when there is none) and split it.

    Guarantees: ``plan.prefix_ids + plan.suffixes[b]`` is exactly the chat
    template's tokenisation of branch ``b``; every suffix is non-empty and
    holds at least the template's generation prompt.
    """
    with_evidence = any(g.facts for g in subgraphs)
    base = messages_for(request, constraints, None, language, with_evidence)
    branch_notes = list(notes) if notes is not None else [()] * max(len(subgraphs), 1)
    if len(branch_notes) != max(len(subgraphs), 1):
        raise InvalidInput("plan_prompt needs one notes entry per branch")
    branches: list[tuple[str, float, tuple[EvidenceFact, ...], list[dict[str, str]]]] = (
        [
            (
                g.view,
                g.relevance,
                g.facts,
                messages_for(request, constraints, g, language, with_evidence, n),
            )
            for g, n in zip(subgraphs, branch_notes)
        ]
        if subgraphs
        else [
            (
                "",
                1.0,
                (),
                messages_for(request, constraints, None, language, with_evidence, branch_notes[0]),
            )
        ]
    )
    full = [_tokens(tokenizer, msgs, True) for _, _, _, msgs in branches]
    base_open = _tokens(tokenizer, base, True)
    base_closed = _tokens(tokenizer, base, False)
    header = max(1, len(base_open) - common_prefix_length([base_open, base_closed]))
    shared = common_prefix_length([*full, base_open])
    shared = min(shared, min(len(ids) for ids in full) - header)
    shared = max(0, shared)
    texts = tuple(
        tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        for _, _, _, msgs in branches
    )
    return PromptPlan(
        prefix_ids=tuple(full[0][:shared]),
        suffixes=tuple(tuple(ids[shared:]) for ids in full),
        views=tuple(view for view, _, _, _ in branches),
        relevance=tuple(rel for _, rel, _, _ in branches),
        facts=tuple(facts for _, _, facts, _ in branches),
        texts=texts,
        language=_lang(language),
        instructions="\n\n".join([base[0]["content"], *instruction_sentences(request, constraints)]),
    )
