"""The typed settings a run starts with: one value from the CLI's arguments or a client's
per-folder options to the assembly (flower.workflow.assemble). Cheap to import: the language
server builds one on its event loop for every request that looks at a folder's run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .sandbox import SandboxMode

__all__ = ["RunSettings"]


@dataclass(frozen=True)
class RunSettings:
    """Everything a run of the starter flow is started with. Frozen: a run keeps the settings it
    started with while a client changes its options for the next one."""

    workspace: Path
    run_dir: Path = Path("runs")
    # a shared store's URL as asked; None: $FLOWER_STORE, else <run_dir>/sessions.db
    store: str | None = None
    sandbox: SandboxMode = "auto"
    # seconds a question to the person waits; 0 = never wait, None = for ever
    timeout_s: float | None = 1800.0
    # the model's context window for handoffs; None = the policy's default
    window: int | None = None
    handoff: bool = True
    trim: bool = True
    # the flow's own choices (the CLI's flags; a client has the defaults)
    new: bool = False
    isolate: bool = False
    clarify_only: bool = False
    goal: bool = True
    rounds: int = 3
    # rounds in a row without progress before the person is asked; None: $FLOWER_STALL_ROUNDS, else 3
    stall_rounds: int | None = None
    # how an achieved verdict is taken: "strict" (every check backed by a call the judge made)
    # or "relaxed" (the judge's word); None: $FLOWER_EVIDENCE, else strict (core/evidence.py)
    evidence: str | None = None
    judge_can_run: bool = False
    max_asks: int | None = None
    # dollars the run, and each of its rounds, may spend; None: no ceiling (core/budget.py)
    budget_usd: float | None = None
    round_budget_usd: float | None = None
    # the user's command for notices (`--notify`, the editor's `flower.notify`); None: $FLOWER_NOTIFY
    notify: str | None = None

    def __post_init__(self) -> None:
        # one spelling of each folder, whatever the front end handed over
        # (a relative run folder is the current directory's, as the CLI's -r always was)
        object.__setattr__(self, "workspace", Path(self.workspace).expanduser().resolve())
        object.__setattr__(self, "run_dir", Path(self.run_dir).expanduser().resolve())
        if self.store is not None and not self.store.strip():
            object.__setattr__(self, "store", None)

    def but(self, **changes: object) -> RunSettings:
        """A copy with some settings changed (a run asked for with --new, a shorter timeout)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
