"""Requirements on the shape of each word: its length, and what it shares with the word before it.

"No word longer than 8 letters", "use only words of at most six letters",
"every word must have fewer than 7 letters", 每个单词不超过8个字母 are a
length bound on every word; "at least 3 words longer than 10 letters" is a
count of the words past it. "No two consecutive words start with the same
letter", "adjacent words must begin with different letters", 相邻的两个单词
不能以同一个字母开头 bound the words that share their initial with the word
before them; "never use the same word twice in a row", 不要连续重复同一个词
the words that repeat it.

Each becomes one generic ``count`` of words (``Filter.min_length`` /
``max_length`` / ``same_as_previous``):

- a length said of words that are denied ("no word", "avoid words", "words
  must not exceed") counts the words of that length: at most 0;
- a length said of every word ("every", "each", "all", "only", "per word",
  or words as the subject of a modal: "words should be at most 6 letters
  long") counts the words of any other length: at most 0 (an exact or
  ranged length is two such counts, one each side);
- a length with a count of its own words ("at least 3 words of more than 10
  letters") counts those words.

A letters or characters count read from the same words, or a word count
(每个词不超过四个字 is no four-word answer), is replaced.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.en.context import Context, Quantity
from reasoning.constraints.extract.en.phrases import _negated, _quantity_left
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_UNIVERSAL
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.form import Count, Filter, Unit, canonical
from reasoning.constraints.form.model import Adjacency
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import (
    ZH_NUMBER,
    ZH_RELATIONS_AFTER,
    ZH_RELATIONS_BEFORE,
    parse_zh_number,
)

__all__ = ["length_counts", "refine_word_shape_chinese", "refine_word_shape_english"]

Length = tuple[int | None, int | None]
"""A closed range of word lengths (letters and digits): (least, most); None is open."""

_LENGTH_LEMMAS = frozenset({"letter", "character", "char"})
_WORD_LEMMAS = frozenset({"word", "term"})
_MODALS = frozenset({"must", "should", "may", "can", "need", "shall", "will", "have", "ought"})
_ADJACENT = frozenset({"consecutive", "adjacent", "neighbouring", "neighboring", "successive", "neighbour",
                       "neighbor", "back", "row", "follow", "subsequent", "next", "preceding", "previous"})
_DENIAL = frozenset({"no", "not", "n't", "never", "without", "avoid", "none", "nor"})
#: Verbs that keep the answer away from what follows ("steer clear of any word over 7 letters").
_SHUN = frozenset({"avoid", "refrain", "ban", "steer", "eschew", "shun", "stay", "exclude", "forbid", "prohibit",
                   "skip", "omit", "drop"})
#: Verbs that confine the answer to what follows ("limit yourself to words of four letters or fewer").
_CONFINE = frozenset({"limit", "restrict", "confine", "stick", "keep"})


def _length_of(relation: Relation | None, n: int, high: int | None = None) -> Length | None:
    """The lengths a comparison admits ("fewer than 7" is (None, 6))."""
    if high is not None:
        return (n, high)
    if relation is Relation.AT_MOST:
        return (None, n)
    if relation is Relation.LESS_THAN:
        return (None, n - 1)
    if relation is Relation.AT_LEAST:
        return (n, None)
    if relation is Relation.MORE_THAN:
        return (n + 1, None)
    if relation is Relation.EXACTLY:
        return (n, n)
    return None


def _outside(length: Length) -> list[Length]:
    """The lengths outside ``length``: one open range each side it is closed on."""
    low, high = length
    out: list[Length] = []
    if low is not None and low > 0:
        out.append((None, low - 1))
    if high is not None:
        out.append((high + 1, None))
    return out


def length_counts(length: Length, *, every: bool, relation: Relation = Relation.AT_MOST, n: int = 0) -> list[Count]:
    """The counts a word-length requirement means: for ``every`` word, none of another length;
    otherwise ``relation n`` words of ``length``."""
    ranges = _outside(length) if every else [length]
    return [Count(unit=Unit.WORDS, filter=Filter(min_length=low, max_length=high), relation=relation, n=n)
            for low, high in ranges]


def _add(ctx_found: list[Found], form: Count, start: int, end: int) -> None:
    kind, params = canonical(form)
    if not any(f.kind == kind and f.params == params for f in ctx_found):
        ctx_found.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))


def _replace(found: list[Found], start: int, end: int) -> list[Found]:
    """``found`` without the letter / character / word counts read from ``start..end``."""
    def counts_letters(f: Found) -> bool:
        if f.kind in (Kind.WORD_COUNT, Kind.LETTER_FREQUENCY):
            return True
        return f.kind is Kind.COUNT and str(f.params.get("unit")) in (Unit.LETTERS, Unit.CHARACTERS, Unit.WORDS) \
            and not f.params.get("filter")
    return [f for f in found if not (counts_letters(f) and overlaps(f, start, end))]


def _word_before(ctx: Context, at: int, first: int, start: int) -> int | None:
    """The word noun a length at token ``at`` (its number from ``first``) is said of: before it in its
    clause, or "per / in each word" after."""
    for j in range(first - 1, max(start, first - 10) - 1, -1):
        if ctx.lemmas[j] in _WORD_LEMMAS and ctx.tokens[j].pos_ in ("NOUN", "PROPN"):
            return j
        if ctx.lowers[j] in (";", ".", ",", "but", "and", "or", "while") or ctx.tokens[j].dep_ == "cc" \
                or ctx.lemmas[j] in ("sentence", "paragraph", "line"):
            return None  # another clause or item: "50 words and no more than 300 characters"
    stop = ctx.tokens[at].sent.end
    for j in range(at + 1, min(stop, at + 4)):
        if ctx.lemmas[j] in _WORD_LEMMAS and ctx.lowers[j - 1] in ("per", "each", "every", "any", "a"):
            return j
    return None


def _comparative(ctx: Context, q: Quantity) -> Quantity:
    """"exceed 8 letters" is more than 8 (the typed parser leaves the verb's number unrelated)."""
    if q.relation is None and q.first > 0 and ctx.lemmas[q.first - 1] in ("exceed", "surpass", "pass"):
        return Quantity(Relation.MORE_THAN, q.n, q.first - 1, q.last)
    if q.relation is None and q.last + 2 < len(ctx.tokens) and ctx.lowers[q.last + 1] in ("letters", "characters") \
            and ctx.lowers[q.last + 2] in ("or", "and") and q.last + 3 < len(ctx.tokens):
        after = ctx.lowers[q.last + 3]
        if after in ("fewer", "less", "shorter", "under"):
            return Quantity(Relation.AT_MOST, q.n, q.first, q.last + 3)
        if after in ("more", "longer", "over"):
            return Quantity(Relation.AT_LEAST, q.n, q.first, q.last + 3)
    return q


def _every(ctx: Context, word: int, start: int) -> bool:
    """Whether the length is said of every word: a universal determiner, "per word", or words as a modal's subject."""
    window = ctx.lowers[max(start, word - 3) : word]
    if any(w in EN_UNIVERSAL for w in window) or (word > 0 and ctx.lowers[word - 1] == "per"):
        return True
    if any(ctx.lemmas[j] in _CONFINE for j in range(max(start, word - 4), word)):
        return True
    token = ctx.tokens[word]
    return token.dep_ in ("nsubj", "nsubjpass") and any(
        c.lower_ in _MODALS or c.lemma_ in _MODALS for c in token.head.children if c.dep_ == "aux")


def _denied(ctx: Context, word: int, at: int, start: int) -> bool:
    if any(ctx.lowers[j] in _DENIAL or ctx.lemmas[j] in _SHUN for j in range(max(start, word - 4), word)):
        return True
    return any(ctx.lowers[j] in ("not", "n't", "never") for j in range(word + 1, at))


def _lengths(ctx: Context) -> None:
    for at, lemma in enumerate(ctx.lemmas):
        if lemma not in _LENGTH_LEMMAS:
            continue
        start = ctx.tokens[at].sent.start
        q = _quantity_left(ctx, at)
        if q is None:
            continue
        q = _comparative(ctx, q)
        word = _word_before(ctx, at, q.first, start)
        if word is None:
            continue
        length = _length_of(q.relation, q.n, q.high)
        if length is None:
            # "words of 5 letters", "8 letters long": said of every word it is an exact length
            if not (_every(ctx, word, start) or _denied(ctx, word, at, start)):
                continue
            length = (q.n, q.n)
        counted = _quantity_left(ctx, word) if word < at else None
        begin = ctx.tokens[min(word, q.first)].idx
        end = ctx.chars(at, max(at, q.last))[1]
        if word > at:
            end = ctx.chars(word, word)[1]
        if counted is not None and counted.last < word and counted.relation is not None:
            begin = min(begin, ctx.tokens[counted.first].idx)
            forms = length_counts(length, every=False, relation=counted.relation, n=counted.n)
        elif _denied(ctx, word, at, start) or _negated(ctx, word):
            forms = length_counts(length, every=False)
        elif _every(ctx, word, start):
            forms = length_counts(length, every=True)
        else:
            continue
        ctx.found = _replace(ctx.found, begin, end)
        for form in forms:
            _add(ctx.found, form, begin, end)


def _adjacency(ctx: Context) -> None:
    for sent in ctx.doc.sents:
        lemmas = ctx.lemmas[sent.start : sent.end]
        lowers = ctx.lowers[sent.start : sent.end]
        text = " ".join(lowers)
        if not any(w in _WORD_LEMMAS for w in lemmas):
            continue
        adjacent = any(w in _ADJACENT for w in lemmas) or "in a row" in text or "one after another" in text \
            or "before it" in text or "after it" in text
        if not adjacent:
            continue
        what: Adjacency | None = None
        if any(w in ("letter", "initial", "initials") for w in lemmas) and any(
                w in ("same", "identical", "share", "different", "differ", "distinct", "repeat") for w in lemmas):
            what = "initial"
        elif any(w in ("repeat", "same", "identical", "twice", "duplicate") for w in lemmas):
            what = "word"
        if what is None:
            continue
        differ = any(w in ("different", "differ", "distinct") for w in lemmas)
        denied = any(w in _DENIAL or w in ("avoid", "never", "refrain", "ban") for w in lemmas) or \
            any(ctx.lemmas[j] in ("avoid", "refrain") for j in range(sent.start, sent.end))
        if differ == denied:  # "must not differ": alliteration, which no count here says
            continue
        begin, end = sent.start_char, sent.end_char
        form = Count(unit=Unit.WORDS, filter=Filter(same_as_previous=what), relation=Relation.AT_MOST, n=0)
        ctx.found = [f for f in ctx.found if not (overlaps(f, begin, end) and (
            f.kind in (Kind.WORD_COUNT, Kind.LETTER_FREQUENCY, Kind.FORBIDDEN_WORDS)
            or (f.kind is Kind.COUNT and not f.params.get("filter"))
            or (f.kind is Kind.COUNT and "starts_with" in dict(f.params.get("filter") or {}))))]
        _add(ctx.found, form, begin, end)


def refine_word_shape_english(ctx: Context) -> None:
    """Word lengths and adjacent words' shared initials or repeats, read into ``ctx.found``."""
    if any(lemma in _LENGTH_LEMMAS for lemma in ctx.lemmas):
        _lengths(ctx)
    _adjacency(ctx)


_ZH_NEG = r"(?:禁止|不要|不得|不能|不可|请勿|勿|切勿|避免|不许|不准|严禁|别|不使用)"
_ZH_WORD = r"(?:单词|英文单词|词语|词汇|词)"
_ZH_LENGTH = (r"(?P<rel>" + alternation(list(ZH_RELATIONS_BEFORE)) + r"|长于|短于|超出)?\s*(?P<num>" + ZH_NUMBER
              + r")\s*个?(?:字母|字符|字)(?P<after>" + alternation(list(ZH_RELATIONS_AFTER)) + r")?")
_ZH_EVERY = re.compile(
    r"(?:(?:每个|每一个|每|所有的?|全部的?|任何一个|任何)" + _ZH_WORD + r"(?:的)?(?:长度|字母数|字母数量)?|" + _ZH_WORD
    + r"的?(?:长度|字母数|字母数量))(?:都|均|一律|一概|全部|全都)?"
    r"(?:必须|应该|应|要|须|需|只能)?(?:是|为|在|控制在|有|包含)?" + _ZH_LENGTH)
_ZH_ONLY = re.compile(r"(?:只|仅)(?:能)?(?:使用|用|写)" + _ZH_LENGTH + r"(?:长)?的" + _ZH_WORD)
_ZH_DENIED = re.compile(_ZH_NEG + r"(?:使用|用|出现|写)?(?:任何)?" + _ZH_LENGTH + r"(?:长)?的" + _ZH_WORD)
_ZH_ADJACENT = re.compile(
    r"(?:相邻|连续|前后|挨着)的?(?:两个|的两个)?" + _ZH_WORD + r"(?P<rest>[^。；;！!\n]{0,24})")


def _zh_length(match: re.Match[str]) -> Length | None:
    n = parse_zh_number(match.group("num"))
    if n is None:
        return None
    rel, after = match.group("rel"), match.group("after")
    if rel in ("长于", "超出"):
        return _length_of(Relation.MORE_THAN, n)
    if rel == "短于":
        return _length_of(Relation.LESS_THAN, n)
    if rel:
        return _length_of(ZH_RELATIONS_BEFORE[rel], n)
    if after:
        return _length_of(ZH_RELATIONS_AFTER[after], n)
    return (n, n)


def refine_word_shape_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """``found`` with the Chinese word-length and adjacent-word requirements of ``text`` read in."""
    out = list(found)
    for pattern, every in ((_ZH_EVERY, True), (_ZH_ONLY, True), (_ZH_DENIED, False)):
        for match in pattern.finditer(text):
            length = _zh_length(match)
            if length is None:
                continue
            # 每个单词不能超过8个字母: the negation is the relation's own (不能超过 is at most)
            out = _replace(out, match.start(), match.end())
            for form in length_counts(length, every=every):
                _add(out, form, match.start(), match.end())
    for match in _ZH_ADJACENT.finditer(text):
        rest = match.group("rest")
        what: Adjacency | None
        if "字母" in rest or "首字" in rest:
            what = "initial"
        elif re.search(r"相同|一样|同一|重复", rest):
            what = "word"
        else:
            continue
        differ = re.search(r"(?<!能)(?<!得)(?<!要)不同|不一样|各异", rest) is not None
        if not differ and re.search(_ZH_NEG + "|不", rest) is None:
            continue
        start, end = match.start(), match.end()
        out = [f for f in out if not (overlaps(f, start, end) and f.kind in (Kind.WORD_COUNT, Kind.COUNT))]
        _add(out, Count(unit=Unit.WORDS, filter=Filter(same_as_previous=what), relation=Relation.AT_MOST, n=0),
             start, end)
    repeated = re.search(r"(?:不要|不能|不得|避免|禁止|别)(?:连续)(?:重复|使用|用)?(?:同一个|同一|相同的?)" + _ZH_WORD, text)
    if repeated is not None and not any(f.kind is Kind.COUNT and overlaps(f, repeated.start(), repeated.end())
                                        for f in out):
        _add(out, Count(unit=Unit.WORDS, filter=Filter(same_as_previous="word"), relation=Relation.AT_MOST, n=0),
             repeated.start(), repeated.end())
    return out
