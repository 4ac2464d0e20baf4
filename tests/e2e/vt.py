"""What a terminal shows of what flower wrote to it: the few things flower's own output does
(carriage return, line feed, erase to the end of the line, cursor up, cursor left), replayed on
rows of cells. Enough to tell what a person sees at the end: which rows, in which order."""

from __future__ import annotations

import re

from flower.core.display import grapheme_width

_SEQUENCE = re.compile(r"\x1b\[(\d*)([A-Za-z])|\x1b\][^\x07]*\x07\x07?|\r|\n|[^\x1b\r\n]")


def screen_rows(text: str) -> list[str]:
    """The rows on screen after `text` (scrollback included), trailing blanks dropped. A wide
    character takes its two cells; what a sequence other than these does is ignored (titles)."""
    rows: list[list[str]] = [[]]
    row = col = 0
    for m in _SEQUENCE.finditer(text):
        token = m.group(0)
        if token == "\r":
            col = 0
        elif token == "\n":
            row += 1
            if row == len(rows):
                rows.append([])
        elif m.group(2) == "K":
            del rows[row][col:]
        elif m.group(2) == "A":
            row = max(0, row - int(m.group(1) or 1))
        elif m.group(2) == "D":
            col = max(0, col - int(m.group(1) or 1))
        elif m.group(2) or token.startswith("\x1b"):
            continue
        else:
            cells = [token] + [""] * (max(1, grapheme_width(token)) - 1)
            line = rows[row]
            line.extend(" " * (col + len(cells) - len(line)))
            line[col : col + len(cells)] = cells
            col += len(cells)
    return ["".join(cells).rstrip() for cells in rows]
