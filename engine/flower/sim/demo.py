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

from ..base.i18n import N_, _
from ..core.events import Event, Offline, Retry, StepStarted, ToolCall, VerdictGiven
from ..core.evidence import READ_TOOLS, SEARCH_TOOLS, check_line
from .env import isolated_env, scrub_host_model_vars
from .scenarios import starter_scenario
from .server import SimServer

REQUEST = "写一个 hello.py,运行时打印问候语"  # the scripted person's words: the same in every language
# who acts, as the narration names them (the role factories' names)
CLARIFIER, JUDGE, COORDINATOR, WORKER, AGENT = (
    N_("确认者"),
    N_("判定者"),
    N_("协调者"),
    N_("执行者"),
    N_("agent"),
)
LOOKS = (*READ_TOOLS, *SEARCH_TOOLS)
VERDICT_STATES = {"achieved": N_("达成"), "not_yet": N_("未达成"), "unreachable": N_("无法达成")}


async def _answer_automatically(channel: Any, out: TextIO) -> None:
    while True:
        ask = await channel.next_ask()
        if ask is None:
            continue
        choice = ask.options[0] if ask.options else "按你的判断来"  # the scripted answer
        out.write(
            f"  ?  {ask.question}  {ask.options}\n" + _("  -> (自动回答) {choice}\n").format(choice=choice)
        )
        channel.answer(ask.id, choice)


def _narrate(out: TextIO) -> Callable[[Event], None]:
    from ..workflow.starter import step_line

    agent = {"确认需求": CLARIFIER, "设定目标": JUDGE, "干活": COORDINATOR}
    current = [AGENT]

    def on_event(event: Event) -> None:
        # the context meter is too chatty for a demo; the CLI shows it in its status line
        if isinstance(event, StepStarted):
            current[0] = agent.get(event.text, AGENT)
            line = step_line(event.text, event.index, event.total, resumed=event.resumed, woke=event.woke)
            out.write(f"\n{line}\n")
        elif isinstance(event, ToolCall):
            if not event.subagent and event.tool in LOOKS and current[0] == COORDINATOR:
                return  # the judge's look (the coordinator here never reads): under its verdict
            who = WORKER if event.subagent else current[0]
            out.write(f"  {_(who)} [{event.tool}] {event.text[:90]}\n")
        elif isinstance(event, VerdictGiven):
            missing = _("(未通过:{checks})").format(checks=_(";").join(event.failed)) if event.failed else ""
            state = _(VERDICT_STATES[event.state]) if event.state in VERDICT_STATES else event.state
            out.write(
                _("  判定者,第 {n} 轮:{state}{missing}\n").format(n=event.round, state=state, missing=missing)
            )
            # the verdict with its evidence: what backs each check, from what the judge really did
            out.writelines(check_line(e) + "\n" for e in event.evidence)
        elif isinstance(event, (Retry, Offline)):
            out.write(f"  ~ {event.text}\n")

    return on_event


async def _one_run(ask: str, ws: Path, run_dir: Path, out: TextIO) -> dict[str, Any]:
    from ..core.run_settings import RunSettings
    from ..workflow.assemble import assemble, wake_of
    from ..workflow.starter import banner_line

    # the run `flower go` assembles, with a short wait for answers (they come at once here)
    settings = RunSettings(workspace=ws, run_dir=run_dir, timeout_s=60)
    state = wake_of(settings)
    run = assemble(ask, settings)
    flow, runtime = run.flow, run.runtime
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
        _("\n  花费 ${cost:.4f}(CLI 按模拟的用量计价) · 清单 {manifest}\n").format(
            cost=runtime.total_cost(), manifest=runtime.manifest_path
        )
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
                _("flower demo:真实的 Claude Code CLI;模型由 flower.sim 照剧本扮演,地址 {url}\n").format(
                    url=sim.base_url
                )
            )
            out.write(_("工作区:{workspace}\n").format(workspace=ws) + f'\n$ flower "{REQUEST}"\n')
            first = await _one_run(REQUEST, ws, run_dir, out)
            out.write("\n$ flower        # " + _("再跑一次,同一个目录:从停下的地方接着做") + "\n")
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
        files = sorted(p.name for p in ws.iterdir() if not p.name.startswith("."))
        out.write("\n" + _("文件:{names}").format(names=", ".join(files)) + "\n")
        noted = sorted(p.name for p in notes.iterdir() if p.is_file())
        out.write(_("笔记:{names}").format(names=", ".join(noted)) + "\n")
        verdict = _("ok:") if ok else _("失败:")
        story = _("第二次运行接着同一个干活会话做了下去") if same else _("第二次运行没有接上")
        out.write(f"{verdict}{story}\n")
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if keep:
            out.write(_("保留在:{path}").format(path=root) + "\n")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


def main(out: TextIO | None = None, *, keep: bool = False) -> int:
    import sys

    return asyncio.run(run_demo(out or sys.stdout, keep=keep))
