"""The characters a glance may contain.

Printable ASCII, tab and newline, plus letters, digits and combining marks of any script (file
names such as 需求.md). Everything else is refused: control and format characters (NUL, CR, ESC,
bidi overrides, zero-width joiners), line and paragraph separators, non-ASCII spaces, all
non-ASCII punctuation and symbols, which is where most look-alikes of ``|``, ``;`` and ``&`` live
(U+2016, U+FF5C, U+037E, U+FF1B, ...), and the few letters drawn like them (U+01C0, ...). Bash
gives meaning only to ASCII characters, so what is left can only ever be part of a word.
"""

from __future__ import annotations

import unicodedata

_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"\t", "\n"}
_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Mn", "Mc"})
# Letters and marks that render as nothing (Hangul fillers, variation selectors, the combining
# grapheme joiner), and letters drawn like `|` or `!` (U+01C0-U+01C3, Tifinagh yen, Lisu letter
# i): they would let two different commands look the same to a reviewer.
_INVISIBLE = frozenset(
    {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x3164, 0xFFA0}
    | {0x01C0, 0x01C1, 0x01C2, 0x01C3, 0x2D4F, 0xA4F2}
    | set(range(0xFE00, 0xFE10))
    | set(range(0xE0100, 0xE01F0))
)


def unsafe_character(text: str) -> str | None:
    """The first character of ``text`` outside the safe set, or None."""
    for ch in text:
        if ch in _ASCII:
            continue
        if ord(ch) < 0x80 or ord(ch) in _INVISIBLE or unicodedata.category(ch) not in _CATEGORIES:
            return ch
    return None
