"""Chinese requirements read onto the constraint form, from the lexicon and the segmentation.

The same parts as in English: a unit word of
:data:`~reasoning.constraints.extract.lexicon.ZH_UNITS`, a number and a relation word
(至少 / 不超过 / 以内 ...) on either side of it, a negation (不要 / 禁止 / 不得
...), a per-item word (每句话 / 每段), a delimiter, a layout, an ordinal
position (第三个词 / 最后一句话) and a predicate (是 / 以…开头 / 以…结尾). Matches
must start on a word boundary of the jieba segmentation, so 行 in 银行 or 进行
is no line. Readings that a named kind means exactly are reported as that
kind (全部使用大写字母 is ``all_capitals``).
"""

from __future__ import annotations

import re

from reasoning.constraints.extract.found import Found
from reasoning.constraints.extract.lexicon import (
    ZH_DELIMITERS,
    ZH_LAYOUTS,
    ZH_NO_LIST,
    ZH_PER,
    ZH_POSITION_UNITS,
    ZH_UNITS,
)
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.extract.zh.context import Context
from reasoning.constraints.form import (
    Copy,
    Count,
    Filter,
    Layout,
    Position,
    Structure,
    Unit,
    Wrap,
)
from reasoning.constraints.form.model import Predicate
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import (
    ZH_NUMBER,
    ZH_RELATIONS_AFTER,
    ZH_RELATIONS_BEFORE,
    parse_zh_number,
)

__all__ = [
    "read_answer_ends",
    "read_case",
    "read_copies",
    "read_counts",
    "read_layouts",
    "read_named_counts",
    "read_positions",
    "read_quoted_spans",
    "read_wraps",
]


_NEG = r"(?:禁止|不要|不得|不能|不可|请勿|勿|切勿|避免|不许|不准|严禁|别|不用|无需|不使用|不出现|没有)"
_REL_BEFORE = alternation(list(ZH_RELATIONS_BEFORE))
_REL_AFTER = alternation(list(ZH_RELATIONS_AFTER))
_UNIT = alternation(list(ZH_UNITS))
_PER = alternation(list(ZH_PER))
_VERB = r"(?:使用|用上|用|出现|包含|含有|有|带上|带|加上|放上|加入|添加|写上|写|用到)?"
_QUOTE = r"[“\"「『‘'](?P<q>[^”\"」』’'\n]{1,40})[”\"」』’']"

_NEGATED_UNIT = re.compile(_NEG + _VERB + r"(?:任何|一个|半个)?(?P<unit>" + _UNIT + r")")
_NOT_EVEN_ONE = re.compile(r"(?:一|半)(?:个|处|次|条)?(?P<unit>" + _UNIT + r")(?:都|也)" + _NEG)
"""'一个阿拉伯数字都别写': not even one, so none at all (the number is no count)."""
_COUNT_BEFORE = re.compile(
    r"(?:(?P<per>" + _PER + r")[^，。；,;]{0,6}?)?(?P<rel>" + _REL_BEFORE + r")?\s*(?:要|需要|需|得|应该|应|必须)?" + _VERB
    + r"(?P<num>" + ZH_NUMBER + r")\s*(?:个|处|次|条)?(?P<unit>" + _UNIT + r")(?P<after>" + _REL_AFTER + r")?"
)
_COUNT_AFTER = re.compile(
    r"(?P<unit>" + _UNIT + r")(?:的?(?:数量|个数|总数))?"
    r"(?:[^，。；,;\d]{0,4}(?:用|使用)[^，。；,;\d]{0,6}[，,]\s*)?"  # 问号用得越少越好，最多一个: how it is used, then the bound
    r"(?:必须|应|要|须|需|应该)?(?P<rel>" + _REL_BEFORE + r")\s*"
    + _VERB + r"(?P<num>" + ZH_NUMBER + r")\s*(?:个|处|次|条)?"
)
_PER_WORDS = re.compile(
    r"(?P<per>" + _PER + r")(?:话|都)?(?:必须|应|要|须|需|应该|只能)?(?:包含|有|写)?(?P<rel>" + _REL_BEFORE + r")?"
    r"(?:要|需要|需|得|应该|应|必须)?(?:包含|有|写|使用)?\s*"
    r"(?P<num>" + ZH_NUMBER + r")\s*(?:个)?(?P<unit>字|词|单词|句话|句|个句子)(?P<after>" + _REL_AFTER + r")?"
)
_UPPER = re.compile(r"(?:全部|全都|一律|只|仅|都|完全)?(?:使用|用|以|采用|写成|为)?(?P<case>大写|小写)(?:字母)?(?:书写|来写|回答|作答|形式)?")
_CASE_NEG = re.compile(_NEG + r"(?:使用|用|出现|包含)?(?:任何)?(?P<case>大写|小写)(?:字母)?")
_DELIM = alternation(list(ZH_DELIMITERS))
_WRAP_TARGET = r"整个回答|全部回答|整段回答|整篇回答|整个答案|回答|答案|回复|全文|每句话|每一句|每句|每行|每段"
_WRAP = re.compile(
    r"(?:用|以|使用)(?:一对|一组)?(?P<d1>" + _DELIM + r")(?:把|将)?(?P<t1>" + _WRAP_TARGET
    + r")(?:都)?(?:括起来|包起来|括住|包裹)"
    r"|(?:把|将)?(?P<t2>" + _WRAP_TARGET + r")(?:都)?(?:要|需要|必须|应该|应)?(?:用|放在|放进|写在)(?:一对|一组)?(?P<d2>"
    + _DELIM + r")(?:里|中|内|括起来|包起来)?"
)
_TARGETS = {"每句话": Unit.SENTENCES, "每一句": Unit.SENTENCES, "每句": Unit.SENTENCES, "每行": Unit.LINES,
            "每段": Unit.PARAGRAPHS}
_LAYOUT = re.compile(r"(?:用|以|使用|采用|做成|整理成|列成|呈现为|写成|给出|提供)(?:一个|一张|一份)?(?:[^，。；,;]{1,6}的)?(?P<layout>"
                     + alternation(list(ZH_LAYOUTS)) + r")")
_LIST_ITEMS = re.compile(r"(?:正好|恰好|刚好)?(?:列出|写出|给出|举出|写|包含|有|分)?(?P<num>" + ZH_NUMBER + r")\s*(?:个|条|项|点)")
_ANSWER_END = re.compile(
    r"(?:整个回答|回答|答案|回复|全文)的?(?P<where>开头|结尾|最后)(?:必须|应该|应|要|须|需)?(?:是|为|写)\s*" + _QUOTE)
_TABLE_ROWS = re.compile(r"(?:正好|恰好|刚好)?(?:有|包含|列出|写)?(?P<num>" + ZH_NUMBER + r")\s*行(?:数据|内容)?")
_QUOTED_SPANS = re.compile(
    r"(?:用|以|使用)(?P<d>" + alternation(list(ZH_DELIMITERS)) + r")(?:引用|标出|括出|括起|标注|引出)(?P<rel>" + _REL_BEFORE
    + r")?\s*(?P<num>" + ZH_NUMBER + r")\s*(?:句|处|个|段|条)")
_NESTED = re.compile(
    r"(?P<n1>" + ZH_NUMBER + r")\s*(?:个|条)(?:要点|条目|点|项)[，,、]?\s*每(?:个|一个|一|条)?(?:要点|条目|点|项)(?:下面|下方|下)?(?:再|都)?"
    r"(?:分出|列出|包含|有|写|分成|分为)(?P<n2>" + ZH_NUMBER + r")\s*(?:个|条)(?:小点|子要点|子项|子条目|小项)")
_NO_LIST = re.compile(_NEG + r"(?:使用|用|出现|列出|写成|采用)?(?:任何)?(?:" + alternation(list(ZH_NO_LIST)) + r")")
_ORDINAL = r"(?P<ord>倒数第[一二三四五六七八九十\d]+|第[一二三四五六七八九十\d]+|最后一|最后)"
_POSITION = re.compile(
    _ORDINAL + r"(?P<unit>" + alternation(list(ZH_POSITION_UNITS)) + r")(?:话)?(?:必须|应该|应|要|须|需|只能)?"
    r"(?:(?P<is>是)\s*(?:" + _QUOTE + r"|(?P<w>[A-Za-z][\w'-]*))|以\s*" + _QUOTE.replace("?P<q>", "?P<q2>")
    + r"\s*(?P<op>开头|开始|结尾|结束)|以(?P<mark>问号|感叹号|句号)(?P<op3>结尾|结束)"
    r"|(?P<op2>开头|结尾)(?:必须|要|应)?(?:是|用)\s*" + _QUOTE.replace("?P<q>", "?P<q3>") + ")"
)
_COPY = re.compile(r"(?:先|首先)(?P<how>用自己的话|换一种说法|改写|改述|转述)?(?:重复|复述|改写|转述|改述)(?:一遍|一下)?(?:我的|我|这个|该|上面的|下面的|以下的?)?(?:问题|请求|题目|指令)")


_MARK_TEXT = {"问号": "?", "感叹号": "!", "句号": "。"}


def _relation(before: str | None, after: str | None) -> Relation:
    if before:
        return ZH_RELATIONS_BEFORE[before]
    if after:
        return ZH_RELATIONS_AFTER[after]
    return Relation.EXACTLY


def _k(label: str) -> int | None:
    """1 for 第一, -1 for 最后, -2 for 倒数第二 (counted from the end)."""
    if label.startswith("最后"):
        return -1
    if label.startswith("倒数第"):
        back = parse_zh_number(label.removeprefix("倒数第"))
        return -back if back is not None else None
    return parse_zh_number(label.removeprefix("第"))


_COUNTED_KINDS = frozenset({Kind.WORD_COUNT, Kind.SENTENCE_COUNT, Kind.PARAGRAPH_COUNT})


def _ordinal_or_each(text: str, at: int) -> bool:
    """A number after 第 / 每 / 任何 / 最后 (第一行, 每一行, 任何一段, 最后一句) is an ordinal or a quantifier, no count."""
    return text[max(0, at - 1) : at] in ("第", "每") or text[max(0, at - 2) : at] in ("任何", "最后")


#: "不含空格", "不计空格", "空格不计": a character count without white space.
_SPACES_LEFT_OUT = re.compile(r"(?:不含|不计|不算|不包括|不包含|除去|去掉|除)空格|空格(?:不计|不算|除外)|非空白")


def read_counts(r: Context) -> None:
    for match in _PER_WORDS.finditer(r.text):
        n = parse_zh_number(match.group("num"))
        if n is None:
            continue
        unit = Unit.SENTENCES if "句" in match.group("unit") else Unit.WORDS
        per = ZH_PER[match.group("per")]
        r.drop(match.start(), match.end(), _COUNTED_KINDS)
        r.add(Count(unit=unit, relation=_relation(match.group("rel"), match.group("after")), n=n, per=per),
              match.start(), match.end())
    for pattern in (_COUNT_BEFORE, _COUNT_AFTER):
        for match in pattern.finditer(r.text):
            unit_word = match.group("unit")
            at = match.start("unit")
            # A unit right after its number ("三行") is one even where the segmentation joins them.
            on_boundary = at in r.starts or (at - 1 in r.starts and r.text[at - 1] == "个") or (
                pattern is _COUNT_BEFORE and at == match.end("num"))
            if not on_boundary or r.taken(match.start(), match.end(), frozenset({Kind.COUNT})):
                continue
            n = parse_zh_number(match.group("num"))
            if n is None or _NOT_EVEN_ONE.match(r.text, match.start("num")) or _ordinal_or_each(r.text, match.start("num")):
                continue
            unit, fields = ZH_UNITS[unit_word]
            if unit is Unit.CHARACTERS and not fields and _SPACES_LEFT_OUT.search(r.text):
                fields = {"nonspace": True}
            groups = match.groupdict()
            per_word = groups.get("per")
            per_unit = ZH_PER[per_word] if per_word else None
            relation = _relation(groups.get("rel"), groups.get("after"))
            if per_unit is not None and n == 1 and relation is Relation.EXACTLY and not groups.get("rel") \
                    and re.search(r"(?:包含|含有|有|带有|带)(?:一个|一处|一)$", r.text[match.start() : match.end("num") + 1]):
                relation = Relation.AT_LEAST  # 每句话都要包含一个数字: at least one in each
            r.drop(match.start(), match.end(), _COUNTED_KINDS)
            r.add(Count(unit=unit, filter=Filter(**fields), relation=relation, n=n, per=per_unit), match.start(),
                  match.end())
    for match in _NOT_EVEN_ONE.finditer(r.text):
        unit, fields = ZH_UNITS[match.group("unit")]
        if not r.taken(match.start(), match.end(), frozenset({Kind.COUNT, Kind.NO_COMMA})):
            r.add(Count(unit=unit, filter=Filter(**fields), relation=Relation.AT_MOST, n=0), match.start(), match.end())
    for match in _NEGATED_UNIT.finditer(r.text):
        if r.taken(match.start(), match.end(), frozenset({Kind.COUNT, Kind.NO_COMMA})):
            continue
        unit, fields = ZH_UNITS[match.group("unit")]
        if unit is Unit.LINES:
            continue
        r.add(Count(unit=unit, filter=Filter(**fields), relation=Relation.AT_MOST, n=0), match.start(), match.end())


_NAMED_COUNT = re.compile(
    r"(?P<rel>" + _REL_BEFORE + r")(?:写|使用|包含|有|用)\s*(?P<num>" + ZH_NUMBER + r")\s*(?:个)?(?P<unit>字|个字|句话|句|个句子)"
)


def read_named_counts(r: Context) -> None:
    """"至少写3句话": a relation before a verb before the number, which the named rules read as exact."""
    for match in _NAMED_COUNT.finditer(r.text):
        n = parse_zh_number(match.group("num"))
        if n is None or r.taken(match.start(), match.end(), frozenset({Kind.COUNT})):
            continue
        kind = Kind.SENTENCE_COUNT if "句" in match.group("unit") else Kind.WORD_COUNT
        r.drop(match.start(), match.end(), frozenset({kind}))
        r.found.append(Found(kind=kind, params={"relation": str(ZH_RELATIONS_BEFORE[match.group("rel")]), "n": n},
                             start=match.start(), end=match.end()))


def read_case(r: Context) -> None:
    for match in _CASE_NEG.finditer(r.text):
        forbidden = "upper" if match.group("case") == "大写" else "lower"
        r.add(Count(unit=Unit.LETTERS, filter=Filter(case=forbidden), relation=Relation.AT_MOST, n=0),  # type: ignore[arg-type]
              match.start(), match.end())
        return
    for match in _UPPER.finditer(r.text):
        if r.taken(match.start(), match.end(), frozenset({Kind.CAPITAL_WORD_FREQUENCY, Kind.ALL_LOWERCASE,
                                                          Kind.ALL_CAPITALS})):
            continue
        if re.search(r"(?:首字母|开头|第一个字母)$", r.text[max(0, match.start() - 5) : match.start()]):
            continue
        if match.group("case") == "小写" and not (match.group(0) != "小写" or re.match(r"字母", r.text[match.end():])):
            continue  # a bare 小写 names no requirement (小写的 x)
        other = "lower" if match.group("case") == "大写" else "upper"
        r.add(Count(unit=Unit.LETTERS, filter=Filter(case=other), relation=Relation.AT_MOST, n=0),  # type: ignore[arg-type]
              match.start(), match.end())
        return


def read_wraps(r: Context) -> None:
    for match in _WRAP.finditer(r.text):
        delimiter = match.group("d1") or match.group("d2")
        target = match.group("t1") or match.group("t2")
        left, right = ZH_DELIMITERS[delimiter]
        r.add(Wrap(left=left, right=right, unit=_TARGETS.get(target, Unit.ANSWER)), match.start(), match.end())


def read_layouts(r: Context) -> None:
    for match in _NO_LIST.finditer(r.text):
        r.add(Structure(layout=Layout.NO_LIST), match.start(), match.end())
        return
    for match in _NESTED.finditer(r.text):
        top, sub = parse_zh_number(match.group("n1")), parse_zh_number(match.group("n2"))
        if top is None or sub is None:
            continue
        # "三个要点，每个要点下面再分出两个小点": three top items, two nested under each
        r.drop(match.start(), match.end(), frozenset({Kind.BULLET_COUNT, Kind.COUNT}))
        r.add(Structure(layout=Layout.NESTED_LIST, n=top), match.start(), match.end())
        r.add(Count(unit=Unit.NESTED_BULLETS, relation=Relation.EXACTLY, n=top * sub), match.start(), match.end())
        return
    for match in _LAYOUT.finditer(r.text):
        clause_start, clause_end = sentence_bounds(r.text, match.start(), match.end(), "。；;\n", with_mark=False)
        if r.taken(clause_start, clause_end, frozenset({Kind.BULLET_COUNT})):
            continue  # the bullet count of the same sentence already says the list
        layout = ZH_LAYOUTS[match.group("layout")]
        n: int | None = None
        end = match.end()
        if layout in (Layout.LIST, Layout.NUMBERED_LIST, Layout.NESTED_LIST):
            stop = min((i for i in (r.text.find(c, match.end()) for c in "。；;\n") if i >= 0), default=len(r.text))
            items = _LIST_ITEMS.search(r.text, match.end(), stop)
            if items is None:  # "列出三个要点，用项目符号": the items are said before the layout, in its sentence
                begin = sentence_bounds(r.text, match.start(), match.start(), "。；;\n")[0]
                items = next((m for m in _LIST_ITEMS.finditer(r.text, begin, match.start())
                              if re.match(r"列出|写出|给出|举出", m.group(0))), None)
            if items is not None:  # "用编号列表列出五个步骤": the list's items
                n = parse_zh_number(items.group("num"))
                end = items.end()
        if layout is Layout.TABLE:
            stop = min((i for i in (r.text.find(c, match.end()) for c in "。；;\n") if i >= 0), default=len(r.text))
            rows = _TABLE_ROWS.search(r.text, match.end(), stop)
            if rows is not None:
                n = parse_zh_number(rows.group("num"))
                r.drop(rows.start(), rows.end(), frozenset({Kind.COUNT}))
                end = rows.end()
        r.add(Structure(layout=layout, n=n), match.start(), end)
        return


def read_quoted_spans(r: Context) -> None:
    """"用引号引用至少两句别人说过的话": a count of delimited spans in the answer."""
    for match in _QUOTED_SPANS.finditer(r.text):
        n = parse_zh_number(match.group("num"))
        if n is None:
            continue
        left, right = ZH_DELIMITERS[match.group("d")]
        r.drop(match.start(), match.end(), _COUNTED_KINDS)
        r.add(Count(unit=Unit.SPANS, filter=Filter(left=left, right=right, nonempty=True),
                    relation=_relation(match.group("rel"), None), n=n), match.start(), match.end())


def read_answer_ends(r: Context) -> None:
    """"答案的开头必须是“是的”": the answer's first (or last) text."""
    for match in _ANSWER_END.finditer(r.text):
        if r.taken(match.start(), match.end(), frozenset({Kind.START_PHRASE, Kind.END_PHRASE, Kind.POSITION})):
            continue
        op: Predicate = "starts_with" if match.group("where") == "开头" else "ends_with"
        r.add(Position(unit=Unit.ANSWER, op=op, text=match.group("q")), match.start(), match.end())


def read_positions(r: Context) -> None:
    for match in _POSITION.finditer(r.text):
        k = _k(match.group("ord"))
        if k is None:
            continue
        unit = ZH_POSITION_UNITS[match.group("unit")]
        if match.group("is"):
            op, value = ("is" if unit is Unit.WORDS else "starts_with"), match.group("q") or match.group("w")
        elif match.group("mark"):
            op, value = "ends_with", _MARK_TEXT[match.group("mark")]
        elif match.group("op"):
            op, value = ("starts_with" if match.group("op") in ("开头", "开始") else "ends_with"), match.group("q2")
        else:
            op, value = ("starts_with" if match.group("op2") == "开头" else "ends_with"), match.group("q3")
        r.drop(match.start(), match.end(), frozenset({Kind.START_PHRASE, Kind.END_PHRASE}) | _COUNTED_KINDS)
        r.add(Position(unit=unit, k=k, op=op, text=value), match.start(), match.end())  # type: ignore[arg-type]


_COPY_TAIL = re.compile(
    r"^[，,。\s]*(?:(?:然后|再|之后|接着|随后|并且|并)[^：:。？?！!\n]{0,30}?(?:回答|作答|回复|答复|解答)"
    r"[^：:。？?！!\n]{0,12}?)?[：:，,。\s]*(?:(?:问题|请求|题目|指令)[：:]\s*)?")
"""What stands between the copying phrase and the text to copy: the answer's own instruction clause
(然后用大写字母回答：), ending at its colon or full stop, and a 问题： label."""


def read_copies(r: Context) -> None:
    match = _COPY.search(r.text)
    if match is None:
        return
    rest = _COPY_TAIL.sub("", r.text[match.end():])
    before = r.text[: match.start()].strip()
    text = before or rest
    if text:
        r.add(Copy(text=text, change=match.group("how") is not None), match.start(), match.end())
