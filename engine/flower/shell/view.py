"""What a confined command cannot read inside the workspace: the hidden entries.

``confine`` shows a command the workspace with these entries emptied (an empty file, an empty
folder) or, where Landlock does the confining, left out of what it may open. An entry is hidden
when:

- its name says it holds credentials (``credentials.credential_name``: ``.env``, ``id_rsa``,
  ``.netrc``, ``credentials.json``, ``*.pem``, ...); a folder so named (``.ssh``, ``.aws``,
  ``.gnupg``, ...) is hidden whole;
- its content holds anything the one redaction would mask (``base.secrets.holds_secret``: key and
  token formats, private key blocks, bearer credentials, passwords in URLs, a secret-named key
  given a literal such as ``api_key: "..."``, a netrc entry, the value of a credential flower
  knows), whatever its name;
- it is a device node or a socket: a node can stand for any disk, a socket for any daemon.

Git's own configuration (``config``, ``config.worktree`` under a ``.git`` folder) stays readable
whatever it holds: git refuses to run without it; the tokens in it are masked in what the command
prints. Installed dependencies are judged by name only, not read for content: a folder named like
one (``node_modules``, ``site-packages``, ``__pycache__``, a ``.tox``, a virtual environment with
its ``pyvenv.cfg``, ...) holds other people's code, whose test keys and examples would hide half
of it, and no secret of the person's. Neither are ``objects`` and ``lfs`` under a ``.git`` folder
(compressed) nor files that look binary (a NUL in their first bytes); of a large file the first
``SCAN_HEAD`` and the last ``SCAN_TAIL`` bytes are read. Symlinks are never hidden themselves: one that points
inside reaches an entry judged on its own, one that points outside reaches nothing a confined
command can read.

A workspace with more than ``WALK_LIMIT`` entries is walked breadth first, and every folder left
unvisited when the budget runs out is hidden whole: what was not checked is not shown.
Verdicts are cached per file by inode, size, mtime and ctime (a rewrite or a ``touch -d``
changes the ctime), so a repeated glance reads only what changed.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from ..base.secrets import holds_secret
from .credentials import credential_name

SCAN_HEAD = 1 << 20
SCAN_TAIL = 256 << 10
BINARY_PROBE = 8192
WALK_LIMIT = 200_000
_GIT_CONFIG = frozenset({"config", "config.worktree"})
_NOT_SCANNED = frozenset({"objects", "lfs"})  # under a .git folder
_DEPENDENCIES = frozenset(
    {
        "node_modules",
        "bower_components",
        "site-packages",
        "dist-packages",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".gradle",
        ".m2",
    }
)

_Key = tuple[int, int, int, int]
_verdicts: dict[str, tuple[_Key, bool]] = {}
_lock = threading.Lock()


def hidden(workspace: str | Path, *, also: Iterable[str | Path] = ()) -> list[Path]:
    """The entries of ``workspace`` a confined command must not read, sorted; ``also`` adds
    paths hidden whatever they hold (when they exist inside the workspace)."""
    root = os.path.realpath(workspace)
    found: list[str] = []
    # (folder, inside a .git folder, read for content)
    queue: deque[tuple[str, bool, bool]] = deque([(root, False, True)])
    budget = WALK_LIMIT
    while queue:
        folder, in_git, scan = queue.popleft()
        entries = _listing(folder)
        budget -= len(entries)
        if scan and any(name == "pyvenv.cfg" for name, _, _ in entries):
            scan = False  # a virtual environment's root
        for name, kind, credential in entries:
            path = os.path.join(folder, name)
            if kind == _LINK:
                continue
            if credential and not (in_git and name in _GIT_CONFIG):
                found.append(path)
            elif kind == _DIR:
                if not (in_git and name in _NOT_SCANNED):
                    queue.append((path, in_git or name == ".git", scan and name not in _DEPENDENCIES))
            elif kind == _FILE:
                if scan and not (in_git and name in _GIT_CONFIG) and _secret_file(path):
                    found.append(path)
            elif kind == _SPECIAL:
                found.append(path)
        if budget <= 0:
            found.extend(rest for rest, _, _ in queue)  # unchecked: hidden whole
            break
    for extra in also:
        path = os.path.realpath(extra)
        if path.startswith(root + os.sep) and os.path.lexists(path):
            found.append(path)
    return [Path(p) for p in _outermost(found)]


_LINK, _DIR, _FILE, _SPECIAL, _OTHER = "l", "d", "f", "s", "o"
_Entry = tuple[str, str, bool]  # name, kind, named like a credential
_listings: dict[str, tuple[_Key, list[_Entry]]] = {}


def _listing(folder: str) -> list[_Entry]:
    """A folder's entries, cached while the folder itself is unchanged (same inode, mtime and
    ctime: an entry added, removed or renamed changes them)."""
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return []
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _lock:
        cached = _listings.get(folder)
    if cached is not None and cached[0] == key:
        return cached[1]
    entries: list[_Entry] = []
    try:
        with os.scandir(folder) as scan:
            for entry in scan:
                entries.append((entry.name, _kind(entry), credential_name(entry.name)))
    except OSError:
        return []  # vanished or unreadable: nothing in it can be shown either
    with _lock:
        _listings[folder] = (key, entries)
    return entries


def _kind(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return _LINK
        if entry.is_dir(follow_symlinks=False):
            return _DIR
        if entry.is_file(follow_symlinks=False):
            return _FILE
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return _OTHER
    # a device node or a socket; a FIFO only blocks a reader, until the time bound
    return _SPECIAL if stat.S_ISBLK(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode) else _OTHER


def _outermost(paths: list[str]) -> list[str]:
    """``paths`` sorted, without those inside another one (a hidden folder hides its content)."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not kept or not path.startswith(kept[-1] + os.sep):
            kept.append(path)
    return kept


def _secret_file(path: str) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _lock:
        cached = _verdicts.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    verdict = _holds_secret(path, st.st_size)
    with _lock:
        _verdicts[path] = (key, verdict)
    return verdict


def _holds_secret(path: str, size: int) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False  # unreadable here: unreadable to the command too
    try:
        head = os.pread(fd, BINARY_PROBE, 0)
        if b"\0" in head:
            return False
        if size > BINARY_PROBE:
            head += os.pread(fd, SCAN_HEAD - BINARY_PROBE, BINARY_PROBE)
        tail = os.pread(fd, SCAN_TAIL, size - SCAN_TAIL) if size > SCAN_HEAD + SCAN_TAIL else b""
    except OSError:
        return False
    finally:
        os.close(fd)
    text = head.decode("utf-8", "replace")
    return holds_secret(text) or (bool(tail) and holds_secret(tail.decode("utf-8", "replace")))
