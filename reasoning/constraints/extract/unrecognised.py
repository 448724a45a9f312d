"""Requirements on the answer's form that no kind of the catalog reads: reported, never dropped.

A sentence is such a requirement when it is phrased as one (a modal such as
"must" / "should" / 必须 / 不得, an imperative, "do not ...") and speaks of
the answer's form (a word of :data:`~reasoning.constraints.extract.lexicon.EN_FORM_WORDS`
or :data:`~reasoning.constraints.extract.lexicon.ZH_FORM_WORDS`: units, letter case,
rhyme, order, formatting ...), yet no extracted constraint lies in it.
Questions and requests about content ("Explain what the word X means") are
not requirements on the form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from spacy.tokens import Doc, Token
from spacy.tokens import Span as DocSpan

from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_FORM_WORDS, EN_LOWER, EN_UPPER, ZH_FORM_WORDS
from reasoning.constraints.model import Span

__all__ = ["unrecognised_requirements"]

_MODALS = frozenset({"must", "should", "shall", "need", "ensure", "require", "needs"})
_NEGATORS = frozenset({"not", "n't", "never", "avoid", "no"})
_CONTENT_VERBS = frozenset({"explain", "describe", "tell", "discuss", "compare", "define", "analyze", "analyse",
                            "translate", "name", "imagine", "consider", "think", "suppose", "assume", "help",
                            "let", "show", "find", "calculate", "solve", "identify"})
_FORM = EN_FORM_WORDS | EN_UPPER | EN_LOWER
_ZH_MODAL = re.compile(r"必须|要求|应该|应当|需要|务必|不得|不要|禁止|只能|一律|请|不能|不可|不超过|不少于|至少|至多|最多")
_ZH_FORM = re.compile("|".join(map(re.escape, ZH_FORM_WORDS)))


def _is_requirement(sent: DocSpan) -> bool:
    if sent.text.rstrip().endswith("?"):
        return False
    root = sent.root
    lemmas = {t.lemma_.lower() for t in sent}
    modal = bool(lemmas & _MODALS) or any(t.lower_ in _NEGATORS and t.i - sent.start <= 2 for t in sent)
    imperative = root.tag_ == "VB" and not any(c.dep_ in ("nsubj", "nsubjpass") for c in root.children)
    if not (modal or imperative):
        return False
    form = [t for t in sent if t.lemma_.lower() in _FORM or t.lower_ in _FORM]
    if root.lemma_.lower() in _CONTENT_VERBS and not modal:
        return any(_in_form_clause(t, root) for t in form)
    return bool(form)


_FORM_CLAUSES = frozenset({"relcl", "advcl", "acl", "pcomp"})


def _in_form_clause(token: Token, root: Token) -> bool:
    """A form word in a clause that restricts how the content is written.

    "Describe tea without using any word longer than seven letters", "a
    paragraph in which no two words start with the same letter": the request
    is about content, but a clause under it ("without ...", a relative
    clause) sets the form. "Explain what the word X means" has none.
    """
    node = token
    while node.i != root.i and node.head.i != node.i:
        if node.lower_ == "without" or node.dep_ in _FORM_CLAUSES:
            return True
        node = node.head
    return False


def _free(start: int, end: int, found: Sequence[Found]) -> bool:
    return not any(overlaps(f, start, end) for f in found)


def unrecognised_requirements(text: str, prompt: str, docs: dict[str, Doc], found: Sequence[Found]) -> tuple[Span, ...]:
    """Spans of the sentences that look like form requirements and hold no extracted constraint.

    Offsets index ``prompt`` (``text`` is its cleaned copy, of the same length).
    """
    spans: list[tuple[int, int]] = []
    en = docs.get("en")
    if en is not None:
        for sent in en.sents:
            if _free(sent.start_char, sent.end_char, found) and _is_requirement(sent):
                spans.append((sent.start_char, sent.end_char))
    zh = docs.get("zh")
    if zh is not None:
        for sent in zh.sents:
            piece = sent.text
            if not _ZH_MODAL.search(piece) or not _ZH_FORM.search(piece) or piece.rstrip().endswith(("？", "?")):
                continue
            if _free(sent.start_char, sent.end_char, found) and not any(s < sent.end_char and sent.start_char < e for s, e in spans):
                spans.append((sent.start_char, sent.end_char))
    result: list[Span] = []
    for start, end in sorted(spans):
        while start < end and prompt[start].isspace():
            start += 1
        while end > start and prompt[end - 1].isspace():
            end -= 1
        if end > start:
            result.append(Span(start=start, end=end, text=prompt[start:end]))
    return tuple(result)
