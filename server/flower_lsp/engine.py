"""The seam between the language server and the flower engine.

The server only ever calls the five methods of `Engine`, and drives what `Engine.start` returns
(an `EngineRun`) through its typed members; `FlowerEngine` implements them with the starter flow
and the Runtime, exactly as `flower go` does. `FLOWER_LSP_ENGINE=module:attribute` (read at
start-up) swaps in another implementation, which is how the server's own tests drive it with a
scripted run that needs no CLI.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the engine's imports are slow: the real ones happen on warm() and start()
    from flower.core.aside import AsideAnswer
    from flower.core.events import Event
    from flower.core.human import HumanChannel
    from flower.core.run_settings import RunSettings
    from flower.core.runtime import Runtime, StepResult
    from flower.workflow.base import Step, Workflow
    from flower.workflow.outcome import Outcome
    from flower.workflow.starter import WakeState

ENGINE_VAR = "FLOWER_LSP_ENGINE"


class RunControl(Protocol):
    """What the server does with a run's runtime: interrupt it, read its books, close it."""

    on_stderr: Callable[[str], None] | None  # the CLI's stderr, line by line

    @property
    def busy(self) -> bool:
        """A step is in flight: words interrupt it; between steps they go to the inbox."""

    def interrupt(self, message: str = "") -> Future[None]:
        """Resolves once the model answered the turn resumed with `message`; fails with
        flower.core.delivery.Undelivered when the words never reached it."""

    def total_cost(self) -> float:
        """Dollars of the steps finished so far."""

    def close(self) -> None: ...


class EngineRun(Protocol):
    """One run, ready to go: its questions, its runtime, and the work itself."""

    @property
    def channel(self) -> HumanChannel: ...

    @property
    def runtime(self) -> RunControl: ...

    async def run(self, on_event: Callable[[Event], None]) -> Outcome:
        """Do the work; every event (a finished step's books included) goes to `on_event`."""


@runtime_checkable
class Engine(Protocol):
    def warm(self) -> None:
        """Import what a run needs ahead of time (called off the event loop)."""

    def wake_state(self, settings: RunSettings) -> WakeState:
        """What `flower.workflow.wake_state` says of a run under `settings`; read-only."""

    def banner(self, settings: RunSettings) -> str | None:
        """The seeds' one-line resume banner, or None when there is nothing to resume."""

    def start(self, ask: str, settings: RunSettings) -> EngineRun:
        """Build a run (slow: called off the event loop); nothing runs until `run()`. The
        settings are the folder's as they are now: a run keeps them to its end."""

    async def aside(self, question: str, settings: RunSettings, *, recent: list[str]) -> AsideAnswer:
        """A side question about the folder's run, shown `recent` (its last events, one line each):
        answered by a read-only oracle in a Runtime of its own; never raises but when cancelled."""


@dataclass
class StarterRun:
    """`starter_flow` and its Runtime, as `flower go` pairs them."""

    flow: Workflow
    channel: HumanChannel
    runtime: Runtime

    async def run(self, on_event: Callable[[Event], None]) -> Outcome:
        from flower.core.events import StepFinished
        from flower.workflow.outcome import Outcome

        def on_step(step: Step, result: StepResult) -> None:
            on_event(
                StepFinished(
                    text=step.name,
                    ok=result.ok,
                    cost_usd=result.cost_usd,
                    session_id=result.session_id,
                    error=result.error,
                )
            )

        ctx = await self.flow.run(self.runtime, on_event=on_event, on_step=on_step)
        return Outcome.of(ctx)


class FlowerEngine:
    """The real engine: the run `flower go` assembles (flower.workflow.assemble), nothing else."""

    def warm(self) -> None:
        # claude_agent_sdk is the slowest import of a run
        for module in ("claude_agent_sdk", "flower.core.runtime", "flower.workflow.assemble"):
            importlib.import_module(module)

    def wake_state(self, settings: RunSettings) -> WakeState:
        from flower.workflow.assemble import wake_of

        return wake_of(settings)

    def banner(self, settings: RunSettings) -> str | None:
        from flower.workflow.assemble import banner_of

        return banner_of(settings)

    def start(self, ask: str, settings: RunSettings) -> StarterRun:
        from flower.workflow.assemble import assemble

        run = assemble(ask, settings)
        return StarterRun(run.flow, run.channel, run.runtime)

    async def aside(self, question: str, settings: RunSettings, *, recent: list[str]) -> AsideAnswer:
        from flower.core.aside import ask_aside
        from flower.workflow.starter import workbench_for

        return await ask_aside(
            question,
            recent,
            workspace=settings.workspace,
            run_dir=settings.run_dir,
            workbench=workbench_for(settings.workspace),
        )


def load_engine(spec: str | None = None) -> Engine:
    """`FLOWER_LSP_ENGINE` (module:attribute, a class or a factory), else the real engine."""
    spec = spec if spec is not None else os.environ.get(ENGINE_VAR, "")
    if not spec:
        return FlowerEngine()
    module, _, attr = spec.partition(":")
    target = getattr(importlib.import_module(module), attr or "Engine")
    engine = target() if callable(target) else target
    if not isinstance(engine, Engine):
        raise TypeError(
            f"{ENGINE_VAR}={spec} is not an engine: it needs warm, wake_state, banner, start and aside"
        )
    return engine
