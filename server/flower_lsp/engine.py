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
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the engine's imports are slow: the real ones happen on warm() and start()
    from flower.core.aside import AsideAnswer
    from flower.core.events import Event
    from flower.core.human import HumanChannel
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

    def wake_state(self, workspace: Path, run_dir: Path) -> WakeState:
        """What `flower.workflow.wake_state` says; read-only."""

    def banner(self, workspace: Path, run_dir: Path) -> str | None:
        """The seeds' one-line resume banner, or None when there is nothing to resume."""

    def start(
        self,
        ask: str,
        *,
        workspace: Path,
        run_dir: Path,
        new: bool,
        timeout_s: float | None,
        window: int | None,
        sandbox: str = "auto",
    ) -> EngineRun:
        """Build a run (slow: called off the event loop); nothing runs until `run()`."""

    async def aside(self, question: str, *, workspace: Path, run_dir: Path, recent: list[str]) -> AsideAnswer:
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
    """The real engine: `starter_flow` run by a `Runtime`, exactly as `flower go` does."""

    def __init__(self) -> None:
        self.store: str | None = None  # the editor's `flower.store` (None: $FLOWER_STORE or local)

    def use_store(self, store: str | None) -> None:
        """The shared store every run of this server uses (from InitOptions)."""
        self.store = store or None

    def warm(self) -> None:
        # claude_agent_sdk is the slowest import of a run
        for module in ("claude_agent_sdk", "flower.core.runtime", "flower.workflow.starter"):
            importlib.import_module(module)

    def wake_state(self, workspace: Path, run_dir: Path) -> WakeState:
        from flower.workflow.starter import wake_state

        return wake_state(workspace, run_dir=run_dir, store=self.store)

    def banner(self, workspace: Path, run_dir: Path) -> str | None:
        from flower.workflow.starter import banner

        return banner(workspace, run_dir=run_dir, store=self.store)

    def start(
        self,
        ask: str,
        *,
        workspace: Path,
        run_dir: Path,
        new: bool,
        timeout_s: float | None,
        window: int | None,
        sandbox: str = "auto",
    ) -> StarterRun:
        from flower.core.agent import HandoffPolicy
        from flower.core.human import HumanChannel
        from flower.core.runtime import Runtime
        from flower.workflow.starter import starter_flow

        flow = starter_flow(
            ask, workspace=workspace, run_dir=run_dir, new=new, timeout_s=timeout_s, store=self.store
        )
        if not isinstance(flow.channel, HumanChannel):
            raise TypeError("starter_flow made a workflow without its HumanChannel")
        handoff = HandoffPolicy(window=window) if window else True
        # trim on, as on the `flower go` path
        runtime = Runtime(
            workspace=workspace,
            run_dir=run_dir,
            workbench=flow.workbench,
            trim=True,
            handoff=handoff,
            sandbox=sandbox,
            store=self.store,
        )
        return StarterRun(flow, flow.channel, runtime)

    async def aside(self, question: str, *, workspace: Path, run_dir: Path, recent: list[str]) -> AsideAnswer:
        from flower.core.aside import ask_aside
        from flower.workflow.starter import workbench_for

        return await ask_aside(
            question, recent, workspace=workspace, run_dir=run_dir, workbench=workbench_for(workspace)
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
