"""The real Claude Code CLI (bundled in the SDK) driven through claude_agent_sdk.query, with
only the model scripted by flower.sim."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    HookMatcher,
    ResultMessage,
    SystemMessage,
    query,
)
from claude_agent_sdk._errors import ClaudeSDKError
from claude_agent_sdk.types import SyncHookJSONOutput

from flower.plugin import plugin_dir

pytestmark = pytest.mark.e2e


async def run(prompt: str, options: ClaudeAgentOptions) -> dict[str, Any]:
    """Collect what a caller of query() sees, including the error it raises at the end."""
    seen: dict[str, Any] = {"messages": [], "error": None, "result": None, "init": None}
    try:
        async for message in query(prompt=prompt, options=options):
            seen["messages"].append(message)
            if isinstance(message, ResultMessage):
                seen["result"] = message
            if isinstance(message, SystemMessage) and message.subtype == "init":
                seen["init"] = message.data
    except ClaudeSDKError as exc:  # the SDK raises after an error result; that is what users see
        seen["error"] = exc
    return seen


def options(workspace: Path, env: dict[str, str], **kw: Any) -> ClaudeAgentOptions:
    kw.setdefault("setting_sources", [])
    kw.setdefault("permission_mode", "acceptEdits")
    kw.setdefault("stderr", lambda line: None)
    return ClaudeAgentOptions(cwd=str(workspace), env=env, **kw)


def texts(seen: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for m in seen["messages"]:
        if isinstance(m, AssistantMessage):
            out.extend(getattr(b, "text", "") for b in m.content)
    return [t for t in out if t]


async def test_bash_tool_call_really_writes_a_file(sim_factory, sim_env, workspace):
    sim = sim_factory(
        {
            "scripts": {
                "main": [
                    {
                        "tool": {
                            "name": "Bash",
                            "input": {
                                "command": "printf 'hello from bash' > out.txt",
                                "description": "write",
                            },
                        }
                    },
                    {"text": "wrote out.txt"},
                ]
            }
        }
    )
    seen = await run("write out.txt", options(workspace, sim_env(sim), allowed_tools=["Bash"]))

    assert seen["error"] is None and seen["result"].is_error is False
    assert (workspace / "out.txt").read_text() == "hello from bash"
    assert texts(seen) == ["wrote out.txt"]
    # the model was shown the tool's real result on its second turn
    second = sim.requests_for("main")[1]
    assert [r["tool_use_id"] for r in second.tool_results()] == [second.tool_uses()[0]["id"]]


async def test_pre_tool_use_hook_denies_and_the_model_sees_the_denial(sim_factory, sim_env, workspace):
    (workspace / "keep.txt").write_text("precious")
    calls: list[str] = []

    async def no_deleting(
        data: Mapping[str, Any], tool_use_id: str | None, ctx: object
    ) -> SyncHookJSONOutput:
        calls.append(data["tool_input"]["command"])
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "deleting files is not allowed here",
            }
        }

    sim = sim_factory(
        {
            "scripts": {"main": [{"tool": {"name": "Bash", "input": {"command": "rm keep.txt"}}}]},
            "rules": [
                {
                    "when": {"last_user_contains": "not allowed here"},
                    "reply": {"text": "understood, I will not delete"},
                }
            ],
        }
    )
    seen = await run(
        "clean up",
        options(
            workspace,
            sim_env(sim),
            allowed_tools=["Bash"],
            hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[no_deleting])]},
        ),
    )

    assert calls == ["rm keep.txt"]
    assert (workspace / "keep.txt").read_text() == "precious"
    shown = sim.last("main").tool_results()[-1]
    assert shown["is_error"] is True
    assert "PreToolUse:Bash hook error" in str(shown["content"])
    assert "deleting files is not allowed here" in str(shown["content"])
    assert texts(seen) == ["understood, I will not delete"]


async def test_subagent_tool_calls_carry_agent_id_in_hook_input(sim_factory, sim_env, workspace):
    seen_hooks: list[dict[str, Any]] = []

    async def record(data: Mapping[str, Any], tool_use_id: str | None, ctx: object) -> SyncHookJSONOutput:
        seen_hooks.append({k: data.get(k) for k in ("tool_name", "agent_id", "agent_type")})
        return {}

    sim = sim_factory(
        {
            "actors": {"coder": {"system": "You are the coder of this test"}},
            "scripts": {
                "main": [
                    {
                        "tool": {
                            "name": "Agent",
                            "input": {
                                "subagent_type": "coder",
                                "description": "write a file",
                                "prompt": "write sub.txt",
                                "run_in_background": False,
                            },
                        }
                    },
                    {"text": "the coder is done"},
                ],
                "coder": [
                    {"tool": {"name": "Bash", "input": {"command": "echo sub > sub.txt"}}},
                    {"text": "wrote sub.txt"},
                ],
            },
        }
    )
    coder = AgentDefinition(
        description="writes files", prompt="You are the coder of this test.", tools=["Bash", "Read", "Write"]
    )
    seen = await run(
        "delegate it",
        options(
            workspace,
            sim_env(sim),
            allowed_tools=["Agent", "Bash"],
            agents={"coder": coder},
            hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[record])]},
        ),
    )

    assert seen["error"] is None
    assert (workspace / "sub.txt").read_text() == "sub\n"
    main_calls = [h for h in seen_hooks if h["tool_name"] == "Agent"]
    sub_calls = [h for h in seen_hooks if h["tool_name"] == "Bash"]
    assert main_calls and all(h["agent_id"] is None for h in main_calls)
    assert sub_calls and all(h["agent_id"] and h["agent_type"] == "coder" for h in sub_calls)
    assert sim.actors_seen().count("coder") == 2
    # the coordinator got the subagent's report back as the Agent tool's result
    assert "wrote sub.txt" in str(sim.last("main").tool_results()[-1]["content"])


async def test_resume_sends_the_earlier_history(sim_factory, sim_env, workspace):
    sim = sim_factory({"scripts": {"main": [{"text": "noted: the word is tulip"}, {"text": "it was tulip"}]}})
    first = await run("remember the word tulip", options(workspace, sim_env(sim)))
    session = first["result"].session_id

    second = await run("which word?", options(workspace, sim_env(sim), resume=session))

    assert second["result"].session_id == session
    resumed = sim.last("main")
    assert "remember the word tulip" in resumed.all_text
    assert "noted: the word is tulip" in resumed.all_text
    assert resumed.last_user_text.strip().endswith("which word?")
    assert texts(second) == ["it was tulip"]


# How each injected fault surfaces, measured with the real CLI 2.1.327 (CLAUDE_CODE_MAX_RETRIES=1):
# (fault, requests the CLI makes, api_error_status, terminal_reason, text the user sees)
FAULT_CASES = [
    (400, None, 400, "api_error", "API Error: 400"),
    (401, 2, 401, "api_error", "Invalid API key"),
    (429, 2, 429, "api_error", "Request rejected (429)"),
    (500, 2, 500, "api_error", "API Error: 500"),
    (529, 2, 529, "api_error", "API Error: 529 Overloaded"),
    ("too_long", 1, 400, "prompt_too_long", "Prompt is too long"),
    ("drop", None, None, "api_error", "Connection dropped (ECONNRESET)"),
    ("stall", 2, None, "api_error", "Request timed out"),
]


@pytest.mark.parametrize(
    ("fault", "requests", "status", "terminal", "shown"), FAULT_CASES, ids=[str(c[0]) for c in FAULT_CASES]
)
async def test_each_fault_surfaces_as_the_cli_reports_it(
    sim_factory, sim_env, workspace, fault, requests, status, terminal, shown
):
    turn: dict[str, Any] = {"fault": fault, "times": 20}
    if fault == "drop":
        turn["after_events"] = 3
    if fault == "stall":
        turn["seconds"] = 30
    sim = sim_factory({"scripts": {"main": [turn]}})
    seen = await run("hi", options(workspace, sim_env(sim, max_retries=1, timeout_ms=2500)))

    result = seen["result"]
    assert result is not None and result.is_error is True
    assert result.api_error_status == status
    assert result.terminal_reason == terminal
    assert shown in (result.result or "")
    assert any(shown in t for t in texts(seen))  # the synthetic assistant message
    assert seen["error"] is not None and shown in str(seen["error"])  # query() raises at the end
    if requests is not None:
        assert len(sim.requests) == requests
    else:  # the CLI re-sends a 400 / a broken stream in other shapes (e.g. without streaming)
        assert len(sim.requests) >= 2


async def test_the_cli_recovers_by_itself_from_one_dropped_stream(sim_factory, sim_env, workspace):
    sim = sim_factory({"scripts": {"main": [{"fault": "drop", "after_events": 2}, {"text": "made it"}]}})
    seen = await run("hi", options(workspace, sim_env(sim, max_retries=2)))

    assert seen["error"] is None and texts(seen) == ["made it"]
    assert [r.reply for r in sim.requests] == ["fault:drop", "text"]


async def test_the_plugin_is_loaded_and_its_skill_reaches_the_model(sim_factory, sim_env, workspace):
    sim = sim_factory(
        {
            "scripts": {
                "main": [{"tool": {"name": "Skill", "input": {"skill": "flower:workbench"}}}, {"text": "ok"}]
            }
        }
    )
    seen = await run(
        "hi",
        options(
            workspace,
            sim_env(sim),
            allowed_tools=["Skill"],
            plugins=[{"type": "local", "path": str(plugin_dir())}],
        ),
    )

    init = seen["init"]
    assert {"name": "flower", "version": "0.1.0"}.items() <= next(
        p for p in init["plugins"] if p["name"] == "flower"
    ).items()
    assert {"flower:workbench", "flower:report"} <= set(init["skills"])
    assert "# desc:" in sim.last("main").all_text  # the skill's body was loaded into the conversation


async def test_usage_from_the_scenario_is_what_the_sdk_reports(sim_factory, sim_env, workspace):
    sim = sim_factory(
        {
            "scripts": {
                "main": [
                    {
                        "text": "big",
                        "usage": {
                            "input_tokens": 1200,
                            "cache_read_input_tokens": 150_000,
                            "cache_creation_input_tokens": 800,
                        },
                    }
                ]
            }
        }
    )
    seen = await run("hi", options(workspace, sim_env(sim)))

    usage = next(m for m in seen["messages"] if isinstance(m, AssistantMessage)).usage
    assert usage is not None
    assert (
        usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
        == 152_000
    )
