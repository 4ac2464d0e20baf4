"""The seam between the language server and the flower engine.

The server only ever calls the five methods of `Engine`; `FlowerEngine` implements them with
the starter flow and the Runtime. `FLOWER_LSP_ENGINE=module:attribute` (read at start-up)
swaps in another implementation, which is how the server's own tests drive it with a scripted
run that needs no CLI.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Protocol

ENGINE_VAR = "FLOWER_LSP_ENGINE"


class Engine(Protocol):
    def warm(self) -> None:
        """Import what a run needs ahead of time (called off the event loop)."""

    def wake_state(self, workspace: Path, run_dir: Path) -> dict[str, Any]:
        """What `flower.workflow.wake_state` says; read-only."""

    def banner(self, workspace: Path, run_dir: Path) -> str | None:
        """The seeds' one-line resume banner, or None when there is nothing to resume."""

    def workflow(
        self, ask: str, *, workspace: Path, run_dir: Path, new: bool, timeout_s: float | None
    ) -> Any:
        """A workflow with `.channel` (HumanChannel), `.workbench` and
        `async run(runtime, *, on_event, on_step)`."""

    def runtime(self, workflow: Any, *, workspace: Path, run_dir: Path, window: int | None) -> Any:
        """A Runtime for `workflow`: `interrupt(words)`, `on_stderr`, `total_cost()`, `close()`, `busy`."""


class FlowerEngine:
    """The real engine: `starter_flow` run by a `Runtime`, exactly as `flower go` does."""

    def warm(self) -> None:
        # claude_agent_sdk is the slowest import of a run
        for module in ("claude_agent_sdk", "flower.core.runtime", "flower.workflow.starter"):
            importlib.import_module(module)

    def wake_state(self, workspace: Path, run_dir: Path) -> dict[str, Any]:
        from flower.workflow.starter import wake_state

        return dict(wake_state(workspace, run_dir=run_dir))

    def banner(self, workspace: Path, run_dir: Path) -> str | None:
        from flower.workflow.starter import banner

        return banner(workspace, run_dir=run_dir)

    def workflow(
        self, ask: str, *, workspace: Path, run_dir: Path, new: bool, timeout_s: float | None
    ) -> Any:
        from flower.workflow.starter import starter_flow

        return starter_flow(ask, workspace=workspace, run_dir=run_dir, new=new, timeout_s=timeout_s)

    def runtime(self, workflow: Any, *, workspace: Path, run_dir: Path, window: int | None) -> Any:
        from flower.core.agent import HandoffPolicy
        from flower.core.runtime import Runtime

        handoff = HandoffPolicy(window=window) if window else True
        # trim on, as on the `flower go` path
        return Runtime(
            workspace=workspace, run_dir=run_dir, workbench=workflow.workbench, trim=True, handoff=handoff
        )


def load_engine(spec: str | None = None) -> Engine:
    """`FLOWER_LSP_ENGINE` (module:attribute, a class or a factory), else the real engine."""
    spec = spec if spec is not None else os.environ.get(ENGINE_VAR, "")
    if not spec:
        return FlowerEngine()
    module, _, attr = spec.partition(":")
    target = getattr(importlib.import_module(module), attr or "Engine")
    return target() if callable(target) else target
