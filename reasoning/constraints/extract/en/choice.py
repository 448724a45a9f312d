"""An answer that is exactly one of listed options: "answer with exactly one of the following: yes, no, or maybe".

The one-word reader (:mod:`reasoning.constraints.extract.en.pieces`, "reply with one word: yes,
no or maybe") needs the words "one word"; a choice is also said as one *of*
a list ("exactly one of the following options", "one of these answers",
"choose one: agree, disagree, neutral", "your answer must be either 'A' or
'B'"). Read here: a sentence whose verb asks for the answer (answer, reply,
respond, choose, pick, select) or whose subject is the answer ("your answer
must be ..."), holding "one of" / "one:" / "either", followed by at least two options,
quoted or bare (bare ones not after "in": "answer in either English or
French" is a manner); or two or three bare words joined by "or" right after
an answering verb that opens the sentence and running to its end ("answer
yes or no.", "reply with yes or no only") (each at most two words, not opening with an article or a
further request: "a poem or a story", "yes or no, then explain" are none;
joined by commas, "or", "and" or slashes). The reading is ``constrained_response`` with the options
as written, which the decoder runs as fixed alternatives.

Not read: a content request naming a list ("explain one of the following
topics: ...", "describe either the sun or the moon"), whose verb is no
answering verb and whose subject is no answer.
"""

from __future__ import annotations

import re

from spacy.tokens import Span

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.phrases import _quoted_list
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.model import Kind

__all__ = ["detect_choice"]

_ANSWERING = frozenset({"answer", "reply", "respond", "response"})
_PICKING = frozenset({"choose", "pick", "select"})
_CHOOSING = _ANSWERING | _PICKING | {"say", "output", "return"}
#: Verbs that shape the answer rather than ask for more of it ("keep it short", "make it formal").
_SHAPING = frozenset({"keep", "make", "limit", "use", "end", "start", "begin", "format", "wrap", "put", "do"})
#: Words by which a later request refers to the option picked ("write a poem about it").
_BACK_REFERENCES = frozenset({"it", "its", "them", "their", "chosen", "selected", "picked"})
_ANSWER_NOUNS = frozenset({"answer", "response", "reply", "output"})
_LIST_NOUNS = frozenset({"option", "choice", "answer", "response", "alternative", "label", "word", "phrase",
                         "following", "these", "category", "verdict", "way", "reply"})
_JOINERS = frozenset({",", "/", "or", "and", ";"})
_MAX_OPTION_WORDS = 2
#: Words that open a kind of content or a further request, not a literal answer ("a poem", "then explain").
_NOT_LITERAL = frozenset({"a", "an", "the", "then", "your", "my", "and", "but", "explain", "why"})


def _asks_answer(ctx: Context, start: int, end: int) -> bool:
    """Whether the sentence's verb answers or chooses, or its subject is the answer."""
    for j in range(start, end):
        token = ctx.tokens[j]
        if ctx.lemmas[j] in _CHOOSING and (token.pos_ in ("VERB", "AUX") or j == start or (
                j + 1 < end and ctx.lowers[j + 1] in ("with", ":"))):
            return True  # "(a) answer with one of ..." is often tagged a noun
        if ctx.lemmas[j] in _ANSWER_NOUNS and token.dep_ in ("nsubj", "nsubjpass"):
            return True
    return False


def _choice_at(ctx: Context, start: int, end: int) -> int | None:
    """The token after which the options begin: "one of (the following options)", "one:", "either"."""
    for j in range(start, end):
        lower = ctx.lowers[j]
        if lower == "either":
            return j + 1
        if lower not in ("one", "1") or j + 1 >= end:
            continue
        if ctx.lowers[j + 1] == ":":
            return j + 2
        if ctx.lowers[j + 1] in ("of", "from", "among"):
            colon = next((k for k in range(j + 2, min(end, j + 10)) if ctx.lowers[k] == ":"), None)
            if colon is not None:
                # "one of these labels for the review: ..."; "one of the options and explain why: ..." asks more
                between = range(j + 2, colon)
                return None if any(ctx.tokens[k].pos_ == "VERB" and ctx.lemmas[k] not in _LIST_NOUNS
                                   and ctx.lemmas[k] not in ("give", "list", "follow") for k in between) else colon + 1
            k = j + 2
            while k < end and (ctx.lemmas[k] in _LIST_NOUNS or ctx.lowers[k] in ("the", "these", "those", "given",
                                                                                   "listed", "possible", "following")):
                k += 1
            return k
    return None


def _bare(ctx: Context, j: int, end: int) -> tuple[list[str], int]:
    """Unquoted options from token ``j`` to the sentence's end: short runs of words between joiners."""
    options: list[str] = []
    current: list[int] = []
    last_char = ctx.tokens[j].idx if j < end else 0

    def close() -> bool:
        while current and ctx.lowers[current[-1]] in ("only", "please", "alone"):
            current.pop()  # "yes or no only"
        if not current:
            return True
        if len(current) > _MAX_OPTION_WORDS or ctx.lowers[current[0]] in _NOT_LITERAL:
            return False
        first, last = ctx.tokens[current[0]], ctx.tokens[current[-1]]
        options.append(ctx.text[first.idx:last.idx + len(last.text)])
        return True

    while j < end:
        token = ctx.tokens[j]
        if ctx.lowers[j] in _JOINERS:
            if not close():
                return [], last_char
            current = []
        elif token.text in (".", "!", "?", "\n") or token.is_space or token.is_punct and token.text not in ("'", "-"):
            break
        else:
            current.append(j)
            last_char = token.idx + len(token.text)
        j += 1
    if not close():
        return [], last_char
    return options, last_char


def _direct(ctx: Context, start: int, end: int) -> int | None:
    """The options right after an answering verb that opens the sentence, running to its end:
    "answer yes or no.", "reply with yes or no only", "respond: true or false"."""
    j = start + (1 if ctx.lowers[start] in ("please", "just", "simply", "only") else 0)
    if j >= end or ctx.lemmas[j] not in ("answer", "reply", "respond") or ctx.tokens[j].pos_ not in ("VERB", "NOUN"):
        return None
    k = j + 1
    while k < end and ctx.lowers[k] in ("with", "only", "just", "simply", ":", "either"):
        k += 1
    tail = [t for t in ctx.tokens[k:end] if not t.is_punct and not t.is_space]
    joined = [t for t in tail if t.lower_ in ("or", "/")] or [t for t in ctx.tokens[k:end] if t.text == "/"]
    words = [t for t in tail if t.lower_ not in ("or", "only", "please")]
    if not joined or not 2 <= len(words) <= 3 or any(
            t.pos_ in ("DET", "ADP") or t.pos_ == "ADV" and t.lower_.endswith("ly") for t in words):
        return None  # "answer the question or skip it", "answer quickly or slowly": no literal answers
    return k


def _picks_topic(ctx: Context, sent: Span) -> bool:
    """Whether the options are picked (choose, pick, select) for a task asked of the pick, not given as the answer.

    "Choose one of the following animals: cat, dog or horse. Write a poem about it." picks
    a topic: a request later in the prompt (a base-form verb) refers back to the pick
    ("it", "its", "them", "your choice"). Where the sentence names the answer (answer,
    reply, respond; "your answer ...") the options are the answer whatever follows.
    """
    start, end = sent.start, sent.end
    if any(ctx.lemmas[j] in _ANSWERING for j in range(start, end)):
        return False
    picking = [j for j in range(start, end) if ctx.lemmas[j] in _PICKING]
    if not picking:
        return False
    joined = next((k + 1 for k in range(picking[0] + 1, end - 1)
                   if ctx.lowers[k] in ("and", "then") and ctx.tokens[k + 1].tag_ == "VB"), end)
    later = range(joined, len(ctx.tokens))  # the options themselves may be verbs ("agree, disagree")
    asks = any(ctx.tokens[j].tag_ == "VB" and ctx.lemmas[j] not in _PICKING | _SHAPING for j in later)
    return asks and any(ctx.lowers[j] in _BACK_REFERENCES or (
        ctx.lowers[j] == "your" and j + 1 < len(ctx.tokens) and ctx.lemmas[j + 1] in ("choice", "pick", "selection"))
        for j in later)


def _in_manner(ctx: Context, start: int, first: int) -> bool:
    """Whether "in" stands before the "one" / "either" the options follow."""
    at = next((j for j in range(first - 1, start - 1, -1) if ctx.lowers[j] in ("one", "1", "either")), None)
    return at is not None and at > start and ctx.lowers[at - 1] == "in"


def detect_choice(ctx: Context) -> None:
    """Add ``constrained_response`` for a choice among listed options (see the module doc)."""
    if any(f.kind is Kind.CONSTRAINED_RESPONSE for f in ctx.found):
        return
    for sent in ctx.doc.sents:
        start, end = sent.start, sent.end
        if not _asks_answer(ctx, start, end) or _picks_topic(ctx, sent):
            continue
        first = _choice_at(ctx, start, end)
        if first is None:
            first = _direct(ctx, start, end)
        if first is None or first >= end:
            continue
        options, last_char = _quoted_list(ctx, ctx.tokens[first].idx, sent.end_char)
        if len(options) < 2:
            if _in_manner(ctx, start, first):
                continue  # "answer in either English or French", "reply in one of two styles": a manner
            options, last_char = _bare(ctx, first, end)
        options = [o.strip() for o in options if re.search(r"\w", o)]
        if len(options) < 2 or len({o.lower() for o in options}) < len(options):
            continue
        begin = sent.start_char
        ctx.found = [f for f in ctx.found if not (
            f.kind in (Kind.KEYWORDS_PRESENT, Kind.WORD_COUNT, Kind.FORBIDDEN_WORDS) and overlaps(f, begin, last_char))]
        ctx.found.append(Found(kind=Kind.CONSTRAINED_RESPONSE, params={"options": options}, start=begin,
                               end=max(last_char, begin + 1), confidence=0.85))
        return
