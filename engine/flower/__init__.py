"""flower: long, unattended Claude agent workflows that survive anything.

The public names (the reference's 62, and PostgresSessionStore) are imported lazily: ``import
flower`` stays cheap (the SDK alone costs about 1.6 s to import), so ``flower --help`` and the
language server start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    # running one agent
    "Runtime": "core.runtime",
    "StepResult": "core.runtime",
    # chaining steps
    "Step": "workflow.base",
    "Workflow": "workflow.base",
    "StepAbort": "workflow.base",
    "clarify_step": "workflow.clarify",
    "BRIEF_KEY": "workflow.clarify",
    "MISSING_KEY": "workflow.clarify",
    "CLARIFY_RESUME": "workflow.clarify",
    "goal_step": "workflow.goal",
    "with_goal": "workflow.goal",
    "GOAL_KEY": "workflow.goal",
    "VERDICT_KEY": "workflow.goal",
    "ROUND_KEY": "workflow.goal",
    "starter_flow": "workflow.starter",
    "wake_state": "workflow.starter",
    # roles
    "coordinator": "core.roles",
    "worker": "core.roles",
    "clarify": "core.roles",
    "judge": "core.roles",
    "oracle": "core.roles",
    "COORDINATOR_RULES": "core.roles",
    "WORKER_RULES": "core.roles",
    "CLARIFIER_RULES": "core.roles",
    "JUDGE_RULES": "core.roles",
    "ORACLE_RULES": "core.roles",
    # agent definitions
    "AgentSpec": "core.agent",
    "build_options": "core.agent",
    "CompactPolicy": "core.agent",
    "HandoffPolicy": "core.agent",
    "default_window": "core.window",
    # documents
    "Brief": "core.brief",
    "Handoff": "core.handoff",
    "Goal": "core.goal",
    "Verdict": "core.goal",
    # hooks
    "whitelist_guard": "core.guard",
    "delegate_guard": "core.guard",
    "spill_guard": "core.guard",
    "index_guard": "core.guard",
    "isolate_guard": "core.guard",
    "isolated": "core.guard",
    "wants_isolation": "core.guard",
    "workbench_hooks": "core.guard",
    "merge_hooks": "core.guard",
    # workbench
    "Workbench": "core.workbench",
    # session stores
    "SqliteSessionStore": "stores.sqlite",
    "TrimmingSessionStore": "stores.trim",
    "TrimPolicy": "stores.trim",
    "trim_report": "stores.trim",
    "EphemeralPolicy": "stores.ephemeral",
    "is_ephemeral": "stores.ephemeral",
    "PruningSessionStore": "stores.prune",
    "PrunePolicy": "stores.prune",
    "PostgresSessionStore": "stores.postgres",
    # resilience
    "Resilience": "core.resilience",
    "classify": "core.resilience",
    "endpoint": "core.resilience",
    "reachable": "core.resilience",
    # events and the human channel
    "Event": "core.events",
    "normalize": "core.events",
    "Ask": "core.human",
    "HumanChannel": "core.human",
    # lineage
    "Lineage": "core.lineage",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # each name's own type for type checkers; at run time __getattr__ imports it
    from .core.agent import AgentSpec as AgentSpec
    from .core.agent import CompactPolicy as CompactPolicy
    from .core.agent import HandoffPolicy as HandoffPolicy
    from .core.agent import build_options as build_options
    from .core.brief import Brief as Brief
    from .core.events import Event as Event
    from .core.events import normalize as normalize
    from .core.goal import Goal as Goal
    from .core.goal import Verdict as Verdict
    from .core.guard import delegate_guard as delegate_guard
    from .core.guard import index_guard as index_guard
    from .core.guard import isolate_guard as isolate_guard
    from .core.guard import isolated as isolated
    from .core.guard import merge_hooks as merge_hooks
    from .core.guard import spill_guard as spill_guard
    from .core.guard import wants_isolation as wants_isolation
    from .core.guard import whitelist_guard as whitelist_guard
    from .core.guard import workbench_hooks as workbench_hooks
    from .core.handoff import Handoff as Handoff
    from .core.human import Ask as Ask
    from .core.human import HumanChannel as HumanChannel
    from .core.lineage import Lineage as Lineage
    from .core.resilience import Resilience as Resilience
    from .core.resilience import classify as classify
    from .core.resilience import endpoint as endpoint
    from .core.resilience import reachable as reachable
    from .core.roles import CLARIFIER_RULES as CLARIFIER_RULES
    from .core.roles import COORDINATOR_RULES as COORDINATOR_RULES
    from .core.roles import JUDGE_RULES as JUDGE_RULES
    from .core.roles import ORACLE_RULES as ORACLE_RULES
    from .core.roles import WORKER_RULES as WORKER_RULES
    from .core.roles import clarify as clarify
    from .core.roles import coordinator as coordinator
    from .core.roles import judge as judge
    from .core.roles import oracle as oracle
    from .core.roles import worker as worker
    from .core.runtime import Runtime as Runtime
    from .core.runtime import StepResult as StepResult
    from .core.window import default_window as default_window
    from .core.workbench import Workbench as Workbench
    from .stores.ephemeral import EphemeralPolicy as EphemeralPolicy
    from .stores.ephemeral import is_ephemeral as is_ephemeral
    from .stores.postgres import PostgresSessionStore as PostgresSessionStore
    from .stores.prune import PrunePolicy as PrunePolicy
    from .stores.prune import PruningSessionStore as PruningSessionStore
    from .stores.sqlite import SqliteSessionStore as SqliteSessionStore
    from .stores.trim import TrimmingSessionStore as TrimmingSessionStore
    from .stores.trim import TrimPolicy as TrimPolicy
    from .stores.trim import trim_report as trim_report
    from .workflow.base import Step as Step
    from .workflow.base import StepAbort as StepAbort
    from .workflow.base import Workflow as Workflow
    from .workflow.clarify import BRIEF_KEY as BRIEF_KEY
    from .workflow.clarify import CLARIFY_RESUME as CLARIFY_RESUME
    from .workflow.clarify import MISSING_KEY as MISSING_KEY
    from .workflow.clarify import clarify_step as clarify_step
    from .workflow.goal import GOAL_KEY as GOAL_KEY
    from .workflow.goal import ROUND_KEY as ROUND_KEY
    from .workflow.goal import VERDICT_KEY as VERDICT_KEY
    from .workflow.goal import goal_step as goal_step
    from .workflow.goal import with_goal as with_goal
    from .workflow.starter import starter_flow as starter_flow
    from .workflow.starter import wake_state as wake_state


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
