"""Requirements that relate the pieces of the answer to one another or name a word inside one (Chinese).

The Chinese side of :mod:`reasoning.constraints.extract.en.sequence`:

- 第二句话必须包含“风险”这个词 / “风险”一词要出现在第三段 / 最后一句要提到“未来”:
  ``position(sentences, k=2, contains, 风险)``; 第四句的第二个词是“河流”: the word
  inside it (``word=2``);
- 最后一行写“敬礼！” / 倒数第二行写“此致”: ``position(lines, k=-1, is, 敬礼！)``; 每一段的结尾都必须是“值得一读。”:
  ``position(paragraphs, k=0, ends_with, 值得一读。)`` (a mark alone: the wrapper ``wrap(paragraphs, "", "！")``),
  第一句的开头是“今天”: ``starts_with``; a Latin word named bare (第二段必须提到 knife 这个词) as quoted;
- 每句话比前一句多两个字 / 每段比上一段少十个字: ``spread(words, step=±n)`` (a Han
  character is a word, as the word count counts it);
- 每段的最后一个词要和第一个词相同 / 每段以开头的词结尾: ``same_as=first_word``;
  每句话的最后一个词是下一句的第一个词 / 每句都以上一句的最后一个词开头:
  ``same_as=previous_last_word``.

The keyword or position readings taken from the same words are replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reasoning.constraints.extract.en.sequence import inside_word
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.form import Position, Spread, Unit, canonical
from reasoning.constraints.form.model import Echo, Form
from reasoning.constraints.model import Kind
from reasoning.constraints.quantities import ZH_NUMBER, parse_zh_number

__all__ = ["refine_sequence_chinese"]

_PIECES: Mapping[str, Unit] = {"句": Unit.SENTENCES, "段": Unit.PARAGRAPHS, "行": Unit.LINES,
                               "要点": Unit.BULLETS, "条": Unit.BULLETS, "项": Unit.BULLETS}
_PIECE = r"(?:个)?(?P<piece>句话|句子|句|段落|段|行|要点|条|项)"
_REF = rf"(?:第(?P<k>{ZH_NUMBER})|(?P<last>最后)一?|倒数第(?P<back>{ZH_NUMBER}))"
_QUOTE = r"[“\"「『‘'](?P<text>[^”\"」』’'\n]{1,20})[”\"」』’']"
_MODAL = r"(?:一定要|必须|需要|要|应该|应|得)"
_CONTAIN = rf"{_MODAL}?(?:包含|包括|含有|出现|提到|提及|使用|用到|用上|带有)"
#: A Latin word named bare, as 这个词 / 一词 after it says ("提到 knife 这个词").
_BARE = r"\s*(?P<bare>[A-Za-z][A-Za-z'-]*)\s*(?:这个(?:单)?词|一词)"
_IN_PIECE = (
    re.compile(rf"{_REF}{_PIECE}(?:话)?(?:中|里|内)?{_MODAL}?{_CONTAIN}(?:词语?|关键词)?(?:{_QUOTE}|{_BARE})"),
    re.compile(rf"{_QUOTE}(?:这个词|一词|这个关键词)?(?:必须|需要|要|应该|应|得)?(?:出现|用)在{_REF}{_PIECE}"),
)
#: The k-th piece is a text: 最后一行写“敬礼！”, 倒数第二行写“此致”, 第一句是“你好！”.
_PIECE_IS = re.compile(rf"{_REF}{_PIECE}(?:话)?(?:{_MODAL}|只|就)?(?:写上?|写成|是|为)\s*[：:]?\s*{_QUOTE}")
#: The k-th (每: every) piece's opening or ending is a text: 每一段的结尾都必须是“值得一读。”, 第一句的开头是“今天”.
_PIECE_EDGE = re.compile(rf"(?:{_REF}|(?P<every>每(?:一)?)){_PIECE}(?:话)?的?(?P<side>结尾|末尾|结束|开头|开始)(?:处)?"
                         rf"(?:都|也|均)?{_MODAL}?(?:是|为|用|写)\s*[：:]?\s*{_QUOTE}")
_WORD_IN_PIECE = re.compile(rf"{_REF}{_PIECE}(?:话)?的第(?P<m>{ZH_NUMBER})个(?:词|字)(?:必须|需要|要|应该|应|得)?是{_QUOTE}")
_STEP = re.compile(rf"每(?:一)?{_PIECE}(?:话)?(?:都|要|必须|应该|应)?比(?:前一|上一|前面一|之前一)(?:个)?(?:句|段|行|条|项)(?:话)?"
                   rf"(?:都|要)?(?P<cmp>多|少|长|短)(?P<n>{ZH_NUMBER})个?(?:字|词)")
_EACH = r"每(?:一)?"
_ECHOES: tuple[tuple[re.Pattern[str], Echo], ...] = (
    (re.compile(rf"{_EACH}{_PIECE}(?:话)?(?:的)?(?:最后一个词|结尾的词|末尾的词)(?:要|必须|应该|应)?(?:和|与|跟)"
                r"(?:第一个词|开头的词)(?:相同|一样|一致)"), "first_word"),
    (re.compile(rf"{_EACH}{_PIECE}(?:话)?(?:都|要|必须|应该|应)?以(?:它|其)?开头的(?:那个)?词结尾"), "first_word"),
    (re.compile(rf"{_EACH}{_PIECE}(?:话)?的最后一个词(?:要|必须|应该|应)?(?:是|作为|成为)下一(?:句|段|行)(?:话)?的第一个词"),
     "previous_last_word"),
    (re.compile(rf"{_EACH}{_PIECE}(?:话)?(?:都|要|必须|应该|应)?以(?:上一|前一)(?:句|段|行)(?:话)?的最后一个词开头"),
     "previous_last_word"),
)
_POSITIONS = frozenset({Kind.POSITION, Kind.START_PHRASE, Kind.END_PHRASE, Kind.KEYWORDS_PRESENT,
                        Kind.SENTENCE_COUNT, Kind.WORD_COUNT, Kind.COUNT})


def _unit(piece: str) -> Unit:
    return next(u for key, u in _PIECES.items() if key in piece)


def _k(m: re.Match[str]) -> int | None:
    if m.groupdict().get("every"):
        return 0
    if m.group("last"):
        return -1
    if m.group("back"):
        back = parse_zh_number(m.group("back"))
        return -back if back else None
    return parse_zh_number(m.group("k"))


def _replace(found: list[Found], m: re.Match[str], form: Form) -> list[Found]:
    kept = [f for f in found if not (f.kind in _POSITIONS and overlaps(f, m.start(), m.end()))]
    kind, params = canonical(form)
    kept.append(Found(kind=kind, params=params, start=m.start(), end=m.end(), confidence=0.85))
    return kept


def refine_sequence_chinese(text: str, found: list[Found]) -> list[Found]:
    """``found`` with the Chinese readings of this module substituted (see the module docstring)."""
    for m in _WORD_IN_PIECE.finditer(text):
        k, word = _k(m), parse_zh_number(m.group("m"))
        if k and word:
            found = _replace(found, m, inside_word(_unit(m.group("piece")), k, word, m.group("text")))
    for pattern in _IN_PIECE:
        for m in pattern.finditer(text):
            k = _k(m)
            if k and not any(f.kind is Kind.POSITION and f.params.get("word") and f.start <= m.start() < f.end
                             for f in found):
                found = _replace(found, m, Position(unit=_unit(m.group("piece")), k=k, op="contains",
                                                    text=m.groupdict().get("text") or m.group("bare")))
    for m in _PIECE_IS.finditer(text):
        k = _k(m)
        if k and not any(f.kind in (Kind.POSITION, Kind.START_PHRASE, Kind.END_PHRASE) and overlaps(f, m.start(), m.end())
                         for f in found):  # (最后一句话必须是“再见”: the answer's end, read already)
            found = _replace(found, m, Position(unit=_unit(m.group("piece")), k=k, op="is", text=m.group("text")))
    for m in _PIECE_EDGE.finditer(text):
        k = _k(m)
        if k is None or any(f.kind in (Kind.POSITION, Kind.WRAP) and overlaps(f, m.start(), m.end()) for f in found):
            continue
        unit, said = _unit(m.group("piece")), m.group("text")
        if m.group("side") in ("结尾", "末尾", "结束"):
            if k == 0 and len(said) <= 3 and not any(ch.isalnum() for ch in said):
                kind_params = (Kind.WRAP, {"left": "", "right": said, "unit": unit.value})  # a mark closing each
                found = [f for f in found if not (f.kind in _POSITIONS and overlaps(f, m.start(), m.end()))]
                found.append(Found(kind=kind_params[0], params=kind_params[1], start=m.start(), end=m.end(),
                                   confidence=0.85))
                continue
            found = _replace(found, m, Position(unit=unit, k=k, op="ends_with", text=said))
        else:
            found = _replace(found, m, Position(unit=unit, k=k, op="starts_with", text=said))
    for m in _STEP.finditer(text):
        n = parse_zh_number(m.group("n"))
        if n:
            step = n if m.group("cmp") in ("多", "长") else -n
            found = _replace(found, m, Spread(unit=Unit.WORDS, per=_unit(m.group("piece")), step=step))
    for pattern, echo in _ECHOES:
        for m in pattern.finditer(text):
            form = Position(unit=_unit(m.group("piece")), k=0, op="ends_with" if echo == "first_word" else "starts_with",
                            text="", same_as=echo)
            found = _replace(found, m, form)
    return found
