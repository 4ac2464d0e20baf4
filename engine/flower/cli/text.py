"""Small text helpers for terminal output: escapes out, column widths, durations, labels."""

from __future__ import annotations

import re

from ..core.display import columns

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def sanitize(text: str) -> str:
    """Model and tool text may carry escape sequences (clear screen, move cursor): drop them."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text.replace("\r\n", "\n")))


def fit(text: str, width: int) -> str:
    """The head of `text` that fits in `width` terminal columns (wide characters count 2)."""
    out, used = [], 0
    for c in text:
        w = columns(c)
        if used + w > width:
            break
        out.append(c)
        used += w
    return "".join(out)


def fit_tail(text: str, width: int) -> str:
    """The tail that fits: while typing, the end of the line is what matters."""
    return fit(text[::-1], width)[::-1]


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
    m = re.fullmatch(r"(.+?)#round(\d+)", step)
    if m:
        return f"{m.group(1)} 第 {m.group(2)} 轮"
    m = re.fullmatch(r"(.+?)#retry(\d+)", step)
    if m:
        return f"{m.group(1)} 重试 {m.group(2)}"
    m = re.fullmatch(r"(.+?·判定)#(\d+)", step)
    if m:
        return f"{m.group(1)} 第 {m.group(2)} 轮"
    return step
