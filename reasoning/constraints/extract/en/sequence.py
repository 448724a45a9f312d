"""Requirements that relate the pieces of the answer to one another or name a word inside one (English).

Each reader works on one sentence of the prompt and, where it reads, replaces
what the earlier detectors took from that sentence (they read these
sentences as something else: "each sentence exactly two words longer than the
previous one" as two words per sentence, "the second word of the fourth
sentence" as two unrelated positions):

- a step between consecutive pieces ("each sentence must be exactly two
  words longer than the previous one", "every paragraph should have 5 fewer
  words than the one before it"): ``spread(words, sentences, step=2)``;
- an echo of the answer's own words: a piece ending with the word it began
  with ("each paragraph should end with the word it began with", "start and
  end every line with the same word"): ``position(paragraphs, k=0,
  ends_with, same_as=first_word)``; a piece opening with the previous one's
  last word ("the last word of each sentence must be the first word of the
  next"): ``position(sentences, k=0, starts_with, same_as=previous_last_word)``;
- a word inside the k-th piece ("the word 'ocean' must appear in the third
  sentence", "mention 'tide' in paragraph 2"): ``position(sentences, k=3,
  contains, ocean)``; at the m-th word of it ("'river' must be the second
  word of the fourth sentence"): ``position(sentences, k=4, is, river,
  word=2)``;
- prose before or after a list, counted in sentences ("write two
  sentences first, then at least two bullet points"): ``structure(list,
  before=paragraph)`` (one sentence: ``before=sentence``), not a sentence
  count of the whole answer;
- several word positions of one text, counted from either end ("the second
  word and the second-to-last word must both be 'blue'", "the penultimate
  word should be 'end'"): one ``position(words, k)`` each (-2 the
  second-to-last).

Ordinals come from one lexicon (first ... tenth, 1st, "number 3", last,
penultimate, second-to-last, third from the end); pieces from
:data:`reasoning.constraints.extract.lexicon.EN_PIECES` (lemmas, so plurals and inflected verbs read alike).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found
from reasoning.constraints.extract.lexicon import EN_PIECES
from reasoning.constraints.form import Layout, Position, Spread, Structure, Unit, canonical, units
from reasoning.constraints.form.model import Form
from reasoning.constraints.model import Kind
from reasoning.constraints.quantities import ordinal, parse_number

__all__ = ["inside_word", "ordinal_phrase", "refine_sequence_english"]

#: Lemmas of the units a step between pieces is measured in.
_STEP_UNITS: Mapping[str, Unit] = {"word": Unit.WORDS, "character": Unit.CHARACTERS, "letter": Unit.LETTERS}
_BEFORE = frozenset({"previous", "preceding", "prior", "before", "last", "earlier", "former"})
_AFTER = frozenset({"next", "following", "subsequent", "succeeding", "after"})
_OPENING = frozenset({"first", "begin", "start", "open", "opening", "initial", "beginning"})
_CLOSING = frozenset({"last", "end", "final", "finish", "close", "closing", "conclude", "ending"})
_EDGE_VERBS = frozenset({"begin", "start", "open", "end", "finish", "close", "conclude"})
_SAME = frozenset({"same", "identical", "match", "repeat", "equal"})
_CONTAIN = frozenset({"appear", "contain", "include", "use", "mention", "feature", "have", "occur", "show",
                      "put", "place", "insert", "hold"})

_ORD_WORDS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\\d+(?:st|nd|rd|th)")
#: An ordinal phrase: from the start ("third", "3rd") or from the end ("last", "penultimate", "second-to-last",
#: "next to last", "second last", "last but one", "third from the end").
_ORDINAL = re.compile(
    rf"\b(?:(?P<fromend>{_ORD_WORDS})(?:[\s-]+to[\s-]+|[\s-]+)last|(?P<end2>{_ORD_WORDS})\s+from\s+the\s+end"
    rf"|(?P<pen>penultimate|next[\s-]+to[\s-]+last|last[\s-]+but[\s-]+one)|(?P<last>last|final|closing|concluding)|(?P<open>opening|initial)"
    rf"|(?P<nth>{_ORD_WORDS}))\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|\\d+"
_PIECE_RE = r"(?:sentence|paragraph|line|bullet(?:\s+point)?|list\s+item|item|point)s?"
#: "the third sentence", "the last paragraph", "the sentence before last".
_ORD_PIECE = re.compile(rf"(?P<ord>{_ORDINAL.pattern})[\s-]+(?P<piece>{_PIECE_RE})\b", re.IGNORECASE)
#: "sentence 3", "paragraph number two".
_PIECE_NUM = re.compile(rf"\b(?P<piece>{_PIECE_RE})\s+(?:number\s+|no\.\s*|#)?(?P<num>{_NUMBER_WORDS})\b",
                        re.IGNORECASE)
_FROM_THE_END = re.compile(r"\s+(?:counting\s+)?from\s+the\s+(?:end|bottom)\b", re.IGNORECASE)
#: "the line before last", "the sentence before the last one": the second-to-last piece.
_PIECE_BEFORE_LAST = re.compile(rf"\b(?P<piece>{_PIECE_RE})\s+(?:just\s+|right\s+)?before\s+(?:the\s+)?last\b"
                                r"(?!\s+(?:one\s+)?(?:that|which|you|we|i|is|was)\b)", re.IGNORECASE)
_ORD_WORD = re.compile(rf"(?P<ord>{_ORDINAL.pattern})[\s-]+words?\b", re.IGNORECASE)
_WORD_NUM = re.compile(rf"\bword\s+(?:number\s+|no\.\s*|#)?(?P<num>{_NUMBER_WORDS})\b", re.IGNORECASE)
_QUOTED = re.compile(r"\"([^\"\n]{1,60})\"|“([^”\n]{1,60})”|(?<!\w)'([^'\n]{1,60})'(?!\w)|‘([^’\n]{1,60})’")


def ordinal_phrase(phrase: str) -> int | None:
    """The position an ordinal phrase names: 3 for "third" / "3rd", -1 "last", -2 "penultimate" /
    "second-to-last" / "second from the end"; None when it is no ordinal."""
    match = _ORDINAL.fullmatch(phrase.strip())
    if match is None:
        return None
    if match.group("pen"):
        return -2
    if match.group("last"):
        return -1
    if match.group("open"):
        return 1
    back = match.group("fromend") or match.group("end2")
    if back:
        k = ordinal(back)
        return -k if k is not None else None
    return ordinal(match.group("nth"))


def _piece_unit(word: str) -> Unit:
    lemma = word.lower().split()[-1].rstrip("s")
    return EN_PIECES.get(lemma, Unit.BULLETS)


@dataclass(frozen=True)
class _Sentence:
    """One sentence of the prompt: its character span, text, and the lemmas / lowercase forms of its tokens."""

    start: int
    end: int
    text: str
    lemmas: tuple[str, ...]
    lowers: tuple[str, ...]

    def has(self, words: frozenset[str]) -> bool:
        return any(w in words for w in self.lemmas) or any(w in words for w in self.lowers)


def _sentences(ctx: Context) -> Iterator[_Sentence]:
    for sent in ctx.doc.sents:
        yield _Sentence(sent.start_char, sent.end_char, ctx.text[sent.start_char : sent.end_char],
                        tuple(ctx.lemmas[sent.start : sent.end]), tuple(ctx.lowers[sent.start : sent.end]))


def _replace(ctx: Context, s: _Sentence, kinds: frozenset[Kind], forms: list[Form], *, keep_word: str = "",
             spans: list[tuple[int, int]] | None = None) -> None:
    """Drop the readings of ``kinds`` inside the sentence (a keyword list loses only ``keep_word``) and add
    ``forms``, each over the sentence or its own span in ``spans`` (forms of one kind over one span would be
    merged as one reading)."""
    kept: list[Found] = []
    for f in ctx.found:
        inside = s.start <= f.start < s.end
        if inside and f.kind is Kind.KEYWORDS_PRESENT and keep_word:
            words = [w for w in f.params.get("keywords", []) if str(w).lower() != keep_word.lower()]
            if words:
                kept.append(Found(kind=f.kind, params={**f.params, "keywords": words}, start=f.start, end=f.end,
                                  confidence=f.confidence, hardness=f.hardness))
            continue
        if not (inside and f.kind in kinds):
            kept.append(f)
    ctx.found = kept
    for index, form in enumerate(forms):
        kind, params = canonical(form)
        start, end = spans[index] if spans is not None else (s.start, s.end)
        ctx.add(kind, params, start, end, confidence=0.85)


_POSITIONS = frozenset({Kind.POSITION, Kind.START_PHRASE, Kind.END_PHRASE, Kind.NTH_PARAGRAPH_FIRST_WORD})
_COUNTS = frozenset({Kind.COUNT, Kind.WORD_COUNT})


def _quoted(s: _Sentence) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(s.text)]


def _named_word(ctx: Context, s: _Sentence) -> str | None:
    """The one text the sentence names: quoted, else a keyword read from it, else the word after a final 'be'."""
    quoted = _quoted(s)
    if len({q.lower() for q in quoted}) == 1:
        return quoted[0]
    if quoted:
        return None
    for f in ctx.found:
        if f.kind is Kind.KEYWORDS_PRESENT and s.start <= f.start < s.end and len(f.params.get("keywords", [])) == 1:
            return str(f.params["keywords"][0])
    named = re.search(r"\bthe\s+(?:key)?word\s+([A-Za-z][\w'-]*)", s.text, re.IGNORECASE)
    if named is not None:  # "the word hive must appear in the second paragraph": the word after "the word"
        token = next((t for t in ctx.doc if t.idx == s.start + named.start(1)), None)
        if token is not None and token.pos_ in ("NOUN", "PROPN", "ADJ", "VERB", "X") and token.tag_ != "MD":
            return named.group(1)
    match = re.search(r"\bbe\s+(?:the\s+word\s+)?([A-Za-z][\w'-]*)\s*[.!;]?\s*$", s.text)
    return match.group(1) if match else _contained_object(ctx, s)


#: Verbs whose object (or the object of their "about" / "of") is a word to put in a piece.
_NAMING_VERBS = frozenset({"mention", "include", "use", "name", "feature", "talk", "speak", "write"})


def _contained_object(ctx: Context, s: _Sentence) -> str | None:
    """"mention ice in the last paragraph", "the second paragraph has to talk about the rain": the one bare
    noun a verb of naming takes as its object (directly or through "about" / "of"), as the word to contain.

    Only a noun with nothing but "the" / "a" before it reads: "your childhood" or "the local weather" name a
    topic, not a word, and are left to the model."""
    objects: list[str] = []
    pieces = [t for t in ctx.tokens if s.start <= t.idx < s.end and t.lemma_.lower() in EN_PIECES]
    for token in ctx.doc.char_span(s.start, s.end, alignment_mode="expand") or []:
        if token.lemma_.lower() not in _NAMING_VERBS or token.pos_ != "VERB":
            continue
        clause = token
        while clause.dep_ == "xcomp" and clause.head is not clause:
            clause = clause.head  # "the paragraph has to talk about ...": the piece is the subject of "has"
        if not any(p in clause.subtree for p in pieces):
            continue  # a verb of another clause ("..., then reply: Name a bird")
        heads = [c for c in token.children if c.dep_ == "dobj"]
        heads += [g for c in token.children if c.dep_ == "prep" and c.lower_ in ("about", "of")
                  for g in c.children if g.dep_ == "pobj"]
        for noun in heads:
            if noun.pos_ not in ("NOUN", "PROPN") or noun.lemma_.lower() in EN_PIECES or noun.lemma_.lower() in (
                    "word", "keyword", "term", "phrase", "name", "thing", "topic", "something", "it"):
                continue
            if any(c.dep_ not in ("det", "prep") or c.dep_ == "det" and c.lower_ not in ("the", "a", "an")
                   for c in noun.children):
                continue
            if any(c.dep_ == "prep" and not any(EN_PIECES.get(g.lemma_.lower()) for g in c.children)
                   for c in noun.children):
                continue  # "mention the price of tea": a phrase, not a word
            objects.append(noun.text)
    return objects[0] if len(objects) == 1 else None


_NUM = r"(?P<n>one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|\d+)"
_UNIT = r"(?P<unit>word|character|letter)s?"
_CMP = r"(?P<cmp>longer|shorter|more|fewer|less|extra)"
#: What a comparison is made with: the piece before ("than the previous one", "than the sentence before it").
_THAN_BEFORE = (r"than\s+(?:that\s+of\s+)?(?:the|its)\s+(?:(?:previous|preceding|prior|last|former)\b"
                r"|(?:one|\w+)\s+(?:before|preceding)\b)")
_STEPS = (
    re.compile(rf"\b{_NUM}\s+(?:more\s+|fewer\s+|extra\s+)?{_UNIT}\s+{_CMP}\s+{_THAN_BEFORE}", re.IGNORECASE),
    re.compile(rf"\b{_NUM}\s+{_CMP}\s+{_UNIT}\s+{_THAN_BEFORE}", re.IGNORECASE),
    re.compile(rf"\b{_CMP}\s+{_THAN_BEFORE}(?:\s+\w+)?\s+by\s+(?:exactly\s+|precisely\s+)?{_NUM}\s+{_UNIT}",
               re.IGNORECASE),
    re.compile(rf"\b(?P<cmp>increas|grow|grew|decreas|shrink|shrank)\w*\s+(?:in\s+length\s+)?by\s+"
               rf"(?:exactly\s+|precisely\s+)?{_NUM}\s+{_UNIT}", re.IGNORECASE),
)
_GROWING = ("longer", "more", "extra", "increas", "grow", "grew")


def _step(ctx: Context, s: _Sentence) -> bool:
    """"Each sentence exactly two words longer than the previous one", "every paragraph should have 5 fewer
    words than the one before it", "each line grows by three words": a step between consecutive pieces."""
    piece = next((EN_PIECES[w] for w in s.lemmas if w in EN_PIECES), None)
    if piece is None:
        return False
    for pattern in _STEPS:
        m = pattern.search(s.text)
        if m is None:
            continue
        n = parse_number([m.group("n")])
        if n is None or n <= 0:
            continue
        unit = _STEP_UNITS[m.group("unit").lower()]
        grows = m.group("cmp").lower() in _GROWING
        _replace(ctx, s, _COUNTS, [Spread(unit=unit, per=piece, step=n if grows else -n)])
        return True
    return False


def _echo(ctx: Context, s: _Sentence) -> bool:
    """A piece repeating a word of the answer: its own first word at its end, or the previous piece's last."""
    if "word" not in s.lemmas or _quoted(s) or not (s.has(_OPENING) and s.has(_CLOSING) or s.has(_SAME)):
        return False
    piece = next((EN_PIECES[w] for w in s.lemmas if w in EN_PIECES and EN_PIECES[w] is not Unit.BULLETS),
                 None)
    if piece is None:
        return False
    lowered = s.text.lower()
    neighbour = s.has(_AFTER) or re.search(r"\b(?:previous|preceding|prior)\b|\bbefore\s+it\b|\bone\s+before\b",
                                            lowered) is not None
    if neighbour and s.has(_OPENING) and s.has(_CLOSING):
        form = Position(unit=piece, k=0, op="starts_with", text="", same_as="previous_last_word")
    elif not neighbour and (s.has(_SAME) and s.has(_OPENING | _CLOSING)
                            or re.search(r"\bword\s+(?:that\s+)?it\s+(?:began|begins|started|starts|opened|opens)\b",
                                         lowered)):
        form = Position(unit=piece, k=0, op="ends_with", text="", same_as="first_word")
    else:
        return False
    _replace(ctx, s, _POSITIONS | _COUNTS, [form])
    return True


def _piece_refs(s: _Sentence) -> list[tuple[Unit, int]]:
    """The k-th pieces the sentence names ("the third sentence", "paragraph 2", "the last line")."""
    found: list[tuple[Unit, int]] = []
    for m in _ORD_PIECE.finditer(s.text):
        k = ordinal_phrase(m.group("ord"))
        if k is not None and k > 0 and _FROM_THE_END.match(s.text, m.end()):
            k = -k  # "the third sentence from the end"
        if k is not None:
            found.append((_piece_unit(m.group("piece")), k))
    for m in _PIECE_NUM.finditer(s.text):
        n = parse_number([m.group("num")])
        if n is not None and n > 0:
            found.append((_piece_unit(m.group("piece")), n))
    for m in _PIECE_BEFORE_LAST.finditer(s.text):
        found.append((_piece_unit(m.group("piece")), -2))
    return found


def _word_refs(s: _Sentence) -> dict[int, tuple[int, int]]:
    """The word positions the sentence names ("the second word", "the second-to-last word", "word 3"),
    each with the prompt's span of its phrase."""
    found: dict[int, tuple[int, int]] = {}
    for m in _ORD_WORD.finditer(s.text):
        k = ordinal_phrase(m.group("ord"))
        if k is not None:
            found.setdefault(k, (s.start + m.start(), s.start + m.end()))
    for m in _WORD_NUM.finditer(s.text):
        n = parse_number([m.group("num")])
        if n is not None and n > 0:
            found.setdefault(n, (s.start + m.start(), s.start + m.end()))
    return found


def inside_word(unit: Unit, k: int, word: int, text: str) -> Position:
    """The ``word``-th word of the k-th piece is ``text``: a one-word text as the first (last) word is the
    piece's opening (ending), the edge positions' own reading, which the position controllers keep (a Han
    text stays a word of the segmented piece: an edge compares whitespace words)."""
    if len(text.split()) == 1 and word in (1, -1) and not units.has_han(text):
        return Position(unit=unit, k=k, op="starts_with" if word == 1 else "ends_with", text=text)
    return Position(unit=unit, k=k, op="is", text=text, word=word)


#: Verbs by which a piece is a text ("the last line must say 'Thanks'", "should read", "is").
_SAYING = frozenset({"say", "read", "be", "consist"})


def _says(s: _Sentence) -> bool:
    return any(w in _SAYING for w in s.lemmas)


#: "the third sentence from the end is a question", "make the second sentence an exclamation": its closing mark.
_SENTENCE_TYPE = re.compile(r"\b(?:is|be|are|as|into|an?)\s+(?:an?\s+)?(?:(?:single|direct|rhetorical)\s+)?"
                            r"(?P<type>question|exclamation)s?\s*[.!;]?\s*$", re.IGNORECASE)


def _typed_piece(ctx: Context, s: _Sentence) -> bool:
    """The k-th sentence is a question (an exclamation): it ends with that mark."""
    pieces = _piece_refs(s)
    match = _SENTENCE_TYPE.search(s.text)
    if len(pieces) != 1 or match is None or pieces[0][0] is not Unit.SENTENCES or _quoted(s):
        return False
    mark = "?" if match.group("type").lower() == "question" else "!"
    if _already(ctx, s, Position(unit=Unit.SENTENCES, k=pieces[0][1], op="ends_with", text=mark)):
        return True
    _replace(ctx, s, _POSITIONS | frozenset({Kind.SENTENCE_COUNT}),
             [Position(unit=Unit.SENTENCES, k=pieces[0][1], op="ends_with", text=mark)])
    return True


def _inside_piece(ctx: Context, s: _Sentence) -> bool:
    """A word in the k-th piece (``contains``), or the m-th word of it; a piece that must say a quoted text
    (``is``)."""
    pieces = _piece_refs(s)
    if len(pieces) != 1:
        return False
    unit, k = pieces[0]
    words = _word_refs(s)
    text = _named_word(ctx, s)
    if text is None or len(words) > 1:
        return False
    if words:
        form = inside_word(unit, k, next(iter(words)), text)
    elif _says(s) and _quoted(s) and (unit is Unit.LINES or s.has(frozenset({"exactly", "only", "just"}))):
        form = Position(unit=unit, k=k, op="is", text=text)  # "the line before last must say exactly 'Cheers,'"
        if _already(ctx, s, form):
            return True  # the position readers' own reading, with its narrower span
    elif s.has(_CONTAIN | _NAMING_VERBS) or re.search(r"\b(?:in|within|inside)\s+(?:the\s+|your\s+)?(?:\w+[\s-]+)?"
                                      + _PIECE_RE, s.text, re.IGNORECASE):
        if s.has(_EDGE_VERBS):
            return False  # an opening or ending of the piece: the position readers' own
        form = Position(unit=unit, k=k, op="contains", text=text)
    else:
        return False
    _replace(ctx, s, _POSITIONS, [form], keep_word=text)
    return True


def _already(ctx: Context, s: _Sentence, form: Form) -> bool:
    """Whether an earlier reader read ``form`` itself inside the sentence (its narrower span is kept)."""
    kind, params = canonical(form)
    return any(f.kind is kind and f.params == params and s.start <= f.start < s.end for f in ctx.found)


def _word_positions(ctx: Context, s: _Sentence) -> bool:
    """Several word positions of one text, or one counted from the end beyond the last ("penultimate")."""
    if _piece_refs(s):
        return False
    words = _word_refs(s)
    if not words or (len(words) == 1 and next(iter(words)) >= -1):
        return False
    text = _named_word(ctx, s)
    if text is None or len(text.split()) != 1:
        return False
    _replace(ctx, s, _POSITIONS, [Position(unit=Unit.WORDS, k=k, op="is", text=text) for k in words],
             keep_word=text, spans=list(words.values()))
    return True


_LIST_NOUN = re.compile(r"\b(?:bullet(?:ed)?(?:\s+points?|\s+list)?|bullets|(?:numbered\s+|bulleted\s+)?list)\b",
                        re.IGNORECASE)
_THEN = re.compile(r"\b(?:then|followed\s+by|after\s+(?:that|which|this)|afterwards|next)\b", re.IGNORECASE)


def _prose_and_list(ctx: Context, s: _Sentence) -> bool:
    """"Write two sentences first, then at least two bullet points": the sentences are prose before (or,
    said after the list, after) it, not the whole answer's sentence count."""
    listed = _LIST_NOUN.search(s.text)
    cue = _THEN.search(s.text)
    if listed is None or cue is None:
        return False
    counts = [f for f in ctx.found if f.kind is Kind.SENTENCE_COUNT and s.start <= f.start < s.end
              and f.params.get("relation") == "exactly"]
    if len(counts) != 1:
        return False
    count = counts[0]
    list_at = s.start + listed.start()
    cue_at = s.start + cue.start()
    if count.end <= cue_at <= list_at:
        where = "before"
    elif list_at < cue_at <= count.start:
        where = "after"
    else:
        return False
    beside = "sentence" if count.params.get("n") == 1 else "paragraph"
    ctx.found = [f for f in ctx.found if f is not count]
    for index, f in enumerate(ctx.found):
        if f.kind is Kind.STRUCTURE and s.start <= f.start < s.end and f.params.get("layout") in ("list", "numbered_list") \
                and f.params.get(where) is None:
            ctx.found[index] = Found(kind=f.kind, params={**f.params, where: beside}, start=f.start, end=f.end,
                                     confidence=f.confidence, hardness=f.hardness)
            return True
    bullets = [f for f in ctx.found if f.kind is Kind.BULLET_COUNT and s.start <= f.start < s.end]
    n = int(bullets[0].params["n"]) if len(bullets) == 1 and "n" in bullets[0].params else None
    ctx.found = [f for f in ctx.found if f not in bullets[:1]] if n is not None else ctx.found
    # The list's items counted beside it are the one list's (a second list reading would be its rival).
    kind, params = canonical(Structure(layout=Layout.LIST, n=n, **{where: beside}))  # type: ignore[arg-type]
    ctx.add(kind, params, count.start, count.end, confidence=0.85)
    return True


#: Where a sentence naming several pieces divides into its clauses ("..., and the last line is ...").
_CLAUSE_BREAK = re.compile(r"\s*;\s*|,?\s+and\s+(?=(?:the|your|its|in|make|put)\b)|,\s+(?=the\b)", re.IGNORECASE)


def _clauses(ctx: Context, s: _Sentence) -> list[_Sentence]:
    """The clauses of a sentence that names more than one k-th piece, each naming one; else the sentence."""
    if len(_piece_refs(s)) < 2:
        return [s]
    cuts = [0, *(m.end() for m in _CLAUSE_BREAK.finditer(s.text)), len(s.text)]
    parts: list[_Sentence] = []
    for a, b in itertools.pairwise(cuts):
        start, end = s.start + a, s.start + b
        tokens = [t for t in ctx.tokens if start <= t.idx < end]
        parts.append(_Sentence(start, end, ctx.text[start:end], tuple(t.lemma_.lower() for t in tokens),
                               tuple(t.lower_ for t in tokens)))
    if sum(len(_piece_refs(p)) for p in parts) != len(_piece_refs(s)) or any(len(_piece_refs(p)) > 1 for p in parts):
        return [s]
    return [p for p in parts if _piece_refs(p)]


def refine_sequence_english(ctx: Context) -> None:
    """Read the sentences of ``ctx`` that relate pieces to one another or name a word inside one."""
    for s in _sentences(ctx):
        if not any(w in EN_PIECES or w == "word" for w in s.lemmas):
            continue
        if _step(ctx, s) or _echo(ctx, s):
            continue
        for part in _clauses(ctx, s):
            _typed_piece(ctx, part) or _inside_piece(ctx, part) or _word_positions(ctx, part) \
                or _prose_and_list(ctx, part)
