"""What each command builds from its arguments: workspace, flow, Runtime, the `once` agent.

Kept separate so that tests can check each flag's effect.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def workspace_of(args: argparse.Namespace) -> Path:
    ws = Path(args.workspace).expanduser().resolve()
    ws.mkdir(parents=True, exist_ok=True)
    return ws


def flow_options(args: argparse.Namespace, *, new: bool) -> dict[str, Any]:
    """The keyword arguments `go` passes to starter_flow."""
    return {
        "workspace": workspace_of(args),
        "run_dir": args.run_dir,
        "new": new,
        "isolate": args.isolate,
        "clarify_only": args.clarify_only,
        "goal": not args.no_goal,
        "rounds": args.rounds,
        "judge_can_run": args.judge_can_run,
        "max_asks": None if args.asks < 0 else args.asks,
        "timeout_s": max(0.0, args.timeout),
        "store": store_of(args),
    }


def build_flow(args: argparse.Namespace, ask: str, *, new: bool) -> Any:
    from ..workflow.starter import starter_flow

    return starter_flow(ask, **flow_options(args, new=new))


def store_of(args: argparse.Namespace) -> str | None:
    """``--store`` as given, or None (the Runtime then reads ``$FLOWER_STORE``)."""
    store = getattr(args, "store", None)
    return store if isinstance(store, str) and store else None


def runtime_options(args: argparse.Namespace, *, workbench: Any = None) -> dict[str, Any]:
    """The keyword arguments every command passes to Runtime."""
    from ..core.agent import HandoffPolicy

    options: dict[str, Any] = {
        "workspace": workspace_of(args),
        "run_dir": args.run_dir,
        "sandbox": getattr(args, "sandbox", "auto"),
    }
    store = store_of(args)
    if store is not None:
        options["store"] = store
    if args.command == "go":
        options["trim"] = not args.no_trim  # on by default on this path; -T only restates it
        options["workbench"] = workbench if workbench is not None else True
        handoff = HandoffPolicy(enabled=not args.no_handoff)
        if args.window is not None:
            handoff.window = args.window
        options["handoff"] = handoff
    else:
        options["trim"] = bool(args.trim)
        # the workflow's own workbench wins; -W opens one where the workflow brings none
        options["workbench"] = workbench if workbench is not None else bool(args.workbench)
    return options


def build_runtime(args: argparse.Namespace, *, workbench: Any = None) -> Any:
    from ..core.runtime import Runtime

    return Runtime(**runtime_options(args, workbench=workbench))


def once_spec(args: argparse.Namespace) -> Any:
    from ..core.agent import AgentSpec

    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    return AgentSpec(
        name="ad-hoc",
        instructions=args.instructions,
        allowed_tools=tools,
        permission_mode=args.permission_mode,
        max_budget_usd=args.budget,
    )


def once_call(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for Runtime.run on the `once` path."""
    return {"step_name": "ad-hoc", "resume": args.resume, "fork": bool(args.fork and args.resume)}
