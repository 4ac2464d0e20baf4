"""How figures and text are shown to people: one place for the terminal, the editor and logs."""

from __future__ import annotations

from wcwidth import iter_graphemes, wcswidth


def format_tokens(tokens: int) -> str:
    """A context figure as people read it: 80.2K, 1M, 1.2M."""
    if tokens >= 1_000_000:
        value = tokens / 1_000_000
        return f"{value:.0f}M" if tokens % 1_000_000 == 0 else f"{value:.1f}M"
    return f"{tokens / 1000:.1f}K"


def grapheme_width(grapheme: str) -> int:
    """Columns one grapheme cluster takes on a terminal (0 for what is not drawn)."""
    return max(0, wcswidth(grapheme))


def columns(text: str) -> int:
    """Terminal columns `text` takes, counted per grapheme cluster: East Asian wide characters
    and emoji count 2, combining marks, joiners and variation selectors 0."""
    return sum(grapheme_width(g) for g in iter_graphemes(text))


def first_line(text: str | None, limit: int = 160) -> str:
    """The first non-empty line, stripped and cut to `limit` characters."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""
