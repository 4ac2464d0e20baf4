"""Workflows: steps chained with lineage, goal guards, and the starter flow."""

from .base import Ctx, Step, StepAbort, Workflow
from .clarify import BRIEF_KEY, CLARIFY_RESUME, MISSING_KEY, clarify_step
from .goal import GOAL_KEY, ROUND_KEY, VERDICT_KEY, goal_step, with_goal
from .starter import banner, banner_line, starter_flow, step_line, wake_state

__all__ = [
    "BRIEF_KEY",
    "CLARIFY_RESUME",
    "GOAL_KEY",
    "MISSING_KEY",
    "ROUND_KEY",
    "VERDICT_KEY",
    "Ctx",
    "Step",
    "StepAbort",
    "Workflow",
    "banner",
    "banner_line",
    "clarify_step",
    "goal_step",
    "starter_flow",
    "step_line",
    "wake_state",
    "with_goal",
]
