"""`flower go` ends by handing over to the next tool: the lines a person reads about it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .terminal import Screen

HANDOVER_HEAD = "== 交接给下一个工具(CLAUDE.md / AGENTS.md)"
NO_BRIEF = "  . 需求还没确认,没写交接(CLAUDE.md / AGENTS.md 没动)"
DEGRADED = "  x 交接没写成({why}),用了 flower 机械拼的降级版本"
WRITTEN = "<- 交接写进 {files}"
BROKEN = "  ! {path} 里 flower 的标记不成对:新块追加在末尾,原有内容一字没动;多出来的标记你来清理"
NOT_WRITTEN = "  x 交接没写进 {path}:{reason}"

_PLACED = {
    "created": "新建",
    "appended": "追加在末尾",
    "replaced": "换掉了上次的块",
    "unchanged": "和上次一样,没动",
    "appended-after-broken-markers": "追加在末尾",
}


async def hand_over_on_screen(
    flow: Any, runtime: Any, ctx: dict[str, Any], *, screen: Screen, on_event: Callable[[Any], None]
) -> None:
    """Write the handover of a finished `go` run and say where it went."""
    from ..workflow.handover import hand_over
    from ..workflow.starter import WORK

    work = next((s for s in getattr(flow, "steps", []) if s.name == WORK), None)
    screen.say("")
    screen.say(HANDOVER_HEAD)
    report = await hand_over(
        runtime,
        ctx,
        workbench=flow.workbench,
        spec=work.spec if work is not None else None,
        step=WORK,
        on_event=on_event,
    )
    if report is None:
        screen.say(NO_BRIEF)
        return
    if report.handover.degraded:
        screen.say(DEGRADED.format(why=report.handover.why or "原因不明"), err=True)
    shown = [f"{_name(path, runtime.workspace)}({_PLACED[how]})" for path, how in report.placed.items()]
    if shown:
        screen.say(WRITTEN.format(files="、".join(shown)))
    for path, how in report.placed.items():
        if how == "appended-after-broken-markers":
            screen.say(BROKEN.format(path=path), err=True)
    for path, reason in report.failed.items():
        screen.say(NOT_WRITTEN.format(path=path, reason=reason), err=True)


def _name(path: Path, workspace: Path) -> str:
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) else str(path)
