"""What each command builds from its arguments: workspace, flow, Runtime, the `once` agent.

Kept separate so that tests can check each flag's effect.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from ..core.agent import AgentSpec
    from ..core.run_settings import RunSettings
    from ..core.runtime import Runtime
    from ..core.workbench import Workbench
    from ..workflow.base import Workflow


def workspace_of(args: argparse.Namespace) -> Path:
    ws = Path(args.workspace).expanduser().resolve()
    ws.mkdir(parents=True, exist_ok=True)
    return ws


def settings_of(args: argparse.Namespace, *, new: bool = False) -> RunSettings:
    """The typed settings a command's arguments ask for: the one value `go`, `run` and `once`
    hand to the assembly (workflow/assemble.py), as the language server hands its folder's."""
    from ..core.run_settings import RunSettings

    base = RunSettings(
        workspace=workspace_of(args),
        run_dir=Path(args.run_dir),
        store=store_of(args),
        sandbox=getattr(args, "sandbox", "auto"),
        notify=getattr(args, "notify", None),
    )
    if args.command != "go":
        # a workflow of the person's own, or one agent: trimming only when asked (-T)
        return base.but(trim=bool(getattr(args, "trim", False)))
    return base.but(
        trim=not args.no_trim,  # on by default on this path; -T only restates it
        handoff=not args.no_handoff,
        window=args.window,
        timeout_s=max(0.0, args.timeout),
        new=new,
        isolate=args.isolate,
        clarify_only=args.clarify_only,
        goal=not args.no_goal,
        rounds=args.rounds,
        stall_rounds=getattr(args, "stall_rounds", None),
        evidence=getattr(args, "evidence", None),
        judge_can_run=args.judge_can_run,
        max_asks=None if args.asks < 0 else args.asks,
        budget_usd=args.budget,
        round_budget_usd=args.round_budget,
    )


def build_flow(args: argparse.Namespace, ask: str, *, new: bool) -> Workflow:
    from ..workflow.assemble import flow_of

    return flow_of(ask, settings_of(args, new=new))


def store_of(args: argparse.Namespace) -> str | None:
    """``--store`` as given, or None (the Runtime then reads ``$FLOWER_STORE``)."""
    store = getattr(args, "store", None)
    return store if isinstance(store, str) and store else None


def build_runtime(args: argparse.Namespace, *, workbench: Workbench | bool | None = None) -> Runtime:
    """The command's Runtime: the workflow's own workbench; else `go` keeps one in the run
    folder, and `run`/`once` open one there only with -W."""
    from ..workflow.assemble import runtime_of

    if workbench is None:
        workbench = True if args.command == "go" else bool(getattr(args, "workbench", False))
    return runtime_of(settings_of(args), workbench=workbench)


def once_spec(args: argparse.Namespace) -> AgentSpec:
    from ..core.agent import AgentSpec

    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    return AgentSpec(
        name="ad-hoc",
        instructions=args.instructions,
        allowed_tools=tools,
        permission_mode=args.permission_mode,
        max_budget_usd=args.budget,
    )


class OnceCall(TypedDict):
    """The keyword arguments `once` adds to Runtime.run."""

    step_name: str
    resume: str | None
    fork: bool


def once_call(args: argparse.Namespace) -> OnceCall:
    """Keyword arguments for Runtime.run on the `once` path."""
    return {"step_name": "ad-hoc", "resume": args.resume, "fork": bool(args.fork and args.resume)}
