"""flower: long, unattended Claude agent workflows that survive anything.

The public names (the reference's 62, and PostgresSessionStore) are imported lazily: ``import
flower`` stays cheap (the SDK alone costs about 1.6 s to import), so ``flower --help`` and the
language server start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
