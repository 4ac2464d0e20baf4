"""Where the Claude Code CLI files a workspace's transcripts, and the folders it cannot file.

The key is the SDK's (``claude_agent_sdk.project_key_for_directory``: every character outside
``[A-Za-z0-9]`` becomes ``-``, a key over 200 characters is cut and given a hash); flower never
spells it itself. The SDK's key and the bundled CLI's folder name agree for every path made of
NFC-normalized characters of the Basic Multilingual Plane: spaces, quotes, ``$``, backticks,
Chinese, accented letters, names of any length. They disagree, measured with CLI 2.1.327, for

- a character beyond U+FFFF (an emoji): the CLI counts it as two UTF-16 units, two ``-``, and
  hashes those units; the SDK counts one;
- a name not in NFC (a letter followed by a combining mark, as macOS and some archivers write
  it): the SDK normalizes the path to NFC first, the CLI does not.

There the SDK writes a resumed session where the CLI does not look for it ("No conversation
found with session ID"), and the store is keyed apart from what flower looks up: the work could
never be continued. Such a folder is refused before anything runs (`unkeyable`), with one line
saying how to name it instead. The refusal is exactly the set where the two names differ
(`cli_folder_name`): a decomposed name whose marks the NFC form only reorders, for one, keys alike
and runs.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from ..base.i18n import N_, _

UNKEYABLE = N_(
    "x 这个文件夹的路径里有 {what}({sample}),Claude Code 和它的 SDK 给这种路径记会话的位置不一样,"
    "在这里跑的活下次没法接着做:把文件夹改个名(或挪到别处)再跑。路径:{path}"
)


def project_key(workspace: str | Path) -> str:
    """The session store's project_key for a workspace: the SDK's own."""
    from claude_agent_sdk import project_key_for_directory

    return project_key_for_directory(workspace)


def cli_folder_name(workspace: str | Path) -> str:
    """The folder the bundled CLI files this workspace's transcripts in.

    The CLI applies the SDK's own rule (``_sanitize_path``: the replacement, the 200-unit cut,
    the hash) to ``process.cwd()`` as the kernel spells it, unnormalized, counted in UTF-16
    code units; the SDK applies it to the NFC form counted in code points. Feeding the SDK's
    function the CLI's units gives the CLI's name without re-deriving the rule.
    """
    from claude_agent_sdk._internal.sessions import _sanitize_path

    units = os.path.realpath(workspace).encode("utf-16-le", "surrogatepass")
    codes = (int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2))
    return _sanitize_path("".join(map(chr, codes)))


def unkeyable(workspace: str | Path) -> str | None:
    """Why the CLI would file this workspace's transcripts under another key than the SDK's
    (one line for a person), or None when they agree (the only test: the two keys)."""
    text = os.path.realpath(workspace)
    if cli_folder_name(text) == project_key(text):
        return None
    astral = [c for c in text if ord(c) > 0xFFFF]
    if astral:
        what, sample = _("超出基本平面的字符(比如 emoji)"), "".join(dict.fromkeys(astral))[:8]
    else:
        marks = [c for c in text if unicodedata.combining(c)]
        what = _("分解形式的字符(字母后跟组合符号,不是 NFC)")
        sample = " ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(marks))[:40] or "NFD"
    return _(UNKEYABLE).format(what=what, sample=sample, path=text)


__all__ = ["cli_folder_name", "project_key", "unkeyable"]
