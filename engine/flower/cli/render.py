"""Rendering events: one `Event` -> the lines of text a person reads."""

from __future__ import annotations

import time
from typing import assert_never

from ..base.i18n import N_, _
from ..core.display import first_line
from ..core.events import (
    BudgetNote,
    ContextUpdate,
    DiskSpace,
    Event,
    GoalUnverifiable,
    HandoffDone,
    HandoffNear,
    HandoffWriting,
    LimitWait,
    MailNote,
    NoteBackup,
    Offline,
    Prompt,
    Question,
    Recovery,
    Reset,
    Result,
    Retry,
    StepFinished,
    StepStarted,
    SyntheticError,
    SystemNote,
    TaskUpdate,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Unknown,
    Utterance,
    VerdictGiven,
    WindowNote,
    flower_event,
)
from ..core.evidence import check_line
from ..core.goal import check_states
from ..core.handoff import SECTIONS
from .text import clean, format_duration

RECEIVED = N_("+ 收到 (它下次查收件箱时会看到;{where})")
RECEIVED_AMENDED = N_("已追加进确认书")
RECEIVED_NOWHERE = N_("没有确认书可落盘 —— 它可能活不过下一个步骤")


class Render:
    """Event -> lines of text. Pure: no terminal, no threads; the Driver prints the lines."""

    def __init__(self, *, verbose: bool = False, started: float | None = None) -> None:
        self.verbose = verbose
        self.started = time.monotonic() if started is None else started
        self._seen_asks: set[str] = set()
        self._last_error = ""  # the API error the CLI reported last, for the round that ends with it

    def elapsed(self) -> str:
        return format_duration(time.monotonic() - self.started)

    def lines(self, event: Event) -> list[str]:
        ev = flower_event(event)
        if ev is None:
            return []  # an event of the caller's own making: the terminal shows flower's
        # every event flower emits has its case: a new one fails type-checking until it does
        match ev:
            case StepStarted():
                from ..workflow.starter import step_line

                return ["", step_line(ev.text, ev.index, ev.total, resumed=ev.resumed, woke=ev.woke)]
            case Text() | Thinking() | Prompt() | ToolCall() | ToolResult():
                return self._utterance(ev)
            case Result():
                return self._result(ev)
            case SyntheticError():
                self._last_error = first_line(clean(ev.text), 120)
                return [f"  x {first_line(clean(ev.text), 200)}"]
            case DiskSpace():
                return [f"  {'x' if ev.stopped else '!'} {ev.text}"]
            case Recovery():
                return [f"  x {ev.text}"]  # one line by construction; cut, it would lose the copy's path
            case NoteBackup():
                if ev.problem:
                    return [f"  x {ev.text}"]
                return [f"  # {ev.text}"] if self.verbose else []
            case Reset() | HandoffNear() | HandoffWriting():
                return [f"  # {ev.text}"]
            case Retry() | Offline() | LimitWait():
                return [f"  ~ {ev.text}"]
            case BudgetNote():
                # the stop itself is the run's last line (cli.commands): said once, not twice
                return [f"  $ {ev.text}"] if ev.phase == "forecast" else []
            case WindowNote():
                return [f"  ! {ev.text}"]
            case HandoffDone():
                return self._handoff(ev)
            case VerdictGiven():
                return self._verdict(ev)
            case GoalUnverifiable():
                items = [f"     - {c}" for c in ev.unverifiable]
                return ["  ! {text}".format(text=ev.text or _("有判定项在这个环境里验证不了")), *items]
            case TaskUpdate():
                return [f"  # {ev.text}"] if self.verbose and ev.text else []
            case Question():
                return self._ask(ev)
            case MailNote():
                return self._mail(ev)
            case ContextUpdate() | StepFinished():
                return []  # the status line shows them (the meter, the step's figures)
            case SystemNote() | Unknown():
                return []  # the CLI's own bookkeeping: nothing a person acts on
            case _:
                assert_never(ev)

    def _result(self, ev: Result) -> list[str]:
        if ev.is_error:
            return [_("  x 这一轮没跑完{text}").format(text=self._why(ev.text))]
        self._last_error = ""
        cost = ev.cost_usd or 0.0
        return [
            _("  + 完成 {num_turns} 轮 · ${cost:.4f} · 用时 {elapsed}").format(
                num_turns=ev.num_turns, cost=cost, elapsed=self.elapsed()
            )
        ]

    def _why(self, subtype: str) -> str:
        """Why a round ended in error. The CLI reports a round that died on an API error with the
        subtype "success"; saying that would contradict the line itself."""
        if subtype == "error_max_budget_usd":  # the CLI's own ceiling, given it from the budget
            return _(":花到了预算")
        if subtype and subtype != "success":
            return f"({subtype})"
        why, self._last_error = self._last_error, ""
        return f":{why}" if why else _(":API 出错了")

    def _utterance(self, ev: Utterance) -> list[str]:
        bar = "  | " if ev.subagent else "  "
        if isinstance(ev, Text):
            if ev.subagent and not self.verbose:
                return []
            return [bar + line for line in clean(ev.text).strip().split("\n") if line.strip()]
        if isinstance(ev, Thinking):
            if ev.subagent and not self.verbose:
                return []
            return [f"{bar}~ {first_line(clean(ev.text), 200)}"] if ev.text.strip() else []
        if isinstance(ev, Prompt):
            return [f"{bar}< {first_line(clean(ev.text), 200)}"] if self.verbose and ev.text.strip() else []
        if isinstance(ev, ToolCall):
            return self._tool_call(ev, bar)
        if isinstance(ev, ToolResult):
            if ev.is_error:
                return [f"{bar}x {first_line(clean(ev.text), 200) or _('工具出错')}"]
            shown = first_line(clean(ev.text), 200)
            return [f"{bar}- {shown}"] if self.verbose and shown else []
        return []

    def _tool_call(self, ev: ToolCall, bar: str) -> list[str]:
        tool, data = ev.tool, ev.input
        if tool.startswith("mcp__human__ask"):
            return []  # the ask event itself shows the question
        if tool.startswith("mcp__human__inbox"):
            return [_("{bar}* 查收件箱").format(bar=bar)]
        if tool in ("Agent", "Task"):
            who = data.get("subagent_type") or "agent"
            what = data.get("description") or first_line(str(data.get("prompt", "")), 80)
            return [_("{bar}> 派人 {who}:{what}").format(bar=bar, who=who, what=what)]
        return [f"{bar}* {tool} {first_line(clean(ev.text), 200)}".rstrip()]

    def _handoff(self, ev: HandoffDone) -> list[str]:
        lines = []
        if ev.degraded:
            lines.append(_("  x 交接没写成,用了降级版本 —— 接手的人会自己去现场看"))
        names = dict(SECTIONS)
        for attr, text in ev.sections.items():
            if attr != "scene" and not ev.degraded:  # the scene is paths; a degraded one, the task
                lines.append(f"  - {names.get(attr, attr)}  {first_line(clean(text), 160)}")
        if ev.path:
            lines.append(_("<- 交接写在 {path}").format(path=ev.path))
        lines.append(_("<- 新会话接手,上下文从头开始"))
        return lines

    def _verdict(self, ev: VerdictGiven) -> list[str]:
        n = ev.round
        # one line per check with its basis when the verdict carries evidence; else the failed ones
        states = check_states(ev.state, ev.failed, ev.unproven, ev.evidence)
        basis = [check_line(e, state=s) for e, s in zip(ev.evidence, states, strict=True)]
        failed = basis or [f"     - {c}" for c in ev.failed]
        reason = first_line(ev.reason, 200)
        if ev.state == "achieved":
            return [_("  + 判定第 {n} 轮:达成").format(n=n) + (f" —— {reason}" if reason else ""), *basis]
        if ev.state == "unreachable":
            return [_("  ! 判定第 {n} 轮:这个环境里验证不了 —— {reason}").format(n=n, reason=reason), *failed]
        head = _("未达成") if ev.state == "not_yet" else _("没给出明确结论,按未达成处理")
        if ev.unproven:
            head = _("说达成,可没有证据")
        return [
            _("  ~ 判定第 {n} 轮:{head},打回去接着干").format(n=n, head=head)
            + (f" —— {reason}" if reason else ""),
            *failed,
        ]

    def _ask(self, ev: Question) -> list[str]:
        lines: list[str] = []
        if ev.state == "asked" or ev.id not in self._seen_asks:
            # a question settled at once (fully automatic, no quota) still shows what was asked
            self._seen_asks.add(ev.id)
            lines.append(f"  ? {ev.text}")
            lines += [f"     {i}) {o}" for i, o in enumerate(ev.options, 1)]
            if ev.state == "asked" and ev.remaining >= 0:
                lines.append(_("     (还能问 {remaining} 次)").format(remaining=ev.remaining))
        if ev.state == "answered":
            lines.append(f"  + {ev.answer}")
        elif ev.state == "timeout":
            lines.append(_("  ! 无人应答 —— 它会自己判断,把假设记进「未知与假设」"))
        elif ev.state == "over_budget":
            lines.append(_("  ! 提问额度用完"))
        elif ev.state == "declined":
            lines.append(_("  . 已跳过"))
        elif ev.state == "invalid":
            lines.append(_("  x 问题是空的"))
        return lines

    def _mail(self, ev: MailNote) -> list[str]:
        if ev.state == "queued":
            return [_(RECEIVED).format(where=_(RECEIVED_AMENDED) if ev.amended else _(RECEIVED_NOWHERE))]
        return [_("  + 它看到了你补充的话:{text}").format(text=first_line(ev.text, 120))]
