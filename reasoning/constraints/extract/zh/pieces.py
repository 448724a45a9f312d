"""Chinese requirements said of every piece, of a share of the pieces, or of marked-up spans.

The Chinese side of :mod:`reasoning.constraints.extract.en.pieces`, run after the form's Chinese
steps (:data:`reasoning.constraints.extract.registry.CHINESE`) over
the same text, with the lexicon's per-item words (每句 / 每段 / 每行 / 每个要点
...), delimiters and marks:

- an opening or ending of every piece (每句话都以“我”开头, 每段都以“完毕。”结尾,
  每一行都以。结尾): ``position(unit, k=0, ...)``, a closing mark of each the
  wrapper ``wrap(unit, "", mark)``; the answer's start / end phrase read from
  the same words is replaced;
- the last sentence said to be a text (最后一句必须是“谢谢阅读”): the answer's
  end phrase, not a last sentence starting with it;
- a share of the sentences (至少一半的句子是问句, 30%的句子以问号结尾): a count
  of sentences ending with the mark ``of`` all sentences;
- bold (用粗体标出关键词, 加粗三个术语): a count of ``**`` spans;
- a title in given brackets (第一行写一个用《》括起来的标题): a span between them;
- asides in shown brackets (用（）加入两处旁白): a count of spans between them;
- N items, one per line (写四句口号，每行一句): N lines;
- a one-word verdict from listed options (只用一个词回答：是、否或不确定);
- an opening of every piece by a class (每个要点都以表情符号开头, 每一行都以动词开头,
  每句话的第一个字母都要大写): ``position(unit, k=0, word_class=...)``;
- lengths compared between pieces (各句长度相差不超过五个字, 各段字数大致相同):
  ``spread(unit, per, max_diff | max_ratio)``, the counts read there dropped;
- a blank line between paragraphs (段落之间空一行): the paragraph divider, not
  one line (alone: at least two paragraphs);
- a JSON object's named fields (包含字段name和age, 字段为“标题”和“作者”):
  ``json_format`` with ``keys``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from reasoning.constraints.extract.found import Found, counts_paragraphs, overlaps
from reasoning.constraints.extract.lexicon import ZH_PER
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.form import (
    ROUGHLY_EQUAL,
    Count,
    Filter,
    Form,
    Measure,
    Position,
    Predicate,
    Spread,
    Unit,
    WordClass,
    Wrap,
    canonical,
)
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ZH_NUMBER, ZH_RELATIONS_BEFORE, parse_zh_number

__all__ = ["refine_pieces_chinese"]


_QUOTE = r"[“\"「『‘'](?P<q>[^”\"」』’'\n]{1,40})[”\"」』’']"
_MARKS: Mapping[str, str] = {"句号": "。", "问号": "？", "感叹号": "！", "叹号": "！", "逗号": "，", "分号": "；",
                             "冒号": "：", "省略号": "……"}
_ALL_PIECES: Mapping[str, Unit] = {"所有要点": Unit.BULLETS, "全部要点": Unit.BULLETS, "所有的要点": Unit.BULLETS,
                                   "所有句子": Unit.SENTENCES, "所有的句子": Unit.SENTENCES, "所有段落": Unit.PARAGRAPHS,
                                   "所有的段落": Unit.PARAGRAPHS, "所有行": Unit.LINES}
_PER = alternation(list(ZH_PER) + ["每个要点", "每一个要点", "每条要点", "每一条要点", "每条", "每一条", "每项", "每个条目",
                                    "每个列表项"])
_CLASS_PER = _PER + "|" + alternation(list(_ALL_PIECES))
"""The pieces a class opening is said of: every one, or all of them (所有要点都以动词开头; 所有句子都以感叹号结尾 is
the share reading's)."""
_EVERY_PIECE = re.compile(
    r"(?P<per>" + _PER + r")(?:话)?(?P<last>的?最后一句(?:话)?)?(?:都|均)?(?:必须|应该|应|要|须|需|需要|一律)?(?:以|用)\s*"
    r"(?:" + _QUOTE + r"|(?P<mark>" + alternation(list(_MARKS)) + r")|(?P<lit>[。？！?!.…；;：:✅⭐•\-—]{1,3}|[^\s\w，,]))"
    r"\s*(?:作为|来)?(?P<op>开头|开始|打头|结尾|结束|收尾)"
)
_ITEM_PER = {"每个要点": Unit.BULLETS, "每一个要点": Unit.BULLETS, "每条要点": Unit.BULLETS, "每一条要点": Unit.BULLETS,
             "每条": Unit.BULLETS, "每一条": Unit.BULLETS,
             "每项": Unit.BULLETS, "每个条目": Unit.BULLETS, "每个列表项": Unit.BULLETS, **_ALL_PIECES}
_LAST_IS = re.compile(r"(?:回答|答案|回复|全文)?的?最后一句(?:话)?(?:必须|应该|应|要|须|需)?(?:是|为|写)\s*" + _QUOTE)
_ANSWER_LAST = re.compile(r"(?:回答|答案|回复|全文)的?(?:最后|末尾|结尾)(?:处)?(?:必须|应该|应|要|须|需|请)?(?:写上|加上|附上|写|附)\s*"
                          + _QUOTE)
_FIRST_IS = re.compile(r"(?:回答|答案|回复|全文)?的?第一句(?:话)?(?:必须|应该|应|要|须|需)?(?:是|为|写)\s*" + _QUOTE)
_SHARE = re.compile(
    r"(?P<rel>" + alternation(list(ZH_RELATIONS_BEFORE)) + r")?\s*"
    r"(?P<share>一半|半数|大多数|多数|大部分|所有|全部|三分之一|四分之一|三分之二|百分之(?P<pct>" + ZH_NUMBER + r")|(?P<num>\d+)\s*[%％])"
    r"(?:以上)?的?(?:句子|句话|句)(?:都|均)?(?:必须|应该|应|要|须|需)?(?:是|为|以|用)?"
    r"(?P<kind>疑问句|问句|问题|问号|感叹句|感叹号)"
)
_SHARES: Mapping[str, float] = {"一半": 0.5, "半数": 0.5, "大多数": 0.5, "多数": 0.5, "大部分": 0.5, "所有": 1.0,
                                "全部": 1.0, "三分之一": 1 / 3, "四分之一": 0.25, "三分之二": 2 / 3}
_BOLD = re.compile(r"(?P<neg>不要|不得|禁止|别|不能|避免)?(?:(?:使用|用|以|采用)(?:粗体|黑体)|加粗|(?:粗体|黑体)(?:显示|标出|标注|突出|表示|写))")
_BOLD_COUNT = re.compile(r"(?:粗体|加粗)(?:标出|显示|突出)?(?P<num>" + ZH_NUMBER + r")\s*(?:个|处|条)")
_COUNT_BEFORE_BOLD = re.compile(r"(?P<num>" + ZH_NUMBER + r")\s*(?:个|处|条)[^，。；]{0,8}?(?:加粗|粗体)")
_PAIRS = ("【】", "《》", "〈〉", "「」", "『』", "〔〕", "（）", "()", "[]", "{}")
_PAIR = re.compile("|".join(re.escape(p) for p in _PAIRS))
_SPANS_COUNT = re.compile(r"(?P<num>" + ZH_NUMBER + r")\s*(?:处|个|条|段|句)")
#: Words placing a piece at the answer's opening (开头先给一个标题, 第一行写标题).
_OPENING_LINE = re.compile(r"开头|第一行|首行|最前面|开篇")
#: A count of the answer's own sentences or paragraphs (用一句话, 两段话), not of spans in brackets.
_ANSWER_SENTENCES = re.compile(r"(?:" + ZH_NUMBER + r")\s*(?:句|段)话")
#: The whole answer (or the sentence / passage it is, referred back) put in a pair: 整个, 全部, 这句话.
_WHOLE_ZH = re.compile(r"整个|全部|整段|整篇|全文|[这那](?:句|段)话")
_ONE_PER_LINE = re.compile(
    r"(?P<num>" + ZH_NUMBER + r")\s*(?:个|条|句|项|首)?(?P<noun>[^\s，,。；0-9]{1,6}?)[，,]?\s*每(?:行|一行)(?:一|1)(?:个|条|句|项|首)?")
_VERDICT = re.compile(
    r"(?:只|仅)?(?:用|以)?(?:一个|一)(?:词|字)(?:来)?(?:回答|作答|回复)[^：:]{0,6}[：:]\s*(?P<list>[^。\n]{1,40})")
_SPREAD = re.compile(r"(?:长度|字数|句长|篇幅)[^。；\n]{0,8}?(?:相差|差距|差别|之差)|(?:相差|差距)[^。；\n]{0,6}?(?:字|词|句)")
_JSON_ARRAY = re.compile(r"JSON\s*(?:数组|列表|array)", re.IGNORECASE)
_CLASSES: Mapping[str, WordClass] = {"表情符号": "emoji", "表情": "emoji", "emoji": "emoji", "大写字母": "capital",
                                     "小写字母": "lowercase", "数字": "number", "动词": "verb"}
_EVERY_CLASS = re.compile(
    r"(?P<per>" + _CLASS_PER + r")(?:话)?(?:都|均)?(?:必须|应该|应|要|须|需|需要|一律)?(?:以|用)\s*(?:一个|一)?\s*"
    r"(?P<cls>" + alternation(list(_CLASSES)) + r")\s*(?:作为|来)?(?P<op>开头|开始|打头|结尾|结束|收尾)", re.IGNORECASE)
_EDGE_CLASS = re.compile(
    r"(?P<per>" + _CLASS_PER + r")(?:话)?的?(?P<op>开头|结尾|末尾|开始|前面|前边|之前|最前面|后面|最后)(?:处)?(?:都|均)?"
    r"(?:必须|应该|应|要|须|需|需要|一律)?"
    r"(?:放|加|加上|用|是|有|写|放上)?\s*(?:一个|一)?\s*(?P<cls>" + alternation(list(_CLASSES)) + r")", re.IGNORECASE)
_FIRST_LETTER_CASE = re.compile(
    r"(?P<per>" + _CLASS_PER + r")(?:话)?的?(?:(?:第一个|首个|开头的?|首)字母|开头)(?:都|均)?(?:必须|应该|应|要|须|需|需要|一律)?"
    r"(?:是|为|用)?(?P<case>大写|小写)")
_FIRST_CHAR_CLASS = re.compile(
    r"(?P<per>" + _CLASS_PER + r")(?:话)?的?(?:第一个字(?:符)?|首字|第一个词|首个词)(?:都|均)?(?:必须|应该|应|要|须|需|需要|一律)?"
    r"(?:是|为)(?:一个)?(?P<cls>" + alternation(list(_CLASSES)) + r")", re.IGNORECASE)
_ZH_SPREAD_PIECES: Mapping[str, Unit] = {"段": Unit.PARAGRAPHS, "句": Unit.SENTENCES, "行": Unit.LINES,
                                         "要点": Unit.BULLETS, "条": Unit.BULLETS}
_ALIKE = re.compile(r"(?:长度|字数|篇幅|长短)[^。；\n]{0,6}?(?:大致|大体|基本|差不多|大概|尽量)?(?:相同|相等|一致|相当|均衡|接近|差不多)"
                    r"|(?:比|较)(?:其他|其余|别的)的?(?:句子|句|段落|段|行|要点)(?:长|短)"
                    r"|(?:差不多|一样)长")
_SPREAD_LIMIT = re.compile(r"(?P<rel>不超过|不多于|不得超过|最多|少于|小于|不到|在)?\s*(?P<num>" + ZH_NUMBER
                           + r")\s*个?(?P<unit>字符|字母|字|词|单词)")
_PARAGRAPH_GAP = re.compile(r"(?:段落|段)(?:与段落?|和段落?)?(?:之间|间)(?:要|请|需|需要|必须|都|应)?"
                            r"(?:空|留|隔|用|以)(?:出|上)?(?:一|1)?(?:个)?(?:空白?)?行")
_LISTED_FIELDS = re.compile(r"(?:包含|包括|含有|带有|有)\s*(?P<list>[A-Za-z_][A-Za-z0-9_]*(?:\s*(?:、|，|,|和|及|与|以及)\s*"
                            r"[A-Za-z_][A-Za-z0-9_]*)+)"
                            r"\s*(?:这|等)?(?:" + ZH_NUMBER + r")?个?(?:字段|键|属性)")
_QUOTED_FIELDS = re.compile(r"(?P<list>(?:[“\"「][^”\"」\n]{1,20}[”\"」]\s*(?:、|，|,|和|及|与|以及)?\s*)+)(?:这|等)?"
                            r"(?:" + ZH_NUMBER + r")?个?(?:字段|键|属性)")
_JSON_FIELDS = re.compile(r"(?:包含|包括|含有|带有|有)?(?:字段|键|属性)(?:名)?(?:分别)?(?:为|是|有|包括|包含|用|使用|叫)?\s*[：:]?\s*"
                          r"(?P<list>(?:[“\"「]?[\w\u4e00-\u9fff]{1,20}[”\"」]?\s*(?:、|，|,|和|及|与|以及)\s*)*"
                          r"[“\"「]?[\w\u4e00-\u9fff]{1,20}?[”\"」]?)(?=[。；;，,\s]|$|(?:三|两|几)个字段)")


def _clause(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence around ``start..end`` (between 。；！？ or line breaks)."""
    return sentence_bounds(text, start, end, "。；;！!？?\n", with_mark=False)


class _Reader:
    def __init__(self, text: str, found: Sequence[Found]) -> None:
        self.text = text
        self.found = list(found)

    def add(self, form: Form, start: int, end: int) -> None:
        kind, params = canonical(form)
        self.found.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))

    def drop(self, start: int, end: int, kinds: frozenset[Kind] | None = None) -> None:
        self.found = [f for f in self.found if not (
            overlaps(f, start, end) and (kinds is None or f.kind in kinds))]


_PHRASES = frozenset({Kind.END_PHRASE, Kind.START_PHRASE, Kind.POSITION})
_COUNTS = frozenset({Kind.WORD_COUNT, Kind.SENTENCE_COUNT, Kind.PARAGRAPH_COUNT, Kind.COUNT})


def _every_piece(r: _Reader) -> None:
    """每句话都以“我”开头, 每段都以“完毕。”结尾, 每一行都以。结尾, 每个要点以✅开头."""
    for match in _EVERY_PIECE.finditer(r.text):
        per = match.group("per")
        unit = _ITEM_PER.get(per) or ZH_PER[per]
        op = "starts_with" if match.group("op") in ("开头", "开始", "打头") else "ends_with"
        if match.group("last") and op != "ends_with":
            continue  # 每段最后一句以…开头: no form for a sentence inside each piece
        mark = _MARKS.get(match.group("mark") or "") or match.group("lit")
        text = match.group("q") or mark or ""
        if not text.strip():
            continue
        r.drop(match.start(), match.end(), _PHRASES | frozenset({Kind.COUNT, Kind.WRAP}))
        if op == "ends_with" and mark is not None:
            r.found.append(Found(kind=Kind.WRAP, params={"left": "", "right": mark, "unit": unit.value},
                                 start=match.start(), end=match.end(), confidence=0.85))
        else:
            r.add(Position(unit=unit, k=0, op=op, text=text), match.start(), match.end())  # type: ignore[arg-type]


def _first_last_sentence(r: _Reader) -> None:
    """最后一句必须是“谢谢阅读”: the answer ends with it (第一句是…: starts with it)."""
    for pattern, kind in ((_LAST_IS, Kind.END_PHRASE), (_ANSWER_LAST, Kind.END_PHRASE), (_FIRST_IS, Kind.START_PHRASE)):
        for match in pattern.finditer(r.text):
            r.drop(match.start(), match.end(), _PHRASES)
            r.found.append(Found(kind=kind, params={"phrase": match.group("q")}, start=match.start(), end=match.end(),
                                 confidence=0.85))


def _shares(r: _Reader) -> None:
    """至少一半的句子是问句, 30%的句子以问号结尾: a ratio of sentences ending with the mark."""
    for match in _SHARE.finditer(r.text):
        share = match.group("share")
        if match.group("pct"):
            pct = parse_zh_number(match.group("pct"))
            fraction = pct / 100 if pct is not None else None
        elif match.group("num"):
            fraction = int(match.group("num")) / 100
        else:
            fraction = _SHARES.get(share)
        if fraction is None or not 0 < fraction <= 1:
            continue
        before = match.group("rel")
        relation = ZH_RELATIONS_BEFORE[before] if before else (
            Relation.MORE_THAN if share in ("大多数", "多数", "大部分") else Relation.AT_LEAST)
        mark = "?" if "问" in match.group("kind") else "!"
        r.drop(match.start(), match.end(), _COUNTS)
        r.add(Count(unit=Unit.SENTENCES, filter=Filter(ends_with=mark), relation=relation, n=0,
                    of=Measure(unit=Unit.SENTENCES), fraction=round(fraction, 4)), match.start(), match.end())


def _bold(r: _Reader) -> None:
    """用粗体标出关键词, 加粗三个术语, 不要使用粗体: ``**`` spans (IFEval's highlights where *…* is shown)."""
    if re.search(r"(?<!\*)\*[^*\s][^*\n]*\*(?!\*)|斜体", r.text):
        return
    for match in _BOLD.finditer(r.text):
        begin, end = _clause(r.text, match.start(), match.end())
        clause = r.text[begin:end]
        if match.group("neg"):
            relation, n = Relation.AT_MOST, 0
        else:
            counted = _BOLD_COUNT.search(clause) or _COUNT_BEFORE_BOLD.search(clause)
            value = parse_zh_number(counted.group("num")) if counted is not None else None
            relation, n = (Relation.EXACTLY, value) if value is not None else (Relation.AT_LEAST, 1)
        r.drop(begin, end, frozenset({Kind.HIGHLIGHTED_SECTIONS, Kind.WORD_COUNT}))
        r.add(Count(unit=Unit.SPANS, filter=Filter(left="**", right="**", nonempty=True), relation=relation, n=n),
              begin, end)
        return


def _bracket_pairs(r: _Reader) -> None:
    """A bracket pair shown: a title in it (用《》括起来的标题) or a number of asides in it (用（）加入两处旁白)."""
    for match in _PAIR.finditer(r.text):
        left, right = match.group(0)[0], match.group(0)[1]
        begin, end = _clause(r.text, match.start(), match.end())
        clause = r.text[begin:end]
        if "标题" in clause or "题目" in clause:
            r.drop(begin, end, _COUNTS | _PHRASES)
            r.add(Count(unit=Unit.SPANS, filter=Filter(left=left, right=right, nonempty=True),
                        relation=Relation.AT_LEAST, n=1), begin, end)
            if _OPENING_LINE.search(clause):  # 开头先给一个标题: the title is the first line, opening with the mark
                r.add(Position(unit=Unit.LINES, k=1, op="starts_with", text=left), begin, end)
            continue
        shown_at = match.start() - begin
        counts = [m for m in _SPANS_COUNT.finditer(clause) if not _ANSWER_SENTENCES.match(clause, m.start())
                  and not re.search(r"[这那]\s*$", clause[: m.start()])]
        # the number the pair's own verb counts (用（）加入两处旁白), else one before it
        counted = next((m for m in counts if m.start() > shown_at), counts[0] if counts else None)
        if counted is None and _WHOLE_ZH.search(clause):
            # 把这句话整个放在「」里: the whole answer in the pair (一句话 counts the answer's sentences)
            r.add(Wrap(left=left, right=right, unit=Unit.ANSWER), begin, end)
            continue
        value = parse_zh_number(counted.group("num")) if counted is not None else None
        if value is None or any(f.kind is Kind.COUNT and f.params.get("unit") == "spans" and overlaps(f, begin, end)
                                for f in r.found):
            continue
        before = clause[: counted.start()] if counted is not None else ""
        relation = next((rel for word, rel in sorted(ZH_RELATIONS_BEFORE.items(), key=lambda x: -len(x[0]))
                         if before.endswith(word)), Relation.EXACTLY)
        r.drop(begin, end, _COUNTS)
        r.add(Count(unit=Unit.SPANS, filter=Filter(left=left, right=right, nonempty=True), relation=relation,
                    n=value), begin, end)


def _one_per_line(r: _Reader) -> None:
    """写四句口号，每行一句: as many lines as items."""
    for match in _ONE_PER_LINE.finditer(r.text):
        n = parse_zh_number(match.group("num"))
        if n is None or n < 1:
            continue
        r.drop(match.start(), match.end(), _COUNTS)
        r.add(Count(unit=Unit.LINES, relation=Relation.EXACTLY, n=n), match.start(), match.end())


def _verdict(r: _Reader) -> None:
    """只用一个词回答：是、否或不确定."""
    for match in _VERDICT.finditer(r.text):
        options = [o.strip(" “”\"'「」") for o in re.split(r"[、，,/]|或者|或|还是", match.group("list"))]
        options = [o for o in options if o]
        if len(options) < 2 or any(len(o) > 8 for o in options):
            continue
        r.drop(match.start(), match.end(), _COUNTS | frozenset({Kind.KEYWORDS_PRESENT}))
        r.found.append(Found(kind=Kind.CONSTRAINED_RESPONSE, params={"options": options}, start=match.start(),
                             end=match.end(), confidence=0.85))
        return


def _spread_piece(clause: str) -> Unit:
    for word, unit in _ZH_SPREAD_PIECES.items():
        if word in clause:
            return unit
    return Unit.SENTENCES


def _spread(r: _Reader) -> None:
    """各句长度相差不超过五个字 (``max_diff`` 5), 各段字数大致相同 (``max_ratio`` 1.5): ``spread(unit, per)``;
    a length count read from the clause of the difference bounds each piece instead and is dropped (a count of
    the pieces themselves, 三段, stays)."""
    seen: set[int] = set()
    for pattern in (_SPREAD, _ALIKE):
        for match in pattern.finditer(r.text):
            begin, end = _clause(r.text, match.start(), match.end())
            if begin in seen:
                continue
            seen.add(begin)
            clause = r.text[begin:end]
            per = _spread_piece(clause)
            limit = _SPREAD_LIMIT.search(clause, match.start() - begin)
            if limit is not None and pattern is _SPREAD:
                r.found = [f for f in r.found if not (overlaps(f, begin, end) and (
                    f.kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT)
                    or f.kind is Kind.COUNT and f.params.get("unit") in ("words", "characters", "letters")))]
                n = parse_zh_number(limit.group("num"))
                if n is None:
                    continue
                n -= 1 if limit.group("rel") in ("少于", "小于", "不到") else 0
                unit = Unit.CHARACTERS if limit.group("unit") == "字符" else (
                    Unit.LETTERS if limit.group("unit") == "字母" else Unit.WORDS)
                r.add(Spread(unit=unit, per=per, max_diff=n), begin, end)
            elif pattern is _ALIKE:
                unit = Unit.CHARACTERS if "字符" in clause else Unit.WORDS
                r.add(Spread(unit=unit, per=per, max_ratio=ROUGHLY_EQUAL), begin, end)


_OPENING_WORDS = frozenset({"开头", "开始", "打头", "前面", "前边", "之前", "最前面"})
_CLASS_OPENINGS = (_EVERY_CLASS, _EDGE_CLASS, _FIRST_CHAR_CLASS, _FIRST_LETTER_CASE)


def _every_class(r: _Reader) -> None:
    """每个要点都以表情符号开头, 每一行都以动词开头, 每句话的第一个字母都要大写: an opening of every piece by a class.

    Each of the four sayings names the piece (``per``) and either a class (``cls``) or a letter case
    (``case``); one that names a side (``op``) closes the piece unless the side is an opening word,
    one that names none opens it.
    """
    for pattern in _CLASS_OPENINGS:
        for match in pattern.finditer(r.text):
            said = match.groupdict()
            per = said["per"]
            unit = _ITEM_PER.get(per) or ZH_PER[per]
            op: Predicate = "ends_with" if said.get("op") and said["op"] not in _OPENING_WORDS else "starts_with"
            word_class: WordClass = _CLASSES[said["cls"].lower()] if said.get("case") is None else (
                "capital" if said["case"] == "大写" else "lowercase")
            r.drop(match.start(), match.end(),
                   _PHRASES | _COUNTS | frozenset({Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE}))
            r.add(Position(unit=unit, k=0, op=op, text="", word_class=word_class), match.start(), match.end())


def _paragraph_gap(r: _Reader) -> None:
    """段落之间空一行: paragraphs divided by a blank line, not one line; said alone, at least two paragraphs."""
    for match in _PARAGRAPH_GAP.finditer(r.text):
        begin, end = _clause(r.text, match.start(), match.end())
        r.found = [f for f in r.found if not (
            overlaps(f, begin, end) and f.kind is Kind.COUNT and f.params.get("unit") == "lines")]
        if not counts_paragraphs(r.found):
            r.add(Count(unit=Unit.PARAGRAPHS, relation=Relation.AT_LEAST, n=2), match.start(), match.end())


def _json_keys(r: _Reader) -> None:
    """用JSON回答，包含字段name和age / 字段为“标题”和“作者” / 包含“城市”和“温度”两个字段: ``json_format`` with
    those ``keys`` (a count read from 两个字段 is no count of words)."""
    plain = [f for f in r.found if f.kind is Kind.JSON_FORMAT and not f.params]
    if not plain:
        return
    match = _QUOTED_FIELDS.search(r.text, plain[0].start) or _LISTED_FIELDS.search(r.text, plain[0].start) \
        or _JSON_FIELDS.search(r.text, plain[0].start)
    if match is None:
        return
    r.drop(match.start(), match.end(), _COUNTS)
    keys = [k.strip(" “”\"「」") for k in re.split(r"、|，|,|以及|和|及|与", match.group("list"))]
    keys = [k for k in keys if k]
    if any(k.isascii() for k in keys):  # Latin names listed: the Chinese words after them are the sentence's
        keys = [k for k in keys if k.isascii()]
    if not keys:
        return
    r.found = [f for f in r.found if f not in plain]
    r.found.append(Found(kind=Kind.JSON_FORMAT, params={"keys": keys}, start=plain[0].start,
                         end=max(plain[0].end, match.end()), confidence=0.85))


def _json_array(r: _Reader) -> None:
    """用JSON数组回答: JSON whose top level is an array."""
    match = _JSON_ARRAY.search(r.text)
    if match is None:
        return
    r.drop(match.start(), match.end(), frozenset({Kind.JSON_FORMAT}))
    r.found.append(Found(kind=Kind.JSON_FORMAT, params={"schema": {"type": "array"}}, start=match.start(),
                         end=match.end(), confidence=0.85))


def _blank_line_paragraphs(r: _Reader) -> None:
    """分两段回答: paragraphs between blank lines (a generic count), unless ``***`` dividers are asked for."""
    if re.search(r"\*\*\*|分隔符|分割线|分隔线", r.text):
        return
    kept: list[Found] = []
    for f in r.found:
        if f.kind is Kind.PARAGRAPH_COUNT:
            kind, params = canonical(Count(unit=Unit.PARAGRAPHS, relation=Relation.EXACTLY, n=int(f.params["n"])))
            f = Found(kind=kind, params=params, start=f.start, end=f.end, confidence=f.confidence, hardness=f.hardness)
        kept.append(f)
    r.found = kept


_STEPS: Sequence[Callable[[_Reader], None]] = (
    _blank_line_paragraphs,
    _every_piece, _every_class, _first_last_sentence, _shares, _bold, _bracket_pairs, _one_per_line, _verdict, _spread,
    _json_array, _json_keys, _paragraph_gap,
)


def refine_pieces_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """``found`` with the per-piece, share, markup and verdict readings of ``text``."""
    reader = _Reader(text, found)
    for step in _STEPS:
        step(reader)
    return reader.found
