"""How a workflow run ended, read once from the ctx that `Workflow.run` returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core.goal import Verdict
from ..core.stops import StopKind
from .base import ABORTED_KEY, BUDGET_KEY, FAILED_AT_KEY, FAULT_KEY, STOPPED_KEY, wake_stop
from .goal import ROUND_KEY, VERDICT_KEY


@dataclass(frozen=True)
class Outcome:
    failed_at: str | None = None  # the step that failed with on_fail="stop"
    aborted: str | None = None  # a gate's StepAbort: another round would not have helped
    verdict: Verdict | None = None  # the judge's last verdict, when the work was goal-guarded
    rounds: int | None = None  # judged rounds of work
    fault: str | None = None  # the disk refused a write: what happened and what to do, one line
    budget: str | None = None  # stopped: budget (a money ceiling reached), its one line
    stopped: str | None = None  # stopped on the person's word: "no_progress"
    # the stop it ended in with its line (stopped: budget, stopped: no progress): `wake_stop`
    stop: tuple[StopKind, str] | None = None

    @classmethod
    def of(cls, ctx: Mapping[str, object]) -> Outcome:
        failed, aborted = ctx.get(FAILED_AT_KEY), ctx.get(ABORTED_KEY)
        verdict, rounds, fault = ctx.get(VERDICT_KEY), ctx.get(ROUND_KEY), ctx.get(FAULT_KEY)
        budget = ctx.get(BUDGET_KEY)
        return cls(
            failed_at=str(failed) if failed else None,
            aborted=str(aborted) if aborted else None,
            verdict=verdict if isinstance(verdict, Verdict) else None,
            rounds=rounds if isinstance(rounds, int) else None,
            fault=str(fault) if fault else None,
            budget=str(budget) if budget else None,
            stopped=str(ctx[STOPPED_KEY]) if ctx.get(STOPPED_KEY) else None,
            stop=wake_stop(ctx),
        )

    @property
    def ok(self) -> bool:
        """The workflow ran to its end (a goal that was not reached still ends it)."""
        return self.failed_at is None and self.aborted is None and self.fault is None
