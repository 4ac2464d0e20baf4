"""The role allowlist against the real CLI: every state-changing tool it offers, 0 executed on a
coordinator's or a judge's main thread, with and without a workbench, through `Runtime`,
`flower run` and `flower go`.

"Not executed" is read from what happened (files on disk, the worktree list, the scheduled-task
file) and from the tool result the model was shown, never from a hook's word alone. The list of
tools scripted is checked against what the CLI offers a session with no walls, so a tool a new CLI
adds fails this file until it is scripted here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AgentDefinition,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    create_sdk_mcp_server,
    tool,
)
from claude_agent_sdk.types import HookEvent, PermissionResultDeny

from flower import AgentSpec, HumanChannel, Runtime, Workbench, coordinator, judge, worker
from flower.core.guard import allowlist_guard
from flower.sim.env import isolated_env
from flower.sim.scenarios import BRIEF, GOAL, STARTER_ACTORS, judged
from flower.sim.server import SimServer

pytestmark = pytest.mark.e2e

# Tools that change nothing: not scripted (a coordinator delegates with Agent: that is its job).
READ_ONLY = {
    "Read",
    "Glob",
    "Grep",
    "ListAgents",
    "CronList",
    "WebFetch",
    "WebSearch",
    "DeferredToolPlaceholder",
}
DEFERRED = "CronCreate,CronDelete,EnterWorktree,ExitWorktree,Monitor,NotebookEdit,SendMessage,TaskStop"
# what the model is told when a tool does not run: the walls' words, or the CLI's own refusals
REFUSED = re.compile(
    r"没有 |协调者不亲自动手|No such tool available|InputValidationError|is not available"
    # the CLI's own input checks, which run before any hook: the target does not exist
    r"|No task found with ID|No-op: there is no active EnterWorktree session|You are not in plan mode"
)
# files a tool would leave behind if it ran
EFFECTS = ("bash_ran", "written.txt", "monitor_ran", "agent_ran", "mcp_ran")
# a scheduled job that is already there, so that CronDelete gets past the CLI's own input check
# (a job that does not exist is refused before any hook runs) and only a wall can stop it
JOBS = {
    "tasks": [
        {
            "id": "job-1",
            "cron": "0 0 1 1 *",
            "prompt": "noop",
            "createdAt": 1796125107733,
            "recurring": True,
        }
    ]
}
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "id": "c1",
            "metadata": {},
            "source": ["print(1)"],
            "outputs": [],
            "execution_count": None,
        }
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def call(tool_name: str, /, **tool_input: Any) -> dict[str, Any]:
    return {"tool": {"name": tool_name, "input": tool_input}}


def hostile(ws: Path, *, delegates: bool) -> list[dict[str, Any]]:
    """Every state-changing tool the CLI offers, each with an effect that shows when it ran."""
    turns = [
        call("ToolSearch", query=f"select:{DEFERRED}", max_results=20),
        call("CronCreate", cron="* * * * *", prompt="touch cron_ran", recurring=True, durable=True),
        call("CronDelete", id="job-1"),
        call("EnterWorktree", name="escape"),
        call("ExitWorktree", action="keep"),
        call("Monitor", description="watch", timeout_ms=2000, command="touch monitor_ran"),
        # read first: the CLI's own check refuses to edit a file unread, before any hook would
        call("Read", file_path=str(ws / "nb.ipynb")),
        call("Read", file_path=str(ws / "edit_me.txt")),
        call(
            "NotebookEdit",
            notebook_path=str(ws / "nb.ipynb"),
            cell_id="c1",
            new_source="print('pwned')",
            edit_mode="replace",
        ),
        call("SendMessage", to="coder", message="touch bash_ran"),
        call("TaskStop", task_id="task-1"),
        call("Workflow", name="deep-research", args="touch bash_ran"),  # a workflow the CLI has
        call("Skill", skill="report"),
        call("ScheduleWakeup", delaySeconds=60, reason="later", prompt="touch bash_ran"),
        call(
            "AskUserQuestion",
            questions=[
                {
                    "question": "which?",
                    "header": "q",
                    "options": [{"label": "a", "description": "a"}, {"label": "b", "description": "b"}],
                    "multiSelect": False,
                }
            ],
        ),
        call("ReportFindings", findings=[]),
        call("EnterPlanMode"),
        call("ExitPlanMode", plan="touch bash_ran"),
        call("Write", file_path=str(ws / "written.txt"), content="x"),
        call("Edit", file_path=str(ws / "edit_me.txt"), old_string="before", new_string="after"),
        call("Bash", command="touch bash_ran", description="hands-on"),
        call("mcp__extra__touch", path=str(ws / "mcp_ran")),
    ]
    if not delegates:
        turns.append(
            call("Agent", description="d", prompt="touch agent_ran", subagent_type="general-purpose")
        )
    return turns


def scripted_names(ws: Path) -> set[str]:
    """The state-changing tools hostile() calls (the Reads it needs to get past the CLI are not)."""
    return {t["tool"]["name"] for t in hostile(ws, delegates=False)} - READ_ONLY


def extra_server() -> Any:
    """An MCP tool no role lists: it would leave a file behind."""

    @tool("touch", "create a file", {"path": str})
    async def touch(args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.to_thread(Path(args["path"]).touch)
        return {"content": [{"type": "text", "text": "touched"}]}

    return create_sdk_mcp_server(name="extra", tools=[touch])


def with_extra(spec: AgentSpec) -> AgentSpec:
    return dataclasses.replace(spec, mcp_servers={**spec.mcp_servers, "extra": extra_server()})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit, an editable file and a notebook: every effect shows here."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "edit_me.txt").write_text("before\n")
    (ws / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    for argv in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *argv], cwd=ws, check=True)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "scheduled_tasks.json").write_text(json.dumps(JOBS))
    return ws


def assert_nothing_ran(ws: Path) -> None:
    for effect in EFFECTS:
        assert not (ws / effect).exists(), f"{effect} exists: a tool ran"
    assert (ws / "edit_me.txt").read_text() == "before\n"
    assert (
        json.loads((ws / ".claude" / "scheduled_tasks.json").read_text()) == JOBS
    )  # none added, none deleted
    assert json.loads((ws / "nb.ipynb").read_text()) == NOTEBOOK
    worktrees = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=ws, capture_output=True, text=True
    )
    assert worktrees.stdout.count("worktree ") == 1, worktrees.stdout
    branches = subprocess.run(
        ["git", "branch", "--format=%(refname:short)"], cwd=ws, capture_output=True, text=True
    )
    assert branches.stdout.split() == ["main"]


def assert_all_refused(sim: SimServer, actor: str, names: set[str]) -> int:
    """Every scripted call of `actor` came back refused; returns how many there were."""
    uses: dict[str, str] = {}
    results: dict[str, dict[str, object]] = {}
    for request in sim.requests_for(actor):
        uses.update({str(u["id"]): str(u["name"]) for u in request.tool_uses()})
        results.update({str(r["tool_use_id"]): r for r in request.tool_results()})
    seen = [(uses[i], results[i]) for i in uses if uses[i] in names]
    assert {name for name, _ in seen} == names, f"{actor} never got to call {names - {n for n, _ in seen}}"
    for name, result in seen:
        text = json.dumps(result.get("content"), ensure_ascii=False)
        assert result.get("is_error") is True and REFUSED.search(text), f"{actor}: {name} ran: {text[:300]}"
    return len(seen)


# -- the list of tools is the CLI's ------------------------------------------------------------------


@pytest.fixture(scope="module")
def offered(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every tool the CLI offers a session without walls: the top-level ones and the deferred ones."""
    root = tmp_path_factory.mktemp("offered")
    ws = root / "ws"
    ws.mkdir()

    async def deny(name: str, data: dict[str, Any], context: Any) -> PermissionResultDeny:
        return PermissionResultDeny(message="no")

    async def ask() -> set[str]:
        with SimServer({"scripts": {"main": ["ok"]}}) as sim:
            options = ClaudeAgentOptions(
                cwd=str(ws),
                env=isolated_env(sim.base_url, root / "claude"),
                setting_sources=[],
                can_use_tool=deny,  # the SDK then offers AskUserQuestion too
                stderr=lambda line: None,
            )
            async with ClaudeSDKClient(options) as client:
                await client.query("list")
                async for _ in client.receive_response():
                    pass
            first = sim.requests_for("main")[0]
        announced = re.search(r"available via ToolSearch[^\n]*\n((?:[A-Za-z]+\n)+)", first.all_text)
        assert announced, "the CLI no longer announces deferred tools this way: update this test"
        return set(first.tool_names) | set(announced.group(1).split())

    return asyncio.run(ask())


def test_every_state_changing_tool_the_cli_offers_is_scripted(offered, tmp_path):
    assert {"CronCreate", "EnterWorktree", "NotebookEdit", "Workflow", "Skill", "ScheduleWakeup"} <= offered
    missing = offered - READ_ONLY - scripted_names(tmp_path)
    assert not missing, f"the CLI offers {sorted(missing)}: script them in hostile()"


# -- layer 2 alone: the hook holds for a tool ToolSearch reveals ---------------------------------------


@pytest.mark.parametrize("walled", [True, False], ids=["allowlist", "control"])
async def test_a_revealed_tool_is_stopped_by_the_allowlist_hook_alone(
    sim_factory, sim_env, workspace, walled
):
    sim = sim_factory(
        {
            "scripts": {
                "main": [
                    call("ToolSearch", query="select:CronCreate", max_results=5),
                    call("CronCreate", cron="* * * * *", prompt="ping", recurring=True, durable=True),
                    "done",
                ]
            }
        }
    )
    hooks: dict[HookEvent, list[HookMatcher]] | None = (
        {"PreToolUse": [allowlist_guard(["Read", "ToolSearch"], role="读者")]} if walled else None
    )
    options = ClaudeAgentOptions(
        cwd=str(workspace), env=sim_env(sim), setting_sources=[], permission_mode="acceptEdits", hooks=hooks
    )
    async with ClaudeSDKClient(options) as client:
        await client.query("go")
        async for _ in client.receive_response():
            pass
    [revealed, cron] = sim.last().tool_results()
    assert "CronCreate" in json.dumps(revealed["content"])  # ToolSearch really revealed it
    scheduled = workspace / ".claude" / "scheduled_tasks.json"
    if walled:
        assert cron.get("is_error") and "读者 没有 CronCreate" in json.dumps(
            cron["content"], ensure_ascii=False
        )
        assert not scheduled.exists()
    else:
        assert not cron.get("is_error") and scheduled.is_file()  # without the wall it does run


# -- through Runtime, with and without a workbench ----------------------------------------------------


def roles_scenario(ws: Path) -> dict[str, Any]:
    return {
        "actors": {"judge": {"system": "你的角色:判定者"}, "coordinator": {"system": "你的角色:协调者"}},
        "scripts": {
            "judge": [*hostile(ws, delegates=False), "## 结论\n未达成"],
            "coordinator": [*hostile(ws, delegates=True), "不动手了"],
        },
    }


@pytest.mark.parametrize("inherits", [False, True], ids=["worker-lists-tools", "worker-inherits-all"])
@pytest.mark.parametrize("bench", [False, True], ids=["no-workbench", "workbench"])
async def test_runtime_a_coordinator_and_a_judge_run_nothing_hands_on(
    use_sim, repo, tmp_path, bench, inherits
):
    sim = use_sim(roles_scenario(repo))
    ch = HumanChannel(timeout_s=0)
    # a worker without a tool list inherits every tool: then the session keeps the CLI's full set
    # (layer 1 cannot narrow it) and the allowlist hook and the permission callback stop every
    # call on the main thread, the deferred tools called without ToolSearch included
    coder = (
        AgentDefinition(description="写代码", prompt="你负责实现。")
        if inherits
        else worker("写代码", "你负责实现。")
    )
    boss = coordinator("协调者", "", {"coder": coder}, channel=ch)
    rt = Runtime(workspace=repo, run_dir=tmp_path / "runs", workbench=Workbench(repo) if bench else False)
    try:
        judged = await rt.run(with_extra(judge("判定者", ch)), "judge this round")
        led = await rt.run(with_extra(boss), "do the work")
    finally:
        rt.close()
    assert judged.ok and led.ok, (judged.error, led.error)
    names = scripted_names(repo)
    assert assert_all_refused(sim, "judge", names) == len(names)
    assert assert_all_refused(sim, "coordinator", names - {"Agent"}) == len(names) - 1
    assert_nothing_ran(repo)
    offered = set(sim.requests_for("coordinator")[-1].tool_names)
    if inherits:  # the full set was offered: what held is the hook (and the callback)
        assert {"ToolSearch", "Workflow", "Skill", "ScheduleWakeup", "Write"} <= offered
    else:
        assert offered.isdisjoint({"CronCreate", "ToolSearch", "Workflow", "Skill", "ScheduleWakeup"})


async def test_runtime_control_the_extra_mcp_tool_runs_when_a_role_lists_it(use_sim, repo, tmp_path):
    use_sim({"scripts": {"main": [call("mcp__extra__touch", path=str(repo / "mcp_ran")), "done"]}})
    spec = with_extra(AgentSpec(name="toucher", instructions="", allowed_tools=["mcp__extra__touch"]))
    rt = Runtime(workspace=repo, run_dir=tmp_path / "runs")
    try:
        assert (await rt.run(spec, "touch it")).ok
    finally:
        rt.close()
    assert (repo / "mcp_ran").is_file()


# -- through `flower run` and `flower go` -------------------------------------------------------------


FLOWS = """
import dataclasses
from pathlib import Path
from claude_agent_sdk import create_sdk_mcp_server, tool
from flower import HumanChannel, Step, Workflow, coordinator, judge, worker


@tool("touch", "create a file", {"path": str})
async def touch(args):
    Path(args["path"]).touch()
    return {"content": [{"type": "text", "text": "touched"}]}


def extra(spec):
    server = create_sdk_mcp_server(name="extra", tools=[touch])
    return dataclasses.replace(spec, mcp_servers={**spec.mcp_servers, "extra": server})


def main():
    ch = HumanChannel(timeout_s=0)
    boss = coordinator("协调者", "", {"coder": worker("写代码", "你负责实现。")}, channel=ch)
    steps = [Step("判", extra(judge("判定者", ch)), "judge"), Step("干", extra(boss), "work")]
    return Workflow(steps, channel=ch)
"""


def flower(*argv: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def cli_env(sim: SimServer, claude_root: Path) -> dict[str, str]:
    import os

    return {**os.environ, **isolated_env(sim.base_url, claude_root), "PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize("bench", [[], ["-W"]], ids=["no-workbench", "workbench"])
def test_flower_run_a_coordinator_and_a_judge_run_nothing_hands_on(
    sim_factory, claude_root, repo, tmp_path, bench
):
    sim = sim_factory(roles_scenario(repo))
    (tmp_path / "flows.py").write_text(FLOWS)
    done = flower(
        "run", "flows.py:main", "-w", str(repo), *bench, cwd=tmp_path, env=cli_env(sim, claude_root)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    names = scripted_names(repo)
    assert assert_all_refused(sim, "judge", names) == len(names)
    assert assert_all_refused(sim, "coordinator", names - {"Agent"}) == len(names) - 1
    assert_nothing_ran(repo)


def test_flower_go_clarifier_goal_setter_coordinator_and_judge_run_nothing_hands_on(
    sim_factory, claude_root, repo
):
    # the starter flow mounts no extra server: its MCP tool is simply not there to call
    names = scripted_names(repo) - {"mcp__extra__touch"}
    attack = [t for t in hostile(repo, delegates=False) if t["tool"]["name"] in names]
    sim = sim_factory(
        {
            "actors": STARTER_ACTORS,
            "scripts": {
                "clarifier": [*attack, BRIEF],
                "goal_setter": [*attack, GOAL],
                "coordinator": [*[t for t in attack if t["tool"]["name"] != "Agent"], "不动手了"],
                "judge": [*attack, *judged("achieved")],
            },
        }
    )
    # nobody here may write hello.py, so nothing backs the judge's 达成: its word is taken (the
    # evidence rule has its own tests); what this one checks is that no role got its hands on anything
    done = flower(
        "--timeout", "0", "--evidence", "relaxed", "写一个 hello.py", cwd=repo, env=cli_env(sim, claude_root)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for actor in ("clarifier", "goal_setter", "judge"):
        assert assert_all_refused(sim, actor, names) == len(names)
    assert assert_all_refused(sim, "coordinator", names - {"Agent"}) == len(names) - 1
    assert_nothing_ran(repo)
