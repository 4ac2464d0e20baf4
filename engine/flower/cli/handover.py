"""`flower go` ends by handing over to the next tool: the lines a person reads about it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.i18n import N_, _
from .terminal import Screen

if TYPE_CHECKING:
    from ..core.events import Event
    from ..core.runtime import Runtime
    from .target import Flow

HANDOVER_HEAD = N_("== 交接给下一个工具(CLAUDE.md / AGENTS.md)")
NO_BRIEF = N_("  . 需求还没确认,没写交接(CLAUDE.md / AGENTS.md 没动)")
DEGRADED = N_("  x 交接没写成({why}),用了 flower 机械拼的降级版本")
WRITTEN = N_("<- 交接写进 {files}")
BROKEN = N_("  ! {path} 里 flower 的标记不成对:新块追加在末尾,原有内容一字没动;多出来的标记你来清理")
NOT_WRITTEN = N_("  x 交接没写进 {path}:{reason}")

_PLACED = {
    "created": N_("新建"),
    "appended": N_("追加在末尾"),
    "replaced": N_("换掉了上次的块"),
    "unchanged": N_("和上次一样,没动"),
    "appended-after-broken-markers": N_("追加在末尾"),
}


async def hand_over_on_screen(
    flow: Flow,
    runtime: Runtime,
    ctx: dict[str, object],
    *,
    screen: Screen,
    on_event: Callable[[Event], None],
) -> str | None:
    """Write the handover of a finished `go` run and say where it went; the line of a write the
    disk refused (the run then ends on it), else None."""
    from ..core.workbench import Workbench
    from ..workflow.base import Step
    from ..workflow.handover import hand_over
    from ..workflow.starter import WORK

    work = next((s for s in flow.steps if isinstance(s, Step) and s.name == WORK), None)
    workbench = getattr(flow, "workbench", None)
    screen.say("")
    screen.say(_(HANDOVER_HEAD))
    # a flow without a workbench has no brief to hand over, the same as an unconfirmed one
    report = (
        await hand_over(
            runtime,
            ctx,
            workbench=workbench,
            spec=work.spec if work is not None else None,
            step=WORK,
            on_event=on_event,
        )
        if isinstance(workbench, Workbench)
        else None
    )
    if report is None:
        screen.say(_(NO_BRIEF))
        return None
    if report.handover.degraded:
        why = report.why_said or report.handover.why or _("原因不明")
        screen.say(_(DEGRADED).format(why=why), err=True)
    shown = [
        _("{name}({how})").format(name=_name(path, runtime.workspace), how=_(_PLACED[how]))
        for path, how in report.placed.items()
    ]
    if shown:
        screen.say(_(WRITTEN).format(files=_("、").join(shown)))
    for path, how in report.placed.items():
        if how == "appended-after-broken-markers":
            screen.say(_(BROKEN).format(path=path), err=True)
    if report.fault is not None:
        return report.fault.line()  # said once, as the run's last line
    for path, reason in report.failed.items():
        screen.say(_(NOT_WRITTEN).format(path=path, reason=reason), err=True)
    return None


def _name(path: Path, workspace: Path) -> str:
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) else str(path)
