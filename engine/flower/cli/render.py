"""Rendering events: one `Event` -> the lines of text a person reads."""

from __future__ import annotations

import time
from typing import Any

from .text import first_line, format_duration

RECEIVED = "+ 收到 (它下次查收件箱时会看到;{where})"
RECEIVED_AMENDED = "已追加进确认书"
RECEIVED_NOWHERE = "没有确认书可落盘 —— 它可能活不过下一个步骤"


class Render:
    """Event -> lines of text. Pure: no terminal, no threads; the Driver prints the lines."""

    def __init__(self, *, verbose: bool = False, started: float | None = None) -> None:
        self.verbose = verbose
        self.started = time.monotonic() if started is None else started
        self._seen_asks: set[str] = set()

    def elapsed(self) -> str:
        return format_duration(time.monotonic() - self.started)

    def lines(self, ev: Any) -> list[str]:
        kind, p = ev.kind, ev.payload or {}
        sub = bool(p.get("subagent"))
        bar = "  | " if sub else "  "
        if kind == "step":
            from ..workflow.starter import step_line

            return [
                "",
                step_line(
                    ev.text,
                    p.get("index", 0),
                    p.get("total", 0),
                    resumed=bool(p.get("resumed")),
                    woke=int(p.get("woke") or 0),
                ),
            ]
        if kind == "text":
            if sub and not self.verbose:
                return []
            return [bar + line for line in ev.text.strip().splitlines() if line.strip()]
        if kind == "thinking":
            if sub and not self.verbose:
                return []
            return [f"{bar}~ {first_line(ev.text, 200)}"] if ev.text.strip() else []
        if kind == "prompt":
            return [f"{bar}< {first_line(ev.text, 200)}"] if self.verbose and ev.text.strip() else []
        if kind == "tool_call":
            return self._tool_call(ev, bar)
        if kind == "tool_result":
            if p.get("is_error"):
                return [f"{bar}x {first_line(ev.text, 200) or '工具出错'}"]
            return [f"{bar}- {first_line(ev.text, 200)}"] if self.verbose and ev.text.strip() else []
        if kind == "result":
            if p.get("is_error"):
                return [f"  x 这一轮没跑完({ev.text})"]
            cost = p.get("cost_usd") or 0.0
            return [f"  + 完成 {p.get('num_turns') or 0} 轮 · ${cost:.4f} · 用时 {self.elapsed()}"]
        if kind == "error":
            if p.get("kind") in ("recovery", "backup"):
                return [f"  x {ev.text}"]  # one line by construction; cut, it would lose the copy's path
            return [f"  x {first_line(ev.text, 200)}"]
        if kind == "reset":
            return [f"  # {ev.text}"]
        if kind == "retry":
            return [f"  ~ {ev.text}"]
        if kind == "handoff":
            return self._handoff(ev)
        if kind == "task":
            return self._task(ev)
        if kind == "ask":
            return self._mail(ev) if p.get("kind") == "mail" else self._ask(ev)
        return []

    def _tool_call(self, ev: Any, bar: str) -> list[str]:
        tool, data = ev.tool, ev.payload.get("input") or {}
        if tool.startswith("mcp__human__ask"):
            return []  # the ask event itself shows the question
        if tool.startswith("mcp__human__inbox"):
            return [f"{bar}* 查收件箱"]
        if tool in ("Agent", "Task"):
            who = data.get("subagent_type") or "agent"
            what = data.get("description") or first_line(str(data.get("prompt", "")), 80)
            return [f"{bar}> 派人 {who}:{what}"]
        return [f"{bar}* {tool} {ev.text}".rstrip()]

    def _handoff(self, ev: Any) -> list[str]:
        p = ev.payload
        phase = p.get("phase")
        if phase == "done":
            lines = []
            if p.get("degraded"):
                lines.append("  x 交接没写成,用了降级版本 —— 接手的人会自己去现场看")
            if p.get("path"):
                lines.append(f"<- 交接写在 {p['path']}")
            lines.append("<- 新会话接手,上下文从头开始")
            return lines
        return [f"  # {ev.text}"]

    def _task(self, ev: Any) -> list[str]:
        p = ev.payload
        if p.get("kind") == "verdict":
            state, n = p.get("state") or "", p.get("round")
            failed = [f"     - {c}" for c in p.get("failed") or []]
            reason = first_line(p.get("reason") or "", 200)
            if state == "achieved":
                return [f"  + 判定第 {n} 轮:达成" + (f" —— {reason}" if reason else "")]
            if state == "unreachable":
                return [f"  ! 判定第 {n} 轮:这个环境里验证不了 —— {reason}", *failed]
            head = "未达成" if state == "not_yet" else "没给出明确结论,按未达成处理"
            return [f"  ~ 判定第 {n} 轮:{head},打回去接着干" + (f" —— {reason}" if reason else ""), *failed]
        if "unverifiable" in p:
            items = [f"     - {c}" for c in p.get("unverifiable") or []]
            return [f"  ! {ev.text or '有判定项在这个环境里验证不了'}", *items]
        return [f"  # {ev.text}"] if self.verbose and ev.text else []

    def _ask(self, ev: Any) -> list[str]:
        p = ev.payload
        state, ask_id = p.get("state"), p.get("id")
        lines: list[str] = []
        if state == "asked" or ask_id not in self._seen_asks:
            # a question settled at once (fully automatic, no quota) still shows what was asked
            self._seen_asks.add(ask_id)
            lines.append(f"  ? {ev.text}")
            lines += [f"     {i}) {o}" for i, o in enumerate(p.get("options") or [], 1)]
            if state == "asked" and isinstance(p.get("remaining"), int) and p["remaining"] >= 0:
                lines.append(f"     (还能问 {p['remaining']} 次)")
        if state == "answered":
            lines.append(f"  + {p.get('answer', '')}")
        elif state == "timeout":
            lines.append("  ! 无人应答 —— 它会自己判断,把假设记进「未知与假设」")
        elif state == "over_budget":
            lines.append("  ! 提问额度用完")
        elif state == "declined":
            lines.append("  . 已跳过")
        elif state == "invalid":
            lines.append("  x 问题是空的")
        return lines

    def _mail(self, ev: Any) -> list[str]:
        p = ev.payload
        if p.get("state") == "queued":
            return [RECEIVED.format(where=RECEIVED_AMENDED if p.get("amended") else RECEIVED_NOWHERE)]
        if p.get("state") == "delivered":
            return [f"  + 它看到了你补充的话:{first_line(ev.text, 120)}"]
        return []
