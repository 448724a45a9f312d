"""Rules said of every word (or of consecutive words) in English, read onto word counts.

Each rule is one generic ``count`` of the items that break it, at most 0
(or, for palindromes, a count of the items that have the shape):

- an alphabetical run ("each word starts with the next letter of the
  alphabet", "the words begin with consecutive letters of the alphabet"):
  words off the alphabet after the word before (``same_as_previous`` =
  ``alphabet``);
- a class of word lengths ("every word must have a prime number of letters",
  "only words of an even length"): words of another length
  (``length_class``, ``negated``);
- a letter every word holds ("each word has to include the letter r"):
  words without it (``contains``, ``negated``);
- letters confined to a set ("the only vowel you may use is e", "use only
  the vowels a and o", "only letters from the set a, b, c"): characters of
  the other vowels / letters (``characters``, ``chars``); a denied set ("do
  not use the vowels a or i") those letters;
- no white space ("do not use any spaces or line breaks", "no whitespace at
  all"): those characters;
- each word on a line of its own: one word per line, exactly;
- how often a word may recur ("no word may be used more than twice", "each
  word can appear at most once", "never repeat a word"): uses past that
  (``occurrence``);
- title case ("in title case", "capitalize every major word"): words that
  are neither stop words nor capitalised (``stop_words`` False, ``case``
  lower); a whole-answer capitals reading of the same words is replaced;
- a named letter opening every sentence / line / paragraph ("every sentence
  must start with the letter T"): the pieces that do not start with it
  (``starts_with``, ``negated``; a position's one-letter text would be the
  piece's first word);
- palindromes ("at least 3 palindromes of at least 5 letters"): a count of
  palindromic words, the letters bound their ``min_length``.

Readings these sentences used to get (a forbidden word "breaks" from "line
breaks", a letter count from "palindromes of 5 letters", the answer's
language from "every fifth word must be in French", the answer in capitals
from "capitalize every major word") are dropped from their span: a
requirement on every n-th word's language has no kind and is left to the
unrecognised report.
"""

from __future__ import annotations

import re
import string

from spacy.tokens import Span as DocSpan

from reasoning.constraints.extract.en.context import Context, Quantity
from reasoning.constraints.extract.en.phrases import _quantity_left
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_UNIVERSAL
from reasoning.constraints.form import Count, Filter, Position, Unit, canonical
from reasoning.constraints.form.model import Form
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ordinal, parse_number

__all__ = ["VOWELS", "both_cases", "refine_word_rules_english"]

_WORD = frozenset({"word", "term"})
_START = frozenset({"start", "begin", "open", "initial", "commence", "lead"})
_NEXT = frozenset({"next", "consecutive", "successive", "following", "follow", "subsequent", "sequential", "succeed",
                   "after"})
_NEG = frozenset({"no", "not", "n't", "never", "without", "avoid", "none", "nor", "refrain", "exclude", "omit"})
#: The vowels a rule on "vowels" names (the Latin alphabet's).
VOWELS = "aeiou"
_PIECES = {"sentence": Unit.SENTENCES, "line": Unit.LINES, "paragraph": Unit.PARAGRAPHS}
_LANGUAGES = frozenset({"french", "spanish", "german", "italian", "portuguese", "chinese", "japanese", "english",
                        "russian", "korean", "arabic", "dutch", "latin", "hindi", "turkish", "greek", "swedish"})


def _span(sent: DocSpan) -> tuple[int, int]:
    return sent.start_char, sent.end_char


def _misread(f: Found, drop: tuple[Kind, ...], units: frozenset[str]) -> bool:
    """Whether ``f`` is one of the readings a rule replaces: of a ``drop`` kind, or a plain count of ``units``."""
    if f.kind in drop:
        return True
    return f.kind is Kind.COUNT and str(f.params.get("unit")) in units


_WORDISH = frozenset({"words", "letters", "characters"})
_LETTERS = frozenset({"letters", "characters"})
_SPACE_WORDS = frozenset({"space", "whitespace", "break", "line break", "newline", "blank"})


def _add(ctx: Context, form: Form, start: int, end: int, *, drop: tuple[Kind, ...] = (),
         units: frozenset[str] = _WORDISH) -> None:
    """Add ``form`` over ``start..end``, dropping the readings it replaces there (see :func:`_misread`)."""
    ctx.found = [f for f in ctx.found if not (_misread(f, drop, units) and overlaps(f, start, end))]
    kind, params = canonical(form)
    if not any(f.kind == kind and f.params == params for f in ctx.found):
        ctx.found.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))


def _lemmas(sent: DocSpan) -> list[str]:
    return [t.lemma_.lower() for t in sent]


def _lowers(sent: DocSpan) -> list[str]:
    return [t.lower_ for t in sent]


def _said_of_words(lemmas: list[str]) -> bool:
    return any(w in _WORD for w in lemmas)


def _every_word(sent: DocSpan) -> bool:
    """A rule said of every word: a universal determiner before "word", or words as the subject."""
    lowers = _lowers(sent)
    for i, t in enumerate(sent):
        if t.lemma_.lower() in _WORD:
            if any(w in EN_UNIVERSAL for w in lowers[max(0, i - 3) : i]):
                return True
            if t.dep_ in ("nsubj", "nsubjpass") and t.tag_ == "NNS":
                return True
    return False


_CONNECTORS = frozenset({",", "and", "or", "the", "letter", "letters", "vowel", "vowels", "'", '"', "‘", "’", "“",
                         "”", ":", "set", "of", "from", "{", "}", "(", ")", "[", "]", "only", "is", "are"})


def _bare(text: str) -> str:
    """A token without quotes and a closing mark ("'e'", "T." are e, T)."""
    return text.strip("'\"‘’“”").rstrip(".,;:!?").strip("'\"‘’“”")


def _letters_named(sent: DocSpan, after: int, lead: int = 1) -> list[str]:
    """Single letters listed from token ``after`` on ("a, e and o", "'e'", "the letter r"), the first
    of them within ``lead`` other tokens ("the only vowel you may use is e": 4)."""
    out: list[str] = []
    skipped = 0
    for t in sent[after:]:
        raw = _bare(t.text)
        if len(raw) == 1 and raw.isalpha() and raw.isascii() and not (raw == "I" and t.pos_ == "PRON" and out):
            out.append(raw.lower())
        elif t.lower_ in _CONNECTORS:
            continue
        elif out or skipped >= lead:
            break
        else:
            skipped += 1
    return out


def _alphabet(ctx: Context, sent: DocSpan) -> None:
    lemmas = _lemmas(sent)
    lowered = sent.text.lower()
    chained = "letter" in lemmas and "same" not in lemmas and re.search(
        r"\b(?:previous|preceding|prior|last)\s+word|\bword\s+(?:before|preceding)", lowered) is not None
    if not ({"alphabet", "alphabetical", "alphabetically"} & set(lemmas) or chained) or not _said_of_words(lemmas):
        return
    opens = bool(_START & set(lemmas)) or "first letter" in lowered or "initial" in lowered
    ordered = bool(_NEXT & set(lemmas)) or "and so on" in lowered or "in turn" in lowered or "in order" in lowered \
        or "in sequence" in lowered
    if not (opens and ordered):
        return
    start, end = _span(sent)
    drop = (Kind.LETTER_FREQUENCY, Kind.POSITION) + (() if _quoted(sent) else (Kind.KEYWORDS_PRESENT,))
    _add(ctx, Count(unit=Unit.WORDS, filter=Filter(same_as_previous="alphabet"), relation=Relation.AT_MOST, n=0),
         start, end, drop=drop, units=frozenset())


_LENGTH_CLASSES = {"prime": "prime", "even": "even", "odd": "odd"}


def _length_class(ctx: Context, sent: DocSpan) -> None:
    lemmas = _lemmas(sent)
    if not _said_of_words(lemmas) or not ({"letter", "character", "length", "long"} & set(lemmas)):
        return
    if "syllable" in lemmas:
        return
    found = [w for w in lemmas if w in _LENGTH_CLASSES]
    if len(found) != 1 or not (_every_word(sent) or {"only", "stick", "limit", "restrict", "confine"} & set(lemmas)):
        return
    start, end = _span(sent)
    form = Count(unit=Unit.WORDS, filter=Filter(length_class=_LENGTH_CLASSES[found[0]], negated=True),  # type: ignore[arg-type]
                 relation=Relation.AT_MOST, n=0)
    _add(ctx, form, start, end, drop=(Kind.LETTER_FREQUENCY,), units=_LETTERS)


def _every_contains(ctx: Context, sent: DocSpan) -> None:
    lemmas = _lemmas(sent)
    if not _every_word(sent) or not ({"contain", "include", "have", "feature", "use"} & set(lemmas)):
        return
    if "letter" not in lemmas or set(lemmas) & (_START | {"end", "finish", "vowel", "consonant"}):
        return
    at = lemmas.index("letter")
    letters = _letters_named(sent, at + 1)
    if len(letters) != 1 or any(w in _NEG for w in _lowers(sent)):
        return
    start, end = _span(sent)
    form = Count(unit=Unit.WORDS, filter=Filter(contains=letters[0], negated=True), relation=Relation.AT_MOST, n=0)
    _add(ctx, form, start, end, drop=(Kind.LETTER_FREQUENCY, Kind.KEYWORDS_PRESENT), units=_LETTERS)


def both_cases(letters: str) -> str:
    """The letters in both cases, each case sorted: what a ban of letters said without case bans."""
    return "".join(sorted(letters)) + "".join(sorted(letters.upper()))


def _letter_set(ctx: Context, sent: DocSpan) -> None:
    lemmas = _lemmas(sent)
    lowers = _lowers(sent)
    vowel = "vowel" in lemmas
    letter = "letter" in lemmas and ("only" in lowers or "set" in lemmas or any(w in _NEG for w in lowers)) \
        and not ((_START | {"end", "finish"}) & set(lemmas)) and not ({"word", "term", "capital", "uppercase", "lowercase"} & set(lemmas))
    if not (vowel or letter):
        return
    noun = lemmas.index("vowel" if vowel else "letter")
    listed = _letters_named(sent, noun + 1, lead=6 if vowel else 0)
    listed = [c for c in listed if c in VOWELS] if vowel else listed
    if not listed:
        return
    only = bool({"only", "just", "but", "except", "other"} & set(lowers)) or bool(
        {"limit", "restrict", "confine"} & set(lemmas))
    denied = any(w in _NEG for w in lowers)
    if only:
        pool = VOWELS if vowel else string.ascii_lowercase
        banned = "".join(c for c in pool if c not in listed)
    elif denied:
        if any(t.like_num or t.lower_ in ("once", "twice", "thrice") for t in sent) or len(set(listed)) == 1 and any(
                f.kind is Kind.LETTER_FREQUENCY and overlaps(f, *_span(sent)) for f in ctx.found):
            return  # "avoid the letter e (more than twice)": the named letter's count
        banned = "".join(sorted(set(listed)))
    else:
        return
    if not banned:
        return
    start, end = _span(sent)
    form = Count(unit=Unit.CHARACTERS, filter=Filter(chars=both_cases(banned)), relation=Relation.AT_MOST, n=0)
    _add(ctx, form, start, end, drop=(Kind.LETTER_FREQUENCY,), units=_LETTERS)


#: The characters each space word bans (the Chinese readers take theirs from here too).
SPACES = {"space": " ", "whitespace": " \t\n\r\u3000", "blank": " ", "break": "\n", "newline": "\n"}


def _no_spaces(ctx: Context, sent: DocSpan) -> None:
    lemmas = _lemmas(sent)
    lowers = _lowers(sent)
    if not ({"space", "whitespace", "newline"} & set(lemmas)) or not any(w in _NEG for w in lowers):
        return
    if {"between", "after", "before", "double", "extra", "trailing", "leading"} & set(lemmas) or {
            "count", "counting", "counted", "exclude", "excluding", "excluded", "including"} & set(lowers):
        return  # "no space before the colon", "no double spaces": where, not whether
    chars = ""
    for i, lemma in enumerate(lemmas):
        if lemma == "break" and (i == 0 or lemmas[i - 1] != "line"):
            continue
        chars += SPACES.get(lemma, "")
    chars = "".join(sorted(set(chars), key=chars.index))
    start, end = _span(sent)
    form = Count(unit=Unit.CHARACTERS, filter=Filter(chars=chars), relation=Relation.AT_MOST, n=0)
    ctx.found = [f for f in ctx.found if not (f.kind is Kind.FORBIDDEN_WORDS and overlaps(f, start, end) and all(
        str(w).lower().rstrip("s") in _SPACE_WORDS for w in f.params.get("words", [])))]
    _add(ctx, form, start, end, units=frozenset({"characters"}))


def _one_per_line(f: Found) -> bool:
    return f.kind is Kind.COUNT and f.params.get("unit") == "words" and f.params.get("per") == "lines" \
        and f.params.get("n") == 1 and f.params.get("relation") == "exactly"


def _own_line(ctx: Context, sent: DocSpan) -> None:
    start, end = _span(sent)
    if any(_one_per_line(f) and overlaps(f, start, end) for f in ctx.found):
        # "one word per line and at least 20 words": the other count is of the answer, not per line
        ctx.found = [f for f in ctx.found if _one_per_line(f) or not (
            f.kind is Kind.COUNT and f.params.get("per") == "lines" and overlaps(f, start, end)
            and "line" not in ctx.text[f.start : f.end].lower())]
        return
    lowered = sent.text.lower()
    if not re.search(r"\b(?:each|every|all)\s+(?:single\s+)?words?\b", lowered):
        return
    if not re.search(r"\b(?:its|their)\s+own\s+lines?\b|\bon\s+(?:a\s+)?(?:separate|new|different"
                     r"|distinct|individual)\s+lines?\b|\bone\s+per\s+line\b", lowered):
        return
    start, end = _span(sent)
    form = Count(unit=Unit.WORDS, per=Unit.LINES, relation=Relation.EXACTLY, n=1)
    _add(ctx, form, start, end, units=frozenset({"lines"}))


_TIMES = re.compile(r"\b(?:(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:or\s+more\s+)?times|(?P<w>once|twice|thrice))\b")


def _times(lowered: str) -> int | None:
    match = _TIMES.search(lowered)
    if match is None:
        return None
    return parse_number([match.group("n") or match.group("w")])


def _recurrence(ctx: Context, sent: DocSpan) -> None:
    lowered = sent.text.lower()
    if re.search(r"[\"'“‘][^\"'”’]+[\"'”’]", sent.text):
        return  # a quoted word's frequency is the keyword's
    if not re.search(r"\b(?:no|any|each|every|a|the\s+same|single)\s+(?:single\s+|one\s+)?words?\b", lowered) \
            and not any(t.lower_ == "words" and t.dep_ in ("nsubj", "nsubjpass") and not any(
                c.dep_ in ("det", "amod", "compound", "nummod", "prep", "relcl") for c in t.children) for t in sent):
        # every word: "no word", "any word", or bare "words" as the subject ("those all-caps words" are not all)
        return
    lemmas = _lemmas(sent)
    if not ({"use", "repeat", "appear", "occur", "say", "write", "reuse"} & set(lemmas)):
        return
    if {"request", "prompt", "question", "instruction", "sentence", "above", "below", "verbatim"} & set(lemmas) \
            or "word for word" in lowered:
        return  # "repeat the request word for word; do not say any word before it": a copy, not a recurrence
    start, end = _span(sent)
    if {"row", "consecutive", "consecutively", "adjacent", "successive", "back"} & set(lemmas) or any(
            f.kind is Kind.COUNT and "same_as_previous" in dict(f.params.get("filter") or {})
            and overlaps(f, start, end) for f in ctx.found):
        return  # twice in a row, back to back: the adjacency reader's
    times = _times(lowered)
    most: int | None = None
    if times is not None and re.search(r"\b(?:\w+)\s+or\s+more\s+times\b", lowered) and any(
            w in _NEG for w in _lowers(sent)):
        most = times - 1  # "cannot use any word three or more times"
    elif times is not None and re.search(r"\bmore\s+than\b|\bover\b|\bexceed", lowered) or times is not None and re.search(r"\bat\s+most\b|\bno\s+more\s+than\b|\bup\s+to\b|\bmaximum\b", lowered) or times is not None and "only" in lemmas and "repeat" not in lemmas:
        most = times
    elif times is None and any(w in _NEG for w in _lowers(sent)) and any(
            t.lemma_.lower() in ("repeat", "reuse") and any(c.dep_ in ("dobj", "nsubjpass") and c.lemma_.lower() in _WORD
                                                            for c in t.children) for t in sent):
        most = 1  # never repeat a word
    if most is None or most < 1:
        return
    form = Count(unit=Unit.WORDS, filter=Filter(occurrence=most + 1), relation=Relation.AT_MOST, n=0)
    _add(ctx, form, start, end, drop=(Kind.KEYWORD_FREQUENCY,), units=frozenset())


def _title_case(ctx: Context, sent: DocSpan) -> None:
    lowered = sent.text.lower()
    titled = "title case" in lowered or "title-case" in lowered or "titlecase" in lowered
    majors = r"\b(?:major|important|main|significant|principal|key|content)\s+words?\b"
    capitals = r"\b(?:capitali[sz]e[ds]?|uppercase[ds]?|capital\s+letters?)\b"
    major = re.search(capitals + r".{0,40}" + majors, lowered) is not None or re.search(
        majors + r".{0,30}" + capitals, lowered) is not None
    if not (titled or major):
        return
    if titled and re.search(r"\b(?:the|each|every|a|its)\s+(?:title|heading|headline|header)s?\b.{0,20}\btitle[- ]?case",
                            lowered):
        return  # the title's own case: the answer's other text is free
    start, end = _span(sent)
    form = Count(unit=Unit.WORDS, filter=Filter(stop_words=False, case="lower"), relation=Relation.AT_MOST, n=0)
    _add(ctx, form, start, end, drop=(Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE, Kind.CAPITAL_WORD_FREQUENCY),
         units=frozenset())


def _piece_letter(ctx: Context, sent: DocSpan) -> None:
    lemmas = _lemmas(sent)
    lowers = _lowers(sent)
    first_letter = re.search(r"\bfirst\s+letter\s+of\b", sent.text.lower()) is not None
    if not (_START & set(lemmas) or first_letter) or "letter" not in lemmas:
        return
    pieces = [(i, _PIECES[w]) for i, w in enumerate(lemmas) if w in _PIECES]
    if len(pieces) != 1:
        return
    at, unit = pieces[0]
    if not any(w in EN_UNIVERSAL for w in lowers[max(0, at - 3) : at]) and not sent[at].tag_.endswith("S"):
        return
    letter = lemmas.index("letter")
    if first_letter and not (_START & set(lemmas)):
        # "the first letter of every sentence must be B": the letter after the verb, capital or quoted
        listed = [_bare(t.text).lower() for t in sent[at + 1 :] if len(_bare(t.text)) == 1 and _bare(t.text).isalpha()
                  and (t.text.isupper() or t.text != _bare(t.text))][:1]
    else:
        listed = _letters_named(sent, letter + 1)
    if len(listed) != 1 or any(w in _NEG for w in lowers) or {"capital", "uppercase", "lowercase", "capitalize",
                                                              "capitalise", "upper", "lower"} & set(lemmas):
        return
    start, end = _span(sent)
    if unit is Unit.WORDS:
        form: Form = Position(unit=unit, op="starts_with", text=listed[0], k=0)
    else:  # a letter, not a first word: the pieces that do not start with it, none
        form = Count(unit=unit, filter=Filter(starts_with=listed[0], negated=True), relation=Relation.AT_MOST, n=0)
    _add(ctx, form, start, end, drop=(Kind.LETTER_FREQUENCY, Kind.KEYWORDS_PRESENT), units=_LETTERS)


def _quoted(sent: DocSpan) -> bool:
    return re.search(r"[\"“‘']\w[^\"”’']*[\"”’']", sent.text) is not None


def _word_letter(ctx: Context, sent: DocSpan) -> None:
    """"Use only words that begin with 'm'": every word opens with the letter (``position(words, k=0)``)."""
    lemmas = _lemmas(sent)
    lowers = _lowers(sent)
    if not (_START & set(lemmas)) or not _every_word(sent) and "only" not in lowers:
        return
    if {"same", "alphabet", "alphabetical", "next", "previous", "preceding", "sentence", "line", "paragraph",
            "capital", "uppercase", "lowercase", "vowel", "consonant"} & set(lemmas) or any(w in _NEG for w in lowers):
        return
    start, end = _span(sent)
    if any(f.kind is Kind.POSITION and f.params.get("unit") == "words" and overlaps(f, start, end) for f in ctx.found):
        return
    word = next(i for i, t in enumerate(sent) if t.lemma_.lower() in _WORD)
    if _quantity_left(ctx, sent[word].i) is not None:
        return  # "at least 3 words that begin with m": a count of them
    verb = next(i for i, w in enumerate(lemmas) if w in _START)
    listed = _letters_named(sent, verb + 1, lead=2)
    if len(listed) != 1:
        return
    _add(ctx, Position(unit=Unit.WORDS, op="starts_with", text=listed[0], k=0), start, end,
         drop=(Kind.LETTER_FREQUENCY, Kind.KEYWORDS_PRESENT), units=frozenset())


def _quantity_before(ctx: Context, at: int) -> Quantity | None:
    q = _quantity_left(ctx, at)
    if q is not None:
        return q
    token = ctx.tokens[at]
    for j in range(max(token.sent.start, at - 4), at):
        n = parse_number([ctx.tokens[j].text]) if ctx.tokens[j].like_num or ctx.lowers[j] in ("one", "a") else None
        if n is not None or ctx.lowers[j] in ("a", "an"):
            return Quantity(Relation.AT_LEAST, n if n is not None else 1, j, at)
    return None


def _palindromes(ctx: Context, sent: DocSpan) -> None:
    at = next((t.i for t in sent if t.lemma_.lower().startswith("palindrom")), None)
    if at is None:
        return
    noun = at + 1 if at + 1 < sent.end and ctx.lemmas[at + 1] in _WORD else at
    q = _quantity_before(ctx, at)
    if q is None:
        return
    relation = q.relation or Relation.AT_LEAST
    low: int | None = None
    for j in range(noun + 1, min(sent.end, noun + 12)):
        if ctx.lemmas[j] in ("letter", "character"):
            length = _quantity_left(ctx, j)
            if length is not None:
                if length.relation in (Relation.AT_LEAST, None):
                    low = length.n
                elif length.relation is Relation.MORE_THAN:
                    low = length.n + 1
            break
    start, end = _span(sent)
    ctx.found = [f for f in ctx.found if not (f.kind is Kind.WORD_COUNT and overlaps(f, start, end)
                                              and "palindrom" in ctx.text[f.start : f.end].lower())]
    form = Count(unit=Unit.WORDS, filter=Filter(palindrome=True, min_length=low), relation=relation, n=q.n)
    _add(ctx, form, start, end, drop=(Kind.LETTER_FREQUENCY,))


def _nth_word_language(ctx: Context, sent: DocSpan) -> None:
    """"Every fifth word must be in French" says nothing of the answer's language: that reading is dropped."""
    lowers = _lowers(sent)
    for i, t in enumerate(sent):
        if t.lemma_.lower() not in _WORD or i < 2:
            continue
        before = lowers[i - 1]
        if lowers[i - 2] != "every" or not (ordinal(before) is not None or before in ("other", "second")):
            continue
        tail = {w for w in lowers[i:]}
        if tail & _LANGUAGES:
            begin = t.idx
            end = sent.end_char
            ctx.found = [f for f in ctx.found if not (f.kind is Kind.RESPONSE_LANGUAGE and overlaps(f, begin, end))]
            return


_READERS = (_alphabet, _length_class, _every_contains, _letter_set, _no_spaces, _own_line, _recurrence, _title_case,
            _piece_letter, _word_letter, _palindromes, _nth_word_language)


def refine_word_rules_english(ctx: Context) -> None:
    """The rules said of every word or of consecutive words, read into ``ctx.found`` (see the module doc)."""
    for sent in ctx.doc.sents:
        for reader in _READERS:
            reader(ctx, sent)
