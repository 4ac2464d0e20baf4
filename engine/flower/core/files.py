"""Writing files that other processes (and a killed one) may read at any moment."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from .secrets import redact


def atomic_write(path: str | Path, text: str, *, durable: bool = False) -> Path:
    """Write `text` to `path` so that readers see the old file or the new one, never half.

    Parents are created. `durable` also fsyncs, to survive a power cut and not only a kill.
    Raises OSError; callers that must never fail a run catch it themselves.
    """
    p = Path(path)
    text = redact(text)  # everything flower writes whole passes here: no credential goes to disk
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p.resolve()


def keep_copy(path: str | Path, into: str | Path) -> Path | None:
    """Copy `path` to `<into>/<stem>-<YYYYmmdd-HHMMSS><suffix>` before it is rewritten.

    Never over an earlier copy. None when there is nothing to keep (no file, or an empty one).
    """
    src = Path(path)
    try:
        data = src.read_bytes()
    except OSError:
        return None
    if not data:
        return None
    folder = Path(into)
    folder.mkdir(parents=True, exist_ok=True)
    base = f"{src.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    target, n = folder / f"{base}{src.suffix}", 1
    while True:
        try:
            with open(target, "xb") as fh:  # "x": an earlier copy is never replaced
                fh.write(data)
            return target
        except FileExistsError:
            target = folder / f"{base}-{n}{src.suffix}"
            n += 1
