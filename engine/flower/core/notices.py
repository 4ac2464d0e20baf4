"""Notices: the few moments of a run a person away from the screen wants to hear about.

One source of truth for every front end: the terminal (bell and title), `--notify` (a command of
the user's, the notice as JSON on stdin) and the language server (window/showMessage) all map the
engine's events through `Notices` here and never decide on their own what deserves a notice.
"""

from __future__ import annotations

import enum
import json
import time
from dataclasses import dataclass

from ..base.i18n import N_, _
from .display import first_line
from .events import Event, LimitWait, Question, StepStarted

TEXT_CHARS = 300


class NoticeKind(enum.Enum):
    ASKED = "asked"  # a question waits for the person
    FINISHED = "finished"  # the run ran to its end
    STOPPED = "stopped"  # the run ended without getting there (failed, aborted, stopped)
    BUDGET = "budget"  # stopped: its money ceiling was reached; a new budget continues it
    LIMIT_WAIT = "limit_wait"  # a usage or rate limit: the run waits for its reset


_LABELS = {
    NoticeKind.ASKED: N_("在问你"),
    NoticeKind.FINISHED: N_("跑完了"),
    NoticeKind.STOPPED: N_("停下了"),
    NoticeKind.BUDGET: N_("预算用完了"),
    NoticeKind.LIMIT_WAIT: N_("在等额度恢复"),
}


@dataclass(frozen=True)
class Notice:
    kind: NoticeKind
    folder: str  # the workspace the run works in
    step: str  # the step it was in, "" before the first
    text: str  # one line: the question, why it stopped, until when it waits
    time: float  # epoch seconds

    def label(self) -> str:
        return _(_LABELS[self.kind])

    def title(self) -> str:
        """A short line for a terminal's title or a notification's head."""
        return _("flower · {label}").format(label=self.label())

    def line(self) -> str:
        """The notice in one line: what it is, then its text."""
        return f"{self.title()}: {self.text}" if self.text else self.title()

    def to_json(self) -> dict[str, object]:
        # exactly these fields, nothing of the run's settings: no credential can ride along
        return {
            "kind": self.kind.value,
            "folder": self.folder,
            "step": self.step,
            "text": self.text,
            "time": self.time,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)


class Notices:
    """Follows one run's events and says which of them are notices (`of`), and makes the notice
    of its end (`ended`). Knows the step the run is in from the events themselves."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.step = ""

    def of(self, ev: Event, *, now: float | None = None) -> Notice | None:
        if isinstance(ev, StepStarted):
            self.step = ev.text
            return None
        if isinstance(ev, Question) and ev.state == "asked":
            return self._make(NoticeKind.ASKED, ev.text, ev.asked_at or now)
        if isinstance(ev, LimitWait) and ev.phase == "wait":
            return self._make(NoticeKind.LIMIT_WAIT, ev.text, now, step=ev.step)
        return None

    def ended(self, ok: bool, text: str = "", *, budget: bool = False, now: float | None = None) -> Notice:
        """The run's end: finished, stopped, or (`budget`) stopped by its money ceiling."""
        kind = NoticeKind.BUDGET if budget else NoticeKind.FINISHED if ok else NoticeKind.STOPPED
        return self._make(kind, text, now)

    def _make(self, kind: NoticeKind, text: str, now: float | None, *, step: str = "") -> Notice:
        return Notice(
            kind=kind,
            folder=self.folder,
            step=step or self.step,
            text=first_line(text, TEXT_CHARS),
            time=time.time() if now is None else now,
        )
