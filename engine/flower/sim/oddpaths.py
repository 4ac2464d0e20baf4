"""Odd folder names, generated: what a person's machine has and flower must work in.

Spaces, quotes, ``$``, backticks, shell and glob characters, Chinese, accented letters, names
near the filesystem's limit of 255 bytes per component and paths far over the CLI's 200
characters of key: each case mixes some of them. ``name(rng)`` gives one component; ``folder``
makes a workspace under a root. Emoji and decomposed letters (``astral``, ``decomposed``) are
kept apart: the SDK and the CLI file such paths under different keys (core/projectkey.py), so
flower refuses them with one line instead of running work it could not continue.
"""

from __future__ import annotations

import random
import unicodedata
from pathlib import Path

NAME_MAX = 255  # bytes per path component on Linux filesystems
ALPHABETS: dict[str, str] = {
    "space": " ",
    "quote": "'\"",
    "shell": "$`!&;|*?[](){}<>#~%^=+,@",
    "chinese": "中文目录测试工作区花朵需求",
    "accented": "éèàüößçñøåÆ",  # precomposed (NFC)
    "ascii": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
}
ASTRAL = "🌸🚀😀𝄞𠀋"
COMBINING = ("e\u0301", "o\u0308", "c\u0327", "n\u0303", "a\u030a")  # each has a precomposed form


def name(rng: random.Random, *, kinds: tuple[str, ...] | None = None, length: int | None = None) -> str:
    """One folder name mixing characters of `kinds` (default: two to four at random), at most
    NAME_MAX bytes of UTF-8, never "." or "..", never starting with "-"."""
    kinds = kinds or tuple(rng.sample(sorted(ALPHABETS), rng.randint(2, 4)))
    pool = "".join(ALPHABETS[k] for k in kinds)
    size = length if length is not None else rng.choice([rng.randint(3, 24), rng.randint(60, 120)])
    chars = [rng.choice(pool) for _ in range(size)]
    for kind in kinds:  # every kind asked for is in it
        chars[rng.randrange(len(chars))] = rng.choice(ALPHABETS[kind])
    text = "".join(chars).strip() or "ws"
    while len(text.encode()) > NAME_MAX:
        text = text[:-1]
    if text.startswith("-"):
        text = "x" + text[1:]
    return text if text not in (".", "..") else "ws"


def folder(rng: random.Random, root: Path) -> Path:
    """A fresh workspace under `root`: one to three odd components, sometimes a path over the
    CLI's 200 characters of key."""
    parts = [name(rng) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        parts.append(name(rng, kinds=("ascii", "chinese", "space"), length=rng.randint(150, 240)))
    path = root.joinpath(*parts)
    path.mkdir(parents=True)
    return path


def astral(rng: random.Random) -> str:
    """A name with a character beyond U+FFFF in it (an emoji)."""
    base = name(rng, length=rng.randint(3, 12))
    at = rng.randrange(len(base) + 1)
    return base[:at] + rng.choice(ASTRAL) + base[at:]


def decomposed(rng: random.Random) -> str:
    """A name not in NFC: a letter followed by a combining mark."""
    base = name(rng, kinds=("ascii",), length=rng.randint(3, 12))
    text = base + rng.choice(COMBINING)
    assert unicodedata.normalize("NFC", text) != text
    return text


__all__ = ["ALPHABETS", "NAME_MAX", "astral", "decomposed", "folder", "name"]
