"""The typed parsers the English readers share: numbers and ranges around a unit, relations, negation, payloads.

A count is read as a :class:`~reasoning.constraints.extract.en.context.Quantity`
found left of its unit word (``_quantity_left``: "at least 300 words", "20 to
25 sentences", "300+ words") or right of it (``_quantity_right``: "words: at
most 50"), with a relation written after the unit taken by
:func:`relation_after_unit` ("twelve words or fewer"); negation comes from the
dependency parse (``_negated``: a ``neg`` child of the governing verb, a
governing "without", "avoid", "refrain"; "don't forget to" is not one), and
word lists from quoted strings or comma / "and" / "or" lists (``_payload``).
"""

from __future__ import annotations

import re

from spacy.tokens import Doc, Token

from reasoning.constraints.extract.en.context import Context, Quantity
from reasoning.constraints.model import Relation
from reasoning.constraints.quantities import parse_number, relation_after, relation_before

__all__ = ["relation_after_unit"]

_NEG_VERBS = frozenset({"avoid", "refrain", "exclude", "omit", "forbid", "prohibit", "ban", "skip"})
_DOUBLE_NEG = frozenset({"forget", "fail", "hesitate", "neglect"})
_QUOTED = re.compile(r"\"([^\"\n]{1,80})\"|“([^”\n]{1,80})”|(?<!\w)'([^'\n]{1,80})'(?!\w)|‘([^’\n]{1,80})’")
_STOPS = (".", ";", "!", "?")


# ---------------------------------------------------------------- numbers


def _num(token: Token) -> int | None:
    if token.like_num or token.lower_ in ("once", "twice", "thrice", "dozen"):
        return parse_number([token.text])
    return None


def _number_at(doc: Doc, i: int) -> tuple[int, int, int] | None:
    """(value, first, last) of a number whose last token is ``i``."""
    value = _num(doc[i])
    if value is None:
        return None
    first = i
    while True:
        if first - 2 >= 0 and doc[first - 1].text == "-" and _num(doc[first - 2]) is not None or first - 2 >= 0 and doc[first - 1].lower_ == "and" and doc[first - 2].lower_ in ("hundred", "thousand"):
            first -= 2
        elif first - 1 >= 0 and _num(doc[first - 1]) is not None and doc[first - 1].lower_ not in ("once", "twice"):
            first -= 1
        else:
            break
    joined = parse_number([t.text for t in doc[first : i + 1] if t.text != "-"])
    return (joined, first, i) if joined is not None else (value, i, i)


def _with_range(doc: Doc, value: int, first: int, last: int, floor: int) -> Quantity | None:
    """"20 to 25" / "5 or 6" / "between 3 and 5" ending at the number ``first..last``."""
    if first - 2 < floor or doc[first - 1].lower_ not in ("to", "or", "-", "–", "and"):
        return None
    low = _number_at(doc, first - 2)
    if low is None or low[0] >= value:
        return None
    start = low[1]
    if start - 1 >= floor and doc[start - 1].lower_ == "between":
        start -= 1
    return Quantity(None, low[0], start, last, high=value)


_SKIPPABLE = frozenset(
    ["very", "short", "long", "different", "distinct", "separate", "unique", "markdown", "total", "complete", "full", "bullet", "text", "key", "main", "new", "additional", "more", "such"]
)


def _quantity_left(ctx: Context, unit: int) -> Quantity | None:
    """The count written a few tokens before the unit noun at ``unit``."""
    doc = ctx.doc
    floor = doc[unit].sent.start
    j = unit - 1
    while j >= floor and unit - j <= 5:
        t = doc[j]
        number = _number_at(doc, j)
        if number is not None:
            value, first, last = number
            ranged = _with_range(doc, value, first, last, floor)
            if ranged is not None:
                return ranged
            after = relation_after([x.lower_ for x in doc[last + 1 : unit]])
            if after is not None:
                return Quantity(after[0], value, first, unit)
            before = relation_before([x.lower_ for x in doc[max(floor, first - 6) : first]])
            if before is not None:
                return Quantity(before[0], value, first - before[1], last)
            if first > floor and ctx.lemmas[first - 1] in ("exceed", "surpass", "top"):
                return Quantity(Relation.MORE_THAN, value, first - 1, last)
            if _limited(ctx, first, floor):
                return Quantity(Relation.AT_MOST, value, first - 1, last)
            return Quantity(None, value, first, last)
        if t.lower_ == "example":
            return None
        if t.lower_ == "of" and j > floor and ctx.lowers[j - 1] in ("couple", "dozen", "pair"):
            # "a couple of hashtags", "at least a dozen of them": the number word is before "of"
            amount = parse_number([ctx.lowers[j - 1]])
            start = j - 2 if j - 2 >= floor and ctx.lowers[j - 2] == "a" else j - 1
            before = relation_before([x.lower_ for x in doc[max(floor, start - 6) : start]])
            if amount is None:
                return None
            if before is not None:
                return Quantity(before[0], amount, start - before[1], j - 1)
            if ctx.lowers[j - 1] == "couple":
                return Quantity(Relation.AT_LEAST, amount, start, j - 1)  # a vague amount: two or more, never exactly
            return Quantity(None, amount, start, j - 1)
        if not (t.text in ("-", "+") or t.lower_ in _SKIPPABLE or t.lower_ in ("or", "more", "fewer", "less")
                or t.pos_ in ("ADJ", "ADV") or t.dep_ == "compound"):
            return None
        j -= 1
    return None


_LIMIT_VERBS = frozenset({"limit", "cap", "restrict", "confine", "keep", "hold"})


def _limited(ctx: Context, first: int, floor: int) -> bool:
    """"Limit yourself to 3 sentences", "cap the answer at 50 words": a number a limiting verb bounds from above."""
    if first <= floor or ctx.lowers[first - 1] not in ("to", "at"):
        return False
    node = ctx.tokens[first - 1].head
    for _ in range(2):  # the preposition hangs on the verb, or on its object ("cap [the answer] at 50")
        if floor <= node.i < first and (node.lemma_.lower() in _LIMIT_VERBS or node.lower_ in _LIMIT_VERBS):
            return True
        node = node.head
    return False


_UNIT_LEMMAS = frozenset(
    {"word", "sentence", "paragraph", "bullet", "point", "section", "part", "placeholder",
     "highlight", "line", "time", "letter", "stanza"}
)


def _quantity_right(ctx: Context, head: int, limit: int = 16) -> Quantity | None:
    """A comparison after ``head``: "words ... should be at least 300", "in the range of 40 to 60"."""
    doc = ctx.doc
    end = min(doc[head].sent.end, head + limit)
    for j in range(head + 1, end):
        t = doc[j]
        if t.text in _STOPS:
            return None
        if ctx.lemmas[j] in _UNIT_LEMMAS and j > head + 1 and ctx.lemmas[j] != ctx.lemmas[head]:
            return None
        if t.lower_ in ("once", "twice", "thrice"):
            return None
        number = _number_at(doc, j)
        if number is None:
            continue
        value, first, last = number
        following = [x.lower_ for x in doc[last + 1 : min(len(doc), last + 4)]]
        if any(w in ("times", "time", "%", "percent") for w in following[:3]):
            return None
        if last + 1 < len(doc) and ctx.lemmas[last + 1] in _UNIT_LEMMAS and ctx.lemmas[last + 1] != ctx.lemmas[head]:
            return None
        ranged = _with_range(doc, value, first, last, head + 1)
        if ranged is not None:
            return ranged
        if j + 2 < end and doc[j + 1].lower_ in ("to", "-", "–", "and") and _num(doc[j + 2]) is not None:
            continue
        before = relation_before([x.lower_ for x in doc[max(head + 1, first - 6) : first]])
        after = relation_after(following)
        if before is None and after is None:
            if first > 0 and ctx.lemmas[first - 1] in ("exceed", "surpass"):
                return Quantity(Relation.MORE_THAN, value, head, last)
            return None
        relation = after[0] if after is not None else before[0]  # type: ignore[index]
        return Quantity(relation, value, head, last + (after[1] if after else 0))
    return None


def relation_after_unit(ctx: Context, quantity: Quantity, head: int) -> Quantity:
    """``quantity`` with the relation written after its unit ("twelve words or fewer", "two emoji at minimum").

    Only a bare number before the unit takes it; a range or a stated relation stays.
    """
    if quantity.relation is not None or quantity.high is not None or quantity.last >= head:
        return quantity
    after = relation_after(ctx.lowers[head + 1 : head + 8])
    if after is None:
        return quantity
    return Quantity(after[0], quantity.n, quantity.first, head + after[1])


def _flip_if_negated(ctx: Context, at: int, relation: Relation) -> Relation:
    """"should not exceed 50 words" / "nothing longer than 30 words" / "avoid using the letter i
    more than twice" (a verb of avoiding in the same clause) -> at most."""
    if relation not in (Relation.MORE_THAN, Relation.LESS_THAN):
        return relation
    doc = ctx.doc
    window = doc[max(doc[at].sent.start, at - 8) : at]
    flipped = Relation.AT_MOST if relation == Relation.MORE_THAN else Relation.AT_LEAST
    if any(t.dep_ == "neg" or t.lower_ in ("n't", "not") for t in window):
        return flipped
    for t in reversed(window):
        if t.lower_ in (",", ";", "and", "but", "then", "or") or t.is_punct:
            break
        if t.lemma_.lower() in _NEG_VERBS:
            return flipped
    return relation


# ---------------------------------------------------------------- negation and payloads


def _negated(ctx: Context, i: int) -> bool:
    """Whether the requirement headed at token ``i`` is negated in its clause."""
    token = ctx.tokens[i]
    node = token
    for _ in range(5):
        lemma = node.lemma_.lower()
        negs = [c for c in node.children if c.dep_ == "neg"]
        if lemma in _DOUBLE_NEG and negs:
            return False
        if lemma in _NEG_VERBS or node.lower_ == "without":
            return True
        if negs:
            return True
        if any(c.lower_ == "without" and c.i < token.i for c in node.children):
            return True
        if node.dep_ == "conj" or node.head is node:
            break
        node = node.head
    sent_start = token.sent.start
    for j in range(i - 1, max(sent_start, i - 8) - 1, -1):
        lower = ctx.lowers[j]
        if lower in (";", ".", "but", "then", ",") :
            break
        if ctx.lemmas[j] in _DOUBLE_NEG:
            return False
        if lower in ("without", "never", "n't", "not") or ctx.lemmas[j] in _NEG_VERBS:
            return True
        if lower == "no" and j + 1 < len(ctx.lowers) and ctx.lowers[j + 1] not in ("more", "less", "fewer"):
            return True
    return False


def _in_quotes(ctx: Context, i: int) -> bool:
    return 0 < i < len(ctx.tokens) - 1 and ctx.tokens[i - 1].is_quote and ctx.tokens[i + 1].is_quote


def _clause_end(ctx: Context, i: int) -> int:
    """Index of the token ending the sentence of token ``i`` (exclusive)."""
    sent_end = ctx.tokens[i].sent.end
    for j in range(i + 1, sent_end):
        if ctx.lowers[j] in _STOPS:
            return j
    return sent_end


_INTRO_WORDS = frozenset(
    {"the", "following", "keyword", "keywords", "word", "words", "phrase", "phrases", "like", "such", "as",
     "these", "term", "terms", "name", "line", "i.e.", "e.g.", "exact"}
)


def _intro_only(gap: str) -> bool:
    """Whether only list-introducing words stand between a head and its first quote."""
    words = [w for w in re.split(r"[\s:,\[\(]+", gap.lower()) if w]
    return all(w in _INTRO_WORDS for w in words)


def _quoted_list(
ctx: Context, start_char: int, end_char: int) -> tuple[list[str], int]:
    """Quoted strings chained by commas / "and" / "or" from the first one."""
    text = ctx.text
    chained: list[tuple[str, int, int]] = []
    for match in _QUOTED.finditer(text, start_char, end_char):
        value = next(g for g in match.groups() if g is not None).strip()
        if chained:
            gap = text[chained[-1][2] : match.start()]
            if not re.fullmatch(r"[\s,;:\[\]]*(?:and|or|nor|&)?[\s,;:\[\]]*", gap):
                break
        elif not _intro_only(text[start_char : match.start()]):
            break
        chained.append((value, match.start(), match.end()))
    return [c[0] for c in chained if c[0]], (chained[-1][2] if chained else start_char)


_LIST_STOP = frozenset(
    ["in", "into", "at", "for", "to", "from", "anywhere", "throughout", "within", "when", "while", "as", "if", "so", "the", "your", "this", "that", "these", "those", "should", "must", "may", "can", "will", "is", "are", "be", "than", "more", "less", "once", "twice", "thrice"]
)


def _bare_list(ctx: Context, first: int, stop: int) -> tuple[list[str], int]:
    """Unquoted "a, b and c" from token ``first``; stops at the first non-list token."""
    words: list[str] = []
    end_char = ctx.tokens[first].idx if first < len(ctx.tokens) else len(ctx.text)
    i = first
    while i < stop:
        t = ctx.tokens[i]
        if t.text in (",", ":") or t.lower_ in ("and", "or", "nor", "etc"):
            i += 1
            continue
        if t.is_punct or t.lower_ in _LIST_STOP or t.like_num or not re.fullmatch(r"[\w'-]+", t.text):
            break
        if t.tag_ in ("JJR", "RBR") and i + 1 < stop and ctx.lowers[i + 1] == "than":
            break  # "any word longer than seven letters": a comparison, not a word named
        words.append(t.text)
        end_char = t.idx + len(t.text)
        i += 1
        if i < stop and ctx.tokens[i].text not in (",", ":") and ctx.lowers[i] not in ("and", "or", "nor"):
            break
    return words, end_char


_CLAUSE_LINKS = frozenset({"but", "yet", "so", "then", "while", "although", "though", "because", "unless", "except",
                           "instead", "rather", "whereas"})


def _payload(ctx: Context, head: int, *, allow_bare: bool) -> tuple[list[str], int, bool]:
    """(words, end char, quoted) named by the requirement headed at ``head``."""
    stop = _clause_end(ctx, head)
    head_tok = ctx.tokens[head]
    region_end = min(len(ctx.text), head_tok.idx + 600)
    words, end_char = _quoted_list(ctx, head_tok.idx + len(head_tok.text), region_end)
    if words:
        return words, end_char, True
    if not allow_bare:
        return [], head_tok.idx, False
    first = head + 1
    while first < stop and (ctx.lowers[first] in (":", "-", "the", "following", "like", "such", "as", "these",
                                                    "words", "keywords", "word", "keyword", "terms", "items")):
        first += 1
    if first >= stop or ctx.lowers[first] in ("or", "and", "nor", ",", "etc"):
        return [], head_tok.idx, False
    words, end_char = _bare_list(ctx, first, stop)
    # A stop word is named only when written capitalised ("the word Taylor, Swift, or Together") or listed
    # beside others ("the words also, however or moreover")
    if len(words) < 2:
        words = [w for w in words if not ctx.doc.vocab[w.lower()].is_stop or w[:1].isupper()]
    words = [w for w in words if w.lower() not in _CLAUSE_LINKS]
    return words, end_char, False
