"""Judges of the fifth held-out set (``bench/data/heldout5.jsonl``), written blind, apart from the product.

Nothing here imports ``reasoning``, ``inference``, ``app`` or ``store``, and
none of it was written from the product's extraction, verifiers, controllers
or readers: it was written from the fourth set's data, runner and judges and
the earlier judges' one-line readings alone. Each judge reads an answer as a
strict human reader of the instruction would, and says how in one line
(``JUDGES``). Where an instruction means the same as one of the earlier sets',
its judge is theirs (``bench.heldout_judge`` to ``bench.heldout4_judge``), and
so are their readings of a *word*, a *line*, a *keyword* and a count's bound.
The families no earlier set judges are listed in ``NEW_FAMILIES``. Readings
added here:

- a *sentence* ends at ``.``, ``!`` or ``?`` followed by white space, a
  closing quote or bracket, or the end of the text (so ``3.5`` and ``ok?!``
  do not cut), at ``。``, ``！`` or ``？`` anywhere, and at every line break;
  closing quotes and brackets right after the end mark belong to it;
- a sentence is a *question* when it ends (closing quotes and emphasis aside)
  with ``?`` / ``？``, an *exclamation* with ``!`` / ``！``, and a *statement*
  otherwise;
- a *paragraph* is a block of text between blank lines;
- an emoji *ends* a sentence when nothing but end marks, closing quotes and
  white space follows it (``Go team 💪!`` and ``Go team! 💪`` both do);
- a *list marker* opens a line (after indentation) and is followed by the
  item's text; a *standard* marker is ``-``, ``*``, ``+`` or ``•`` followed by
  a space, or a number followed by ``.``, ``)`` or ``、``;
- a *sub-bullet* is a line opening with the sub-item marker, indented when it is
  the same marker as the top items';
- quotation marks nest when each pair (``“”``, ``‘’``, ``「」``, ``『』``,
  ``«»``, straight ``"`` and ``'``) closes inside the pair around it; an
  apostrophe between letters (``don't``) or with no open single quote to
  close (``dogs'``) is no quotation mark;
- *vowels* are ``a e i o u`` (``y`` is not one); a *consonant* is any other
  Latin letter; a *consonant cluster* opens a word with two or more
  consonant sounds, an opening pair of ``ONE_SOUND_PAIRS`` counting as one
  (``str``, ``bl`` and ``thr`` are clusters, ``th`` and ``kn`` are not); a
  ``y`` after the first letter is a vowel there (``try``);
- a word is *in capitals* when it has letters and none is lower case; Han
  *script* is a character in U+3400..U+9FFF, Latin script an ASCII letter;
- *content words* are words outside ``STOP_WORDS`` of the fourth set.

An answer with nothing but white space fails every judge. ``judge(judge_id,
args, text)`` is the one entry point; an unknown id is a ``KeyError`` (a typo
in the set must not read as a failed answer).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from bench.heldout2_judge import JUDGES as SECOND_SET_JUDGES
from bench.heldout2_judge import answered, keyword_count, normal, strip_closers, unlead
from bench.heldout3_judge import JUDGES as THIRD_SET_JUDGES
from bench.heldout3_judge import lines
from bench.heldout4_judge import JUDGES as FOURTH_SET_JUDGES
from bench.heldout4_judge import STOP_WORDS, emoji_sentences
from bench.heldout_judge import JUDGES as FIRST_SET_JUDGES
from bench.heldout_judge import Judge, bounded, emoji_count, words

__all__ = [
    "JUDGES",
    "NEW_FAMILIES",
    "ONE_SOUND_PAIRS",
    "VOWELS",
    "judge",
    "paragraphs",
    "quote_depth",
    "sentence_kind",
    "split_sentences",
]

#: The letters a vowel rule counts (``y`` is not one of them).
VOWELS = frozenset("aeiou")
#: Opening letter pairs that sound as one consonant (a digraph or a silent letter), not a cluster.
ONE_SOUND_PAIRS = frozenset({"ch", "sh", "th", "wh", "ph", "gh", "kn", "wr", "gn"})

_END = ".!?。！？"
_CLOSERS = "\"'”’」』）)]】》*_"
_SENTENCE = re.compile(
    r"(?:[^.!?。！？]|[.!?](?=[^\s.!?。！？" + re.escape(_CLOSERS) + r"]))+"
    r"(?:[.!?。！？]+[" + re.escape(_CLOSERS) + r"]*|$)"
    r"|[.!?。！？]+[" + re.escape(_CLOSERS) + r"]*"
)
_HAS_CONTENT = re.compile(r"[^\W_]")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_STANDARD_MARKER = re.compile(r"^(?:[-*+•]\s|\d+[.)、．）])")
_HAN = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")
_NUMBERED = re.compile(r"^(?:[*_#]+\s*)?(?P<number>\d+(?:\.\d+)*)[.)、]?\s+\S")
_SECTION_ITEM = re.compile(r"^(?:[-*+•]\s|\d+[.)、．）]\s*)")
_QUOTE_PAIRS = {"“": "”", "‘": "’", "「": "」", "『": "』", "«": "»"}
_QUESTION = "?？"
_EXCLAMATION = "!！"
_KINDS = ("questions", "exclamations", "statements")


def split_sentences(text: str) -> list[str]:
    """The answer's sentences, stripped, in order (see the module doc); a line break ends one."""
    found: list[str] = []
    for line in text.splitlines():
        for match in _SENTENCE.finditer(line):
            piece = match.group().strip()
            if _HAS_CONTENT.search(piece):
                found.append(piece)
            elif piece and found:
                found[-1] += piece
    return found


def sentence_kind(sentence: str) -> str:
    """``questions``, ``exclamations`` or ``statements``: which kind the sentence's end mark makes it."""
    last = strip_closers(sentence)[-1:]
    if last and last in _QUESTION:
        return "questions"
    if last and last in _EXCLAMATION:
        return "exclamations"
    return "statements"


def paragraphs(text: str) -> list[str]:
    """The answer's paragraphs (blocks between blank lines holding some text), stripped."""
    return [p.strip() for p in _BLANK_LINE.split(text) if _HAS_CONTENT.search(p)]


def _at(items: list[str], k: int) -> str | None:
    """The k-th item (1-based; -1 the last, -2 the one before it), or None."""
    index = k - 1 if k > 0 else len(items) + k
    return items[index] if k != 0 and 0 <= index < len(items) else None


def quote_depth(text: str) -> int:
    """How deep quotation marks nest in ``text``; -1 when a pair is left open or closed out of order."""
    stack: list[str] = []
    deepest = 0
    padded = f" {text} "
    for i in range(1, len(padded) - 1):
        char, before, after = padded[i], padded[i - 1], padded[i + 1]
        if char in _QUOTE_PAIRS:
            stack.append(_QUOTE_PAIRS[char])
        elif char in "”」』»":
            if not stack or stack.pop() != char:
                return -1
        elif char in "'’":
            if before.isalnum() and after.isalnum():
                continue
            if stack and stack[-1] == char and not before.isspace():
                stack.pop()
            elif char == "'" and not before.isalnum() and not after.isspace():
                stack.append("'")
        elif char == '"':
            if stack and stack[-1] == '"':
                stack.pop()
            else:
                stack.append('"')
        deepest = max(deepest, len(stack))
    return -1 if stack else deepest


def _sentence_types(args: Mapping[str, Any], text: str) -> bool:
    kinds = [sentence_kind(s) for s in split_sentences(text)]
    return bool(kinds) and all(
        kinds.count(kind) == int(args[kind]) for kind in _KINDS if kind in args
    )


def _sentence_type_balance(args: Mapping[str, Any], text: str) -> bool:
    kinds = [sentence_kind(s) for s in split_sentences(text)]
    counts = {kinds.count(str(kind)) for kind in args["kinds"]}
    return len(counts) == 1 and min(counts) >= int(args.get("min", 1))


def _sentence_type_pattern(args: Mapping[str, Any], text: str) -> bool:
    kinds = [sentence_kind(s) for s in split_sentences(text)]
    pattern = [str(kind) for kind in args["pattern"]]
    return len(kinds) >= len(pattern) and all(
        kind == want for kind, want in zip(kinds, itertools.cycle(pattern), strict=False)
    )


def _emoji_sentence_end(args: Mapping[str, Any], text: str) -> bool:
    found = emoji_sentences(text)

    def ends_with_emoji(sentence: str) -> bool:
        tail = sentence.rstrip(_END + _CLOSERS + " \t\ufe0f\u200d")
        tail = re.sub(r"[\U0001F3FB-\U0001F3FF]+$", "", tail)
        return bool(tail) and emoji_count(tail[-1]) == 1

    return bool(found) and all(ends_with_emoji(s) for s in found)


def _paragraph_keyword(args: Mapping[str, Any], text: str) -> bool:
    paragraph = _at(paragraphs(text), int(args["k"]))
    return paragraph is not None and keyword_count(str(args["keyword"]), paragraph) >= 1


def _paragraph_sentences(args: Mapping[str, Any], text: str) -> bool:
    paragraph = _at(paragraphs(text), int(args["k"]))
    return paragraph is not None and bounded(len(split_sentences(paragraph)), args)


def _paragraph_sentence_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = paragraphs(text)
    first, second = _at(found, int(args["first"])), _at(found, int(args["second"]))
    if first is None or second is None:
        return False
    base = len(split_sentences(first))
    return base > 0 and len(split_sentences(second)) == int(args["ratio"]) * base


def _plain(line: str) -> str:
    return normal(line.replace("**", "").replace("__", "").strip("*_ \t"))


def _line_is(args: Mapping[str, Any], text: str) -> bool:
    line = _at(lines(text), int(args["k"]))
    return line is not None and _plain(line) == normal(str(args["text"]))


def _list_marker(args: Mapping[str, Any], text: str) -> bool:
    marker = str(args["marker"])
    items = 0
    for line in lines(text):
        if line.startswith(marker):
            if not _HAS_CONTENT.search(line[len(marker) :]):
                return False
            items += 1
        elif _STANDARD_MARKER.match(line):
            return False
    return items > 0 and bounded(items, args)


def _sub_bullets(args: Mapping[str, Any], text: str) -> bool:
    top, sub = str(args["top"]), str(args["sub"])
    children: list[int] = []
    for raw in text.splitlines():
        line = raw.strip()
        indented = raw[: len(raw) - len(raw.lstrip())] != ""
        if line.startswith(sub) and (sub != top or indented):
            if not children or not _HAS_CONTENT.search(line[len(sub) :]):
                return False
            children[-1] += 1
        elif line.startswith(top) and not indented:
            if not _HAS_CONTENT.search(line[len(top) :]):
                return False
            children.append(0)
    if not children or min(children) < int(args["min"]):
        return False
    return "relation" not in args or bounded(len(children), args)


def _nested_numbering(args: Mapping[str, Any], text: str) -> bool:
    numbers = [
        match.group("number")
        for match in (_NUMBERED.match(line) for line in lines(text))
        if match is not None
    ]
    tops = [n for n in numbers if "." not in n]
    if not tops or tops != [str(i) for i in range(1, len(tops) + 1)]:
        return False
    current, subs = "", 0
    want = int(args["min"])
    for number in numbers:
        head, _, tail = number.partition(".")
        if not tail:
            if current and subs < want:
                return False
            current, subs = head, 0
        elif head != current or tail != str(subs + 1):
            return False
        else:
            subs += 1
    return subs >= want and ("relation" not in args or bounded(len(tops), args))


def _quote_depth(args: Mapping[str, Any], text: str) -> bool:
    return quote_depth(text) >= int(args["n"])


def _keyword_ratio(args: Mapping[str, Any], text: str) -> bool:
    more, less = keyword_count(str(args["more"]), text), keyword_count(str(args["less"]), text)
    return less > 0 and more == int(args["ratio"]) * less


def _section_items(text: str, label: str) -> int | None:
    """List items under the line that names ``label``, up to the next non-item line; None if no such line."""
    count: int | None = None
    for line in lines(text):
        if _SECTION_ITEM.match(line):
            if count is not None:
                count += 1
            continue
        if count is not None:
            return count
        heading = unlead(line).replace("*", "").strip(" :：")
        if normal(heading) == normal(label):
            count = 0
    return count


def _section_items_ratio(args: Mapping[str, Any], text: str) -> bool:
    more, less = _section_items(text, str(args["more"])), _section_items(text, str(args["less"]))
    return more is not None and less is not None and less > 0 and more == int(args["ratio"]) * less


def _nth_word_upper(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    n = int(args["n"])
    if len(found) < n:
        return False
    for position, word in enumerate(found, start=1):
        letters = [c for c in word if c.isalpha()]
        capitals = bool(letters) and not any(c.islower() for c in letters)
        if position % n == 0 and not capitals:
            return False
        if position % n and capitals and len(letters) >= 2:
            return False
    return True


def _script(sentence: str) -> str:
    han, latin = bool(_HAN.search(sentence)), bool(_LATIN.search(sentence))
    return "han" if han and not latin else "latin" if latin and not han else "mixed"


def _alternating_script(args: Mapping[str, Any], text: str) -> bool:
    found = split_sentences(text)
    first = str(args["first"])
    pair = (first, "latin" if first == "han" else "han")
    return len(found) >= 2 and all(_script(s) == pair[i % 2] for i, s in enumerate(found))


def _sentence_mixed_script(args: Mapping[str, Any], text: str) -> bool:
    found = split_sentences(text)
    return bool(found) and all(_script(s) == "mixed" for s in found)


def _word_vowel_kinds(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    return bool(found) and all(len(VOWELS & set(w.casefold())) <= int(args["max"]) for w in found)


def _is_consonant(char: str) -> bool:
    return "a" <= char <= "z" and char not in VOWELS


def _initials_class(args: Mapping[str, Any], text: str) -> bool:
    units = split_sentences(text) if args["scope"] == "sentences" else words(text)
    firsts = [words(u)[0][0].casefold() if words(u) else "" for u in units]
    vowel = args["class"] == "vowel"
    return bool(firsts) and all((c in VOWELS) if vowel else _is_consonant(c) for c in firsts)


def _opens_with_cluster(word: str) -> bool:
    folded = word.casefold()
    run = 0
    while run < len(folded) and _is_consonant(folded[run]) and not (run and folded[run] == "y"):
        run += 1
    sounds = run - (1 if run >= 2 and folded[:2] in ONE_SOUND_PAIRS else 0)
    return sounds >= 2


def _consonant_clusters(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len({w.casefold() for w in words(text) if _opens_with_cluster(w)}), args)


def _line_han_count(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    return bool(found) and all(len(_HAN.findall(line)) == int(args["n"]) for line in found)


def _shared_words(args: Mapping[str, Any], text: str) -> bool:
    found = split_sentences(text)
    if len(found) < 2:
        return False

    def content(sentence: str) -> set[str]:
        return {w.casefold() for w in words(sentence)} - STOP_WORDS

    return len(content(found[0]) & content(found[-1])) >= int(args["min"])


#: Judge ids of the families no earlier held-out set judges (a position, a balance, a
#: custom marker, a nesting or a letter rule the earlier judges do not read).
NEW_FAMILIES = frozenset(
    {
        "sentence_types",
        "sentence_type_balance",
        "sentence_type_pattern",
        "emoji_sentence_end",
        "paragraph_keyword",
        "paragraph_sentences",
        "paragraph_sentence_ratio",
        "line_is",
        "list_marker",
        "sub_bullets",
        "nested_numbering",
        "quote_depth",
        "keyword_ratio",
        "section_items_ratio",
        "nth_word_upper",
        "alternating_script",
        "sentence_mixed_script",
        "word_vowel_kinds",
        "initials_class",
        "consonant_clusters",
        "shared_words",
    }
)

#: judge id -> (function, how a strict reader decides it), before the empty-answer rule.
_READINGS: dict[str, tuple[Judge, str]] = {
    **{
        judge_id: FIRST_SET_JUDGES[judge_id]
        for judge_id in ("word_count", "sentence_end", "letter_absent", "spans", "numbered_items")
    },
    **{
        judge_id: SECOND_SET_JUDGES[judge_id]
        for judge_id in (
            "sentence_count",
            "paragraph_count",
            "lines",
            "lowercase",
            "opens_with",
            "paragraph_end",
            "sentence_end_word",
            "line_end",
        )
    },
    **{
        judge_id: THIRD_SET_JUDGES[judge_id]
        for judge_id in (
            "forbidden_words",
            "acrostic",
            "numbered_sequence",
            "sentence_k_end",
            "response_language",
        )
    },
    **{judge_id: FOURTH_SET_JUDGES[judge_id] for judge_id in ("title_case",)},
    "sentence_types": (
        _sentence_types,
        "each of `questions`, `exclamations`, `statements` given is exactly that kind's number of sentences",
    ),
    "sentence_type_balance": (
        _sentence_type_balance,
        "the sentence kinds of `kinds` occur equally often, each at least `min` (default 1) times",
    ),
    "sentence_type_pattern": (
        _sentence_type_pattern,
        "the sentences' kinds follow `pattern`, repeated from the first sentence, at least once through",
    ),
    "emoji_sentence_end": (
        _emoji_sentence_end,
        "there are sentences and each ends with an emoji (end marks and closing quotes after it aside)",
    ),
    "paragraph_keyword": (
        _paragraph_keyword,
        "the k-th paragraph (-1 the last, -2 the one before) holds `keyword`",
    ),
    "paragraph_sentences": (
        _paragraph_sentences,
        "the k-th paragraph (-1 the last) has a number of sentences within the bound",
    ),
    "paragraph_sentence_ratio": (
        _paragraph_sentence_ratio,
        "paragraph `second` has exactly `ratio` times the sentences of paragraph `first` (one or more)",
    ),
    "line_is": (
        _line_is,
        "the k-th non-empty line (-1 the last, -2 the one before) is `text`, emphasis and case aside",
    ),
    "list_marker": (
        _list_marker,
        "lines opening with `marker` (each with text) are within the bound, and no line opens with a standard marker",
    ),
    "sub_bullets": (
        _sub_bullets,
        "`top` items (within the bound, if one is given) each followed by at least `min` `sub` items",
    ),
    "nested_numbering": (
        _nested_numbering,
        "items numbered 1, 2, ... (within the bound, if given), each followed by at least `min` items n.1, n.2, ...",
    ),
    "quote_depth": (
        _quote_depth,
        "quotation marks all pair up and some pair lies inside `n` - 1 others",
    ),
    "keyword_ratio": (
        _keyword_ratio,
        "`less` occurs, and `more` occurs exactly `ratio` times as often as it",
    ),
    "section_items_ratio": (
        _section_items_ratio,
        "the list under the line `less` has items, the list under `more` exactly `ratio` times as many",
    ),
    "nth_word_upper": (
        _nth_word_upper,
        "every n-th word is in capitals and no other word of two or more letters is",
    ),
    "alternating_script": (
        _alternating_script,
        "two or more sentences, alternately in Han and Latin script alone, the first in `first`",
    ),
    "sentence_mixed_script": (
        _sentence_mixed_script,
        "there are sentences and each holds both Han characters and Latin letters",
    ),
    "word_vowel_kinds": (
        _word_vowel_kinds,
        "there are words and none uses more than `max` different vowels",
    ),
    "initials_class": (
        _initials_class,
        "every one of the `scope` (sentences or words) begins with a letter of `class` (vowel or consonant)",
    ),
    "consonant_clusters": (
        _consonant_clusters,
        "different words opening with a consonant cluster (see the module doc) are within the bound",
    ),
    "line_han_count": (
        _line_han_count,
        "there are lines and each holds exactly `n` Han characters (punctuation aside)",
    ),
    "shared_words": (
        _shared_words,
        "two or more sentences, the first and the last sharing at least `min` content words (case folded)",
    ),
}


#: judge id -> (function, how a strict reader decides it); an empty answer fails each.
JUDGES: dict[str, tuple[Judge, str]] = {
    judge_id: (answered(function), reading) for judge_id, (function, reading) in _READINGS.items()
}


def judge(judge_id: str, args: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` meets the instruction ``judge_id`` with ``args``."""
    function, _ = JUDGES[judge_id]
    return function(args, text)
