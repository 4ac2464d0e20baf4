"""The offline demo: the whole starter flow against flower.sim, then a second run that wakes.

Everything but the model is real: the Claude Code CLI, its tools, hooks, subagents, the
SQLite store, the lineage. The scripted model asks one question (answered automatically),
sets a goal, delegates to a worker who writes real files, and its judge rejects the first
round and accepts the second. The second run in the same folder continues the same sessions.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..core.events import Event, Offline, Retry, StepStarted, ToolCall, VerdictGiven
from .env import isolated_env, scrub_host_model_vars
from .scenarios import starter_scenario
from .server import SimServer

REQUEST = "写一个 hello.py,运行时打印问候语"


async def _answer_automatically(channel: Any, out: TextIO) -> None:
    while True:
        ask = await channel.next_ask()
        if ask is None:
            continue
        choice = ask.options[0] if ask.options else "按你的判断来"
        out.write(f"  ?  {ask.question}  {ask.options}\n  -> (answered automatically) {choice}\n")
        channel.answer(ask.id, choice)


def _narrate(out: TextIO) -> Callable[[Event], None]:
    from ..workflow.starter import step_line

    agent = {"确认需求": "clarifier", "设定目标": "judge", "干活": "coordinator"}
    current = ["agent"]

    def on_event(event: Event) -> None:
        # the context meter is too chatty for a demo; the CLI shows it in its status line
        if isinstance(event, StepStarted):
            current[0] = agent.get(event.text, "agent")
            line = step_line(event.text, event.index, event.total, resumed=event.resumed, woke=event.woke)
            out.write(f"\n{line}\n")
        elif isinstance(event, ToolCall):
            who = "worker" if event.subagent else current[0]
            out.write(f"  {who} [{event.tool}] {event.text[:90]}\n")
        elif isinstance(event, VerdictGiven):
            missing = f" (missing: {'; '.join(event.failed)})" if event.failed else ""
            out.write(f"  judge, round {event.round}: {event.state}{missing}\n")
        elif isinstance(event, (Retry, Offline)):
            out.write(f"  ~ {event.text}\n")

    return on_event


async def _one_run(ask: str, ws: Path, run_dir: Path, out: TextIO) -> dict[str, Any]:
    from ..core.runtime import Runtime
    from ..workflow.starter import banner_line, starter_flow, wake_state

    state = wake_state(ws, run_dir=run_dir)
    flow = starter_flow(ask, workspace=ws, run_dir=run_dir, timeout_s=60)
    runtime = Runtime(workspace=ws, run_dir=run_dir, workbench=flow.workbench)
    if state["waking"]:
        work = state["steps"].get("干活")
        out.write(banner_line(state, workspace=ws, context=runtime.context_of(work) if work else None) + "\n")
    answerer = asyncio.create_task(_answer_automatically(flow.channel, out))
    try:
        ctx = await flow.run(runtime, on_event=_narrate(out))
    finally:
        answerer.cancel()
        runtime.close()
    out.write(
        f"\n  cost ${runtime.total_cost():.4f} (priced by the CLI from simulated usage)"
        f" · manifest {runtime.manifest_path}\n"
    )
    return ctx


async def run_demo(out: TextIO, *, keep: bool = False) -> int:
    """Run the demo, narrating to `out`; returns a process exit code."""
    scrub_host_model_vars()
    root = Path(tempfile.mkdtemp(prefix="flower-demo-"))
    ws, run_dir = root / "project", root / "project" / "runs"
    ws.mkdir()
    ok = False
    saved = dict(os.environ)
    try:
        with SimServer(starter_scenario(context=78_000)) as sim:
            os.environ.update(isolated_env(sim.base_url, root))
            out.write(
                "flower demo: the real Claude Code CLI; "
                f"the model is scripted by flower.sim at {sim.base_url}\n"
            )
            out.write(f'workspace: {ws}\n\n$ flower "{REQUEST}"\n')
            first = await _one_run(REQUEST, ws, run_dir, out)
            out.write("\n$ flower        # again, same folder: continue where it stopped\n")
            second = await _one_run("", ws, run_dir, out)
        hello = ws / "hello.py"
        same = first.get("_sessions", {}).get("干活") == second.get("_sessions", {}).get("干活")
        ok = (
            not first.get("_failed_at")
            and not second.get("_failed_at")
            and hello.is_file()
            and (ws / "README.md").is_file()
            and same
            and second.get("_woke") == 2
        )
        notes = ws / ".flower" / "notes"
        out.write(
            "\nfiles: " + ", ".join(sorted(p.name for p in ws.iterdir() if not p.name.startswith("."))) + "\n"
        )
        out.write("notes: " + ", ".join(sorted(p.name for p in notes.iterdir() if p.is_file())) + "\n")
        out.write(
            ("ok: " if ok else "FAILED: ")
            + (
                "the second run continued the same work session"
                if same
                else "the second run did not continue"
            )
            + "\n"
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if keep:
            out.write(f"kept: {root}\n")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


def main(out: TextIO | None = None, *, keep: bool = False) -> int:
    import sys

    return asyncio.run(run_demo(out or sys.stdout, keep=keep))
