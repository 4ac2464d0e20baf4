"""`flower history`: the story of the folder's work in the terminal, read-only.

The same story the editor's Flower view draws (flower.workflow.history): each wake with its
steps, their judged rounds and their books, and how a wake that stopped short stopped
("stopped: budget", "stopped: no progress") with what continuing will do.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..base.i18n import N_, _
from ..core.budget import money
from .builders import workspace_of
from .terminal import Screen
from .text import format_duration

HEAD = N_("flower history:{workspace}(run 目录 {run_dir})")
NOTHING = N_("x {run_dir} 里还没有运行记录:先跑一次 flower")
WAKE = N_("第 {n} 次唤醒  {when}  {cost} · {turns} 次模型回复 · {duration}{live}")
LIVE = N_("  <- 正在跑")
STEP = N_("  {name}  {rounds} 轮  {cost}{verdicts}")
ROUND_VERDICT = N_("第 {n} 轮 {state}")
TOTAL = N_("合计 {cost} · {turns} 次模型回复 · {duration}")
EARLIER = N_("  . 另有 {n} 次唤醒属于 --new 之前的工作,没列出")
PROBLEM = N_("  ! {problem}")


def history_command(args: argparse.Namespace, *, screen: Screen | None = None) -> int:
    from ..workflow.history import read_history

    screen = screen or Screen()
    ws = workspace_of(args)
    # a relative run folder is the current directory's, as every command's -r
    history = read_history(ws, run_dir=Path(args.run_dir).expanduser().resolve())
    screen.say(_(HEAD).format(workspace=history.workspace, run_dir=history.run_dir))
    for problem in history.problems:
        screen.say(_(PROBLEM).format(problem=problem), err=True)
    if not history.wakes:
        screen.say(_(NOTHING).format(run_dir=history.run_dir), err=True)
        return 1
    for wake in history.wakes:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(wake.started_at)) if wake.started_at else "?"
        screen.say(
            _(WAKE).format(
                n=wake.number,
                when=when,
                cost=money(wake.cost_usd),
                turns=wake.num_turns,
                duration=format_duration(wake.duration_s),
                live=_(LIVE) if wake.live else "",
            )
        )
        for step in wake.steps:
            verdicts = [
                _(ROUND_VERDICT).format(n=r.verdict.round, state=r.verdict.state or "?")
                for r in step.rounds
                if r.verdict is not None
            ]
            screen.say(
                _(STEP).format(
                    name=step.name,
                    rounds=len(step.rounds),
                    cost=money(step.cost_usd),
                    verdicts=("  " + " · ".join(verdicts)) if verdicts else "",
                )
            )
        if wake.stop_line:
            screen.say(f"  {wake.stop_line}")
    if history.earlier:
        screen.say(_(EARLIER).format(n=history.earlier))
    screen.say(
        _(TOTAL).format(
            cost=money(history.cost_usd),
            turns=history.num_turns,
            duration=format_duration(history.duration_s),
        )
    )
    return 0
