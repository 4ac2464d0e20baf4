"""HumanChannel through the real Claude Code CLI: the scripted model (flower.sim) calls
mcp__human__ask / mcp__human__inbox, the in-process MCP server answers, and the next request
the model makes shows what came back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from flower.core.events import Event
from flower.core.human import OVER_BUDGET, TIMEOUT, HumanChannel
from flower.sim.scenario import content_text

pytestmark = pytest.mark.e2e


def options(workspace: Path, env: dict[str, str], channel: HumanChannel) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(
        cwd=str(workspace),
        env=env,
        setting_sources=[],
        permission_mode="acceptEdits",
        stderr=lambda line: None,
        mcp_servers=channel.mcp_servers(),
        allowed_tools=[channel.tool_name, channel.inbox_name],
    )


async def run(prompt: str, opts: ClaudeAgentOptions) -> ResultMessage | None:
    result = None
    async for message in query(prompt=prompt, options=opts):
        if isinstance(message, ResultMessage):
            result = message
    return result


def calls(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"tool": {"name": name, "input": tool_input}}


def shown_result(sim: Any) -> dict[str, Any]:
    """The tool result the model saw on its second turn, with its text flattened."""
    second = sim.requests_for("main")[1]
    block = second.tool_results()[-1]
    assert block["tool_use_id"] == second.tool_uses()[-1]["id"]
    return {"text": content_text(block.get("content")), "is_error": bool(block.get("is_error"))}


async def test_an_answer_from_another_thread_reaches_the_model(sim_factory, sim_env, workspace, tmp_path):
    question = {"question": "这个工具给命令行用,还是要 Web 界面?", "options": ["纯命令行", "Web 界面"]}
    sim = sim_factory({"scripts": {"main": [calls("mcp__human__ask", question), {"text": "好,做命令行版"}]}})
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, log_path=tmp_path / "问答记录.md")

    async def person() -> None:
        ask = await channel.next_ask()
        assert ask is not None
        await asyncio.sleep(0.3)  # the tool call is really blocked meanwhile
        assert channel.pending() == [ask]
        assert await asyncio.to_thread(channel.answer, ask.id, "纯命令行")

    helper = asyncio.create_task(person())
    result = await asyncio.wait_for(run("帮我做一个 X", options(workspace, sim_env(sim), channel)), 120)
    await helper

    assert result is not None and result.is_error is False
    first = sim.requests_for("main")[0]
    # offered with their schemas from the first request, not deferred behind ToolSearch
    assert {"mcp__human__ask", "mcp__human__inbox"} <= set(first.tool_names)
    assert shown_result(sim) == {"text": "纯命令行", "is_error": False}
    [ask] = channel.asks
    assert (ask.question, ask.options, ask.state, ask.answer) == (
        question["question"],
        question["options"],
        "answered",
        "纯命令行",
    )
    assert ask.waited_s >= 0.3
    assert [(e.payload["state"], e.payload["remaining"]) for e in events] == [("asked", -1), ("answered", -1)]
    log = (tmp_path / "问答记录.md").read_text(encoding="utf-8")
    assert question["question"] in log and "纯命令行 / Web 界面" in log and "- 答:纯命令行" in log


async def test_timeout_zero_gives_the_model_the_timeout_text_at_once(sim_factory, sim_env, workspace):
    sim = sim_factory(
        {
            "scripts": {
                "main": [calls("mcp__human__ask", {"question": "用哪个数据库?"}), {"text": "我自己定了"}]
            }
        }
    )
    channel = HumanChannel(timeout_s=0)

    result = await asyncio.wait_for(run("go", options(workspace, sim_env(sim), channel)), 120)

    assert result is not None and result.is_error is False
    assert shown_result(sim) == {"text": TIMEOUT, "is_error": False}
    assert [a.state for a in channel.asks] == ["timeout"]
    assert channel.asks[0].waited_s < 1


async def test_max_asks_zero_gives_the_model_the_over_budget_text(sim_factory, sim_env, workspace):
    sim = sim_factory(
        {"scripts": {"main": [calls("mcp__human__ask", {"question": "能问吗?"}), {"text": "不问了"}]}}
    )
    channel = HumanChannel(max_asks=0, timeout_s=None)  # would hang forever if the refusal blocked

    result = await asyncio.wait_for(run("go", options(workspace, sim_env(sim), channel)), 120)

    assert result is not None and result.is_error is False
    assert shown_result(sim) == {"text": OVER_BUDGET, "is_error": False}
    assert [a.state for a in channel.asks] == ["over_budget"]
    assert channel.remaining == 0


async def test_an_empty_question_is_an_error_the_model_can_read(sim_factory, sim_env, workspace):
    sim = sim_factory({"scripts": {"main": [calls("mcp__human__ask", {"question": "  "}), {"text": "重问"}]}})
    channel = HumanChannel(timeout_s=None)

    await asyncio.wait_for(run("go", options(workspace, sim_env(sim), channel)), 120)

    shown = shown_result(sim)
    assert shown["is_error"] is True and "问题是空的" in shown["text"]
    assert [a.state for a in channel.asks] == ["invalid"]


async def test_the_inbox_returns_what_the_person_sent(sim_factory, sim_env, workspace, tmp_path):
    sim = sim_factory(
        {"scripts": {"main": [calls("mcp__human__inbox", {}), {"text": "收到,会报告总字节数"}]}}
    )
    brief = tmp_path / "需求.md"
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, amend_path=brief)
    mail = channel.send("顺便报告总字节数")
    assert mail is not None

    result = await asyncio.wait_for(run("go", options(workspace, sim_env(sim), channel)), 120)

    assert result is not None and result.is_error is False
    shown = shown_result(sim)
    assert shown["is_error"] is False and "顺便报告总字节数" in shown["text"]
    assert mail.taken and channel.pending_mail() == []
    assert "顺便报告总字节数" in brief.read_text(encoding="utf-8")
    assert [e.payload["state"] for e in events] == ["queued", "delivered"]
