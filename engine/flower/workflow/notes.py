"""Notes flower rewrites (需求.md, 目标.md): a copy of the old file is kept before each rewrite."""

from __future__ import annotations

from pathlib import Path

from ..base.files import keep_copy
from ..base.i18n import _
from ..core.events import NoteBackup, emitter
from .base import Ctx, event_sink


def keep_before_rewrite(ctx: Ctx, path: Path, text: str, problem: str = "") -> Path | None:
    """Copy `path` into `notes/archive/` unless it already holds exactly `text`; where it went.

    `problem` is what was wrong with the old file: then a person is told in one line, because
    flower is replacing a note they may have been editing; a routine rewrite is a quiet event.
    """
    try:
        if path.read_text(encoding="utf-8") == text:
            return None
    except (OSError, UnicodeDecodeError):
        pass  # unreadable as text is all the more reason to keep the bytes
    try:
        copy = keep_copy(path, path.parent / "archive")
    except OSError:
        copy = None
    if copy is None:
        return None
    emit = emitter(event_sink(ctx))
    if problem:
        text = _("{path} {problem}:这次重写它,原文件备份在 {copy}").format(
            path=path, problem=problem, copy=copy
        )
    else:
        text = _("{name} 改写前备份在 {copy}").format(name=path.name, copy=copy)
    emit(NoteBackup(text=text, path=str(path), backup=str(copy), problem=problem))
    return copy


__all__ = ["keep_before_rewrite"]
