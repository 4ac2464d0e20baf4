"""The package's public surface: the reference's 62 names and the ones added since, imported lazily."""

from __future__ import annotations

import subprocess
import sys

import flower

REFERENCE = [
    "Runtime",
    "StepResult",
    "Step",
    "Workflow",
    "StepAbort",
    "clarify_step",
    "goal_step",
    "with_goal",
    "starter_flow",
    "wake_state",
    "BRIEF_KEY",
    "MISSING_KEY",
    "CLARIFY_RESUME",
    "GOAL_KEY",
    "VERDICT_KEY",
    "ROUND_KEY",
    "coordinator",
    "worker",
    "clarify",
    "judge",
    "oracle",
    "COORDINATOR_RULES",
    "WORKER_RULES",
    "CLARIFIER_RULES",
    "JUDGE_RULES",
    "ORACLE_RULES",
    "AgentSpec",
    "build_options",
    "CompactPolicy",
    "HandoffPolicy",
    "default_window",
    "Brief",
    "Handoff",
    "Goal",
    "Verdict",
    "whitelist_guard",
    "delegate_guard",
    "spill_guard",
    "index_guard",
    "isolate_guard",
    "isolated",
    "wants_isolation",
    "workbench_hooks",
    "merge_hooks",
    "Workbench",
    "SqliteSessionStore",
    "TrimmingSessionStore",
    "PruningSessionStore",
    "TrimPolicy",
    "EphemeralPolicy",
    "PrunePolicy",
    "is_ephemeral",
    "trim_report",
    "Resilience",
    "classify",
    "endpoint",
    "reachable",
    "Event",
    "normalize",
    "Ask",
    "HumanChannel",
    "Lineage",
]

# names added after the reference, each with the issue that added it
ADDED = [
    "PostgresSessionStore",  # issue 18: a shared store, continue anywhere
]


def test_the_62_names_of_the_reference_and_the_added_ones_are_exported_and_importable():
    assert len(REFERENCE) == 62 and sorted(flower.__all__) == sorted(REFERENCE + ADDED)
    for name in REFERENCE + ADDED:
        assert getattr(flower, name) is not None, name
    assert flower.BRIEF_KEY == "_brief" and flower.GOAL_KEY == "_goal" and flower.ROUND_KEY == "_goal_rounds"


def test_importing_flower_does_not_import_the_sdk():
    probe = "import sys, flower; print('claude_agent_sdk' in sys.modules)"
    assert (
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )


def test_type_checkers_see_each_public_name_from_the_module_that_defines_it():
    """The names are imported lazily at run time; for type checkers the package imports each one
    under TYPE_CHECKING, so `from flower import X` is typed. The two lists must agree."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(flower.__file__).read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imported in node.body:
                assert isinstance(imported, ast.ImportFrom) and imported.level == 1 and imported.module
                for alias in imported.names:
                    assert alias.asname == alias.name  # re-exported, as the package's own
                    typed[alias.name] = imported.module
    assert typed == flower._EXPORTS
