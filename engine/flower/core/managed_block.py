"""A block flower manages inside a file a person owns (CLAUDE.md, AGENTS.md), between two fixed
marker lines. Everything outside the markers is the person's and is kept byte for byte.

- no file: the file is just the block;
- a file without markers: the block is appended (after a blank line);
- exactly one begin marker followed by one end marker: only what lies between is replaced,
  and the same block leaves the file untouched (byte-identical, not even rewritten);
- broken markers (an orphan begin or end, an end before its begin, several pairs): nothing is
  deleted or guessed at; the block is appended and the result says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..base.files import write_bytes

BEGIN = "<!-- flower:handover:begin -->"
END = "<!-- flower:handover:end -->"

Placement = Literal["created", "appended", "replaced", "unchanged", "appended-after-broken-markers"]


@dataclass(frozen=True)
class Markers:
    begin: str = BEGIN
    end: str = END

    def block(self, body: str) -> str:
        return f"{self.begin}\n{body.rstrip()}\n{self.end}\n"


def place_block(path: str | Path, body: str, markers: Markers | None = None) -> Placement:
    """Put `body` between the markers in `path` (see the module's rules). A symlink is followed:
    the file it points to is the one written. Raises OSError when it cannot read or write."""
    markers = markers or Markers()
    target = Path(path).resolve()
    block = markers.block(body)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        _write(target, block.encode("utf-8"), mode=None)
        return "created"
    # bytes that are not UTF-8 must come back exactly as they were
    text = data.decode("utf-8", "surrogateescape")
    begins, ends = _marker_lines(text, markers.begin), _marker_lines(text, markers.end)
    if len(begins) == 1 and len(ends) == 1 and begins[0][0] < ends[0][0]:
        new = text[: begins[0][0]] + block + text[ends[0][1] :]
        if new == text:
            return "unchanged"
        placement: Placement = "replaced"
    else:
        gap = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        new = text + gap + block
        placement = "appended" if not begins and not ends else "appended-after-broken-markers"
    _write(target, new.encode("utf-8", "surrogateescape"), mode=os.stat(target).st_mode)
    return placement


def read_block(path: str | Path, markers: Markers | None = None) -> str | None:
    """What stands between the markers of `path` (exactly one well-formed pair), else None."""
    markers = markers or Markers()
    try:
        text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return None
    begins, ends = _marker_lines(text, markers.begin), _marker_lines(text, markers.end)
    if len(begins) == 1 and len(ends) == 1 and begins[0][0] < ends[0][0]:
        return text[begins[0][1] : ends[0][0]]
    return None


def _marker_lines(text: str, marker: str) -> list[tuple[int, int]]:
    """(start, end) offsets of every line that is exactly `marker` (surrounding blanks allowed)."""
    spans, at = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip() == marker:
            spans.append((at, at + len(line)))
        at += len(line)
    return spans


def _write(target: Path, data: bytes, *, mode: int | None) -> None:
    """Replace `target` atomically (the one write path); an existing file keeps its permissions,
    a new one gets what a plain open() would give it (the umask applies)."""
    write_bytes(target, data, mode=mode)
