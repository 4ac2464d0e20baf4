"""Where a glance may read: inside the workspace, never a credential.

Every path a program is given (operands and path-valued options) is judged here, by how the
program uses it: ``NAMES`` (it lists or stats the path) or ``CONTENT`` (it prints something of
the bytes). The rule:

- relative paths only, except a stated harmless set (``/dev/null``, ``/dev/stdin``,
  ``/etc/os-release`` and a few ``/proc`` system summaries);
- no ``..`` component, no tilde (the lexer refuses unquoted ``~``);
- with a known workspace, the path resolved through every symlink stays inside the workspace;
- for ``CONTENT``: no credential name (see ``credentials``), before and after resolving symlinks,
  and the file is a regular file with a single link (a hard link or a device node could be any
  file on the disk) or a folder;
- a recursive content read (``grep -r``, ``rg``) needs the workspace: the tree it would visit is
  walked first, and it is admitted only when the walk finds no credential name, no ``.git``
  folder (its config can hold tokens), no hard-linked file, no symlink it would follow, and stays
  under a bounded size.
"""

from __future__ import annotations

import enum
import os
import stat
from pathlib import Path

from .credentials import credential_name, credential_path
from .refusal import Refused

HARMLESS_ABSOLUTE = frozenset(
    {
        "/dev/null",
        "/dev/stdin",
        "/etc/os-release",
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/loadavg",
        "/proc/version",
    }
)
# A recursive read over more entries than this is refused rather than walked.
TREE_LIMIT = 20_000


class Reads(enum.Enum):
    NAMES = "names"
    CONTENT = "content"


def real_root(workspace: Path) -> Path:
    return Path(os.path.realpath(workspace))


def check_path(value: str, reads: Reads, workspace: Path | None) -> None:
    """Raise Refused unless a program may read ``value`` the way ``reads`` says."""
    if value == "":
        raise Refused("an empty path")
    if value in HARMLESS_ABSOLUTE or value == "-":
        return
    if value.startswith("/"):
        raise Refused(f"an absolute path ({value})")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused(f"a path leaving its folder ({value})")
    if reads is Reads.CONTENT and credential_path(parts):
        raise Refused(f"a credential file ({value})")
    if workspace is None:
        return
    root = real_root(workspace)
    target = Path(os.path.realpath(root / value))
    if not target.is_relative_to(root):
        raise Refused(f"a symlink out of the workspace ({value})")
    if reads is Reads.CONTENT:
        if credential_path(target.relative_to(root).parts):
            raise Refused(f"a symlink to a credential file ({value})")
        _check_file_kind(target, value)


def _check_file_kind(target: Path, shown: str) -> None:
    try:
        st = target.stat()
    except OSError:
        return  # absent: the program will say so
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"not a regular file ({shown})")
    if st.st_nlink > 1:
        raise Refused(f"a hard-linked file ({shown})")


def check_tree(value: str, workspace: Path | None, *, follow_symlinks: bool) -> None:
    """Raise Refused unless a recursive content read of ``value`` provably meets no credential."""
    if workspace is None:
        raise Refused("a recursive read without a known workspace")
    check_path(value, Reads.CONTENT, workspace)
    root = real_root(workspace)
    start = Path(os.path.realpath(root / value))
    inside = [p.casefold() for p in [*value.split("/"), *start.relative_to(root).parts]]
    if ".git" in inside:
        raise Refused(f"a recursive read inside .git ({value})")
    if not start.is_dir():
        return
    pending = [start]
    seen = 0
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable: the program cannot read it either
        for entry in entries:
            seen += 1
            if seen > TREE_LIMIT:
                raise Refused(f"a recursive read over more than {TREE_LIMIT} entries")
            name = entry.name
            if credential_name(name) or name.casefold() == ".git":
                raise Refused(f"a recursive read that reaches {name}")
            if entry.is_symlink():
                if follow_symlinks:
                    raise Refused("a recursive read that follows symlinks")
                continue
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink > 1:
                raise Refused("a recursive read that reaches a hard-linked file")
