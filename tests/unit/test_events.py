from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from flower.core.events import (
    EVENT_TYPES,
    BudgetNote,
    ContextUpdate,
    Event,
    EventKind,
    GoalUnverifiable,
    HandoffDone,
    HandoffNear,
    HandoffWriting,
    LimitWait,
    MailNote,
    Offline,
    Question,
    Retry,
    StepFinished,
    StepStarted,
    Text,
    ToolCall,
    TypedEvent,
    VerdictGiven,
    WindowNote,
    ask_state,
    flower_event,
    normalize,
    verdict_state,
)
from flower.core.evidence import Evidence, TrailCall

USAGE = {
    "input_tokens": 12,
    "cache_read_input_tokens": 30000,
    "cache_creation_input_tokens": 500,
    "output_tokens": 99,
}


def assistant(*blocks, **kw) -> AssistantMessage:
    kw.setdefault("model", "claude-sonnet-4-5")
    return AssistantMessage(content=list(blocks), **kw)


# -- Event -------------------------------------------------------------------------------------


def test_event_kind_has_the_fifteen_kinds() -> None:
    assert set(typing.get_args(EventKind)) == {
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
    }


def test_event_str() -> None:
    assert str(Event("tool_call", text="ls -la", tool="Bash")) == "[Bash] ls -la"
    assert str(Event("text", text="hello")) == "hello"
    assert str(Event("result")) == "<result>"
    assert str(Event("retry", text="")) == "<retry>"


def test_event_defaults_are_not_shared() -> None:
    a, b = Event("text"), Event("text")
    a.payload["x"] = 1
    assert b.payload == {}
    assert a.raw is None and a.tool == ""


# -- the typed events ----------------------------------------------------------------------------


def test_every_typed_event_is_an_event_of_one_of_the_fifteen_kinds() -> None:
    kinds = set(typing.get_args(EventKind))
    for cls in EVENT_TYPES:
        assert issubclass(cls, Event) and issubclass(cls, TypedEvent)
        (kind,) = typing.get_args(typing.get_type_hints(cls)["kind"])
        assert kind in kinds, cls.__name__


def _leaves(cls: type) -> set[type]:
    subs: list[type] = cls.__subclasses__()
    return {cls} if not subs else set().union(*(_leaves(c) for c in subs))


def test_the_union_of_flowers_events_is_closed_over_every_event_class() -> None:
    # every leaf class of TypedEvent is in the union, and nothing else: a new event class that
    # is left out fails here, and every exhaustive match over the union would miss it
    assert set(EVENT_TYPES) == _leaves(TypedEvent)
    assert len(EVENT_TYPES) == len(set(EVENT_TYPES))
    assert flower_event(StepStarted(text="干活", index=1, total=3, resumed=False, woke=1)) is not None
    assert flower_event(Event("text", "a caller's own event")) is None


FIGURES: dict[str, Any] = {
    "used": 935_000,
    "window": 1_000_000,
    "at": 950_000,
    "warn_at": 930_000,
    "step": "干活",
    "generation": 1,
}

# The documented shapes, each built from its typed fields: (event, kind, payload).
SHAPES = [
    pytest.param(
        StepStarted(text="干活", index=3, total=3, resumed=True, woke=2),
        "step",
        {"index": 3, "total": 3, "resumed": True, "woke": 2},
        id="step",
    ),
    pytest.param(
        StepFinished(text="干活", ok=False, cost_usd=0.5, error="boom"),
        "step",
        {"phase": "done", "ok": False, "cost_usd": 0.5, "session_id": None, "error": "boom"},
        id="step done",
    ),
    pytest.param(
        HandoffNear(text="near", **FIGURES),
        "handoff",
        {"phase": "near", "subtype": "context", **FIGURES, "session_id": None, "cost_usd": 0.0},
        id="handoff near",
    ),
    pytest.param(
        HandoffWriting(text="writing", step="干活", used=950_000),
        "handoff",
        {"phase": "writing", "step": "干活", "used": 950_000},
        id="handoff writing",
    ),
    pytest.param(
        HandoffDone(
            text="done",
            degraded=False,
            path="/n/交接-干活.md",
            sections={"doing": "在写解析器", "next": "跑测试"},
            step="干活",
            retired="s1",
            generation=2,
            context=760_000,
            window=1_000_000,
        ),
        "handoff",
        {
            "phase": "done",
            "degraded": False,
            "path": "/n/交接-干活.md",
            "sections": {"doing": "在写解析器", "next": "跑测试"},
            "step": "干活",
            "retired": "s1",
            "generation": 2,
            "context": 760_000,
            "window": 1_000_000,
        },
        id="handoff done",
    ),
    pytest.param(
        ContextUpdate(text="context", **FIGURES, session_id="s1", cost_usd=0.25),
        "system",
        {"subtype": "context", **FIGURES, "session_id": "s1", "cost_usd": 0.25},
        id="context",
    ),
    pytest.param(
        Retry(text="retry", attempt=2, failure="transient", error="503", delay=8.0),
        "retry",
        {"attempt": 2, "kind": "transient", "error": "503", "delay": 8.0},
        id="retry",
    ),
    pytest.param(Offline(text="offline"), "retry", {"phase": "offline"}, id="offline"),
    pytest.param(
        LimitWait(text="wait", phase="wait", limit="usage", until=1_800_000_000.0, seconds=90.0, step="干活"),
        "retry",
        {
            "subtype": "limit",
            "phase": "wait",
            "limit": "usage",
            "until": 1_800_000_000.0,
            "seconds": 90.0,
            "error": None,
            "step": "干活",
        },
        id="a limit wait",
    ),
    pytest.param(
        BudgetNote(text="b", phase="stopped", spent=1.5, run_usd=1.0, scope="run", step="干活"),
        "system",
        {
            "subtype": "budget",
            "phase": "stopped",
            "spent": 1.5,
            "run_usd": 1.0,
            "round_usd": None,
            "next_round": None,
            "scope": "run",
            "step": "干活",
        },
        id="stopped on a budget",
    ),
    pytest.param(
        WindowNote(text="w", configured=1_000_000, learned=200_000, model="m", base_url="http://gw"),
        "handoff",
        {
            "phase": "window",
            "configured": 1_000_000,
            "learned": 200_000,
            "model": "m",
            "base_url": "http://gw",
            "path": None,
        },
        id="a window smaller than configured",
    ),
    pytest.param(
        GoalUnverifiable(text="1 unverifiable", unverifiable=["在 iOS 上跑"], total=3, path="/n/目标.md"),
        "task",
        {"unverifiable": ["在 iOS 上跑"], "total": 3, "path": "/n/目标.md"},
        id="goal set with unverifiable checks",
    ),
    pytest.param(
        VerdictGiven(
            state="not_yet",
            reason="r",
            failed=["a"],
            round=1,
            goal_path="/n/目标.md",
            session_id="j1",
            evidence=[Evidence(check="a", kind="read", path="a.py", line=1, end_line=2)],
            trail=[TrailCall(tool="Read", path="a.py", line=1, end_line=2, ran=True)],
            unproven=["a"],
            claimed="achieved",
        ),
        "task",
        {
            "kind": "verdict",
            "state": "not_yet",
            "reason": "r",
            "failed": ["a"],
            "round": 1,
            "goal_path": "/n/目标.md",
            "session_id": "j1",
            # plain JSON: the typed values' to_json
            "evidence": [Evidence(check="a", kind="read", path="a.py", line=1, end_line=2).to_json()],
            "trail": [TrailCall(tool="Read", path="a.py", line=1, end_line=2, ran=True).to_json()],
            "unproven": ["a"],
            "claimed": "achieved",
        },
        id="verdict",
    ),
    pytest.param(
        Question(text="?", id="q1", options=["a"], state="asked", answer="", remaining=-1, asked_at=1.5),
        "ask",
        {"id": "q1", "options": ["a"], "state": "asked", "answer": "", "remaining": -1, "asked_at": 1.5},
        id="question",
    ),
    pytest.param(
        MailNote(text="也统计空行", state="queued", id="m1", amended=""),
        "ask",
        {"kind": "mail", "state": "queued", "id": "m1", "amended": ""},
        id="mail: no options, no remaining",
    ),
    pytest.param(
        ToolCall(text="ls", tool="Bash", id="t1", input={"command": "ls"}),
        "tool_call",
        {"id": "t1", "input": {"command": "ls"}, "subagent": False, "context": 0},
        id="a main-thread tool call has no parent_tool_use_id",
    ),
]


@pytest.mark.parametrize("event, kind, payload", SHAPES)
def test_each_event_fills_the_documented_payload_from_its_fields(
    event: Event, kind: str, payload: dict
) -> None:
    assert event.kind == kind and event.payload == payload


def test_a_typed_event_is_a_value() -> None:
    ev = StepStarted(text="干活", index=1, total=3, resumed=False, woke=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.index = 2  # the payload could no longer follow it
    moved = dataclasses.replace(ev, index=2)
    assert moved.payload["index"] == 2 and ev.payload["index"] == 1


def test_a_payload_shares_no_list_with_its_event() -> None:
    ev = VerdictGiven(state="not_yet", reason="", failed=["a"], round=1, goal_path="/g")
    failed = ev.payload["failed"]
    assert isinstance(failed, list)
    failed.append("b")
    assert ev.failed == ["a"]


def test_states_outside_the_literals_are_caught() -> None:
    assert verdict_state("achieved") == "achieved" and verdict_state("无法解析") == ""
    assert ask_state("timeout") == "timeout"
    with pytest.raises(ValueError, match="not a question state"):
        ask_state("maybe")


def test_a_typed_event_still_prints_as_the_plain_one() -> None:
    assert str(ToolCall(text="ls -la", tool="Bash", id="t1")) == "[Bash] ls -la"
    assert str(Text(text="hello")) == "hello" and str(Offline()) == "<retry>"


# -- assistant / user --------------------------------------------------------------------------


def test_assistant_text_and_thinking_with_context() -> None:
    msg = assistant(ThinkingBlock(thinking="hmm", signature="sig"), TextBlock(text="done"), usage=USAGE)
    evs = normalize(msg)
    assert [e.kind for e in evs] == ["thinking", "text"]
    assert evs[1].text == "done"
    assert evs[1].payload == {"subagent": False, "context": 30512}
    assert evs[1].raw is msg


def test_context_is_zero_without_usage() -> None:
    (ev,) = normalize(assistant(TextBlock(text="x")))
    assert ev.payload["context"] == 0


def test_subagent_messages_are_marked() -> None:
    (ev,) = normalize(assistant(TextBlock(text="from a worker"), parent_tool_use_id="toolu_1", usage=USAGE))
    assert ev.payload["subagent"] is True
    assert ev.payload["parent_tool_use_id"] == "toolu_1"
    (main,) = normalize(assistant(TextBlock(text="main")))
    assert "parent_tool_use_id" not in main.payload


def test_tool_call_summary_prefers_path_command_pattern() -> None:
    evs = normalize(
        assistant(
            ToolUseBlock(id="t1", name="Read", input={"file_path": "/a/b.py", "limit": 10}),
            ToolUseBlock(id="t2", name="Bash", input={"command": "pytest -q", "description": "run tests"}),
            ToolUseBlock(id="t3", name="Grep", input={"pattern": "TODO", "path": "src"}),
            usage=USAGE,
        )
    )
    assert [(e.kind, e.tool, e.text) for e in evs] == [
        ("tool_call", "Read", "/a/b.py"),
        ("tool_call", "Bash", "pytest -q"),
        ("tool_call", "Grep", "TODO"),
    ]
    assert evs[1].payload["id"] == "t2"
    assert evs[1].payload["input"] == {"command": "pytest -q", "description": "run tests"}
    assert evs[1].payload["subagent"] is False and evs[1].payload["context"] == 30512
    assert str(evs[1]) == "[Bash] pytest -q"


def test_tool_call_summary_is_cut_to_200() -> None:
    (ev,) = normalize(assistant(ToolUseBlock(id="t", name="Bash", input={"command": "echo " + "x" * 500})))
    assert len(ev.text) == 200


def test_tool_call_without_known_keys_still_says_something() -> None:
    (ev,) = normalize(
        assistant(ToolUseBlock(id="t", name="Agent", input={"description": "count lines", "prompt": "..."}))
    )
    assert ev.text == "count lines"


def test_tool_result_in_user_message() -> None:
    msg = UserMessage(
        content=[
            ToolResultBlock(tool_use_id="t1", content="y" * 900, is_error=False),
            ToolResultBlock(tool_use_id="t2", content="boom", is_error=True),
            ToolResultBlock(tool_use_id="t3", content=[{"type": "image", "source": {}}]),
        ],
        parent_tool_use_id="toolu_parent",
    )
    evs = normalize(msg)
    assert [e.kind for e in evs] == ["tool_result"] * 3
    assert len(evs[0].text) == 500
    assert evs[0].payload["tool_use_id"] == "t1" and evs[0].payload["is_error"] is False
    assert evs[1].payload["is_error"] is True and evs[1].text == "boom"
    assert evs[2].text == ""  # non-string content shows nothing rather than a repr
    assert evs[2].payload["is_error"] is False
    assert all(e.payload["subagent"] and e.payload["parent_tool_use_id"] == "toolu_parent" for e in evs)


def test_user_prompt_is_not_model_text() -> None:
    (ev,) = normalize(UserMessage(content="please do X"))
    assert ev.kind == "prompt" and ev.text == "please do X"
    assert ev.payload == {"subagent": False, "context": 0}
    evs = normalize(UserMessage(content=[TextBlock(text="task brief")], parent_tool_use_id="p"))
    assert [(e.kind, e.text, e.payload["subagent"]) for e in evs] == [("prompt", "task brief", True)]


# -- synthetic API errors ----------------------------------------------------------------------


def test_synthetic_model_becomes_a_single_error() -> None:
    msg = assistant(TextBlock(text="API Error: Can't reach the API server"), model="<synthetic>", usage=USAGE)
    evs = normalize(msg)
    assert len(evs) == 1
    assert evs[0].kind == "error"
    assert evs[0].payload == {"synthetic": True}
    assert "Can't reach" in evs[0].text
    assert not any(e.kind == "text" for e in evs)


def test_error_field_marks_an_api_error_message() -> None:
    msg = assistant(
        TextBlock(text="API Error: 529 overloaded"), TextBlock(text="second"), error="server_error"
    )
    evs = normalize(msg)
    assert [e.kind for e in evs] == ["error"]
    assert evs[0].payload == {"synthetic": True}


# -- result / system / task / reset ------------------------------------------------------------


def test_result_message() -> None:
    msg = ResultMessage(
        subtype="success",
        duration_ms=10,
        duration_api_ms=8,
        is_error=False,
        num_turns=3,
        session_id="sess-1",
        total_cost_usd=0.0123,
    )
    (ev,) = normalize(msg)
    assert ev.kind == "result" and ev.text == "success"
    assert ev.payload == {"session_id": "sess-1", "cost_usd": 0.0123, "num_turns": 3, "is_error": False}


def test_task_messages() -> None:
    msgs = [
        TaskStartedMessage(
            subtype="task_started", data={}, task_id="a", description="d", uuid="u", session_id="s"
        ),
        TaskProgressMessage(
            subtype="task_progress",
            data={},
            task_id="a",
            description="d",
            usage={"total_tokens": 1, "tool_uses": 0, "duration_ms": 5},
            uuid="u",
            session_id="s",
        ),
        TaskNotificationMessage(
            subtype="task_notification",
            data={},
            task_id="a",
            status="completed",
            output_file="o",
            summary="s",
            uuid="u",
            session_id="s",
        ),
    ]
    evs = [e for m in msgs for e in normalize(m)]
    assert [(e.kind, e.text) for e in evs] == [
        ("task", "TaskStartedMessage"),
        ("task", "TaskProgressMessage"),
        ("task", "TaskNotificationMessage"),
    ]


def test_other_system_messages_pass_data_through() -> None:
    data = {"type": "system", "subtype": "init", "cwd": "/w", "tools": ["Read"]}
    (ev,) = normalize(SystemMessage(subtype="init", data=data))
    assert ev.kind == "system" and ev.text == "init"
    assert ev.payload == data


def test_compact_boundary_is_a_reset() -> None:
    data = {
        "type": "system",
        "subtype": "compact_boundary",
        "compact_metadata": {"trigger": "auto", "pre_tokens": 167000, "post_tokens": 42000},
    }
    (ev,) = normalize(SystemMessage(subtype="compact_boundary", data=data))
    assert ev.kind == "reset"
    assert ev.text == "压缩(auto) 167000 → 42000 tokens"
    assert ev.payload == {
        "trigger": "auto",
        "pre_tokens": 167000,
        "post_tokens": 42000,
        "micro": False,
        "subtype": "compact_boundary",
    }


def test_compact_boundary_without_post_tokens() -> None:
    data = {"subtype": "compact_boundary", "compact_metadata": {"trigger": "manual", "pre_tokens": 9000}}
    (ev,) = normalize(SystemMessage(subtype="compact_boundary", data=data))
    assert ev.payload["pre_tokens"] == 9000 and ev.payload["post_tokens"] is None
    assert ev.text == "压缩(manual) 9000 → ? tokens"


def test_microcompact_boundary_is_a_micro_reset() -> None:
    data = {
        "subtype": "microcompact_boundary",
        "microcompactMetadata": {"trigger": "auto", "preTokens": 50000, "tokensSaved": 8000},
    }
    (ev,) = normalize(SystemMessage(subtype="microcompact_boundary", data=data))
    assert ev.kind == "reset"
    assert ev.payload["micro"] is True and ev.payload["subtype"] == "microcompact_boundary"
    assert (ev.payload["pre_tokens"], ev.payload["post_tokens"]) == (50000, 42000)


def test_conversation_reset() -> None:
    (ev,) = normalize(ConversationResetMessage(new_conversation_id="c", uuid="u", session_id="s"))
    assert ev.kind == "reset" and ev.text == "conversation reset"
    assert ev.payload["subtype"] == ""


# -- the rest ----------------------------------------------------------------------------------


def test_stream_events_produce_nothing() -> None:
    assert normalize(StreamEvent(uuid="u", session_id="s", event={"type": "content_block_delta"})) == []


def test_rate_limit_event_is_a_system_event() -> None:
    info = RateLimitInfo(status="allowed_warning", raw={"status": "allowed_warning", "utilization": 0.9})
    (ev,) = normalize(RateLimitEvent(rate_limit_info=info, uuid="u", session_id="s"))
    assert ev.kind == "system"
    assert ev.payload["status"] == "allowed_warning"


def test_unrecognised_objects_are_unknown() -> None:
    class Weird:
        pass

    # what a newer SDK may send: not one of the Message types this flower was typed against
    (ev,) = normalize(Weird())  # type: ignore[arg-type]
    assert ev.kind == "unknown" and ev.text == "Weird"
    (ev,) = normalize({"type": "assistant"})  # type: ignore[arg-type]
    assert ev.kind == "unknown" and ev.text == "dict"


def test_empty_messages_yield_no_events() -> None:
    assert normalize(assistant()) == []
    assert normalize(UserMessage(content="")) == []
    assert normalize(assistant(TextBlock(text=""))) == []
