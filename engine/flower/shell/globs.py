"""Expand unquoted glob patterns into the words bash would pass.

A pattern's expansion depends on the files present and on shell settings we cannot see
(``dotglob``, ``nocaseglob``, ``nullglob``, ``failglob``). So a glob is admitted only with a known
workspace, and is expanded under each combination of ``dotglob`` and ``nocaseglob``; every
resulting argument list is judged, and a pattern that matches nothing under the strictest setting
is refused (``nullglob`` would drop it, ``failglob`` would fail, the default would pass it
literally). A match that starts with ``-`` would be read as an option and is refused.

Supported pattern syntax: ``*``, ``?`` and bracket sets of single characters with ``!``/``^``
negation. Refused: ``**`` (``globstar``), ranges (``[a-z]``, whose meaning depends on the locale
and ``globasciiranges``), character classes (``[:alpha:]``, ``[=a=]``, ``[.a.]``), quoted
characters inside brackets, absolute patterns, ``..`` components, and ``GLOBIGNORE`` in the
environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .lexer import Word
from .paths import real_root
from .refusal import Refused

# (dotglob, nocaseglob)
_SETTINGS = ((False, False), (True, False), (False, True), (True, True))
_LIMIT = 1000


@dataclass(frozen=True)
class _Component:
    text: str  # as written, quotes removed
    regex: str | None  # None: a literal component
    leading_dot: bool  # starts with a literal '.', so it may match hidden names without dotglob


def _bracket(value: str, unquoted: frozenset[int], i: int) -> tuple[str, int] | None:
    """Regex class and end index for a bracket set opening at ``i``, or None if ``[`` is literal."""
    j = i + 1
    negate = False
    if j < len(value) and value[j] in "!^" and j in unquoted:
        negate, j = True, j + 1
    members: list[str] = []
    first = True
    while j < len(value):
        ch = value[j]
        if ch == "]" and not first and j in unquoted:
            body = "".join(members)
            return ("[^" if negate else "[") + body + "]", j + 1
        if j not in unquoted:
            raise Refused("a quoted character inside a glob bracket")
        if ch == "[" and j + 1 < len(value) and value[j + 1] in ":=.":
            raise Refused("a character class in a glob")
        if ch == "/":
            return None
        if ch == "-" and members and j + 1 < len(value) and value[j + 1] != "]":
            raise Refused("a range in a glob bracket (its meaning depends on the locale)")
        members.append(re.escape(ch))
        first = False
        j += 1
    return None


def _components(word: Word) -> list[_Component]:
    value, unquoted = word.value, word.unquoted
    if value.startswith("/"):
        raise Refused("an absolute glob")
    out: list[_Component] = []
    start = 0
    i = 0
    regex: list[str] = []
    glob = False
    while i <= len(value):
        if i == len(value) or value[i] == "/":
            text = value[start:i]
            if text == "..":
                raise Refused("a glob with '..'")
            out.append(_Component(text, "".join(regex) if glob else None, text.startswith(".")))
            regex, glob, start = [], False, i + 1
            i += 1
            continue
        ch = value[i]
        if i in unquoted and ch == "*":
            if i + 1 < len(value) and value[i + 1] == "*" and i + 1 in unquoted:
                raise Refused("a '**' glob")
            regex.append("[^/]*")
            glob = True
        elif i in unquoted and ch == "?":
            regex.append("[^/]")
            glob = True
        elif i in unquoted and ch == "[":
            found = _bracket(value, unquoted, i)
            if found is not None:
                regex.append(found[0])
                glob = True
                i = found[1]
                continue
            regex.append(re.escape(ch))
        else:
            regex.append(re.escape(ch))
        i += 1
    return out


def _expand(word: Word, root: Path, dotglob: bool, nocase: bool) -> list[str]:
    parts = _components(word)
    flags = re.IGNORECASE if nocase else 0
    found: list[tuple[str, Path]] = [("", root)]  # (text as bash writes it, real folder)
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        nxt: list[tuple[str, Path]] = []
        for written, folder in found:
            sep = "" if written in ("", "/") else "/"
            if part.text == "" and not last:
                nxt.append((written + "/", folder))
                continue
            if part.regex is None:
                path = folder / part.text if part.text else folder
                if last and part.text == "":
                    if folder.is_dir():
                        nxt.append((written + "/", folder))
                elif os.path.lexists(path) and (last or path.is_dir()):
                    nxt.append((written + sep + part.text, path))
                continue
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            pattern = re.compile(part.regex, flags)
            for name in names:
                if name.startswith(".") and not (dotglob or part.leading_dot):
                    continue
                if not pattern.fullmatch(name):
                    continue
                path = folder / name
                if not last and not path.is_dir():
                    continue
                nxt.append((written + sep + name, path))
                if len(nxt) > _LIMIT:
                    raise Refused(f"a glob with more than {_LIMIT} matches")
        found = nxt
    words = sorted(written for written, _ in found)
    for w in words:
        if w.startswith("-"):
            raise Refused(f"a glob that expands to an option ({w})")
    return words


def expand_words(words: Sequence[Word], workspace: Path | None) -> list[list[str]]:
    """Every argument list bash may pass for ``words`` (one per glob setting, duplicates removed)."""
    if not any(w.has_glob for w in words):
        return [[w.value for w in words]]
    if workspace is None:
        raise Refused("a glob without a known workspace")
    if "GLOBIGNORE" in os.environ:
        raise Refused("a glob while GLOBIGNORE is set")
    root = real_root(workspace)
    variants: list[list[str]] = []
    for dotglob, nocase in _SETTINGS:
        argv: list[str] = []
        for w in words:
            if not w.has_glob:
                argv.append(w.value)
                continue
            matches = _expand(w, root, dotglob, nocase)
            if not matches:
                raise Refused(f"a glob that matches nothing ({w.value})")
            argv.extend(matches)
        if argv not in variants:
            variants.append(argv)
    return variants
