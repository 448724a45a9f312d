"""What a tenant name may be: visible, of one writing system, not a look-alike of another.

A tenant name is shown to operators and compared byte for byte, so two names that look the
same must be the same name. :func:`check_tenant_name` refuses, with ``InvalidInput`` naming
the problem:

- characters that are not visible: control, format (zero-width, bidirectional), private-use,
  surrogate, unassigned, line and paragraph separators, and the letters and symbols that
  render blank (Hangul fillers ``U+3164``, ``U+115F``, ``U+1160``, ``U+FFA0``, the blank
  Braille pattern ``U+2800``, variation selectors, the combining grapheme joiner and the
  other default-ignorable code points outside those categories);
- a mix of writing systems in the letters (Unicode UTS #39's "highly restrictive" level):
  one script, or Latin with Han, Hiragana and Katakana, or with Han and Bopomofo, or with
  Han and Hangul (``dеfault`` with a Cyrillic ``е`` is refused; ``Acme 中国`` is not).

:func:`skeleton` is the form two names are compared in to find a look-alike of an existing
tenant (NFKC, case-folded, blank characters and spaces removed): ``ＤＥＦＡＵＬＴ`` or
``De fault`` collide with ``default``. A whole-script look-alike (every letter from another
script that happens to look Latin) is not detected; the mixed-script rule covers the common
case of one substituted letter.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from reasoning.errors import InvalidInput

__all__ = ["check_tenant_name", "skeleton"]

MAX_LENGTH: Final = 200
# Unicode categories a tenant name may not hold: control, format, surrogate, private use,
# unassigned, and line / paragraph separators.
_HIDDEN: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: Code points that render blank although their category is a letter, mark or symbol
#: (Default_Ignorable_Code_Point outside Cf, and the blank Braille pattern).
_BLANK_RANGES: Final = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
    (0x1D159, 0x1D159), (0xE0100, 0xE01EF),
)
_SCRIPT_ALIASES: Final = {"CJK": "HAN", "KATAKANA-HIRAGANA": "KATAKANA"}
#: Script sets a single name may combine (UTS #39 highly restrictive), beyond one script.
_ALLOWED_MIXES: Final = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)


def _blank(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _BLANK_RANGES)


def _script(char: str) -> str | None:
    """The writing system of a letter (None for digits, marks, punctuation, symbols, spaces)."""
    if not unicodedata.category(char).startswith("L"):
        return None
    name = unicodedata.name(char, "")
    if not name:
        return None
    first = name.split(" ", 1)[0]
    return _SCRIPT_ALIASES.get(first, first)


def skeleton(name: str) -> str:
    """The form names are compared in for look-alikes (see the module doc)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return "".join(c for c in folded if not c.isspace() and not _blank(c)
                   and unicodedata.category(c) not in _HIDDEN)


def check_tenant_name(name: str) -> str:
    """``name`` stripped and NFC-normalised; InvalidInput when it cannot be a tenant name."""
    name = unicodedata.normalize("NFC", name.strip())
    if not name or len(name) > MAX_LENGTH:
        raise InvalidInput(f"a tenant name must have 1 to {MAX_LENGTH} characters", field="tenant")
    hidden = sorted({f"U+{ord(c):04X}" for c in name
                     if unicodedata.category(c) in _HIDDEN or _blank(c)})
    if hidden:
        raise InvalidInput(
            "a tenant name may hold only visible characters and spaces; found "
            f"{', '.join(hidden)}, which render blank or not at all",
            field="tenant",
        )
    scripts = {s for c in unicodedata.normalize("NFKC", name) if (s := _script(c)) is not None}
    if len(scripts) > 1 and not any(scripts <= allowed for allowed in _ALLOWED_MIXES):
        raise InvalidInput(
            f"a tenant name may not mix writing systems ({', '.join(sorted(scripts)).lower()}): "
            "a letter from another script can make it look like another tenant's name",
            field="tenant", scripts=sorted(scripts),
        )
    return name
