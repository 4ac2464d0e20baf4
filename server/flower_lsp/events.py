"""The output log (flower/event): the run's life and the engine's events, filtered to what a
person follows (steps, retries, handoffs, verdicts, questions, the main thread's text and every
tool call), each with a readable line and a JSON-safe payload.

A client that does not declare `event` gets window/logMessage instead, with the very lines the
terminal prints for each event (flower.cli.render), one message per event."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from flower.base.i18n import _
from flower.core.events import (
    BudgetNote,
    DiskSpace,
    Event,
    GoalUnverifiable,
    HandoffDone,
    HandoffNear,
    HandoffWriting,
    LimitWait,
    MailNote,
    Offline,
    Question,
    Result,
    Retry,
    StepFinished,
    StepStarted,
    SyntheticError,
    Text,
    ToolCall,
    VerdictGiven,
    WindowNote,
)

from . import protocol as p
from .host import Feature

if TYPE_CHECKING:
    from flower.cli.render import Render

    from .host import FlowerServer
    from .run import Run, RunEnded

MAX_TEXT = 2000


class EventLog(Feature):
    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self._terminal: dict[Run, Render] = {}  # the terminal's renderer of each run, for logMessage

    async def on_run_start(self, run: Run) -> None:
        text = _("{folder} 里的运行开始了").format(folder=run.folder.name)
        if self.server.client.can.flower.event:
            self._send(run, "run", text, {"phase": "started", "waking": run.waking})
            return
        # the CLI's renderer is a hundred milliseconds of imports: off the loop, once
        render = await asyncio.to_thread(_renderer)
        self._terminal[run] = render
        self.server.client.log(text, types.MessageType.Info)

    def on_event(self, run: Run, event: Event) -> None:
        render = self._terminal.get(run)
        if render is not None:
            lines = render.lines(event)
            if any(line.strip() for line in lines):
                self.server.client.log("\n".join(lines).strip("\n"), log_type(event))
            return
        params = to_params(run.folder.uri, event)
        if params is not None:
            self.server.client.send(p.EVENT, params)

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        if self._terminal.pop(run, None) is not None:
            failed = ended.phase == "failed"
            kind = types.MessageType.Error if failed else types.MessageType.Info
            if ended.phase == "budget":
                kind = types.MessageType.Warning
            line = _("{folder} 里的运行:{text} · ${cost:.4f}").format(
                folder=run.folder.name, text=ended.text, cost=ended.cost_usd
            )
            self.server.client.log(line, kind)
            return
        self._send(run, "run", ended.text, ended.details())

    def _send(self, run: Run, kind: p.EventKind, text: str, payload: dict[str, object]) -> None:
        params = p.EventParams(
            folder=run.folder.uri, kind=kind, text=text[:MAX_TEXT], payload=json_object(payload)
        )
        self.server.client.send(p.EVENT, params)


def to_params(folder_uri: str, event: Event) -> p.EventParams | None:
    """The log line for one engine event, or None for what the log leaves out."""
    described = describe(event)
    if described is None:
        return None
    kind, text = described
    return p.EventParams(
        folder=folder_uri, kind=kind, text=text[:MAX_TEXT], payload=json_object(event.payload)
    )


def describe(event: Event) -> tuple[p.EventKind, str] | None:
    if isinstance(event, StepStarted):
        line = f"== {event.text} ==  {event.index}/{event.total}"
        if event.resumed:
            line += _("  <- 接上次 · 第 {n} 次唤醒").format(n=event.woke)
        return "step", line
    if isinstance(event, StepFinished):
        state = _("成了") if event.ok else _("没成:{error}").format(error=event.error or _("失败"))
        return "step", _("{step} 跑完了({state},${cost:.4f})").format(
            step=event.text, state=state, cost=event.cost_usd
        )
    if isinstance(event, (Retry, Offline, LimitWait)):
        return "retry", event.text
    if isinstance(event, BudgetNote):
        return "step", event.text
    if isinstance(event, (HandoffNear, HandoffWriting, HandoffDone, WindowNote)):
        return "handoff", event.text
    if isinstance(event, VerdictGiven):
        line = _("判定 #{round}: {state}").format(round=event.round, state=event.state or _("(没有结论)"))
        if event.reason:
            line += f" — {event.reason}"
        if event.failed:
            line += _("({n} 条没通过)").format(n=len(event.failed))
        return "verdict", line
    if isinstance(event, GoalUnverifiable):
        return "task", _("目标有 {n}/{total} 条判定项此环境无法验证").format(
            n=len(event.unverifiable), total=event.total
        )
    if isinstance(event, Result):
        cost = f" · ${event.cost_usd:.4f}" if event.cost_usd is not None else ""
        return "result", _("{text}{cost} · {turns} 轮").format(
            text=event.text, cost=cost, turns=event.num_turns
        )
    if isinstance(event, MailNote):
        return "mail", event.text
    if isinstance(event, Question):
        if event.state == "asked":
            return "ask", f"? {event.text}"
        answer = f": {event.answer}" if event.answer else ""
        return "ask", f"? {event.text} -> {event.state}{answer}"
    if isinstance(event, Text) and not event.subagent:
        return "text", event.text
    if isinstance(event, ToolCall):
        return "tool", f"[{event.tool}] {event.text}"
    if isinstance(event, (SyntheticError, DiskSpace)):
        return "error", event.text
    return None  # subagent chatter, the meter's readings, the SDK's task bookkeeping, ...


def log_type(event: Event) -> types.MessageType:
    """How loud an event's lines are in window/logMessage."""
    if isinstance(event, SyntheticError) or (isinstance(event, Result) and event.is_error):
        return types.MessageType.Error
    if isinstance(event, DiskSpace):
        return types.MessageType.Error if event.stopped else types.MessageType.Warning
    if isinstance(event, (Retry, Offline, LimitWait, HandoffNear, HandoffWriting, HandoffDone, WindowNote)):
        return types.MessageType.Warning
    if isinstance(event, BudgetNote) and event.phase == "stopped":
        return types.MessageType.Warning
    return types.MessageType.Info


def _renderer() -> Render:
    from flower.cli.render import Render

    return Render()


def json_object(payload: Mapping[str, object]) -> dict[str, object]:
    """An event payload as a JSON object."""
    return {str(k): json_safe(v, 1) for k, v in payload.items()}


def json_safe(value: object, depth: int = 0) -> object:
    """A copy of an event payload that json.dumps accepts (paths as strings, no SDK objects)."""
    if depth > 8:
        return None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v, depth + 1) for v in value]
    return str(value)
