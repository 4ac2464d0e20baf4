"""Ending a run with a handover to the next tool: the final step's session writes it in one short
turn of its own, flower falls back to a mechanical (degraded) one, and the same block goes into
CLAUDE.md and AGENTS.md at the workspace root (`core.managed_block` keeps the rest of each file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.files import DiskFault, fault_of
from ..base.i18n import N_, _
from ..base.loose import mapping, nonempty
from ..core.brief import Brief
from ..core.goal import Goal, Verdict
from ..core.handoff import Handoff
from ..core.handover import HANDOVER_PROMPT, Handover, mechanical
from ..core.labels import StepLabel
from ..core.managed_block import Placement, place_block
from .base import SESSIONS_KEY
from .goal import GOAL_KEY, ROUND_KEY, VERDICT_KEY

if TYPE_CHECKING:
    from ..core.agent import AgentSpec
    from ..core.events import Event
    from ..core.runtime import Runtime
    from ..core.workbench import Workbench

# its row in the manifest is StepLabel.handover(<final step>): a side turn of that step (like a
# judge round), so the lineage is never rebuilt with it as a step of its own
FILES = ("CLAUDE.md", "AGENTS.md")
# the turn is a summary of what the session already knows: short, and braked like a side question
HANDOVER_TURNS = 4
# why a handover is degraded: written into the document as they are, said translated
NO_SESSION = N_("这次没有干活的会话可问")
MISSING = N_("它写的缺了:{sections}")
TURN_FAILED = N_("写交接的那一轮没跑成")
HANDOVER_BUDGET_USD = 0.5


@dataclass
class HandoverReport:
    """What was written where: a Placement per file, or why it could not be written."""

    handover: Handover
    placed: dict[Path, Placement] = field(default_factory=dict)
    failed: dict[Path, str] = field(default_factory=dict)
    # a write the disk refused (full, read-only, gone), here or in the handover turn's books: the
    # run then ends on its line, as any other run whose disk refuses
    fault: DiskFault | None = None
    # why the handover is degraded, in the person's language (the document keeps the seeds')
    why_said: str = ""


async def hand_over(
    runtime: Runtime,
    ctx: Mapping[str, object],
    *,
    workbench: Workbench,
    spec: AgentSpec | None,
    step: str,
    brief_name: str = "需求.md",
    goal_name: str = "目标.md",
    on_event: Callable[[Event], None] | None = None,
    files: tuple[str, ...] = FILES,
) -> HandoverReport | None:
    """Write the handover once the workflow has run; None when there is nothing to hand over
    (no complete brief: nobody knows yet what this project is).

    `spec` and `step` name the final step: its last session is resumed for the writing turn.
    """
    brief = Brief.load(workbench.notes / brief_name)
    if brief is None or not brief.complete():
        return None
    session = nonempty(mapping(ctx.get(SESSIONS_KEY)).get(step))
    doc: Handover | None = None
    why, said = NO_SESSION, _(NO_SESSION)
    if session and spec is not None:
        result = await runtime.run(
            replace(spec, max_turns=HANDOVER_TURNS, max_budget_usd=HANDOVER_BUDGET_USD),
            HANDOVER_PROMPT.format(workbench=workbench.root),
            step_name=str(StepLabel.handover(step)),
            resume=session,
            on_event=on_event,
        )
        written = Handover.parse(result.text)
        if result.ok and written.complete():
            doc = written
        elif result.ok:
            sections = "、".join(written.missing())  # the seeds' headings, in every language
            why, said = MISSING.format(sections=sections), _(MISSING).format(sections=sections)
        else:
            why, said = TURN_FAILED, _(TURN_FAILED)
    if doc is None:
        verdict, goal = ctx.get(VERDICT_KEY), ctx.get(GOAL_KEY)
        rounds = ctx.get(ROUND_KEY)
        doc = mechanical(
            brief=brief,
            goal=goal if isinstance(goal, Goal) else Goal.load(workbench.notes / goal_name),
            verdict=verdict if isinstance(verdict, Verdict) else None,
            rounds=rounds if isinstance(rounds, int) else None,
            handoff=Handoff.load(workbench.notes / f"交接-{step}.md"),
            workbench_root=workbench.root,
            workspace=runtime.workspace,
            why=why,
        )
    report = HandoverReport(doc, why_said=said if doc.degraded else "")
    body = doc.to_markdown()
    for name in files:
        path = Path(runtime.workspace) / name
        try:
            report.placed[path] = place_block(path, body)
        except OSError as exc:
            report.failed[path] = exc.strerror or str(exc)
            report.fault = report.fault or fault_of(exc, path)
    fault = getattr(runtime, "fault", None)
    report.fault = report.fault or (fault if isinstance(fault, DiskFault) else None)
    return report


__all__ = ["FILES", "HandoverReport", "hand_over"]
