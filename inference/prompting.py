"""The prompt the model sees, and its split into a shared prefix and per-branch suffixes.

Layout (through the model's own chat template):

- system: the role, the active constraints restated plainly (the catalog's
  ``restate``, in the response language), and, when there is evidence, how
  to cite it;
- user: the request, then -- per branch -- the evidence facts of that view,
  numbered for citation (``[E1] ...``) with their dates: first, in a block
  of their own, the facts every evidence branch shows (the deciding rules'
  facts), then the view's own facts;
- the template's generation prompt.

Everything before the evidence block is identical across branches, so it is
a shared prefix whose KV is computed once (and cached across requests by
``inference.prefix_cache``). The split is computed on token ids -- the longest
common token prefix of all branch prompts and of the evidence-free prompt --
so a BPE merge across the boundary can never make the "prefix" differ from
the start of a branch's real tokenisation. Every suffix is non-empty.

The evidence branches' suffixes in turn begin alike (the block of shared
facts): ``PromptPlan.shared`` says per branch how many leading suffix tokens
it shares with the other branches of its group, so the decoder prefills that
part once and forks its KV into each branch (``inference.decoder.batch``).
Its split is found on token ids the same way. A request with one evidence
branch renders as before: no fact is shown by "every other" branch.
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
    "evidence_shared",
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
    #: Per branch, the leading tokens of its suffix that the other branches of its group begin
    #: with too (equal leading tokens form a group): prefilled once per group. 0 for a branch in
    #: no group; empty when no branch shares any.
    shared: tuple[int, ...] = ()
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


def _fact_line(fact: EvidenceFact) -> str:
    dated = fact.effective or fact.modified
    return f"[{fact.id}] {fact.text}" + (f" ({dated})" if dated else "")


def evidence_block(subgraph: EvidenceSubgraph, language: str) -> str:
    """The facts of one view, one per line, each with its id and its date when known."""
    return _view_block(subgraph.view, [_fact_line(fact) for fact in subgraph.facts], language)


def _view_block(view: str, lines: Sequence[str], language: str) -> str:
    return "\n".join([f"{_EVIDENCE[_lang(language)]} ({view}):", *lines])


def evidence_shared(subgraphs: Sequence[EvidenceSubgraph]) -> tuple[EvidenceFact, ...]:
    """The facts every view with evidence shows (the same id, text and date: the same line),
    in the first such view's order.

    Empty unless at least two views show evidence: one view has nothing to share.
    """
    shown = [g for g in subgraphs if g.facts]
    if len(shown) < 2:
        return ()
    others = [{_fact_line(f) for f in g.facts} for g in shown[1:]]
    first = {_fact_line(f): f for f in shown[0].facts}
    return tuple(f for line, f in first.items() if all(line in lines for lines in others))


def messages_for(
    request: str,
    constraints: Sequence[Constraint],
    subgraph: EvidenceSubgraph | None,
    language: str,
    with_evidence: bool,
    notes: Sequence[str] = (),
    shared: Sequence[EvidenceFact] = (),
) -> list[dict[str, str]]:
    """Chat messages of one branch (``subgraph`` None: the evidence-free prompt).

    ``notes`` are branch-only lines after the evidence (the premises this
    branch was given), so the shared prefix never holds them. ``shared`` are
    facts of ``subgraph`` shown first, under a header naming no view (the
    facts every branch shows, ``evidence_shared``); the view's block holds the rest.
    """
    system = system_message(constraints, language, with_evidence)
    return _branch_messages(request, system, subgraph, language, notes, _SharedBlock.of(shared, language))


class _SharedBlock(msgspec.Struct, frozen=True):
    """The block of the facts every branch shows (its text, and its lines to leave out of a
    view's own block), formatted once for all the branches of a prompt."""

    text: str = ""
    lines: frozenset[str] = frozenset()

    @classmethod
    def of(cls, shared: Sequence[EvidenceFact], language: str) -> _SharedBlock:
        lines = [_fact_line(f) for f in shared]
        if not lines:
            return cls()
        return cls(text="\n".join([_EVIDENCE[_lang(language)] + ":", *lines]), lines=frozenset(lines))


def _branch_messages(
    request: str,
    system: str,
    subgraph: EvidenceSubgraph | None,
    language: str,
    notes: Sequence[str],
    shared: _SharedBlock,
) -> list[dict[str, str]]:
    """:func:`messages_for` with its system message and its shared block already formatted."""
    blocks = [request]
    if subgraph is not None and subgraph.facts:
        if shared.lines:
            blocks.append(shared.text)
        own = [line for line in map(_fact_line, subgraph.facts) if line not in shared.lines]
        if own:
            blocks.append(_view_block(subgraph.view, own, language))
    if notes:
        blocks.append("\n".join(notes))
    return [
        {"role": "system", "content": system},
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
    share_evidence: bool = True,
) -> PromptPlan:
    """Render every branch (one per evidence view; one branch when there is none) and split it.

    Guarantees: ``plan.prefix_ids + plan.suffixes[b]`` is exactly the chat
    template's tokenisation of branch ``b``; every suffix is non-empty and
    holds at least the template's generation prompt; branches with the same
    non-zero ``plan.shared[b]`` begin their suffixes with the same that many
    tokens, and each keeps more than the generation prompt after them.
    ``share_evidence`` False shows every view's facts in its own order in
    one block (``plan.shared`` empty): the reference layout.
    """
    with_evidence = any(g.facts for g in subgraphs)
    # What every branch says alike is formatted once: the system message, the shared facts' block.
    system = system_message(constraints, language, with_evidence)
    base = _branch_messages(request, system, None, language, (), _SharedBlock())
    branch_notes = list(notes) if notes is not None else [()] * max(len(subgraphs), 1)
    if len(branch_notes) != max(len(subgraphs), 1):
        raise InvalidInput("plan_prompt needs one notes entry per branch")
    common = evidence_shared(subgraphs) if share_evidence else ()
    block = _SharedBlock.of(common, language)
    branches: list[tuple[str, float, tuple[EvidenceFact, ...], list[dict[str, str]]]] = (
        [
            (
                g.view,
                g.relevance,
                g.facts,
                _branch_messages(request, system, g, language, n, block),
            )
            for g, n in zip(subgraphs, branch_notes)
        ]
        if subgraphs
        else [
            (
                "",
                1.0,
                (),
                _branch_messages(request, system, None, language, branch_notes[0], _SharedBlock()),
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
    group = [b for b, (_, _, facts, _) in enumerate(branches) if facts and common]
    within = _group_lengths([ids[shared:] for ids in full], group, header)
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
        shared=within,
        instructions="\n\n".join([base[0]["content"], *instruction_sentences(request, constraints)]),
    )


def _group_lengths(suffixes: Sequence[Sequence[int]], group: Sequence[int], header: int) -> tuple[int, ...]:
    """``PromptPlan.shared``: the common token prefix of ``group``'s suffixes for each of its
    branches (each keeps at least ``header`` tokens past it), 0 elsewhere; () when it is 0."""
    if len(group) < 2:
        return ()
    members = [suffixes[b] for b in group]
    length = min(common_prefix_length(members), min(len(s) for s in members) - header)
    if length <= 0:
        return ()
    return tuple(length if b in group else 0 for b in range(len(suffixes)))
