"""Private temporary folders short enough to hold Unix sockets.

A Unix socket's path is bounded (``sun_path``: 108 bytes on Linux, 104 on macOS, the NUL
included) and binding a longer one fails. Programs flower starts make sockets inside the
temporary folder flower gives them (the Claude Code CLI's sandbox bridges its proxies with
``$TMPDIR/claude-socks-<16 hex>.sock``), so a long ``$TMPDIR`` (a deep CI workspace, a home
on a network share) would break them in a way no retry fixes. `socket_tempdir` picks, by
construction, a parent whose path leaves the room.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["SOCKET_PATH_MAX", "socket_tempdir"]

SOCKET_PATH_MAX = 103  # the most bytes a socket path may have everywhere flower runs (macOS: 104 - NUL)
_RANDOM = 8  # the characters mkdtemp adds to the prefix
_FALLBACKS = ("/tmp", "/var/tmp")  # short on every Unix, and world-writable with the sticky bit


def _fits(parent: str, prefix: str, room: int) -> bool:
    folder = os.path.join(parent, prefix + "x" * _RANDOM)
    return len(os.fsencode(folder)) + room <= SOCKET_PATH_MAX


def socket_tempdir(prefix: str, room: int) -> Path:
    """A new folder of this process's own (mode 0700, from `tempfile.mkdtemp`) whose path leaves
    `room` bytes (a separator and a socket's name) for the sockets made inside it: under the
    temporary folder when it is short enough, else under /tmp or /var/tmp, else (none fits or
    can be written) under the temporary folder anyway."""
    parents = [tempfile.gettempdir(), *_FALLBACKS]
    for parent in parents:
        if _fits(parent, prefix, room) and os.access(parent, os.W_OK | os.X_OK):
            try:
                return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
            except OSError:
                continue
    return Path(tempfile.mkdtemp(prefix=prefix))
