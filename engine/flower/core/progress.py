"""No progress: rounds that fail the same checks while the workspace stays the same.

A judged run that fails the same checklist items round after round, with not one file of the
workspace changed, would go on until its rounds run out and spend money on each. The detector
here counts such rounds; the goal guard (workflow/goal.py) asks the person when it fires.

A round counts when its verdict is not achieved, its failed items are the same set as the
round before it in the streak, and the workspace at its verdict is the one it started from
(the fingerprint of the checkpoint taken before the round against the files now). An achieved
round, a changed workspace, other failed items or an unknown fingerprint break the streak.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .brief import fold_width
from .checkpoints import CheckpointError, Checkpoints

DEFAULT_LIMIT = 3
ENV = "FLOWER_STALL_ROUNDS"


def stall_limit(value: int | None = None) -> int:
    """The rounds without progress before the run asks: `value`, else $FLOWER_STALL_ROUNDS,
    else 3; 0 never asks. A value that is no whole number >= 0 is the default."""
    if value is not None and value >= 0:
        return value
    raw = os.environ.get(ENV, "").strip()
    try:
        number = int(raw)
    except ValueError:
        return DEFAULT_LIMIT
    return number if number >= 0 else DEFAULT_LIMIT


def same_checks(failed: Iterable[str]) -> frozenset[str]:
    """The failed items as a set that does not care for order, width or spacing."""
    return frozenset(" ".join(fold_width(c).split()) for c in failed if c and c.strip())


def fingerprint(files: Mapping[str, object], skipped: Mapping[str, str] | None = None) -> str:
    """One hash of a checkpoint's file list (path -> Entry): same content, links and executable
    bits give the same string. Skipped files count by name only (their content is not read)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        entry = files[path]
        sha, link, mode = getattr(entry, "sha", ""), getattr(entry, "link", ""), getattr(entry, "mode", 0)
        digest.update(f"{path}\0{sha}\0{link}\0{mode & 0o111}\n".encode("utf-8", "surrogateescape"))
    for path in sorted(skipped or {}):
        digest.update(f"skipped\0{path}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


@dataclass
class NoProgress:
    """Counts the rounds in a row that made no progress; `observe` says when there are `limit`."""

    limit: int = DEFAULT_LIMIT
    streak: int = 0
    checks: frozenset[str] | None = None

    def observe(self, achieved: bool, failed: Iterable[str], before: str | None, after: str | None) -> bool:
        """One judged round: whether it was achieved, the items it failed, the workspace's
        fingerprint when it began and at its verdict (None: not known). True when this round
        makes `limit` in a row; the count then starts again (the person decides what next)."""
        if achieved or before is None or after is None or before != after:
            self.reset()
            return False
        checks = same_checks(failed)
        if checks != self.checks:
            self.streak, self.checks = 0, checks
        self.streak += 1
        if self.limit <= 0 or self.streak < self.limit:
            return False
        self.reset()
        return True

    def reset(self) -> None:
        self.streak, self.checks = 0, None


def round_fingerprints(store: Checkpoints | None) -> tuple[str | None, str | None]:
    """(the workspace when this round began, the workspace now), from the checkpoint taken
    before the round (the head) and a scan that reads only files changed since it; (None, None)
    without checkpoints or when they cannot be read."""
    if store is None:
        return None, None
    try:
        head = store.head()
        if head is None:
            return None, None
        files, skipped, _fresh = store.scan(head)
    except (OSError, CheckpointError):
        return None, None
    return fingerprint(head.files, head.skipped), fingerprint(files, skipped)


__all__ = [
    "DEFAULT_LIMIT",
    "ENV",
    "NoProgress",
    "fingerprint",
    "round_fingerprints",
    "same_checks",
    "stall_limit",
]
