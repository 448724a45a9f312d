"""English readings of a structure's or a copy's parameters, from the parse.

Runs as the last English form detector (:mod:`reasoning.constraints.extract.en.form`), on the
readings the earlier detectors made, and adds what they leave out:

- a bulleted or numbered list of an exact number of items ("a bulleted list
  of three tips") where no list was read in the sentence;
- a copy asked with a copying verb and a request object ("copy the
  question", "echo my request back") that the named repeat reading missed;
- a copy's stated change: a letter case ("repeat the request in capitals")
  or a dropped first / last sentence ("without the last sentence") attached
  by the dependency parse to the copying verb becomes ``Copy.case`` /
  ``Copy.drop``; the whole-answer case reading of the same words is then
  dropped (the case is the copy's, not the answer's);
- prose beside a list or table ("an introductory paragraph, then a bulleted
  list", "followed by a one-sentence summary"): a prose noun in the layout's
  sentence stands before or after it by word order, or by a linking
  "before" / "after"; "one sentence" / "one-sentence" is a ``sentence``,
  anything else a ``paragraph``; a count of one such sentence or paragraph
  read from the same words is dropped (larger counts stay: "at least five
  sentences, then a list" still counts the answer's sentences);
- a table's header cells ("with the columns Name, Price and Rating",
  "headers: A | B", "whose column headers are X, Y and Z");
- ``n`` responses separated by a marker ("two different responses separated
  by ###", "three answers divided by six asterisks").

A reading is changed only when the parse names the parameter; otherwise the
earlier reading stays as it was.
"""

from __future__ import annotations

import re

import msgspec
from spacy.tokens import Token

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.named import repeat_text
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_LAYOUTS, EN_LOWER, EN_UPPER
from reasoning.constraints.form import Copy, Layout, Structure, canonical
from reasoning.constraints.form.model import Beside
from reasoning.constraints.model import Kind
from reasoning.constraints.quantities import parse_number

__all__ = ["refine_structure"]


_COPY_VERBS = frozenset({"repeat", "copy", "restate", "reproduce", "echo", "rewrite", "write", "recite", "quote"})
_EXCLUDING = frozenset({"without", "except", "excluding", "minus", "omit", "omitting", "skip", "skipping", "drop",
                        "dropping", "leave", "leaving", "exclude", "but"})
_FIRST = frozenset({"first", "opening", "initial"})
_LAST = frozenset({"last", "final", "closing"})
_LABEL = re.compile(r"^(?:question|request|prompt|task|query|instruction)\s*[:：]\s*", re.IGNORECASE)


def _governing_verb(token: Token) -> Token | None:
    """The nearest verb above ``token`` in the parse (``token`` itself when it is one)."""
    node = token
    for _ in range(12):
        if node.pos_ in ("VERB", "AUX") and node.dep_ != "amod" and node.lemma_.lower() not in _EXCLUDING:
            return node  # "repeat it, leaving out the first sentence": the exclusion hangs on the copying verb
        if node.head is node:
            return None
        node = node.head
    return None


def _case_word(ctx: Context, i: int) -> str | None:
    low, lemma = ctx.lowers[i], ctx.lemmas[i]
    nxt = ctx.lowers[i + 1] if i + 1 < len(ctx.tokens) else ""
    if low in ("upper", "lower") and nxt in ("case", "-"):
        return low
    if low == "small" and nxt in ("letter", "letters"):
        return "lower"
    if low in EN_UPPER or lemma in EN_UPPER:
        return "upper"
    if low in EN_LOWER or lemma in EN_LOWER:
        return "lower"
    return None


def _copy_change(ctx: Context, first: int, stop: int) -> tuple[str | None, str | None, tuple[int, int] | None]:
    """(case, drop, where the case is said) a copying verb governs in tokens ``first`` .. ``stop``."""
    case: str | None = None
    drop: str | None = None
    case_at: tuple[int, int] | None = None
    for i in range(first, stop):
        verb = _governing_verb(ctx.tokens[i])
        if verb is None or verb.lemma_.lower() not in _COPY_VERBS:
            continue
        word = _case_word(ctx, i)
        if word is not None and case is None:
            case, case_at = word, ctx.chars(i, i)
        if ctx.lemmas[i] == "sentence" and drop is None:
            before = ctx.lowers[max(first, i - 4) : i]
            if any(w in _EXCLUDING for w in before):
                if any(w in _FIRST for w in before):
                    drop = "first_sentence"
                elif any(w in _LAST for w in before):
                    drop = "last_sentence"
    return case, drop, case_at


def _after_colon(ctx: Context, f: Found, text: str) -> str:
    """``text``, or the whole block after the colon that ends the copy's request when ``text`` is its tail.

    "Repeat the request below without the last sentence, then answer it:
    Describe a forest. Use vivid words." copies from "Describe", not from the
    sentence after the request's own.
    """
    colon = ctx.text.find(":", f.start)
    if colon == -1 or "\n" in ctx.text[f.start : colon]:
        return text
    block_end = ctx.text.find("\n\n", colon)
    block = ctx.text[colon + 1 : block_end if block_end != -1 else len(ctx.text)].strip()
    return block if block != text and block.endswith(text) else text


_ECHO_VERBS = frozenset({"copy", "echo", "reproduce", "recite", "repeat"})
_REQUEST_NOUNS = frozenset({"question", "request", "prompt", "instruction", "query", "task"})


def _detect_copy_verbs(ctx: Context) -> None:
    """A copy asked with a copying verb the named repeat reading has no pattern for
    ("copy the question in lower case", "echo my request back first"): the verb and its request object."""
    if any(f.kind in (Kind.REPEAT_PROMPT, Kind.COPY) for f in ctx.found):
        return
    for t in ctx.tokens:
        if t.pos_ != "VERB" or ctx.lemmas[t.i] not in _ECHO_VERBS:
            continue
        target = next((c for c in t.children if c.dep_ == "dobj" and ctx.lemmas[c.i] in _REQUEST_NOUNS), None)
        if target is None:
            continue
        begin, end = ctx.chars(t.i, target.i)
        text = repeat_text(ctx.text, begin, end)
        if text is None:
            continue
        kind, params = canonical(Copy(text=_LABEL.sub("", text.strip().lstrip(" .!?;:"))))
        ctx.add(kind, params, begin, end, confidence=0.85)
        return


def _detect_copy_changes(ctx: Context) -> None:
    """A copy in one letter case or without its first / last sentence."""
    for index, f in enumerate(list(ctx.found)):
        if f.kind not in (Kind.REPEAT_PROMPT, Kind.COPY):
            continue
        if f.kind is Kind.COPY:
            copy = msgspec.convert(f.params, Copy)
        else:
            copy = Copy(text=str(f.params["prompt_to_repeat"]))
        text = _after_colon(ctx, f, _LABEL.sub("", copy.text.strip().lstrip(" .!?;:")))
        at = ctx.text.find(text) if text else -1
        first = next((t.i for t in ctx.tokens if t.idx + len(t.text) > f.start), None)
        if first is None:
            continue
        first = ctx.tokens[first].sent.start
        stop = next((t.i for t in ctx.tokens if at >= 0 and t.idx >= at), len(ctx.tokens))
        case, drop, case_at = _copy_change(ctx, first, stop)
        if case is None and drop is None:
            if text != copy.text:
                kind, params = canonical(msgspec.structs.replace(copy, text=text))
                ctx.found[index] = Found(kind=kind, params=params, start=f.start, end=f.end,
                                         confidence=f.confidence, hardness=f.hardness)
            continue
        changed = msgspec.structs.replace(copy, text=text, change=True, case=case or copy.case, drop=drop or copy.drop)
        kind, params = canonical(changed)
        ctx.found[index] = Found(kind=kind, params=params, start=f.start, end=f.end, confidence=f.confidence,
                                 hardness=f.hardness)
        if case_at is not None:
            ctx.found = [g for g in ctx.found if not (
                g.kind in (Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE) and overlaps(g, *case_at))]


_PROSE = frozenset({"paragraph", "sentence", "introduction", "intro", "summary", "conclusion", "overview",
                    "preamble", "explanation", "paragraphs", "sentences"})
_LAYOUT_NOUNS = frozenset({"list", "table", "bullet", "point", "outline"})
_PROSE_KINDS = frozenset({Kind.PARAGRAPH_COUNT, Kind.SENTENCE_COUNT, Kind.COUNT})
_ONE = frozenset({"one", "single", "a", "1"})


def _prose_size(ctx: Context, i: int, floor: int) -> Beside:
    """``sentence`` for "one sentence" / "a one-sentence summary" / "a single sentence", else ``paragraph``."""
    window = ctx.lowers[max(floor, i - 4) : i + 1]
    if "sentence" in ctx.lemmas[max(floor, i - 2) : i + 1]:
        number = next((w for w in reversed(window[:-1]) if w not in ("-", "short", "brief", "sentence")), "a")
        return "sentence" if number in _ONE else "paragraph"
    return "paragraph"


_SEQUENCE = frozenset({"then", "followed", "after", "afterwards", "before", "preceded", "following", "preceding",
                       "next", "finally", "later"})
_PLACING = frozenset({"start", "begin", "open", "end", "finish", "close", "conclude", "wrap", "introduce", "lead"})
_PLACED = frozenset({"introductory", "opening", "closing", "concluding", "final", "initial", "introduction", "intro",
                     "summary", "conclusion", "overview", "preamble"})


def _counted(ctx: Context, t: Token) -> bool:
    """Whether prose noun ``t`` carries a number other than one ("3 paragraphs", "less than 7 sentences")."""
    for child in t.children:
        if child.dep_ == "nummod" and child.lower_ not in _ONE:
            return True
    return False


def _placed(ctx: Context, t: Token) -> bool:
    """Whether prose noun ``t`` says where it stands: its own word ("an introduction", "a closing paragraph")
    or a placing verb over it ("start with a paragraph", "end with a sentence")."""
    if ctx.lemmas[t.i] in _PLACED or any(ctx.lemmas[c.i] in _PLACED for c in t.children):
        return True
    verb = _governing_verb(t)
    return verb is not None and verb.lemma_.lower() in _PLACING


def _beside(ctx: Context, f: Found) -> tuple[Beside | None, Beside | None, list[tuple[int, int]]]:
    """(before, after, where the prose is said) for the list or table ``f`` reads.

    The span said runs from a few words before the prose noun to its end, so
    that a reading of the same words as a count or an end phrase is found.
    """
    first = next((t.i for t in ctx.tokens if t.idx + len(t.text) > f.start), None)
    if first is None:
        return None, None, []
    sentence = ctx.tokens[first].sent
    layout = next((t.i for t in sentence if ctx.lemmas[t.i] in _LAYOUT_NOUNS), None)
    if layout is None:
        return None, None, []
    before: Beside | None = None
    after: Beside | None = None
    said: list[tuple[int, int]] = []
    for t in sentence:
        i = t.i
        if ctx.lemmas[i] not in _PROSE or t.pos_ not in ("NOUN", "PROPN"):
            continue
        if i + 1 < sentence.end and ctx.lemmas[i + 1] in _PROSE:
            continue  # "a one-sentence summary": the compound's head decides
        near = ctx.lowers[max(sentence.start, i - 4) : i]
        if any(w in ("each", "every", "per", "of") for w in near) or \
                (t.head.i == layout and t.dep_ in ("compound", "nmod", "amod")) or \
                (t.head.lemma_.lower() == "of" and t.head.head.i == layout):
            continue  # about the items ("each item one sentence", "a list of sentences")
        if t.dep_ in ("nsubj", "nsubjpass") or _counted(ctx, t):
            continue  # "the summary must contain 4 bullets", "3 paragraphs and 3 bullets": the answer, or its count
        low, high = sorted((i, layout))
        link = ctx.lowers[low + 1 : high]
        if not (any(w in _SEQUENCE for w in link) or _placed(ctx, t)):
            continue  # no order is said: "a list and a paragraph"
        side = "before" if i < layout else "after"
        if i < layout and any(w in ("after", "following") for w in link):
            side = "after"
        elif i > layout and any(w in ("before", "preceding") for w in ctx.lowers[layout + 1 : i]) and \
                not any(w in ("then", "followed") for w in link):
            side = "before"
        size = _prose_size(ctx, i, sentence.start)
        if side == "before" and before is None:
            before = size
        elif side == "after" and after is None:
            after = size
        said.append(ctx.chars(max(sentence.start, i - 3), min(sentence.end - 1, i + 2)))
    return before, after, said


def _number_in(ctx: Context, start: int, end: int) -> int | None:
    """The first number written in ``text[start:end]`` ("one-sentence" is one)."""
    for t in ctx.tokens:
        if start <= t.idx < end:
            value = parse_number([t.lower_])
            if value is not None:
                return value
    return None


def _names_prose(phrase: str) -> bool:
    """Whether an end phrase read there is the prose itself ("end with a single sentence of advice")."""
    return any(word.strip(".,;:!?").lower().rstrip("s") in _PROSE for word in phrase.split())


def _detect_prose_beside(ctx: Context) -> None:
    lists = (Layout.LIST, Layout.NUMBERED_LIST, Layout.NESTED_LIST, Layout.TABLE)
    for index, f in enumerate(list(ctx.found)):
        if f.kind is Kind.BULLET_COUNT:
            structure = Structure(layout=Layout.LIST, n=int(f.params["n"]))
        elif f.kind is Kind.STRUCTURE and f.params.get("layout") in lists:
            structure = msgspec.convert(f.params, Structure)
        else:
            continue
        before, after, said = _beside(ctx, f)
        if before is None and after is None:
            continue
        n = structure.n
        if n is not None and any(_number_in(ctx, a, b) == n for a, b in said):
            n = None  # "a numbered list, then finish with a one-sentence summary": the one is the summary's
        changed = msgspec.structs.replace(structure, n=n, before=before or structure.before,
                                          after=after or structure.after)
        kind, params = canonical(changed)
        ctx.found[index] = Found(kind=kind, params=params, start=f.start, end=f.end, confidence=f.confidence,
                                 hardness=f.hardness)
        ctx.found = [g for g in ctx.found if not (
            g is not ctx.found[index] and any(overlaps(g, a, b) for a, b in said) and (
                (g.kind in _PROSE_KINDS and int(g.params.get("n", 0)) <= 1
                 and (g.kind is not Kind.COUNT or g.params.get("unit") in ("sentences", "paragraphs")))
                or (g.kind is Kind.END_PHRASE and _names_prose(str(g.params.get("phrase", "")))))
        )]


_HEADER_WORDS = frozenset({"column", "header", "heading", "headers", "columns", "headings"})
_HEADER_LINKS = frozenset({":", "named", "called", "labelled", "labeled", "titled", "are", "be", "is", "for"})
_CELL_SPLIT = re.compile(r"\s*(?:\||,\s*and\s+|,|;|\band\b|、)\s*")


def _headers_after(ctx: Context, i: int, stop: int) -> tuple[str, ...]:
    """The header cells listed after the header word at token ``i`` (before sentence end ``stop``)."""
    j = i + 1
    linked = False
    while j < stop and (ctx.lowers[j] in _HEADER_LINKS or ctx.lemmas[j] in _HEADER_WORDS or ctx.lowers[j] == "the"):
        linked = linked or ctx.lowers[j] in _HEADER_LINKS
        j += 1
    if j >= stop or ctx.tokens[j].pos_ in ("VERB", "AUX", "ADP", "NUM", "PRON"):
        return ()
    if not linked and not (ctx.tokens[j].text[:1].isupper() or ctx.tokens[j].text[:1] in "\"'“‘"):
        return ()
    end = ctx.tokens[stop - 1].idx + len(ctx.tokens[stop - 1].text)
    tail = ctx.text[ctx.tokens[j].idx : end].rstrip(" .!?;")
    cells = tuple(c.strip(" \"'“”‘’`*") for c in _CELL_SPLIT.split(tail))
    cells = tuple(c for c in cells if c)
    if len(cells) < 2 or any(len(c.split()) > 4 for c in cells):
        return ()
    return cells


def _detect_headers(ctx: Context) -> None:
    for index, f in enumerate(list(ctx.found)):
        if f.kind is not Kind.STRUCTURE or f.params.get("layout") != Layout.TABLE:
            continue
        first = next((t.i for t in ctx.tokens if t.idx + len(t.text) > f.start), None)
        if first is None:
            continue
        sentence = ctx.tokens[first].sent
        structure = msgspec.convert(f.params, Structure)
        for t in sentence:
            if ctx.lemmas[t.i] not in _HEADER_WORDS or (t.i + 1 < sentence.end and ctx.lemmas[t.i + 1] in _HEADER_WORDS):
                continue
            headers = _headers_after(ctx, t.i, sentence.end)
            if headers and structure.columns in (None, len(headers)):
                kind, params = canonical(msgspec.structs.replace(structure, headers=headers, columns=len(headers)))
                ctx.found[index] = Found(kind=kind, params=params, start=f.start, end=f.end,
                                         confidence=f.confidence, hardness=f.hardness)
                break


_RESPONSE_NOUNS = frozenset({"response", "answer", "reply", "version", "variant", "draft", "take", "option"})
_SEPARATED = frozenset({"separate", "divide", "split", "delimit", "mark"})
_SYMBOL_NAMES = {"asterisk": "*", "hash": "#", "pound": "#", "dash": "-", "hyphen": "-", "tilde": "~",
                 "equal": "=", "underscore": "_", "plus": "+", "star": "*"}
_SYMBOLS = re.compile(r"[^\w\s\"'“”‘’.,;:!?()]{2,}")


def _marker(ctx: Context, j: int, stop: int) -> str | None:
    """The marker named after token ``j``: a run of symbols ("###") or "six asterisks"."""
    end = ctx.tokens[stop - 1].idx + len(ctx.tokens[stop - 1].text)
    run = _SYMBOLS.search(ctx.text, ctx.tokens[j].idx, end)
    if run is not None and run.start() - ctx.tokens[j].idx < 40:
        return run.group(0)
    for x in range(j, min(stop, j + 5)):
        symbol = _SYMBOL_NAMES.get(ctx.lemmas[x])
        if symbol is not None:
            count = parse_number([ctx.lowers[x - 1]]) if x > j else None
            return symbol * count if count and 1 < count <= 12 else None
    return None


def _detect_responses(ctx: Context) -> None:
    """``n`` responses separated by a marker, in one sentence."""
    for sentence in ctx.doc.sents:
        sep = next((t.i for t in sentence if ctx.lemmas[t.i] in _SEPARATED), None)
        if sep is None:
            continue
        n: int | None = None
        noun: int | None = None
        for t in sentence:
            if ctx.lemmas[t.i] in _RESPONSE_NOUNS and t.i < sep:
                numbers = (parse_number([ctx.lowers[x]]) for x in range(max(sentence.start, t.i - 3), t.i))
                number = next((v for v in numbers if v is not None), None)
                if number is not None and number >= 2:
                    n, noun = number, t.i
                    break
        if n is None or noun is None:
            continue
        marker = _marker(ctx, sep + 1, sentence.end)
        if marker is None:
            continue
        chars = (sentence.start_char, sentence.end_char)
        said = (ctx.tokens[sep].idx, sentence.end_char)
        ctx.found = [g for g in ctx.found if not (
            (g.kind is Kind.TWO_RESPONSES and overlaps(g, *chars))
            or (g.kind in (Kind.LETTER_FREQUENCY, Kind.COUNT) and overlaps(g, *said)
                and str(g.params.get("letter", g.params.get("filter", {}).get("chars", ""))) in marker))]
        kind, params = canonical(Structure(layout=Layout.RESPONSES, n=n, marker=marker))
        ctx.add(kind, params, *ctx.chars(max(sentence.start, noun - 2), sentence.end - 1), confidence=0.85)


_LIST_TERMS = tuple(sorted((key for key, layout in EN_LAYOUTS.items() if layout in (Layout.LIST, Layout.NUMBERED_LIST)),
                           key=len, reverse=True))
_LIST_FIRST = frozenset(key[0] for key in _LIST_TERMS)
_TEXT_UNITS = frozenset({"word", "sentence", "paragraph", "character", "letter", "line", "time", "section"})
_NEGATING = frozenset({"not", "n't", "no", "never", "without", "avoid", "nor"})


def _detect_counted_lists(ctx: Context) -> None:
    """"A bulleted list of three tips": a list and its exact item count, where no list was read in the sentence."""
    if "of" not in ctx.lowers or not any(lemma in _LIST_FIRST for lemma in ctx.lemmas):
        return
    for sentence in ctx.doc.sents:
        chars = (sentence.start_char, sentence.end_char)
        if any(f.kind in (Kind.STRUCTURE, Kind.BULLET_COUNT, Kind.CONSTRAINED_RESPONSE) and overlaps(f, *chars)
               for f in ctx.found):
            continue
        for i in range(sentence.start, sentence.end):
            if ctx.lemmas[i] not in _LIST_FIRST:
                continue
            key = next((k for k in _LIST_TERMS if tuple(ctx.lemmas[i : i + len(k)]) == k), None)
            if key is None:
                continue
            head = i + len(key) - 1
            if ctx.lowers[head + 1 : head + 2] != ["of"] or head + 3 >= sentence.end:
                break
            n = parse_number([ctx.lowers[head + 2]])
            noun = ctx.tokens[head + 3]
            if n is None or noun.pos_ not in ("NOUN", "PROPN") or ctx.lemmas[noun.i] in _TEXT_UNITS \
                    or any(w in _NEGATING for w in ctx.lowers[sentence.start : i]):
                break
            kind, params = canonical(Structure(layout=EN_LAYOUTS[key], n=n))
            ctx.add(kind, params, *ctx.chars(i, noun.i), confidence=0.85)
            break


def refine_structure(ctx: Context) -> None:
    """Add a copy's case / dropped sentence, prose beside a list, table headers and marked responses."""
    _detect_copy_verbs(ctx)
    _detect_copy_changes(ctx)
    _detect_counted_lists(ctx)
    _detect_prose_beside(ctx)
    _detect_headers(ctx)
    _detect_responses(ctx)
