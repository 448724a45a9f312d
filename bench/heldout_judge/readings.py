"""What the verifiers read an answer as: the readings every held-out verifier shares.

Each reading is the strict one a careful human reader of an instruction takes:

- a *word* (:func:`words`) is a run of letters or digits, with inner
  apostrophes or hyphens (``don't``, ``well-known`` are one word);
- a *sentence* (:func:`sentences`) is a piece of a line that ends at ``.``
  ``!`` ``?`` ``。`` ``！`` ``？`` (or at the line's end) and holds a letter,
  digit or Han character; list items and headings are sentences too. The
  fifth set's reading (:func:`split_sentences`) also keeps ``3.5`` and ``ok?!``
  whole: ``.`` ``!`` ``?`` end a sentence only before white space, a closing
  quote or bracket, or the end of the line; closing quotes and brackets right
  after the end mark belong to it. A sentence is a *question*, an
  *exclamation* or a *statement* by its end mark (:func:`sentence_kind`);
  :func:`emoji_sentences` gives an emoji standing right after a sentence's
  end mark to that sentence (``Done! 🎉 Next.`` is two sentences);
- a *paragraph* (:func:`paragraphs`) is a block of lines separated from the
  next by a blank line, holding a letter, digit or Han character
  (:func:`blocks` is the fifth set's: blank lines of spaces and tabs only);
- a *line* (:func:`lines`) is a non-empty line, stripped; its *body*
  (:func:`line_body`) is the line without its leading list marker, quotes and
  emphasis or heading marks (:func:`unlead`);
- a *list item* (:func:`list_items`) is a line that starts, after its
  indentation, with a bullet (``-`` ``*`` ``+`` ``•`` ... then a space) or a
  number, Latin letter or Chinese numeral followed by ``.`` + space, ``)``,
  ``、`` or ``）``; a *bullet* is an item of the first kind only;
- a text *begins with* a phrase (:func:`begins`) when, after leading list
  markers, quotes and emphasis or heading marks, it starts with the phrase
  (case and runs of white space aside) and the phrase does not stop inside a
  word; it *ends with* one (:func:`ends`) likewise, closing quotes and
  emphasis aside, a phrase ending in a letter, digit or Han character allowing
  one full stop or exclamation mark after it;
- a *keyword* holding Han characters occurs as a substring. In Latin letters
  it occurs, case folded, either where no letter, digit or Han character
  adjoins it (:func:`keyword_count`, the second set's) or where no letter or
  digit other than a Han character does (:func:`mentions`, the third set's
  and later: ``UBO`` occurs in ``识别UBO，``, not in ``UBOs``);
- a text *wrapped* in a pair (:func:`wrapped_in`) starts with the pair's left
  and ends with its right with something inside, and where left and right
  differ the left one is closed by the last character, not before
  (``“a”是b“c”`` is not wrapped); a list item or a line so wrapped may carry
  emphasis marks around it and one closing mark after the right delimiter;
- a count's bound (:func:`bounded`) is ``{"relation", "n"}`` (``exactly``,
  ``at least``, ``at most``, ``less than``, ``more than``) or ``{"lo", "hi"}``
  (both inclusive);
- *stop words*, *conjunctions*, *personal pronouns* and the *minor words* a
  title may leave in lower case are the closed English lists below, matched
  as whole words, case folded (a conjunction list holds only words that are
  conjunctions in nearly every use: ``for``, ``since``, ``after`` are not in it);
- an answer with nothing but white space (a refused run, a
  ``needs_confirmation`` answer) fails every instruction of a set that says so
  (:func:`answered`), the bounds "at most" and "less than" included: it did
  not do the task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "CONJUNCTIONS", "EMPHASIS", "END_MARKS", "HAN", "HAN_SCRIPT", "HAS_CONTENT", "LETTER", "MINOR_WORDS",
    "PRONOUNS", "PUNCT", "SENTENCE_CLOSERS", "SENTENCE_MARKS", "STOP_WORDS", "Judge", "answered", "at",
    "begins", "blocks", "bounded", "delimiter_pairs", "emoji_count", "emoji_sentences", "ends", "first_word",
    "keyword_count", "line_body", "lines", "list_items", "mention_count", "mentions", "normal", "paragraphs",
    "pick", "sentence_kind", "sentences", "split_sentences", "spread", "strip_closers",
    "strip_quotes_and_brackets", "unlead", "words", "wrapped_in",
]

#: A verifier: (the instruction's args, the answer) -> whether the answer meets it.
Judge = Callable[[Mapping[str, Any], str], bool]

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
#: A letter, digit or Han character: a piece holding one has text.
HAS_CONTENT = re.compile(r"[^\W_]")
#: A letter of any script (digits and underscores aside).
LETTER = re.compile(r"[^\W\d_]")
#: Anything but a letter or digit: spaces and punctuation.
PUNCT = re.compile(r"[\W_]")
_EMOJI_RANGES = (
    (0x1F000, 0x1F02F),
    (0x1F0A0, 0x1F0FF),
    (0x1F170, 0x1F251),
    (0x1F300, 0x1F5FF),
    (0x1F600, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F7E0, 0x1F7FF),
    (0x1F900, 0x1F9FF),
    (0x1FA70, 0x1FAFF),
    (0x2600, 0x27BF),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3297),
    (0x3299, 0x3299),
    (0x2934, 0x2935),
    (0x2194, 0x21AA),
)
_SKIN_TONES = (0x1F3FB, 0x1F3FF)
_ZWJ = "\u200d"
_CLOSERS_OR_BRACKETS = "\"'”’»)]}*_`"
_BLANK_LINE = re.compile(r"\n[ \t\u3000]*\n")
#: A Han character (the unified and compatibility blocks; the fifth set reads ``HAN_SCRIPT``).
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD_CHAR = re.compile(r"[^\W_]")
_BULLET = r"[-*+•·▪●◦‣]\s+"
_ORDINAL = r"(?:\d+|[A-Za-z]|[一二三四五六七八九十]+)(?:\.\s+|[)、）]\s*)|[（(]\d+[）)]\s*"
_ANY_ITEM = re.compile(rf"^[ \t]*(?:{_BULLET}|{_ORDINAL})(?P<body>\S.*)$")
_BULLET_ITEM = re.compile(rf"^[ \t]*{_BULLET}(?P<body>\S.*)$")
_LEAD = re.compile(rf"^(?:\s+|{_BULLET}|{_ORDINAL}|#+\s*|>\s*|[*_`\"'“‘「『])*")
_CLOSERS = "\"'”’»」』*_`"
_SENTENCE_STOPS = ".!。！"
#: Markdown emphasis and code marks.
EMPHASIS = "*_`"
_CLOSING_MARK = ".,;!。，；！"
#: The marks a statement or an exclamation ends with.
SENTENCE_MARKS = ".!。！"
#: Every sentence-ending mark.
END_MARKS = ".!?。！？"
#: Closing quotes, brackets and emphasis that belong to the sentence they follow (the fifth set).
SENTENCE_CLOSERS = "\"'”’」』）)]】》*_"
#: Han script as the fifth set reads it: U+3400..U+9FFF.
HAN_SCRIPT = re.compile(r"[\u3400-\u9fff]")
_SENTENCE = re.compile(
    r"(?:[^.!?。！？]|[.!?](?=[^\s.!?。！？" + re.escape(SENTENCE_CLOSERS) + r"]))+"
    r"(?:[.!?。！？]+[" + re.escape(SENTENCE_CLOSERS) + r"]*|$)"
    r"|[.!?。！？]+[" + re.escape(SENTENCE_CLOSERS) + r"]*"
)
_BLANK_LINE_ASCII = re.compile(r"\n[ \t]*\n")
_QUESTION = "?？"
_EXCLAMATION = "!！"


def words(text: str) -> list[str]:
    """The answer's words, in order (see the module doc)."""
    return _WORD.findall(text)


def sentences(text: str) -> list[str]:
    """The answer's sentences, stripped, in order (see the module doc)."""
    found: list[str] = []
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            if HAS_CONTENT.search(piece):
                found.append(piece)
    return found


def _is_emoji(char: str) -> bool:
    point = ord(char)
    if _SKIN_TONES[0] <= point <= _SKIN_TONES[1]:
        return False
    return any(lo <= point <= hi for lo, hi in _EMOJI_RANGES)


def emoji_count(text: str) -> int:
    """Emoji pictures: a ZWJ sequence or an emoji with its skin tone is one picture."""
    count = 0
    previous = ""
    for char in text:
        if _is_emoji(char) and previous != _ZWJ:
            count += 1
        if char not in "\ufe0f":
            previous = char
    return count


def bounded(value: int, args: Mapping[str, Any]) -> bool:
    """``value`` within the bound of ``args`` (``relation`` + ``n``, or ``lo`` + ``hi``)."""
    if "lo" in args:
        return int(args["lo"]) <= value <= int(args["hi"])
    n = int(args["n"])
    relation = args["relation"]
    if relation == "exactly":
        return value == n
    if relation == "at least":
        return value >= n
    if relation == "at most":
        return value <= n
    if relation == "less than":
        return value < n
    if relation == "more than":
        return value > n
    raise ValueError(f"unknown relation {relation!r}")


def strip_quotes_and_brackets(text: str) -> str:
    return text.rstrip().rstrip(_CLOSERS_OR_BRACKETS).rstrip()


def delimiter_pairs(args: Mapping[str, Any]) -> Sequence[Sequence[str]]:
    pairs: Sequence[Sequence[str]] = args["pairs"]
    return pairs


def paragraphs(text: str) -> list[str]:
    """The answer's paragraphs, stripped, in order (see the module doc)."""
    return [
        block.strip() for block in _BLANK_LINE.split(text.strip()) if HAS_CONTENT.search(block)
    ]


def list_items(text: str, *, bullets_only: bool = False) -> list[str]:
    """The text of each list item (its marker removed), in order (see the module doc)."""
    pattern = _BULLET_ITEM if bullets_only else _ANY_ITEM
    found = []
    for line in text.splitlines():
        match = pattern.match(line)
        if match is not None:
            found.append(match.group("body").strip())
    return found


def normal(text: str) -> str:
    """``text`` with runs of white space made one space, ends stripped, case folded."""
    return " ".join(text.split()).casefold()


def _stops_inside_word(before: str, after: str) -> bool:
    """Whether a phrase ending in ``before`` is cut from a Latin word continuing with ``after``."""
    if not before or not after:
        return False
    latin_or_digit = _WORD_CHAR.match(before) and not HAN.match(before)
    return bool(latin_or_digit and _WORD_CHAR.match(after) and not HAN.match(after))


def unlead(text: str) -> str:
    """``text`` without its leading white space, list markers, quotes and emphasis or heading marks."""
    return _LEAD.sub("", text)


def begins(text: str, phrase: str) -> bool:
    """Whether ``text`` begins with ``phrase`` (see the module doc)."""
    body = normal(unlead(text))
    want = normal(phrase)
    if not want or not body.startswith(want):
        return False
    return not _stops_inside_word(want[-1], body[len(want) : len(want) + 1])


def strip_closers(text: str) -> str:
    """``text`` without its trailing white space, closing quotes and emphasis marks."""
    return text.rstrip().rstrip(_CLOSERS).rstrip()


def ends(text: str, phrase: str) -> bool:
    want = normal(phrase)
    if not want:
        return False
    body = normal(strip_closers(text))
    candidates = [body]
    if _WORD_CHAR.match(want[-1]) and body[-1:] in _SENTENCE_STOPS:
        candidates.append(normal(strip_closers(body[:-1])))
    for candidate in candidates:
        if candidate.endswith(want):
            before = candidate[-len(want) - 1 : -len(want)] if len(candidate) > len(want) else ""
            if not _stops_inside_word(want[0], before):
                return True
    return False


def keyword_count(keyword: str, text: str) -> int:
    """Occurrences of ``keyword`` in ``text``: whole words, case folded, or Han substrings."""
    if HAN.search(keyword):
        return text.count(keyword)
    pattern = rf"(?<![^\W_]){re.escape(keyword)}(?![^\W_])"
    return len(re.findall(pattern, text, flags=re.IGNORECASE))


def pick(items: Sequence[str], k: Any) -> list[str]:
    """``items`` when ``k`` is ``"every"`` (none: empty), else the k-th (1-based, -1 the last) or none."""
    if k == "every":
        return list(items)
    index = int(k) - 1 if int(k) > 0 else len(items) + int(k)
    return [items[index]] if 0 <= index < len(items) else []


def spread(counts: Sequence[int]) -> int:
    return max(counts) - min(counts)


def answered(function: Judge) -> Judge:
    """``function``, failing an answer that is only white space."""

    def checked(args: Mapping[str, Any], text: str) -> bool:
        return bool(text.strip()) and function(args, text)

    return checked


def lines(text: str) -> list[str]:
    """The answer's non-empty lines, stripped, in order."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def line_body(line: str) -> str:
    return unlead(line).strip()


def first_word(text: str) -> str:
    found = words(unlead(text))
    return found[0].casefold() if found else ""


def mentions(keyword: str, text: str) -> list[re.Match[str]]:
    """The occurrences of ``keyword`` in ``text``, case folded (see the module doc)."""
    found = re.finditer(re.escape(keyword), text, flags=re.IGNORECASE)
    if HAN.search(keyword):
        return list(found)
    return [
        m
        for m in found
        if not _joins(text[m.start() - 1 : m.start()]) and not _joins(text[m.end() : m.end() + 1])
    ]


def _joins(char: str) -> bool:
    """Whether ``char`` beside a Latin keyword makes it part of a longer word."""
    return bool(char) and bool(HAS_CONTENT.match(char)) and not HAN.match(char)


def mention_count(keyword: str, text: str) -> int:
    return len(mentions(keyword, text))


def wrapped_in(text: str, pairs: Sequence[Sequence[str]], *, piece: bool) -> bool:
    """Whether ``text`` is wrapped in one of ``pairs`` (see the module doc).

    A ``piece`` (a list item, a line) may also carry emphasis marks around the
    wrapped text and one closing mark after it.
    """
    body = text.strip()
    candidates = [body]
    if piece:
        candidates.append(body.strip(EMPHASIS))
        if body[-1:] in _CLOSING_MARK:
            candidates.append(body[:-1].rstrip().strip(EMPHASIS))
    for candidate in candidates:
        for left, right in pairs:
            inner = candidate[len(left) : len(candidate) - len(right)]
            if (
                len(candidate) > len(left) + len(right)
                and candidate.startswith(left)
                and candidate.endswith(right)
                and HAS_CONTENT.search(inner)
                and (left == right or _closes_at_end(candidate, left, right))
            ):
                return True
    return False


def _closes_at_end(text: str, left: str, right: str) -> bool:
    """Whether the delimiter opening ``text`` is closed by its last character, not before."""
    depth = 0
    index = 0
    while index < len(text):
        if text.startswith(left, index):
            depth += 1
            index += len(left)
        elif text.startswith(right, index):
            depth -= 1
            index += len(right)
            if depth == 0:
                return index == len(text)
        else:
            index += 1
    return False


def _vocabulary(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


def emoji_sentences(text: str) -> list[str]:
    """The answer's sentences, each with the emoji standing right after its end mark."""
    found: list[str] = []
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            if not piece:
                continue
            head = ""
            while piece and (emoji_count(piece[0]) or piece[0] in "\ufe0f\u200d" or piece[0].isspace()):
                head, piece = head + piece[0], piece[1:]
            if head and found:
                found[-1] = f"{found[-1]} {head.strip()}"
            elif head:
                piece = head + piece
            if HAS_CONTENT.search(piece):
                found.append(piece)
            elif piece and found:
                found[-1] += piece
    return found


def split_sentences(text: str) -> list[str]:
    """The answer's sentences, stripped, in order (see the module doc); a line break ends one."""
    found: list[str] = []
    for line in text.splitlines():
        for match in _SENTENCE.finditer(line):
            piece = match.group().strip()
            if HAS_CONTENT.search(piece):
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


def blocks(text: str) -> list[str]:
    """The answer's paragraphs (blocks between blank lines holding some text), stripped."""
    return [p.strip() for p in _BLANK_LINE_ASCII.split(text) if HAS_CONTENT.search(p)]


def at(items: list[str], k: int) -> str | None:
    """The k-th item (1-based; -1 the last, -2 the one before it), or None."""
    index = k - 1 if k > 0 else len(items) + k
    return items[index] if k != 0 and 0 <= index < len(items) else None


#: English function words a "stop word" share counts (whole words, case folded).
STOP_WORDS = _vocabulary(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves"""
)
#: Words that are conjunctions in nearly every use.
CONJUNCTIONS = _vocabulary(
    "and but or nor yet so because although though unless whereas while if whether until"
)
#: English personal, possessive and reflexive pronouns.
PRONOUNS = _vocabulary(
    """i me my mine myself you your yours yourself yourselves he him his himself she her
    hers herself it its itself we us our ours ourselves they them their theirs
    themselves"""
)
#: Words a title-case line may leave in lower case (not as its first or last word).
MINOR_WORDS = _vocabulary(
    "a an the and but or nor for so yet of to in on at by up as per via with from into over"
)
