"""How figures and text are shown to people: one place for the terminal, the editor and logs."""

from __future__ import annotations

import unicodedata


def format_tokens(tokens: int) -> str:
    """A context figure as people read it: 80.2K, 1M, 1.2M."""
    if tokens >= 1_000_000:
        value = tokens / 1_000_000
        return f"{value:.0f}M" if tokens % 1_000_000 == 0 else f"{value:.1f}M"
    return f"{tokens / 1000:.1f}K"


def columns(text: str) -> int:
    """Terminal columns `text` takes: wide (CJK) characters count 2, combining marks 0."""
    return sum(
        2 if unicodedata.east_asian_width(c) in "WF" else (0 if unicodedata.combining(c) else 1) for c in text
    )


def first_line(text: str | None, limit: int = 160) -> str:
    """The first non-empty line, stripped and cut to `limit` characters."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""
