"""Events: the SDK message stream flattened into one stable structure.

The interaction layer only ever sees `Event`; this module is the single place that knows the SDK
message types, so swapping the UI never touches the core.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal[
    "text",
    "thinking",
    "tool_call",
    "tool_result",
    "task",
    "system",
    "reset",
    "result",
    "error",
    "prompt",
    "unknown",
    "retry",
    "step",
    "handoff",
    "ask",
]

SUMMARY_CHARS = 200
RESULT_CHARS = 500

# Input keys that best say what a tool call is about, in order of preference.
_SUMMARY_KEYS = ("file_path", "command", "pattern")

_RESET_SUBTYPES = ("compact_boundary", "microcompact_boundary")


@dataclass
class Event:
    kind: EventKind
    text: str = ""
    tool: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    raw: Any = None

    def __str__(self) -> str:
        if self.kind == "tool_call":
            return f"[{self.tool}] {self.text}"
        return self.text or f"<{self.kind}>"


def normalize(message: Any) -> list[Event]:
    """Flatten one SDK message into zero or more events."""
    sdk = _sdk()
    if isinstance(message, sdk.AssistantMessage):
        if _is_synthetic(message):
            # Disconnect noise written as if the model said it; keep it out of the step's text.
            return [
                Event("error", text=_plain_text(message.content), payload={"synthetic": True}, raw=message)
            ]
        return _blocks(message.content, "text", _common(message), message)
    if isinstance(message, sdk.UserMessage):
        common = _common(message)
        if isinstance(message.content, str):
            if not message.content:
                return []
            return [Event("prompt", text=message.content, payload=dict(common), raw=message)]
        return _blocks(message.content, "prompt", common, message)
    if isinstance(message, sdk.ResultMessage):
        return [
            Event(
                "result",
                text=message.subtype,
                payload={
                    "session_id": message.session_id,
                    "cost_usd": message.total_cost_usd,
                    "num_turns": message.num_turns,
                    "is_error": message.is_error,
                },
                raw=message,
            )
        ]
    if isinstance(message, _task_types(sdk)):
        return [Event("task", text=type(message).__name__, raw=message)]
    if isinstance(message, sdk.SystemMessage):
        if message.subtype in _RESET_SUBTYPES:
            return [_compact_reset(message)]
        data = message.data if isinstance(message.data, dict) else {}
        return [Event("system", text=message.subtype, payload=dict(data), raw=message)]
    reset_cls = getattr(sdk, "ConversationResetMessage", None)
    if reset_cls is not None and isinstance(message, reset_cls):
        payload = {"trigger": "", "pre_tokens": None, "post_tokens": None, "micro": False, "subtype": ""}
        return [Event("reset", text="conversation reset", payload=payload, raw=message)]
    stream_cls = getattr(sdk, "StreamEvent", None)
    if stream_cls is not None and isinstance(message, stream_cls):
        # Partial deltas; the complete AssistantMessage follows and carries the same content.
        return []
    limit_cls = getattr(sdk, "RateLimitEvent", None)
    if limit_cls is not None and isinstance(message, limit_cls):
        info = message.rate_limit_info
        payload = dict(info.raw) if isinstance(info.raw, dict) and info.raw else {"status": info.status}
        return [Event("system", text="rate_limit_event", payload=payload, raw=message)]
    return [Event("unknown", text=type(message).__name__, raw=message)]


def _sdk() -> Any:
    # Imported on first use: the SDK is slow to import and `import flower` must stay cheap.
    import claude_agent_sdk

    return claude_agent_sdk


def _task_types(sdk: Any) -> tuple[type, ...]:
    names = ("TaskStartedMessage", "TaskProgressMessage", "TaskNotificationMessage", "TaskUpdatedMessage")
    return tuple(t for t in (getattr(sdk, n, None) for n in names) if isinstance(t, type))


def _is_synthetic(message: Any) -> bool:
    return (
        message.model == "<synthetic>"
        or bool(getattr(message, "error", None))
        or bool(getattr(message, "isApiErrorMessage", False))
    )


def _common(message: Any) -> dict[str, Any]:
    parent = getattr(message, "parent_tool_use_id", None)
    common: dict[str, Any] = {"subagent": bool(parent)}
    if parent:
        common["parent_tool_use_id"] = parent
    common["context"] = context_tokens(getattr(message, "usage", None))
    return common


def context_tokens(usage: Any) -> int:
    """What the model actually saw: input + cache reads + cache writes (input alone undercounts)."""
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total


def _blocks(blocks: Any, text_kind: EventKind, common: dict[str, Any], message: Any) -> list[Event]:
    sdk = _sdk()
    out: list[Event] = []
    for block in blocks or []:
        if isinstance(block, sdk.TextBlock):
            if block.text:
                out.append(Event(text_kind, text=block.text, payload=dict(common), raw=message))
        elif isinstance(block, sdk.ThinkingBlock):
            if block.thinking:
                out.append(Event("thinking", text=block.thinking, payload=dict(common), raw=message))
        elif isinstance(block, (sdk.ToolUseBlock, getattr(sdk, "ServerToolUseBlock", sdk.ToolUseBlock))):
            tool_input = block.input if isinstance(block.input, dict) else {}
            out.append(
                Event(
                    "tool_call",
                    text=_summary(tool_input),
                    tool=str(block.name),
                    payload={"id": block.id, "input": tool_input, **common},
                    raw=message,
                )
            )
        elif isinstance(
            block, (sdk.ToolResultBlock, getattr(sdk, "ServerToolResultBlock", sdk.ToolResultBlock))
        ):
            content = block.content
            out.append(
                Event(
                    "tool_result",
                    text=content[:RESULT_CHARS] if isinstance(content, str) else "",
                    payload={
                        "tool_use_id": block.tool_use_id,
                        "is_error": bool(getattr(block, "is_error", False)),
                        **common,
                    },
                    raw=message,
                )
            )
    return out


def _summary(tool_input: dict[str, Any]) -> str:
    for key in _SUMMARY_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return _one_line(value)[:SUMMARY_CHARS]
    # Tools without a path/command/pattern (Agent, TodoWrite, ...): a description, else the input itself.
    value = tool_input.get("description")
    if isinstance(value, str) and value.strip():
        return _one_line(value)[:SUMMARY_CHARS]
    if not tool_input:
        return ""
    return json.dumps(tool_input, ensure_ascii=False, default=str)[:SUMMARY_CHARS]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _plain_text(blocks: Any) -> str:
    sdk = _sdk()
    return "\n".join(b.text for b in blocks or [] if isinstance(b, sdk.TextBlock) and b.text)


def _compact_reset(message: Any) -> Event:
    data = message.data if isinstance(message.data, dict) else {}
    micro = message.subtype == "microcompact_boundary"
    meta: dict[str, Any] = {}
    for key in ("compact_metadata", "compactMetadata", "microcompact_metadata", "microcompactMetadata"):
        if isinstance(data.get(key), dict):
            meta = data[key]
            break
    trigger = _first(meta, data, keys=("trigger",))
    pre = _int(_first(meta, data, keys=("pre_tokens", "preTokens")))
    post = _int(_first(meta, data, keys=("post_tokens", "postTokens")))
    saved = _int(_first(meta, data, keys=("tokens_saved", "tokensSaved")))
    if post is None and pre is not None and saved is not None:
        post = pre - saved
    trigger = str(trigger) if trigger else ""
    return Event(
        "reset",
        text=f"压缩({trigger}) {_shown(pre)} → {_shown(post)} tokens",
        payload={
            "trigger": trigger,
            "pre_tokens": pre,
            "post_tokens": post,
            "micro": micro,
            "subtype": message.subtype,
        },
        raw=message,
    )


def _shown(tokens: int | None) -> str:
    return "?" if tokens is None else str(tokens)


def _first(*sources: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for source in sources:
        for key in keys:
            if source.get(key) is not None:
                return source[key]
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    return None


def emitter(callback: Callable[[Event], None] | None) -> Callable[[Event], None]:
    """Wrap an event callback so that a broken UI can never stop the work."""

    def emit(event: Event) -> None:
        if callback is not None:
            with contextlib.suppress(Exception):
                callback(event)

    return emit
