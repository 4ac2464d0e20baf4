"""Events: the SDK message stream flattened into one stable structure.

The interaction layer only ever sees `Event`; this module is the single place that knows the SDK
message types, so swapping the UI never touches the core.

Every event flower emits is one of the typed subclasses below: its `kind` is a Literal, its
details are typed fields, and its `payload` is derived from those fields when it is made, so the
documented shapes (`Event("step").payload == {"index", "total", "resumed", "woke"}`, ...) hold
with one source of truth. A front end matches by type (`isinstance(ev, StepStarted)`); matching
by `kind` and reading `payload` keeps working for code written against the plain `Event`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal, TypeAlias, TypedDict

from ..base.i18n import _
from ..base.loose import mapping
from ..base.secrets import redact_value
from ..base.usage import context_tokens
from .evidence import Evidence, TrailCall

if TYPE_CHECKING:
    from claude_agent_sdk import AssistantMessage, ContentBlock, Message, SystemMessage, UserMessage

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
VerdictState = Literal["achieved", "not_yet", "unreachable", ""]  # "" = no conclusion recognised
AskState = Literal["asked", "answered", "timeout", "declined", "over_budget", "invalid"]
MailState = Literal["queued", "delivered"]

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
    payload: dict[str, object] = field(default_factory=dict)
    raw: object = None  # the SDK message the event came from, for a caller that wants it whole

    def __str__(self) -> str:
        if self.kind == "tool_call":
            return f"[{self.tool}] {self.text}"
        return self.text or f"<{self.kind}>"


_EVENT_FIELDS = frozenset(f.name for f in dataclasses.fields(Event))

# A field's metadata, read by `_payload`: a field left out of the payload while it is None (as
# the SDK's parent_tool_use_id), and a field kept under another key (`kind` is Event's own).
# Written out in each `field(...)`, so that mypy's dataclass plugin sees the defaults.
_OMIT_NONE = {"omit_none": True}


@dataclass(kw_only=True)
class TypedEvent(Event):
    """The base of every event flower emits: a value, never changed once made.

    `payload` is `TAGS` (the constant keys that told the kinds' variants apart before they had
    types) followed by the subclass's own fields, copied."""

    payload: dict[str, object] = field(init=False, repr=False, compare=False)
    TAGS: ClassVar[dict[str, object]] = {}

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", self._payload())
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name: str, value: object) -> None:
        if getattr(self, "_sealed", False):
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}: events are values")
        object.__setattr__(self, name, value)

    def _payload(self) -> dict[str, object]:
        out = dict(self.TAGS)
        for f in dataclasses.fields(self):
            if f.name in _EVENT_FIELDS:
                continue
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.metadata.get("key", f.name)] = _copy(value)
        return out


def _copy(value: object) -> object:
    # the payload must not share a list or dict with the fields it was made from
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


# -- what the model and the CLI said (normalize) ------------------------------------------------


@dataclass(kw_only=True)
class Utterance(TypedEvent):
    """What every assistant or user message carries: whose it is and the context it saw."""

    subagent: bool = False
    parent_tool_use_id: str | None = field(default=None, metadata=_OMIT_NONE)
    context: int = 0  # input + cache reads + cache writes of the message's turn


@dataclass(kw_only=True)
class Text(Utterance):
    """Assistant text; `text` is the block's text."""

    kind: Literal["text"] = field(default="text", init=False)


@dataclass(kw_only=True)
class Thinking(Utterance):
    kind: Literal["thinking"] = field(default="thinking", init=False)


@dataclass(kw_only=True)
class Prompt(Utterance):
    """A user message: input to the model (a subagent's task brief, a tool's reply text), not output."""

    kind: Literal["prompt"] = field(default="prompt", init=False)


@dataclass(kw_only=True)
class ToolCall(Utterance):
    """`tool` is the tool's name, `text` what the call is about (a path, a command, ...)."""

    kind: Literal["tool_call"] = field(default="tool_call", init=False)
    id: str
    input: dict[str, object] = field(default_factory=dict)


@dataclass(kw_only=True)
class ToolResult(Utterance):
    """`text` is the head of the result when it is text."""

    kind: Literal["tool_result"] = field(default="tool_result", init=False)
    tool_use_id: str
    is_error: bool = False


@dataclass(kw_only=True)
class Result(TypedEvent):
    """The CLI's result of one query; `text` is its subtype."""

    kind: Literal["result"] = field(default="result", init=False)
    session_id: str | None = None
    cost_usd: float | None = None  # the CLI process's running total
    num_turns: int = 0
    is_error: bool = False


@dataclass(kw_only=True)
class TaskUpdate(TypedEvent):
    """The SDK's bookkeeping of a background subagent; `text` is the message class."""

    kind: Literal["task"] = field(default="task", init=False)


@dataclass(kw_only=True)
class SystemNote(TypedEvent):
    """Any other system message of the CLI; `text` is its subtype, `data` what it carried."""

    kind: Literal["system"] = field(default="system", init=False)
    data: dict[str, object] = field(default_factory=dict)

    def _payload(self) -> dict[str, object]:
        return dict(self.data)


@dataclass(kw_only=True)
class Reset(TypedEvent):
    """The conversation was compacted or reset; `text` says by how much."""

    kind: Literal["reset"] = field(default="reset", init=False)
    trigger: str = ""
    pre_tokens: int | None = None
    post_tokens: int | None = None
    micro: bool = False
    subtype: str = ""


@dataclass(kw_only=True)
class SyntheticError(TypedEvent):
    """Disconnect noise written as if the model said it; kept out of the step's text."""

    kind: Literal["error"] = field(default="error", init=False)
    TAGS: ClassVar[dict[str, object]] = {"synthetic": True}


@dataclass(kw_only=True)
class Unknown(TypedEvent):
    """A message this version does not know; `text` is its class."""

    kind: Literal["unknown"] = field(default="unknown", init=False)


# -- the runtime -------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Retry(TypedEvent):
    """An attempt failed and another follows after `delay` seconds."""

    kind: Literal["retry"] = field(default="retry", init=False)
    attempt: int
    failure: str = field(metadata={"key": "kind"})  # what classify() said: transient, unknown, ...
    error: str | None = None
    delay: float = 0.0


@dataclass(kw_only=True)
class Offline(TypedEvent):
    """Waiting for the network: said once when it goes, once when it comes back."""

    kind: Literal["retry"] = field(default="retry", init=False)
    TAGS: ClassVar[dict[str, object]] = {"phase": "offline"}


@dataclass(kw_only=True)
class ContextFigures(TypedEvent):
    """What the model of a step's main thread saw in its last turn, against the window."""

    used: int
    window: int
    at: int  # the handoff threshold
    warn_at: int  # past this a handoff is near
    step: str
    generation: int  # 1 until the first handoff of the step
    session_id: str | None = None
    cost_usd: float = 0.0  # the step's books so far


@dataclass(kw_only=True)
class ContextUpdate(ContextFigures):
    """After every model turn of a step's main thread; `text` is the reading for people."""

    kind: Literal["system"] = field(default="system", init=False)
    TAGS: ClassVar[dict[str, object]] = {"subtype": "context"}


@dataclass(kw_only=True)
class HandoffNear(ContextFigures):
    """The context passed `warn_at`: said once per generation, with that turn's figures."""

    kind: Literal["handoff"] = field(default="handoff", init=False)
    TAGS: ClassVar[dict[str, object]] = {"phase": "near", "subtype": "context"}


@dataclass(kw_only=True)
class HandoffWriting(TypedEvent):
    """The full session is writing its handoff document (takes a dozen seconds)."""

    kind: Literal["handoff"] = field(default="handoff", init=False)
    TAGS: ClassVar[dict[str, object]] = {"phase": "writing"}
    step: str
    used: int


@dataclass(kw_only=True)
class HandoffDone(TypedEvent):
    """A new session took over; `path` is where the document landed (None without a workbench),
    `sections` the document's filled sections (field -> text), `context` what the retired
    session saw last against `window`."""

    kind: Literal["handoff"] = field(default="handoff", init=False)
    TAGS: ClassVar[dict[str, object]] = {"phase": "done"}
    degraded: bool
    path: str | None
    sections: dict[str, str]
    step: str
    retired: str | None  # the session that handed over
    generation: int  # of the session taking over
    context: int = 0
    window: int = 0


@dataclass(kw_only=True)
class WindowNote(TypedEvent):
    """The model's window differs from the configured one (said once per run): `learned` is
    what an overflow showed, `configured` what the run assumed; `path` keeps it for next runs."""

    kind: Literal["handoff"] = field(default="handoff", init=False)
    TAGS: ClassVar[dict[str, object]] = {"phase": "window"}
    configured: int
    learned: int
    model: str
    base_url: str
    path: str | None = None


@dataclass(kw_only=True)
class LimitWait(TypedEvent):
    """A usage limit, a rate limit or an overload: the step waits until `until` (epoch seconds)
    and then resumes the same session; said once when the wait begins (`phase` wait) and once
    when it ends (`phase` resumed). Never a failed attempt."""

    kind: Literal["retry"] = field(default="retry", init=False)
    TAGS: ClassVar[dict[str, object]] = {"subtype": "limit"}
    phase: Literal["wait", "resumed"]
    limit: str  # usage, rate, overloaded
    until: float
    seconds: float  # how long the wait is (0 when it ends)
    error: str | None = None
    step: str = ""


@dataclass(kw_only=True)
class BudgetNote(TypedEvent):
    """Money against the budget: a forecast before each round (`phase` forecast), or the step
    stopped because a ceiling was reached (`phase` stopped, `scope` run or round)."""

    kind: Literal["system"] = field(default="system", init=False)
    TAGS: ClassVar[dict[str, object]] = {"subtype": "budget"}
    phase: Literal["forecast", "stopped"]
    spent: float
    run_usd: float | None = None
    round_usd: float | None = None
    next_round: float | None = None
    scope: str | None = None
    step: str = ""


# -- the workflow ------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Recovery(TypedEvent):
    """A damaged run file (lineage, manifest, store) was moved aside and what could be was
    rebuilt; `text` is the one line that says so and where the copy is."""

    kind: Literal["error"] = field(default="error", init=False)
    TAGS: ClassVar[dict[str, object]] = {"kind": "recovery"}
    backup: str | None = field(default=None, metadata=_OMIT_NONE)


@dataclass(kw_only=True)
class DiskSpace(TypedEvent):
    """Little free space where the run writes, found before a step; `text` is the one line,
    `stopped` says the step did not start (below the floor)."""

    kind: Literal["error"] = field(default="error", init=False)
    TAGS: ClassVar[dict[str, object]] = {"kind": "disk"}
    folder: str
    free: int  # bytes
    stopped: bool = False


@dataclass(kw_only=True)
class NoteBackup(TypedEvent):
    """A note flower is about to rewrite (需求.md, 目标.md) was copied first; `problem` says what
    was wrong with it, if anything."""

    kind: Literal["task"] = field(default="task", init=False)
    TAGS: ClassVar[dict[str, object]] = {"kind": "backup"}
    path: str
    backup: str
    problem: str = ""


@dataclass(kw_only=True)
class StepStarted(TypedEvent):
    """A workflow step begins; `text` is its name."""

    kind: Literal["step"] = field(default="step", init=False)
    index: int  # 1-based
    total: int
    resumed: bool  # continues the session of the last run's same step
    woke: int  # how many times the folder's work has been woken (0 without continuity)


@dataclass(kw_only=True)
class StepFinished(TypedEvent):
    """A step's books are closed (what `Workflow.run`'s on_step reports); `text` is its name."""

    kind: Literal["step"] = field(default="step", init=False)
    TAGS: ClassVar[dict[str, object]] = {"phase": "done"}
    ok: bool
    cost_usd: float
    session_id: str | None = None
    error: str | None = None


@dataclass(kw_only=True)
class GoalUnverifiable(TypedEvent):
    """The goal was set with checks this environment cannot verify: their fate is sealed now."""

    kind: Literal["task"] = field(default="task", init=False)
    unverifiable: list[str]
    total: int  # checks in the goal
    path: str  # 目标.md


@dataclass(kw_only=True)
class VerdictGiven(TypedEvent):
    """The judge ruled on a round of work."""

    kind: Literal["task"] = field(default="task", init=False)
    TAGS: ClassVar[dict[str, object]] = {"kind": "verdict"}
    state: VerdictState
    reason: str
    failed: list[str]
    round: int  # 1-based
    goal_path: str
    session_id: str | None = None  # the judge's own session
    # how each check was verified, linked to the judge's recorded calls (core/evidence.py)
    evidence: list[Evidence] = field(default_factory=list)
    # what the judge did in its turn: every tool call with what came back
    trail: list[TrailCall] = field(default_factory=list)
    # the checks an achieved verdict claimed without evidence (then its state is not_yet)
    unproven: list[str] = field(default_factory=list)
    claimed: VerdictState = ""  # the judge's own conclusion when flower overruled it, else ""

    def _payload(self) -> dict[str, object]:
        out = super()._payload()
        # plain JSON in the payload, as every front end reads it; the typed values on the fields
        out["evidence"] = [e.to_json() for e in self.evidence]
        out["trail"] = [c.to_json() for c in self.trail]
        return out


# -- the person --------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Question(TypedEvent):
    """A question to the person, once when asked and once when settled; `text` is the question."""

    kind: Literal["ask"] = field(default="ask", init=False)
    id: str
    options: list[str]
    state: AskState
    answer: str
    remaining: int  # asks left; -1 = unlimited
    asked_at: float


@dataclass(kw_only=True)
class MailNote(TypedEvent):
    """Something the person said unasked: queued, then delivered; `text` is what they said."""

    kind: Literal["ask"] = field(default="ask", init=False)
    TAGS: ClassVar[dict[str, object]] = {"kind": "mail"}
    state: MailState
    id: str
    amended: str  # the file the words were appended to, "" when none


# Every event flower emits, as one closed union: a front end that matches over it is checked for
# exhaustiveness (`typing.assert_never` in the last case), so a new event cannot go unhandled in
# silence. tests/unit/test_events.py holds it equal to the leaf classes above.
FlowerEvent: TypeAlias = (
    Text
    | Thinking
    | Prompt
    | ToolCall
    | ToolResult
    | Result
    | TaskUpdate
    | SystemNote
    | Reset
    | SyntheticError
    | Unknown
    | Retry
    | Offline
    | ContextUpdate
    | HandoffNear
    | HandoffWriting
    | HandoffDone
    | WindowNote
    | LimitWait
    | BudgetNote
    | Recovery
    | DiskSpace
    | NoteBackup
    | StepStarted
    | StepFinished
    | GoalUnverifiable
    | VerdictGiven
    | Question
    | MailNote
)
EVENT_TYPES: tuple[type[TypedEvent], ...] = typing.get_args(FlowerEvent)


def flower_event(event: Event) -> FlowerEvent | None:
    """`event` as the closed union, or None for an event flower did not make (a plain `Event`
    of a caller's own)."""
    return typing.cast("FlowerEvent", event) if isinstance(event, EVENT_TYPES) else None


_VERDICT_STATES: tuple[VerdictState, ...] = typing.get_args(VerdictState)
_ASK_STATES: tuple[AskState, ...] = typing.get_args(AskState)


def verdict_state(state: str) -> VerdictState:
    """A judge's conclusion as the Literal; anything unrecognised is "" (no conclusion)."""
    return next((known for known in _VERDICT_STATES if known == state), "")


def ask_state(state: str) -> AskState:
    """An Ask's state as the Literal; HumanChannel never sets any other."""
    for known in _ASK_STATES:
        if known == state:
            return known
    raise ValueError(f"not a question state: {state!r}")


def normalize(message: Message) -> list[Event]:
    """Flatten one SDK message into zero or more events."""
    # Imported on first use: the SDK is slow to import and `import flower` must stay cheap.
    from claude_agent_sdk import (
        AssistantMessage,
        ConversationResetMessage,
        RateLimitEvent,
        ResultMessage,
        StreamEvent,
        SystemMessage,
        TaskNotificationMessage,
        TaskProgressMessage,
        TaskStartedMessage,
        TaskUpdatedMessage,
        UserMessage,
    )

    if isinstance(message, AssistantMessage):
        if _is_synthetic(message):
            # Disconnect noise written as if the model said it; keep it out of the step's text.
            return [SyntheticError(text=_plain_text(message.content), raw=message)]
        return _blocks(message.content, Text, _common(message), message)
    if isinstance(message, UserMessage):
        common = _common(message)
        if isinstance(message.content, str):
            if not message.content:
                return []
            return [Prompt(text=message.content, raw=message, **common)]
        return _blocks(message.content, Prompt, common, message)
    if isinstance(message, ResultMessage):
        return [
            Result(
                text=message.subtype,
                session_id=message.session_id,
                cost_usd=message.total_cost_usd,
                num_turns=message.num_turns,
                is_error=message.is_error,
                raw=message,
            )
        ]
    if isinstance(
        message, (TaskStartedMessage, TaskProgressMessage, TaskNotificationMessage, TaskUpdatedMessage)
    ):
        return [TaskUpdate(text=type(message).__name__, raw=message)]
    if isinstance(message, SystemMessage):
        if message.subtype in _RESET_SUBTYPES:
            return [_compact_reset(message)]
        data = message.data if isinstance(message.data, dict) else {}
        return [SystemNote(text=message.subtype, data=dict(data), raw=message)]
    if isinstance(message, ConversationResetMessage):
        return [Reset(text="conversation reset", raw=message)]
    if isinstance(message, StreamEvent):
        # Partial deltas; the complete AssistantMessage follows and carries the same content.
        return []
    if isinstance(message, RateLimitEvent):
        info = message.rate_limit_info
        data = dict(info.raw) if isinstance(info.raw, dict) and info.raw else {"status": info.status}
        return [SystemNote(text="rate_limit_event", data=data, raw=message)]
    return [Unknown(text=type(message).__name__, raw=message)]  # a message of a newer SDK


def _is_synthetic(message: AssistantMessage) -> bool:
    return (
        message.model == "<synthetic>"
        or bool(message.error)
        or bool(getattr(message, "isApiErrorMessage", False))
    )


class _Common(TypedDict):
    """The Utterance fields of every event one message yields."""

    subagent: bool
    parent_tool_use_id: str | None
    context: int


def _common(message: AssistantMessage | UserMessage) -> _Common:
    """The Utterance fields of every event a message yields."""
    parent = message.parent_tool_use_id
    return {
        "subagent": bool(parent),
        "parent_tool_use_id": parent or None,
        "context": context_tokens(getattr(message, "usage", None)),  # the assistant's alone
    }


def _blocks(
    blocks: Sequence[ContentBlock],
    said: type[Text] | type[Prompt],
    common: _Common,
    message: AssistantMessage | UserMessage,
) -> list[Event]:
    from claude_agent_sdk import (
        ServerToolResultBlock,
        ServerToolUseBlock,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
    )

    out: list[Event] = []
    for block in blocks or []:
        if isinstance(block, TextBlock):
            if block.text:
                out.append(said(text=block.text, raw=message, **common))
        elif isinstance(block, ThinkingBlock):
            if block.thinking:
                out.append(Thinking(text=block.thinking, raw=message, **common))
        elif isinstance(block, (ToolUseBlock, ServerToolUseBlock)):
            tool_input = block.input if isinstance(block.input, dict) else {}
            out.append(
                ToolCall(
                    text=_summary(tool_input),
                    tool=str(block.name),
                    id=block.id,
                    input=tool_input,
                    raw=message,
                    **common,
                )
            )
        elif isinstance(block, (ToolResultBlock, ServerToolResultBlock)):
            content = block.content
            out.append(
                ToolResult(
                    text=content[:RESULT_CHARS] if isinstance(content, str) else "",
                    tool_use_id=block.tool_use_id,
                    is_error=bool(getattr(block, "is_error", False)),
                    raw=message,
                    **common,
                )
            )
    return out


def _summary(tool_input: dict[str, object]) -> str:
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


def _plain_text(blocks: Sequence[ContentBlock]) -> str:
    from claude_agent_sdk import TextBlock

    return "\n".join(b.text for b in blocks or [] if isinstance(b, TextBlock) and b.text)


def _compact_reset(message: SystemMessage) -> Reset:
    data = message.data if isinstance(message.data, dict) else {}
    micro = message.subtype == "microcompact_boundary"
    meta: dict[str, object] = {}
    for key in ("compact_metadata", "compactMetadata", "microcompact_metadata", "microcompactMetadata"):
        if isinstance(data.get(key), dict):
            meta = mapping(data[key])
            break
    trigger = _first(meta, data, keys=("trigger",))
    pre = _int(_first(meta, data, keys=("pre_tokens", "preTokens")))
    post = _int(_first(meta, data, keys=("post_tokens", "postTokens")))
    saved = _int(_first(meta, data, keys=("tokens_saved", "tokensSaved")))
    if post is None and pre is not None and saved is not None:
        post = pre - saved
    trigger = str(trigger) if trigger else ""
    return Reset(
        text=_("压缩({trigger}) {pre} → {post} tokens").format(
            trigger=trigger, pre=_shown(pre), post=_shown(post)
        ),
        trigger=trigger,
        pre_tokens=pre,
        post_tokens=post,
        micro=micro,
        subtype=message.subtype,
        raw=message,
    )


def _shown(tokens: int | None) -> str:
    return "?" if tokens is None else str(tokens)


def _first(*sources: dict[str, object], keys: tuple[str, ...]) -> object:
    for source in sources:
        for key in keys:
            if source.get(key) is not None:
                return source[key]
    return None


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    return None


def emitter(callback: Callable[[Event], None] | None) -> Callable[[Event], None]:
    """Wrap an event callback so that a broken UI can never stop the work, and so that no
    credential a tool printed reaches a front end (its text, its payload, its raw message)."""

    def emit(event: Event) -> None:
        if callback is not None:
            with contextlib.suppress(Exception):
                callback(redact_value(event))

    return emit
