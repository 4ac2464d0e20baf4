"""A run of the starter flow, assembled in one place.

`flower go`, the language server, the offline demo and the benchmarks all start a run the same
way: a typed `RunSettings` (from the CLI's arguments or a client's per-folder options) goes to
`assemble`, which builds the starter flow and the Runtime that runs it, with the same store,
sandbox, trimming and handoff on every path. What a front end adds (its questions, its screen,
its locks) it adds around the assembled run, never inside a copy of it.

The store is carried as asked (None: `$FLOWER_STORE`, else the run folder's `sessions.db`) and
resolved once per run by `core.shared.store_setting`, which every reader of the setting calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.run_settings import RunSettings

if TYPE_CHECKING:
    from ..core.human import HumanChannel
    from ..core.runtime import Runtime
    from ..core.workbench import Workbench
    from .base import Workflow
    from .starter import WakeState

__all__ = ["AssembledRun", "RunSettings", "assemble", "banner_of", "flow_of", "runtime_of", "wake_of"]


@dataclass
class AssembledRun:
    """The starter flow and the Runtime that runs it; `close()` releases the Runtime's store."""

    settings: RunSettings
    flow: Workflow
    runtime: Runtime

    @property
    def channel(self) -> HumanChannel:
        from ..core.human import HumanChannel

        channel = self.flow.channel
        if not isinstance(channel, HumanChannel):
            raise TypeError("the starter flow was made without its HumanChannel")
        return channel

    def close(self) -> None:
        self.runtime.close()


def flow_of(ask: str, settings: RunSettings) -> Workflow:
    """The starter flow for `ask` under `settings` (ValueError: a request it cannot start on)."""
    from .starter import starter_flow

    return starter_flow(
        ask,
        workspace=settings.workspace,
        run_dir=settings.run_dir,
        new=settings.new,
        isolate=settings.isolate,
        clarify_only=settings.clarify_only,
        goal=settings.goal,
        rounds=settings.rounds,
        stall_rounds=settings.stall_rounds,
        evidence=settings.evidence,
        judge_can_run=settings.judge_can_run,
        max_asks=settings.max_asks,
        timeout_s=settings.timeout_s,
        store=settings.store,
    )


def runtime_of(settings: RunSettings, *, workbench: Workbench | bool = True) -> Runtime:
    """The Runtime of a run under `settings` (the workflow's own workbench, else one of the run
    folder's with True): the settings' store, sandbox, trimming and handoff. Raises what Runtime
    raises (a store that cannot be opened, a run folder that cannot be written)."""
    from ..core.agent import HandoffPolicy
    from ..core.budget import Budget
    from ..core.runtime import Runtime

    handoff = HandoffPolicy(enabled=settings.handoff)
    if settings.window is not None:
        handoff.window = settings.window
    return Runtime(
        workspace=settings.workspace,
        run_dir=settings.run_dir,
        workbench=workbench,
        trim=settings.trim,
        handoff=handoff,
        sandbox=settings.sandbox,
        store=settings.store,
        budget=Budget(run_usd=settings.budget_usd, round_usd=settings.round_budget_usd),
    )


def assemble(ask: str, settings: RunSettings) -> AssembledRun:
    """The run `ask` starts (or continues) under `settings`."""
    flow = flow_of(ask, settings)
    workbench = flow.workbench if flow.workbench is not None else True
    return AssembledRun(settings, flow, runtime_of(settings, workbench=workbench))


def wake_of(settings: RunSettings) -> WakeState:
    """What a run under `settings` would wake to (read only: nothing is written)."""
    from .starter import wake_state

    return wake_state(
        settings.workspace, run_dir=settings.run_dir, isolate=settings.isolate, store=settings.store
    )


def banner_of(settings: RunSettings) -> str | None:
    """The resume banner of a run under `settings`, None when there is nothing to continue."""
    from .starter import banner

    return banner(settings.workspace, run_dir=settings.run_dir, store=settings.store)
