"""Copies the request names exactly: a range of its words, or the request with its first word replaced.

- "Copy words 3 to 7 of this request", "write out words 4 through 9 of the
  following sentence: '...'", "output the 2nd to the 5th words of the prompt":
  the answer repeats those words (1-based, both ends included; words are
  the text's runs between white space, their punctuation kept). The number
  readers take "words 3 to 7" for a length of 3 to 7 words, which is
  dropped. The words are the request's own (the whole prompt) when the
  range is "of the request / prompt / instruction / message / question",
  else the quoted text of the sentence, or the text after its colon, or the
  next block.
- "Repeat the request with its first word replaced by 'Please'", "replace
  the first word of the question with 'Kindly' and repeat it": the copy's
  text with its first word swapped (only the first: a stated ``replace`` pair
  would swap every occurrence of the word); the request is the text before
  the instruction in its block when the repeat reader took the instruction's
  own rider for it ("Write a poem about cats. Repeat the request, but change
  its first word to 'Compose'. Do not answer it.": not "Do not answer it.").

Both are ``copy(text)`` of the one text the answer starts with (the
change already applied: the decoder forces it, the verifier compares it).
Said with "and nothing else", "only", "do not answer it", "without
answering", the answer is the copy alone: a count of at most its words.
"""

from __future__ import annotations

import re

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.named import repeat_text
from reasoning.constraints.extract.en.phrases import _QUOTED
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.form import Copy, Count, Unit, canonical
from reasoning.constraints.form import units as form_units
from reasoning.constraints.form.model import Measure
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ordinal, parse_number

__all__ = ["detect_copied_characters", "detect_copied_words", "detect_first_word_replaced"]

_NUM = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"
_ORD = r"(?:\d+(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)"
_RANGE = re.compile(
    rf"\bwords?\s+(?:number\s+)?(?:#\s*)?(?P<a>{_NUM})\s*(?:to|through|thru|until|-|–|and)\s*(?:word\s+)?(?P<b>{_NUM})\b(?!\s+(?:letters|characters|syllables|chars|long|in\s+length))"
    rf"|\b(?:the\s+)?(?P<oa>{_ORD})\s*(?:word\s+)?(?:to|through|thru|until|-|–|and)\s*(?:the\s+)?(?P<ob>{_ORD})\s+words?\b",
    re.IGNORECASE,
)
_COPYING = re.compile(r"\b(?:copy|copying|repeat|repeating|write\s+out|output|reproduce|quote|print|return|give|"
                      r"list|type|echo|restate)\b", re.IGNORECASE)
_OWN = re.compile(r"\s*(?:of|from|in)\s+(?:this|the|my|your|the\s+above)?\s*(?:requests?|prompts?|instructions?|"
                  r"messages?|questions?|query|input)\b", re.IGNORECASE)
_THIS_SENTENCE = re.compile(r"\s*(?:of|from|in)\s+this\s+(?:very\s+)?sentence\b", re.IGNORECASE)
_CHAR_RANGE = re.compile(r"\b(?:index|indices|indexes|positions?|characters?)\s+(?P<a>\d+)\s*(?:and|to|through|-|–)\s*"
                         r"(?:index\s+)?(?P<b>\d+)\b", re.IGNORECASE)
_ALONE = re.compile(r"\b(?:nothing\s+(?:else|more)|only|alone|just|do\s+not\s+answer|don't\s+answer|without\s+answering|"
                    r"not\s+answer|no\s+other\s+text|no\s+answer)\b", re.IGNORECASE)
_FIRST_WORD = re.compile(
    r"\b(?:its|the|their)\s+first\s+word\s+(?:\w+\s+){0,3}?(?:replaced|swapped|changed|substituted)\s+(?:by|with|to|for)\s+"
    r"(?P<q1>[\"“'‘][^\"”'’\n]{1,40}[\"”'’]|\w+)"
    r"|\b(?:replace|replacing|swap|swapping|change|changing|substitute|substituting)\s+(?:its|the|their)\s+first\s+word"
    r"(?:\s+of\s+(?:the|this|my)\s+\w+)?\s+(?:with|by|to|for|into)\s+(?P<q2>[\"“'‘][^\"”'’\n]{1,40}[\"”'’]|\w+)",
    re.IGNORECASE,
)


def _number(word: str) -> int | None:
    """The position a range bound names: an ordinal ("third", "3rd") or a number ("3", "three")."""
    rank = ordinal(word)
    return rank if rank is not None else parse_number([word])


def _sentence_bounds(text: str, at: int) -> tuple[int, int]:
    return sentence_bounds(text, at, at)


def _source(ctx: Context, match: re.Match[str]) -> str | None:
    """The text whose words the range counts (see the module doc)."""
    text = ctx.text
    if _OWN.match(text, match.end()):
        return text
    start, end = _sentence_bounds(text, match.end())
    if _THIS_SENTENCE.match(text, match.end()):
        return text[start:end]
    line_end = text.find("\n", match.end())
    line_end = len(text) if line_end < 0 else line_end
    quoted = next(iter(_QUOTED.finditer(text, match.end(), line_end)), None)
    if quoted is not None:
        return next(g for g in quoted.groups() if g is not None)
    colon = text.find(":", match.end(), line_end)
    if colon >= 0 and text[colon + 1:line_end].strip():
        return text[colon + 1:line_end]
    return repeat_text(text, start, end)


def _alone(ctx: Context, start: int, end: int) -> bool:
    return _ALONE.search(ctx.text, start, end) is not None


def _add_copy(ctx: Context, copied: str, start: int, end: int, alone: bool) -> None:
    kind, params = canonical(Copy(text=copied))
    ctx.found.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))
    if alone:
        words = form_units.count(Measure(unit=Unit.WORDS), copied)
        kind, params = canonical(Count(unit=Unit.WORDS, relation=Relation.AT_MOST, n=words))
        ctx.found.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.8))


def detect_copied_words(ctx: Context) -> None:
    """Words i to j of a text, copied (see the module doc)."""
    for match in _RANGE.finditer(ctx.text):
        start, end = _sentence_bounds(ctx.text, match.start())
        if _COPYING.search(ctx.text, start, match.start()) is None:
            continue
        first = _number(match.group("a") or match.group("oa") or "")
        last = _number(match.group("b") or match.group("ob") or "")
        if first is None or last is None or not 1 <= first <= last:
            continue
        source = _source(ctx, match)
        words = source.split() if source is not None else []
        if last > len(words):
            continue
        copied = " ".join(words[first - 1:last])
        ctx.found = [f for f in ctx.found if not (overlaps(f, start, end) and (
            f.kind in (Kind.WORD_COUNT, Kind.REPEAT_PROMPT, Kind.COPY, Kind.KEYWORDS_PRESENT)
            or f.kind is Kind.COUNT and f.params.get("unit") == "words"))]
        _add_copy(ctx, copied, match.start(), end, _alone(ctx, start, end))
        return


def detect_copied_characters(ctx: Context) -> None:
    """"Copy the span between (and including) index 10 and 45; the indices are character indices": the
    request's characters ``a..b`` (0-based, both included), read only where characters are named."""
    for match in _CHAR_RANGE.finditer(ctx.text):
        start, end = _sentence_bounds(ctx.text, match.start())
        stretch = ctx.text[start:min(len(ctx.text), end + 80)]
        if _COPYING.search(ctx.text, start, match.start()) is None or not re.search(r"\bcharacter", stretch, re.IGNORECASE):
            continue
        first, last = int(match.group("a")), int(match.group("b"))
        if not first <= last < len(ctx.text):
            continue
        ctx.found = [f for f in ctx.found if not (overlaps(f, start, end) and (
            f.kind in (Kind.WORD_COUNT, Kind.REPEAT_PROMPT, Kind.COPY) or f.kind is Kind.COUNT))]
        _add_copy(ctx, ctx.text[first:last + 1], match.start(), end, _alone(ctx, start, end))
        return


_LABELLED = re.compile(r"\b(?:request|question|prompt|task|query|instruction)\s*[:：]\s*(\S.*)$",
                       re.IGNORECASE | re.DOTALL)
_META = re.compile(r"\b(?:answer|answering|request|repeat|respond)\b", re.IGNORECASE)


def _request(ctx: Context, read: str, at: int) -> str:
    """The request a copy instruction at ``at`` repeats: ``read`` (the repeat reader's text), unless that is
    the instruction's own rider ("Do not answer it.") and the request stands before it in its block
    ("Write a poem about cats. Repeat the request, but change its first word ...")."""
    labelled = _LABELLED.search(read)
    if labelled is not None:
        return labelled.group(1).strip()  # "Do not answer. Request: Paint a house."
    if not (_META.search(read) and len(read.split()) <= 10):
        return read
    sentence_start = _sentence_bounds(ctx.text, at)[0]
    block = ctx.text.rfind("\n\n", 0, sentence_start)
    before = ctx.text[block + 2 if block >= 0 else 0:sentence_start].strip()
    return before or read


def detect_first_word_replaced(ctx: Context) -> None:
    """A copy with its first word replaced (see the module doc)."""
    match = _FIRST_WORD.search(ctx.text)
    if match is None:
        return
    copy = next((f for f in ctx.found if f.kind in (Kind.COPY, Kind.REPEAT_PROMPT)), None)
    if copy is None:
        return
    text = _request(ctx, str(copy.params.get("text") or copy.params.get("prompt_to_repeat") or "").strip(),
                    match.start())
    new = (match.group("q1") or match.group("q2") or "").strip("\"“”'‘’")
    parts = text.split(None, 1)
    if not parts or not new:
        return
    lead = re.match(r"\w+", parts[0])
    if lead is None:
        return
    copied = new + parts[0][lead.end():] + (" " + parts[1] if len(parts) > 1 else "")
    start, end = min(copy.start, match.start()), max(copy.end, match.end())
    ctx.found = [f for f in ctx.found if f is not copy and not (
        f.kind in (Kind.KEYWORDS_PRESENT, Kind.FORBIDDEN_WORDS) and overlaps(f, match.start(), match.end()))]
    sentence = _sentence_bounds(ctx.text, match.start())
    _add_copy(ctx, copied, start, end, _alone(ctx, sentence[0], max(sentence[1], end)))
