"""One engine run in one folder: what it is doing now, what the server remembers of the folder,
and how the run ended."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from flower.base.i18n import _
from flower.core.events import (
    ContextUpdate,
    Event,
    HandoffDone,
    HandoffWriting,
    StepStarted,
    VerdictGiven,
)

from . import protocol as p
from .common import Folder

if TYPE_CHECKING:
    from flower.core.human import HumanChannel
    from flower.core.run_settings import RunSettings
    from flower.core.rundir import FlowLock
    from flower.core.stops import StopKind
    from flower.workflow.outcome import Outcome

    from .engine import EngineRun, RunControl

log = logging.getLogger(__name__)


@dataclass
class Live:
    """What the run is doing now, as the meter and flower/state report it."""

    step: str = ""
    turn_step: str = ""  # the Runtime step of the last model turn (a judge round has its own name)
    index: int = 0
    total: int = 0
    round: int = 1
    generation: int = 1
    used: int = 0
    window: int = 0
    warn_at: int = 0
    at: int = 0
    cost_usd: float = 0.0
    handing_off: bool = False

    @property
    def near(self) -> bool:
        return self.warn_at > 0 and self.used >= self.warn_at


@dataclass
class Memory:
    """What the server remembers about a folder across runs (until it restarts)."""

    verdict: p.VerdictInfo | None = None
    handoff: str | None = None  # the latest handoff document
    live: Live = field(default_factory=Live)


RunPhase = Literal["finished", "stopped", "failed", "budget"]


@dataclass(frozen=True)
class RunEnded:
    """How a run ended: the phase, one line for people, its cost, and the workflow's outcome
    when the work ran to its end."""

    phase: RunPhase
    text: str
    cost_usd: float
    outcome: Outcome | None = None

    @classmethod
    def of(cls, outcome: Outcome, cost_usd: float) -> RunEnded:
        if outcome.fault:  # the disk refused a write: which folder, why, what to do
            return cls("failed", outcome.fault, cost_usd, outcome)
        if outcome.budget:  # stopped: budget; a new budget continues the same run
            return cls("budget", outcome.budget, cost_usd, outcome)
        if outcome.stopped and outcome.aborted:  # no progress: stopped on the person's word
            return cls("stopped", _("停下了:{why}").format(why=outcome.aborted), cost_usd, outcome)
        if outcome.aborted:
            return cls("failed", _("停下了:{why}").format(why=outcome.aborted), cost_usd, outcome)
        if outcome.failed_at:
            return cls("failed", _("在步骤 {step} 失败").format(step=outcome.failed_at), cost_usd, outcome)
        verdict = outcome.verdict.state if outcome.verdict is not None else ""
        if verdict:
            return cls("finished", _("跑完了({verdict})").format(verdict=verdict), cost_usd, outcome)
        return cls("finished", _("跑完了"), cost_usd, outcome)

    def details(self) -> dict[str, object]:
        """The flower/event payload of a run's end."""
        out: dict[str, object] = {}
        if self.outcome is not None:
            verdict = self.outcome.verdict
            out = {
                "failed_at": self.outcome.failed_at,
                "aborted": self.outcome.aborted,
                "verdict": verdict.state if verdict is not None else None,
                "rounds": self.outcome.rounds,
                "budget": self.outcome.budget,
                "stopped": self.outcome.stopped,
            }
        return {**out, "phase": self.phase, "cost_usd": self.cost_usd}


class Run:
    """One workflow run in one folder. Events reach it from any thread through `emit`; the
    server's loop then calls `track` and hands the event to the features."""

    def __init__(
        self,
        folder: Folder,
        work: EngineRun,
        *,
        waking: bool,
        banner: str | None,
        memory: Memory,
        deliver: Callable[[Run, Event], None],
    ) -> None:
        self.folder = folder
        self.work = work
        self.waking = waking
        self.banner = banner
        self.memory = memory
        self.memory.live = self.live = Live()
        self.task: asyncio.Task[None] | None = None
        self.done = asyncio.Event()
        self.stop_reason = ""  # why it was stopped from outside, for the end line
        self.lock: FlowLock | None = None  # the folder's flow lock, held while the run lasts
        self.settings: RunSettings | None = None  # what it started with (a change waits for the next)
        self.stopped: StopKind | None = None  # how the wake it continues stopped short, if it did
        self._deliver = deliver

    @property
    def channel(self) -> HumanChannel:
        return self.work.channel

    @property
    def runtime(self) -> RunControl:
        return self.work.runtime

    @property
    def busy(self) -> bool:
        return self.runtime.busy

    def emit(self, event: Event) -> None:
        """The engine's sink (any thread)."""
        self._deliver(self, event)

    def finished_cost(self) -> float:
        try:
            return float(self.runtime.total_cost())
        except Exception:
            return 0.0

    def close(self) -> None:
        try:
            self.runtime.close()
        except Exception:
            log.debug("closing the runtime failed", exc_info=True)

    def track(self, event: Event) -> None:
        """Keep `live` (and the folder's memory) up to date with one event."""
        live = self.live
        if isinstance(event, StepStarted):
            live.step = event.text or live.step
            live.index, live.total = event.index, event.total
            live.generation, live.turn_step = 1, ""
        elif isinstance(event, ContextUpdate):
            live.used, live.window, live.warn_at, live.at = event.used, event.window, event.warn_at, event.at
            live.generation = event.generation
            if event.step:
                live.turn_step = event.step
            live.cost_usd = round(self.finished_cost() + event.cost_usd, 6)
        elif isinstance(event, HandoffWriting):
            live.handing_off = True
        elif isinstance(event, HandoffDone):
            live.handing_off = False
            live.generation, live.used = event.generation, 0
            if event.path:
                self.memory.handoff = event.path
        elif isinstance(event, VerdictGiven):
            self.memory.verdict = verdict_info(event)
            if event.state != "achieved":
                live.round = event.round + 1


def verdict_info(event: VerdictGiven) -> p.VerdictInfo:
    return p.VerdictInfo(
        state=event.state,
        reason=event.reason,
        failed=list(event.failed),
        round=event.round,
        goal_path=event.goal_path,
    )
