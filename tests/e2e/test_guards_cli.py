"""The hook layer against the real Claude Code CLI (bundled in the SDK), model scripted by flower.sim.

What is proven here is what the model is shown next (``sim.last(actor).tool_results()``) and
what happened on disk; the hook callbacks' own logic is covered in tests/unit/test_guard.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, HookMatcher, ResultMessage, query
from claude_agent_sdk._errors import ClaudeSDKError

from flower.core.guard import HANDS_ON, delegate_guard, spill_guard, whitelist_guard, workbench_hooks
from flower.core.workbench import Workbench

pytestmark = pytest.mark.e2e

CODER = "You are the guard test coder"


async def run(prompt: str, options: ClaudeAgentOptions) -> dict[str, Any]:
    seen: dict[str, Any] = {"error": None, "result": None}
    try:
        async for message in query(prompt=prompt, options=options):
            if isinstance(message, ResultMessage):
                seen["result"] = message
    except ClaudeSDKError as exc:
        seen["error"] = exc
    return seen


def options(workspace: Path, env: dict[str, str], **kw: Any) -> ClaudeAgentOptions:
    kw.setdefault("setting_sources", [])
    kw.setdefault("permission_mode", "acceptEdits")
    kw.setdefault("stderr", lambda line: None)
    return ClaudeAgentOptions(cwd=str(workspace), env=env, **kw)


def shown(sim: Any, actor: str = "main") -> list[str]:
    """Every tool result the actor was shown on its last request, as text, oldest first."""
    return [str(r["content"]) for r in sim.last(actor).tool_results()]


def coder() -> AgentDefinition:
    return AgentDefinition(
        description="does the hands-on work", prompt=CODER + ".", tools=["Bash", "Read", "Write"]
    )


def delegate(prompt: str) -> dict[str, Any]:
    return {
        "tool": {
            "name": "Agent",
            "input": {
                "subagent_type": "coder",
                "description": "hands-on",
                "prompt": prompt,
                "run_in_background": False,
            },
        }
    }


# -- delegate_guard ----------------------------------------------------------------------------------


async def test_delegate_guard_stops_the_main_thread_but_not_its_subagent(sim_factory, sim_env, workspace):
    sim = sim_factory(
        {
            "actors": {"coder": {"system": CODER}},
            "scripts": {
                "main": [
                    {"tool": {"name": "Bash", "input": {"command": "echo main > main.txt"}}},
                    {
                        "tool": {
                            "name": "Write",
                            "input": {"file_path": str(workspace / "main2.txt"), "content": "main"},
                        }
                    },
                    delegate("write sub.txt and sub2.txt"),
                    {"text": "the coder did it"},
                ],
                "coder": [
                    {"tool": {"name": "Bash", "input": {"command": "echo sub > sub.txt"}}},
                    {
                        "tool": {
                            "name": "Write",
                            "input": {"file_path": str(workspace / "sub2.txt"), "content": "sub2"},
                        }
                    },
                    {"text": "wrote sub.txt and sub2.txt"},
                ],
            },
        }
    )
    # Bash and Write are pre-approved: only the hook stands between the main thread and them
    seen = await run(
        "go",
        options(
            workspace,
            sim_env(sim),
            allowed_tools=["Agent", "Bash", "Write"],
            agents={"coder": coder()},
            hooks={"PreToolUse": [delegate_guard()]},
        ),
    )

    assert seen["error"] is None
    assert not (workspace / "main.txt").exists() and not (workspace / "main2.txt").exists()
    assert (workspace / "sub.txt").read_text() == "sub\n"
    assert (workspace / "sub2.txt").read_text() == "sub2"
    bash_denied, write_denied, report = shown(sim)
    for denied in (bash_denied, write_denied):
        assert "Agent 工具" in denied and "验收标准" in denied and ".flower/artifacts/" in denied
    assert "wrote sub.txt and sub2.txt" in report
    assert not any("Agent 工具" in r for r in shown(sim, "coder"))


async def test_glance_runs_git_status_on_the_main_thread_but_denies_rm(sim_factory, sim_env, workspace):
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(workspace)], check=True)
    (workspace / "x").write_text("keep me")
    sim = sim_factory(
        {
            "scripts": {
                "main": [
                    {"tool": {"name": "Bash", "input": {"command": "git status"}}},
                    {"tool": {"name": "Bash", "input": {"command": "rm x"}}},
                    {"text": "looked"},
                ]
            }
        }
    )
    seen = await run(
        "look",
        options(
            workspace,
            sim_env(sim),
            allowed_tools=["Bash"],
            hooks={"PreToolUse": [delegate_guard(allow_glance=True)]},
        ),
    )

    assert seen["error"] is None
    status, rm = shown(sim)
    assert "No commits yet" in status and "Untracked files" in status
    assert "Agent 工具" in rm and "git status" in rm
    assert (workspace / "x").read_text() == "keep me"


# -- whitelist_guard ---------------------------------------------------------------------------------


def writer_scenario(workspace: Path) -> dict[str, Any]:
    return {
        "scripts": {
            "main": [
                {
                    "tool": {
                        "name": "Write",
                        "input": {"file_path": str(workspace / "verdict.md"), "content": "pass"},
                    }
                },
                {"tool": {"name": "Bash", "input": {"command": "echo pass > verdict.txt"}}},
                {"text": "结论:达成"},
            ]
        }
    }


async def test_allowed_tools_alone_do_not_stop_write_or_bash(sim_factory, sim_env, workspace):
    # The reason whitelist_guard exists: allowed_tools is a no-approval list, not a whitelist.
    sim = sim_factory(writer_scenario(workspace))
    await run("judge", options(workspace, sim_env(sim), allowed_tools=["Read"]))
    assert (workspace / "verdict.md").read_text() == "pass"
    assert (workspace / "verdict.txt").read_text() == "pass\n"


async def test_whitelist_guard_really_stops_write_and_bash(sim_factory, sim_env, workspace):
    sim = sim_factory(writer_scenario(workspace))
    hook = whitelist_guard(["Read"], role="判定者")
    seen = await run(
        "judge", options(workspace, sim_env(sim), allowed_tools=["Read"], hooks={"PreToolUse": [hook]})
    )

    assert seen["error"] is None
    assert not (workspace / "verdict.md").exists() and not (workspace / "verdict.txt").exists()
    write_denied, bash_denied = shown(sim)
    assert "判定者 没有 Write。这是有意的,不是配置遗漏" in write_denied
    assert "判定者 没有 Bash。" in bash_denied and "不要换个写法绕过" in bash_denied


# -- spill_guard -------------------------------------------------------------------------------------


async def test_big_bash_output_is_spilled_and_the_spill_file_reads_back_whole(
    sim_factory, sim_env, workspace
):
    wb = Workbench(workspace)
    full = "\n".join(str(i) for i in range(1, 5001))  # what the CLI reports for `seq 1 5000`
    spill = wb.root / "spill" / (hashlib.sha256(full.encode()).hexdigest()[:16] + ".txt")
    sim = sim_factory(
        {
            "scripts": {
                "main": [
                    {"tool": {"name": "Bash", "input": {"command": "seq 1 5000"}}},
                    {"tool": {"name": "Read", "input": {"file_path": str(spill)}}},
                    {"text": "read it"},
                ]
            }
        }
    )
    seen = await run(
        "count",
        options(
            workspace, sim_env(sim), allowed_tools=["Bash", "Read"], hooks={"PostToolUse": [spill_guard(wb)]}
        ),
    )

    assert seen["error"] is None
    assert spill.read_text(encoding="utf-8") == full
    pointer, read_back = shown(sim)
    assert str(spill) in pointer and "Read" in pointer
    # the CLI strips trailing whitespace off Bash output, the head's last newline included
    assert pointer.endswith(full[:400].rstrip()) and "4999" not in pointer
    assert len(pointer) < 1000
    # the Read of the spill file is shown as is (the Read tool itself stops at 2000 lines)
    assert "输出过长" not in read_back
    assert "1999\t1999" in read_back and len(read_back) > 4000


# -- index_guard (through workbench_hooks) -----------------------------------------------------------


async def test_index_lists_a_file_a_subagent_wrote_into_the_workbench(sim_factory, sim_env, workspace):
    wb = Workbench(workspace).ensure()
    wb.refresh()
    # not "report.md"/"findings.md": CLI 2.1.327 refuses subagent writes of such "report files"
    report = wb.artifacts / "weekly.md"
    sim = sim_factory(
        {
            "actors": {"coder": {"system": CODER}},
            "scripts": {
                "main": [delegate(f"write the report to {report}"), {"text": "done"}],
                "coder": [
                    {
                        "tool": {
                            "name": "Write",
                            "input": {"file_path": str(report), "content": "# desc: weekly numbers\n42\n"},
                        }
                    },
                    {"text": f"结论:写好了 {report}"},
                ],
            },
        }
    )
    seen = await run(
        "report",
        options(
            workspace,
            sim_env(sim),
            allowed_tools=["Agent", "Write"],
            agents={"coder": coder()},
            hooks=workbench_hooks(wb),
        ),
    )

    assert seen["error"] is None
    assert report.read_text() == "# desc: weekly numbers\n42\n"
    index = wb.index_path.read_text(encoding="utf-8")
    assert "`.flower/artifacts/weekly.md` —— weekly numbers" in index
    assert "artifacts/ —— 长产出(超过 2000 字符)(1 个)" in index


async def test_a_crashing_deny_guard_blocks_instead_of_letting_the_tool_run(
    sim_factory, sim_env, workspace, monkeypatch
):
    def broken(command: str) -> bool:
        raise RuntimeError("classifier crashed")

    monkeypatch.setattr("flower.core.guard.is_ephemeral", broken)
    sim = sim_factory(
        {
            "scripts": {
                "main": [{"tool": {"name": "Bash", "input": {"command": "echo hi > f.txt"}}}, {"text": "ok"}]
            }
        }
    )
    seen = await run(
        "go",
        options(
            workspace,
            sim_env(sim),
            allowed_tools=["Bash"],
            hooks={"PreToolUse": [delegate_guard(allow_glance=True)]},
        ),
    )

    assert seen["error"] is None
    assert not (workspace / "f.txt").exists()
    assert 'blocking because onFailure is "block"' in shown(sim)[0]

    # control: the same crashing callback without on_failure="block" lets the tool run
    control = workspace / "control"
    control.mkdir()
    sim = sim_factory(
        {
            "scripts": {
                "main": [{"tool": {"name": "Bash", "input": {"command": "echo hi > f.txt"}}}, {"text": "ok"}]
            }
        }
    )
    lenient = HookMatcher(matcher=HANDS_ON, hooks=delegate_guard(allow_glance=True).hooks)
    await run("go", options(control, sim_env(sim), allowed_tools=["Bash"], hooks={"PreToolUse": [lenient]}))
    assert (control / "f.txt").read_text() == "hi\n"
