"""The role allowlist's three layers, by calling them as the CLI does.

tests/e2e/test_walls_cli.py proves them against the CLI: every state-changing tool it offers,
0 executed on a coordinator's or a judge's main thread.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from claude_agent_sdk import AgentDefinition, HookMatcher
from claude_agent_sdk.types import HookInput, PermissionResultDeny, ToolPermissionContext

from flower import AgentSpec, HumanChannel, clarify, coordinator, judge, oracle, worker
from flower.core.guard import HANDS_ON, allowed_names, allowlist_guard
from flower.core.walls import UNATTENDED, base_tools, refuse_permission, role_walls

LATER = [
    "CronCreate",
    "EnterWorktree",
    "Monitor",
    "SendMessage",
    "Workflow",
    "Skill",
    "ScheduleWakeup",
    "ToolSearch",
]


async def decide(m: HookMatcher, tool: str, agent_id: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {}, "cwd": "/x"}
    if agent_id:
        data["agent_id"] = agent_id
    out = await m.hooks[0](cast("HookInput", data), "toolu_1", {"signal": None})
    return cast("dict[str, Any]", out)


def denied(out: dict[str, Any]) -> bool:
    return out.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"


def test_allowed_names_are_tool_names_and_agent_has_its_old_name():
    assert allowed_names(["Read", "Bash(git status:*)", "Agent", " "]) == {"Read", "Bash", "Agent", "Task"}
    assert allowed_names(None) == set()


def test_the_allowlist_matches_every_tool_and_fails_closed():
    m = allowlist_guard(["Read"])
    assert m.matcher is None and m.on_failure == "block"


@pytest.mark.parametrize("tool", [*LATER, "mcp__other__write", "NextYearsTool"])
async def test_anything_off_the_list_is_denied_on_the_main_thread(tool):
    out = await decide(allowlist_guard(["Read", "Glob"], role="判定者"), tool)
    assert denied(out) and f"判定者 没有 {tool}" in out["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize("tool", ["Read", "Glob"])
async def test_the_list_passes(tool):
    assert await decide(allowlist_guard(["Read", "Glob"]), tool) == {}


@pytest.mark.parametrize(
    ("allowed", "tool", "passes"),
    [
        (["mcp__github"], "mcp__github__create_issue", True),
        (["mcp__github__*"], "mcp__github__create_issue", True),
        (["mcp__github__list"], "mcp__github__create_issue", False),
        (["mcp__github"], "mcp__githubx__create_issue", False),
    ],
)
async def test_an_mcp_server_listed_whole_gives_its_tools(allowed, tool, passes):
    assert (await decide(allowlist_guard(allowed), tool) == {}) is passes


@pytest.mark.parametrize("tool", [*LATER, "Write"])
async def test_subagents_pass_their_tools_come_from_their_definition(tool):
    assert await decide(allowlist_guard(["Read"]), tool, agent_id="a1") == {}


async def test_tools_another_guard_answers_for_are_left_to_it():
    m = allowlist_guard(["Read"], leave=HANDS_ON)
    for tool in HANDS_ON.split("|"):
        assert await decide(m, tool) == {}
    assert denied(await decide(m, "CronCreate"))


async def test_a_coordinator_is_told_to_delegate():
    out = await decide(allowlist_guard(["Agent"], delegate=True), "CronCreate")
    assert (
        "协调者不亲自动手,CronCreate 留给 subagent 去做"
        in out["hookSpecificOutput"]["permissionDecisionReason"]
    )


def ch() -> HumanChannel:
    return HumanChannel(timeout_s=0)


def test_a_judge_is_offered_only_its_own_built_ins():
    assert base_tools(judge("判定者", ch())) == ["Glob", "Grep", "Read"]
    assert base_tools(judge("判定者", ch(), can_run=True)) == ["Bash", "Glob", "Grep", "Read"]
    assert base_tools(clarify("确认者", ch())) == ["Glob", "Grep", "Read", "WebFetch", "WebSearch"]
    assert base_tools(oracle()) == ["Glob", "Grep", "Read"]


def test_a_coordinators_session_offers_its_own_and_its_workers_tools_and_nothing_else():
    boss = coordinator("协调者", "", {"coder": worker("写代码", "实现。")}, channel=ch())
    tools = base_tools(boss)
    assert tools is not None and set(tools) == {
        "Agent",
        "Task",
        "TodoWrite",
        "Read",
        "Bash",
        "WebFetch",
        "WebSearch",
        "Write",
        "Edit",
        "Glob",
        "Grep",
    }
    assert not set(LATER) & set(tools)


def test_a_worker_that_inherits_every_tool_keeps_the_full_set():
    boss = coordinator("协调者", "", {"any": AgentDefinition(description="d", prompt="p")})
    assert base_tools(boss) is None


def test_a_worker_with_skills_brings_the_skill_tool():
    tools = base_tools(coordinator("协调者", "", {"w": worker("d", "p", skills=["report"])}))
    assert tools is not None and "Skill" in tools


def context(agent_id: str | None = None) -> ToolPermissionContext:
    return ToolPermissionContext(tool_use_id="toolu_1", agent_id=agent_id)


async def test_the_permission_callback_refuses_everything():
    ask = refuse_permission(["Read", "Bash"], role="判定者")
    off_list = await ask("CronCreate", {}, context())
    assert isinstance(off_list, PermissionResultDeny) and "判定者 没有 CronCreate" in off_list.message
    on_list = await ask("Bash", {"command": "touch x"}, context())  # asked: nobody is there to say yes
    worker_asks = await ask("Write", {}, context("a1"))
    network = await ask("SandboxNetworkAccess", {"host": "elsewhere.example"}, context("a1"))
    for result in (on_list, worker_asks, network):
        assert isinstance(result, PermissionResultDeny) and result.message == UNATTENDED


def test_the_runtime_gets_all_three_layers_from_the_spec_alone():
    spec = AgentSpec(name="solo", instructions="", allowed_tools=["Read"])
    walls = role_walls(spec)
    assert walls.tools == ["Read"] and callable(walls.can_use_tool)
    [hook] = walls.hooks["PreToolUse"]
    assert hook.matcher is None
