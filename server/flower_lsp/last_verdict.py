"""A folder's last verdict, as the hover and the restored diagnostics of 目标.md read it.

The last verdict is the one this server saw in a run (a VerdictGiven), else the last one the
folder's history on disk holds: an editor opened on a folder whose run ended keeps its marks on
目标.md and its hovers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flower.core.events import VerdictGiven, VerdictState
from flower.core.goal import check_states

from . import protocol as p
from .common import Folder

if TYPE_CHECKING:
    from flower.core.evidence import CheckState, Evidence
    from flower.workflow.history import VerdictRecord


@dataclass
class LastVerdict:
    """What a hover or a diagnostic needs of one verdict."""

    goal: Path
    round: int
    state: VerdictState
    reason: str = ""
    failed: list[str] = field(default_factory=list)
    unproven: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)

    def states(self) -> list[CheckState]:
        return check_states(self.state, self.failed, self.unproven, self.evidence)

    def info(self) -> p.VerdictInfo:
        return p.VerdictInfo(
            state=self.state,
            reason=self.reason,
            failed=list(self.failed),
            round=self.round,
            goal_path=str(self.goal),
        )

    @classmethod
    def of(cls, goal: Path, verdict: VerdictGiven | VerdictRecord) -> LastVerdict:
        """The verdict as a run's event or the history on disk holds it (the same fields)."""
        return cls(
            goal=goal,
            round=verdict.round,
            state=verdict.state,
            reason=verdict.reason,
            failed=list(verdict.failed),
            unproven=list(verdict.unproven),
            evidence=list(verdict.evidence),
        )

    @classmethod
    def of_event(cls, event: VerdictGiven, folder: Folder) -> LastVerdict | None:
        if not event.goal_path:
            return None
        goal = Path(event.goal_path).expanduser()
        return cls.of(goal if goal.is_absolute() else folder.path / goal, event)


def last_on_disk(folder: Folder) -> LastVerdict | None:
    """The folder's last verdict as its history on disk tells it (slow: reads the run files)."""
    from flower.workflow.history import read_history

    history = read_history(folder.path, run_dir=folder.run_dir)
    verdicts = [r.verdict for w in history.wakes for s in w.steps for r in s.rounds if r.verdict is not None]
    if not verdicts or not history.goal:
        return None
    return LastVerdict.of(Path(history.goal), verdicts[-1])
