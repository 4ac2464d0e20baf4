"""What stops a command before it starts, said with the path it concerns: a folder flower cannot
write to, a `.env` it cannot read or only partly understands. Never a traceback."""

from __future__ import annotations

import io
import logging
import sqlite3
from pathlib import Path

from ..base.files import fault_of
from ..base.i18n import N_, _

UNWRITABLE = N_("x 没法写进 {path}:{reason}。换一个能写的目录(-w 工作区,-r 运行目录),或者改好权限再跑。")
ENV_UNREADABLE = N_("x 读不了 {path}:{reason}。修好它,或者把它挪开再跑。")
ENV_SKIPPED = N_("! {path} 第 {lines} 行看不懂,跳过了(每行要写成 KEY=value)")


class EnvFileError(Exception):
    """A `.env` that cannot be read at all; the message names it and says why."""


def unwritable(exc: OSError | sqlite3.Error, where: str | Path) -> str:
    """One line for a folder or file flower could not create or write (`where` when the error
    does not name its file, as SQLite's do not)."""
    fault = fault_of(exc, where)
    if fault is not None:  # full, read-only, not permitted, gone: the one line with its fix
        return _("x {fault}").format(fault=fault.line())
    path = (getattr(exc, "filename", None) if isinstance(exc, OSError) else None) or where
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return _(UNWRITABLE).format(path=path, reason=reason)


def check_env_file(path: Path) -> list[str]:
    """Warnings about the `.env` at `path` (the lines python-dotenv will skip, by number);
    EnvFileError when it cannot be read or is not text."""
    from dotenv.parser import parse_stream

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EnvFileError(_(ENV_UNREADABLE).format(path=path, reason=exc.strerror or exc)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        reason = _("不是 UTF-8 文本(第 {start} 个字节)").format(start=exc.start + 1)
        raise EnvFileError(_(ENV_UNREADABLE).format(path=path, reason=reason)) from None
    skipped = [str(b.original.line) for b in parse_stream(io.StringIO(text)) if b.error]
    return [_(ENV_SKIPPED).format(path=path, lines=_("、").join(skipped))] if skipped else []


def quiet_dotenv() -> None:
    """python-dotenv logs its own warning for a line it skips, without the file's path; flower
    says it once, with the path (check_env_file)."""
    logging.getLogger("dotenv.main").setLevel(logging.ERROR)


def quiet_sdk_log() -> None:
    """The SDK logs a failure it also raises ("Fatal error in message reader: ..."), which would
    reach the terminal bare; flower says it once, in the step's own line."""
    logging.getLogger("claude_agent_sdk").setLevel(logging.CRITICAL)
