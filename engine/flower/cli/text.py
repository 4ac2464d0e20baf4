"""Text for the terminal: hostile sequences out, carriage returns as line breaks, tabs expanded,
widths counted per grapheme (East Asian wide characters take two columns, ambiguous ones as the
setting says), lines fitted; durations and step labels as people read them.

Nothing a tool or the model prints may move the cursor, clear the screen, set a title or talk to
the terminal: every escape sequence is removed whole (a DCS or OSC with its body), and the only
colour codes that reach a screen are the ones `Screen` adds itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wcwidth import iter_graphemes

from ..base.i18n import _
from ..core.display import ambiguous_width, columns, grapheme_width

# Event lines are fitted to the terminal, within these bounds: narrower than 40 nothing reads
# well anyway, wider than 110 long lines stop being readable.
MIN_WIDTH = 40
MAX_WIDTH = 110
TAB_SIZE = 8

# String sequences (DCS, OSC, SOS, PM, APC; 7-bit and 8-bit introducers) end at ST or, for
# OSC, at BEL; one that never ends takes the rest of the text with it, as a terminal would.
_STRINGS = re.compile(r"(?:\x1b[P\]X^_]|[\x90\x9d\x98\x9e\x9f]).*?(?:\x1b\\|\x9c|\x07|\Z)", re.DOTALL)
_CSI = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*(?:[@-~]|\Z)")
_OTHER_ESCAPES = re.compile(r"\x1b[ -/]*(?:[0-~]|\Z)")
# A lone surrogate (a JSON escape of half a pair) cannot be written to a UTF-8 terminal at all.
_SURROGATES = re.compile(r"[\ud800-\udfff]")
# What is left of C0 and C1 (tab and newline are handled on their own), and the bidi controls
# that would let a tool's output display in another order than it reads.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"\r\n|[\n\x0b\x0c\x85\u2028\u2029]")
# A line's hanging indent: its leading spaces, a subagent's bar, and the one- or two-character
# mark flower puts before the text ("+ ", "<- ", "* ").
_HANG = re.compile(r"^( *(?:\| )?)((?:<-|[-=+~x>*#?!.<]) )?")


def line_width(columns: int) -> int:
    """The width event lines are fitted to on a terminal of `columns` columns."""
    return max(MIN_WIDTH, min(columns, MAX_WIDTH))


def clean(text: str) -> str:
    """`text` with every escape sequence and control character removed, one "\\n" between lines
    and U+FFFD for a lone surrogate; tabs are kept.

    Nothing can hide what came before it: a bare carriage return starts a new line instead of
    going back over the old one (a blank part between returns is dropped), a backspace is
    dropped without erasing, and a sequence that would move the cursor or clear the screen is
    removed whole. So every character a tool printed is on screen, in the order printed.
    """
    text = _SURROGATES.sub("\ufffd", _STRINGS.sub("", text))
    text = _CSI.sub("", text)
    text = _OTHER_ESCAPES.sub("", text)
    lines: list[str] = []
    for line in _LINE_BREAKS.split(text):
        if "\r" not in line:
            lines.append(_CONTROLS.sub("", line))
            continue
        parts = [_CONTROLS.sub("", part) for part in line.split("\r")]
        lines += [part for part in parts if part.strip()] or [""]
    return "\n".join(lines)


def sanitize(text: str) -> str:
    """`clean(text)` with its tabs expanded: what a screen may show of a tool's or model's text.
    The one gate: `Screen` passes everything it writes through here."""
    return "\n".join(expand_tabs(line) for line in clean(text).split("\n"))


def expand_tabs(line: str, tabsize: int = TAB_SIZE) -> str:
    """Tabs replaced by spaces up to the next tab stop, counted in display columns."""
    if "\t" not in line:
        return line
    out: list[str] = []
    col = 0
    amb = ambiguous_width()
    for g in iter_graphemes(line):
        if g == "\t":
            pad = tabsize - col % tabsize
            out.append(" " * pad)
            col += pad
        else:
            out.append(g)
            col += grapheme_width(g, amb)
    return "".join(out)


def fit(text: str, width: int) -> str:
    """The head of `text` that fits in `width` columns, never splitting a character."""
    return "".join(_fitting(iter_graphemes(text), width))


def fit_tail(text: str, width: int) -> str:
    """The tail that fits: while typing, the end of the line is what matters."""
    return "".join(reversed(_fitting(reversed(list(iter_graphemes(text))), width)))


def _fitting(graphemes: Iterable[str], width: int) -> list[str]:
    out, used = [], 0
    amb = ambiguous_width()
    for g in graphemes:
        w = grapheme_width(g, amb)
        if used + w > width:
            break
        out.append(g)
        used += w
    return out


def wrap(line: str, width: int) -> list[str]:
    """One line as screen lines of at most `width` columns; continuations are indented under the
    text (after the line's indent, bar and mark) and break after a space where there is one."""
    if columns(line) <= width:
        return [line]
    hang = _HANG.match(line)
    indent = " " * columns(hang.group(0)) if hang else ""
    if columns(indent) > width // 2:
        indent = ""
    out: list[str] = []
    rest = line
    first = True
    while rest:
        room = width if first else width - columns(indent)
        head = fit(rest, room)
        if not head:  # a grapheme wider than the room: take it anyway rather than loop
            head = next(iter_graphemes(rest))
        elif len(head) < len(rest):
            # break after a space when there is one past the first third: a path or an id stays whole
            space = head.rfind(" ")
            if space > len(head) // 3:
                head = head[: space + 1]
        out.append(head.rstrip() if first else indent + head.rstrip())
        rest = rest[len(head) :].lstrip(" ")
        first = False
    return out


def format_duration(seconds: float) -> str:
    """Short runs in seconds with a decimal (a 3-second run is not "0:00"), longer as m:ss."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def step_label(step: str) -> str:
    """A manifest step name as people read it: 干活#round2 -> 干活 第 2 轮,
    干活·判定#1 -> 干活·判定 第 1 轮."""
    from ..core.labels import LabelKind, StepLabel

    label = StepLabel.parse(step)
    if label.kind in (LabelKind.ROUND, LabelKind.VERDICT):
        return _("{step} 第 {n} 轮").format(step=label.lane, n=label.number)
    if label.kind is LabelKind.RETRY:
        return _("{step} 重试 {n}").format(step=label.step, n=label.number)
    return step
