"""Lineage: which step used which session, kept on disk across processes.

Continuity is a bonus, never a precondition: anything that does not fit (missing file, garbage,
another workspace) silently means "start fresh", and a failed write never fails the run.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .files import atomic_write

FILENAME = "lineage.json"


@dataclass
class Lineage:
    path: Path
    workspace: Path
    steps: dict[str, str] = field(default_factory=dict)
    woke: int = 0

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.workspace = Path(self.workspace).expanduser().resolve()

    @classmethod
    def open(cls, run_dir: str | Path, workspace: str | Path) -> Lineage:
        """Read `<run_dir>/lineage.json`; anything unusable yields an empty lineage, never an error."""
        empty = cls(Path(run_dir) / FILENAME, Path(workspace))
        try:
            data = json.loads(empty.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return empty
        if not isinstance(data, dict):
            return empty
        # The SDK derives project_key from the workspace path: after a copy/move the old
        # session ids cannot be found, so a lineage from another path is no lineage at all.
        if data.get("workspace") != str(empty.workspace):
            return empty
        steps = data.get("steps", {})
        woke = data.get("woke", 0)
        if not isinstance(steps, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in steps.items()
        ):
            return empty
        if isinstance(woke, bool) or not isinstance(woke, int) or woke < 0:
            return empty
        return cls(empty.path, empty.workspace, dict(steps), woke)

    def remember(self, step: str, session_id: str) -> None:
        """Record step -> session and write it out at once (the process may be killed any moment)."""
        if not step or not session_id:
            return
        self.steps[step] = session_id
        self._save()

    def bump(self) -> int:
        """Count one more wake-up and persist it; the first run gets 1."""
        self.woke += 1
        self._save()
        return self.woke

    def archive(self, into: str | Path, *, extra: list[Path] | None = None) -> Path:
        """Move the lineage file and `extra` into `<into>/<YYYYmmdd-HHMMSS>/`, then start over.

        Move, never delete: the archived files are the history of the previous piece of work.
        """
        dest = _fresh_dir(Path(into), time.strftime("%Y%m%d-%H%M%S"))
        for src in [self.path, *(Path(p) for p in extra or [])]:
            if src.exists():
                shutil.move(str(src), str(_free_name(dest / src.name)))
        self.steps = {}
        self.woke = 0
        return dest

    def _save(self) -> None:
        data = {"workspace": str(self.workspace), "woke": self.woke, "steps": self.steps}
        try:
            atomic_write(self.path, json.dumps(data, ensure_ascii=False, indent=2), durable=True)
        except OSError:
            pass  # losing continuity must not take the run down with it


def _fresh_dir(parent: Path, name: str) -> Path:
    # mkdir without exist_ok is the atomic "claim": two archives in one second never share a folder.
    parent.mkdir(parents=True, exist_ok=True)
    candidate, n = parent / name, 1
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            candidate = parent / f"{name}-{n}"
            n += 1


def _free_name(target: Path) -> Path:
    candidate, n = target, 1
    while candidate.exists():
        candidate = target.with_name(f"{target.stem}-{n}{target.suffix}")
        n += 1
    return candidate
