"""Events for the client's output log (flower/event): the engine's Event stream, filtered to
what a person follows (lifecycle, steps, retries, handoffs, verdicts, questions, the main
thread's text and every tool call), each with a readable line and a JSON-safe payload."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import protocol as p

if TYPE_CHECKING:
    from flower.core.events import Event

    from .runs import Run
    from .server import FlowerServer

MAX_TEXT = 2000


def to_params(folder_uri: str, event: Event) -> p.EventParams | None:
    """The log line for one engine event, or None for what the log leaves out."""
    data = event.payload if isinstance(event.payload, dict) else {}
    kind, text = _describe(event, data)
    if kind is None:
        return None
    return p.EventParams(folder=folder_uri, kind=kind, text=text[:MAX_TEXT], payload=json_safe(data))


def _describe(event: Event, data: dict[str, Any]) -> tuple[Any, str]:
    k = event.kind
    if k == "run":
        return "run", event.text
    if k == "step":
        if data.get("phase") == "done":
            state = "ok" if data.get("ok") else f"not ok: {data.get('error') or 'failed'}"
            return "step", f"{event.text} done ({state}, ${_float(data.get('cost_usd')):.4f})"
        line = f"== {event.text} ==  {data.get('index', '?')}/{data.get('total', '?')}"
        if data.get("resumed"):
            line += f"  <- 接上次 · 第 {data.get('woke', '?')} 次唤醒"
        return "step", line
    if k in ("retry", "handoff"):
        return k, event.text
    if k == "task":
        if data.get("kind") == "verdict":
            failed = data.get("failed") or []
            line = f"判定 #{data.get('round', '?')}: {data.get('state') or '(no conclusion)'}"
            if data.get("reason"):
                line += f" — {data['reason']}"
            if failed:
                line += f" ({len(failed)} failed)"
            return "verdict", line
        if "unverifiable" in data:
            items = data["unverifiable"]
            count = len(items) if isinstance(items, list) else items
            return "task", f"目标有 {count}/{data.get('total', '?')} 条判定项此环境无法验证"
        return None, ""  # the SDK's subagent bookkeeping: the [Agent] tool call already says it
    if k == "result":
        cost = data.get("cost_usd")
        cost_text = f" · ${_float(cost):.4f}" if cost is not None else ""
        return "result", f"{event.text}{cost_text} · {data.get('num_turns', '?')} turns"
    if k == "ask":
        if data.get("kind") == "mail":
            return "mail", event.text
        state = data.get("state", "asked")
        if state == "asked":
            return "ask", f"? {event.text}"
        answer = f": {data['answer']}" if data.get("answer") else ""
        return "ask", f"? {event.text} -> {state}{answer}"
    if k == "text" and not data.get("subagent"):
        return "text", event.text
    if k == "tool_call":
        return "tool", f"[{event.tool}] {event.text}"
    if k == "error":
        return "error", event.text
    return None, ""


def json_safe(value: Any, depth: int = 0) -> Any:
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


def _float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def register(server: FlowerServer) -> None:
    def forward(run: Run, event: Event) -> None:
        params = to_params(run.folder.uri, event)
        if params is not None:
            run.server.send(p.EVENT, params)
        if event.kind in ("step", "task"):
            run.report_progress()

    server.event_listeners.append(forward)
