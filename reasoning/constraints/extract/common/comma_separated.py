"""A CSV answer with named columns: "answer in CSV with the columns name, age, city and 4 rows".

A request for a CSV answer ("answer in CSV", "as comma-separated values", "CSV
format with ...", CSV格式; not "explain the CSV file format") naming its
columns ("with the columns A, B and C", "headers: A, B", "header id,title",
列为A、B, 表头为A、B) is the whole answer as a pattern (``regex_format``): the
header line of those names joined by commas, then the data rows, each as
many comma-separated cells (no comma, quote or line break inside a cell),
``n`` rows when the request counts them ("4 rows", "five data rows",
"3 records", 共3行 / 三行数据, or the things it lists: "list three fruits",
列出三种水果), else 1 to 20. The decoder runs the pattern as a
grammar; the verifier matches the answer against it.

The table readers take such a request for a Markdown table (a header row,
a ``---`` rule) and the number for a count of lines (共3行: the header makes
it 4), which steer away from CSV; those readings in the request's
sentences are dropped. CSV without named columns is no pattern; a Markdown
table read from its sentence is dropped too (it steers away from CSV), and the
sentence is left to the unrecognised report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.model import Kind
from reasoning.constraints.quantities import parse_number, parse_zh_number

__all__ = ["csv_pattern", "detect_csv", "refine_csv_chinese"]

_CSV = re.compile(r"\bcsv\b|comma[-\s]separated\s+values?", re.IGNORECASE)
#: The answer asked as CSV (not a question about CSV): "answer in CSV", "as comma-separated values", "CSV format".
_AS_CSV = re.compile(r"\b(?:in|as|into|using|with)\s+(?:a\s+|the\s+)?(?:csv|comma[-\s]separated)|\bcsv\s+(?:format|table|file|output)\b"
                     r"[^.]{0,40}?\b(?:columns?|headers?|fields?)\b|\b(?:output|answer|respond|reply|return|give|write|"
                     r"provide|format|present|produce)\b[^.]{0,40}?\b(?:csv|comma[-\s]separated)", re.IGNORECASE)
_COLUMNS = re.compile(
    r"\b(?:header\s+fields?|header\s+row|header\s+line|column\s+names?|columns?|headers?|fields?|headings?)\b\s*(?:named|called|are|is|of|should\s+be|must\s+be)?"
    r"\s*[:：]?\s*(?P<list>[\"'“‘]?[A-Za-z_][\w \-]{0,29}[\"'”’]?(?:\s*(?:,|;|\|)\s*(?:and\s+)?[\"'“‘]?[A-Za-z_][\w \-]{0,29}"
    r"[\"'”’]?|\s+and\s+[\"'“‘]?[A-Za-z_][\w\-]{0,29}[\"'”’]?)+)",
    re.IGNORECASE,
)
_ROWS = re.compile(r"\b(?P<num>\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty)\s+"
                   r"(?:data\s+|body\s+)?(?:rows?|records?|entries|lines\s+of\s+data)\b", re.IGNORECASE)
_ZH_CSV = re.compile(r"csv|CSV|逗号分隔")
_ZH_COLUMNS = re.compile(r"(?:列为|列名为|列是|表头为|表头是|字段为|字段是|包含以下列|列(?![出举表]))[：:]?\s*"
                         r"(?P<list>[^\s，。,；;、：:和及]{1,12}(?:\s*[、和及,]\s*[^\s，。,；;、：:和及]{1,12})+)")
#: The things a CSV request lists, one data row each: 列出三种水果, "list five cities".
_ZH_ITEMS = re.compile(r"(?:列出|列举|给出|写出|举出)\s*(?P<num>\d+|[一二两三四五六七八九十]+)\s*(?:种|个|条|项|位|家|本|款|座)")
_ITEMS = re.compile(r"\b(?:list|give|name|provide|suggest)\s+(?:me\s+)?(?P<num>\d+|one|two|three|four|five|six|seven|"
                    r"eight|nine|ten|twelve|fifteen|twenty)\s+[a-z]+", re.IGNORECASE)
_ZH_ROWS = re.compile(r"(?:共|一共|总共)?\s*(?P<num>\d+|[一二两三四五六七八九十]+)\s*(?:行数据|行|条数据|条记录|条)")
_CELL = r"[^,\n\"]{1,40}"
_MAX_ROWS = 20


def csv_pattern(columns: Sequence[str], rows: int | None) -> str:
    """The whole answer: the header of ``columns`` and ``rows`` rows of as many cells (1 to 20 when None)."""
    header = ",".join(re.escape(c) for c in columns)
    row = ",".join([_CELL] * len(columns))
    count = f"{{{rows}}}" if rows else f"{{1,{_MAX_ROWS}}}"
    return f"{header}(?:\\n{row}){count}"


def _cells(listed: str) -> list[str]:
    parts = re.split(r"\s*(?:,|;|\||、|，|\band\b|和|及)\s*", listed)
    cells = [p.strip(" \"'“”‘’") for p in parts]
    return [c for c in cells if c]


def _trim(cells: list[str]) -> list[str]:
    """The column names without a trailing clause ("city and 4 rows" ends at "city")."""
    out: list[str] = []
    for cell in cells:
        words = cell.split()
        if words and (words[0][0].isdigit() or parse_number([words[0].lower()]) is not None
                      or words[0].lower() in ("with", "containing", "having", "then")):
            break
        out.append(" ".join(words[:3]))
    return out


def _found(start: int, end: int, columns: Sequence[str], rows: int | None) -> Found:
    return Found(kind=Kind.REGEX_FORMAT, params={"pattern": csv_pattern(columns, rows)}, start=start, end=end,
                 confidence=0.85)


def _dropped(f: Found, start: int, end: int) -> bool:
    return overlaps(f, start, end) and (
        f.kind in (Kind.STRUCTURE, Kind.BULLET_COUNT, Kind.KEYWORDS_PRESENT)
        or f.kind is Kind.COUNT and f.params.get("unit") in ("lines", "sentences", "words"))


def detect_csv(ctx: Context) -> None:
    """The CSV answer of the columns named (see the module doc)."""
    text = ctx.text
    csv = _CSV.search(text)
    if csv is None or _AS_CSV.search(text) is None:
        return
    columns_at = _COLUMNS.search(text, max(0, csv.start() - 200))
    columns = _trim(_cells(columns_at.group("list"))) if columns_at is not None else []
    if columns_at is None or len(columns) < 2:
        # CSV asked without its columns: a Markdown table read from the same sentence steers away from CSV
        begin, end = sentence_bounds(text, csv.start(), csv.end(), with_mark=False)
        ctx.found = [f for f in ctx.found if not (f.kind is Kind.STRUCTURE and f.params.get("layout") == "table"
                                                  and overlaps(f, begin, end))]
        return
    rows_at = _ROWS.search(text) or _ITEMS.search(text, max(0, csv.start() - 200))
    rows = None
    if rows_at is not None:
        raw = rows_at.group("num")
        rows = int(raw) if raw.isdigit() else parse_number([raw])
    start = min(csv.start(), columns_at.start(), rows_at.start() if rows_at else len(text))
    end = max(csv.end(), columns_at.end(), rows_at.end() if rows_at else 0)
    ctx.found = [f for f in ctx.found if not _dropped(f, start, end)]
    ctx.found.append(_found(start, end, columns, rows if rows and 0 < rows <= _MAX_ROWS else None))


def refine_csv_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """请用CSV格式回答，列为姓名、年龄，共3行: the CSV answer of those columns."""
    csv = _ZH_CSV.search(text)
    if csv is None or not re.search(r"[\u4e00-\u9fff]", text):
        return list(found)
    columns_at = _ZH_COLUMNS.search(text, csv.start())
    if columns_at is None:
        return list(found)
    columns = _cells(columns_at.group("list"))
    if len(columns) < 2:
        return list(found)
    rows_at = _ZH_ROWS.search(text, columns_at.end()) or _ZH_ITEMS.search(text, max(0, csv.start() - 40))
    raw = rows_at.group("num") if rows_at is not None else ""
    rows = int(raw) if raw.isdigit() else parse_zh_number(raw) if raw else None
    start, end = csv.start(), max(columns_at.end(), rows_at.end() if rows_at else 0)
    kept = [f for f in found if not _dropped(f, start, end)]
    return [*kept, _found(start, end, columns, rows if rows and 0 < rows <= _MAX_ROWS else None)]
