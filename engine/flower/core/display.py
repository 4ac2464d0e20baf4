"""How figures and text are shown to people: one place for the terminal, the editor and logs."""

from __future__ import annotations

import os

from wcwidth import iter_graphemes, wcswidth

# How many columns the terminal draws an East Asian Ambiguous character in ("·", "—", "○", "→",
# Greek, Cyrillic): 1, as most terminals do and as flower always counted them, or 2 for a
# terminal set to draw them wide (a CJK locale's, xterm's cjkWidth, VTE's ambiguous-width).
AMBIGUOUS_ENV = "FLOWER_AMBIGUOUS_WIDTH"


def format_tokens(tokens: int) -> str:
    """A context figure as people read it: 80.2K, 1M, 1.2M."""
    if tokens >= 1_000_000:
        value = tokens / 1_000_000
        return f"{value:.0f}M" if tokens % 1_000_000 == 0 else f"{value:.1f}M"
    return f"{tokens / 1000:.1f}K"


def ambiguous_width() -> int:
    """The columns of an ambiguous-width character: $FLOWER_AMBIGUOUS_WIDTH when it says 2
    (or "wide"), else 1."""
    value = os.environ.get(AMBIGUOUS_ENV, "").strip().lower()
    return 2 if value in ("2", "wide") else 1


def grapheme_width(grapheme: str, ambiguous: int | None = None) -> int:
    """Columns one grapheme cluster takes on a terminal (0 for what is not drawn). The one width
    function of everything flower draws: `ambiguous` (else the setting) for East Asian
    Ambiguous characters."""
    amb = ambiguous_width() if ambiguous is None else ambiguous
    return max(0, wcswidth(grapheme, ambiguous_width=amb))


def columns(text: str) -> int:
    """Terminal columns `text` takes, counted per grapheme cluster: East Asian wide characters
    and emoji count 2, combining marks, joiners and variation selectors 0, ambiguous-width
    characters as `ambiguous_width()` says."""
    amb = ambiguous_width()
    return sum(grapheme_width(g, amb) for g in iter_graphemes(text))


def first_line(text: str | None, limit: int = 160) -> str:
    """The first non-empty line, stripped and cut to `limit` characters."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""
