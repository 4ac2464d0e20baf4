"""Which roles' own commands run confined, what each mode does where confinement is impossible, and
the hooks that substitute the confined command and redact what it printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from flower import AgentSpec, HumanChannel, coordinator, judge, worker
from flower.core import command_walls
from flower.core.command_walls import confined_role, decide_walls
from flower.core.guard import confine_guard, redact_guard
from flower.core.sandbox import SandboxPolicy, SandboxUnavailable
from flower.shell import plan
from flower.shell.confinement import Support


def test_the_coordinators_glances_and_the_judges_checks_are_the_confined_roles() -> None:
    boss = coordinator("c", "", {"w": worker("w", "p")})
    assert boss.confine == "glance" and confined_role(boss) == "glance"
    assert confined_role(coordinator("c", "", {}, glance=False)) is None
    assert confined_role(judge("j", HumanChannel(timeout_s=0), can_run=True)) == "judge"
    assert confined_role(judge("j", HumanChannel(timeout_s=0))) is None
    assert confined_role(AgentSpec(name="once", instructions="", allowed_tools=["Bash"])) is None
    # a coordinator assembled by hand is one too
    by_hand = AgentSpec(name="c", instructions="", allowed_tools=["Bash"], glance=True, delegate_only=True)
    assert confined_role(by_hand) == "glance"


@pytest.fixture
def nothing_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command_walls, "support", lambda: Support("no bwrap", "no Landlock", "no overlay"))


def test_where_it_works_every_mode_but_off_confines() -> None:
    for mode in ("auto", "require"):
        for role in ("glance", "judge"):
            walls = decide_walls(SandboxPolicy(mode=mode), role, nested=role == "glance")
            assert walls.active and walls.note is None


def test_off_falls_back_with_one_line_naming_it() -> None:
    walls = decide_walls(SandboxPolicy(mode="off"), "glance", nested=False)
    assert not walls.active
    assert walls.note == "flower:--sandbox off:协调者的查看命令不做系统隔离,只靠命令规则把关,隔离更弱"


def test_auto_without_a_mechanism_falls_back_with_one_line_saying_why(nothing_works: None) -> None:
    glance = decide_walls(SandboxPolicy(mode="auto"), "glance", nested=True)
    judged = decide_walls(SandboxPolicy(mode="auto"), "judge", nested=False)
    assert (
        not glance.active
        and glance.note == "flower:协调者的查看命令隔离不了(no Landlock),只靠命令规则把关,隔离更弱"
    )
    assert (
        not judged.active
        and judged.note == "flower:判定者的命令隔离不了(no overlay),按 CLI 的方式运行,可能改动工作区"
    )


def test_require_without_a_mechanism_refuses_to_start(nothing_works: None) -> None:
    with pytest.raises(SandboxUnavailable, match="需要隔离,但协调者的查看命令在这里隔离不了"):
        decide_walls(SandboxPolicy(mode="require"), "glance", nested=True)


def test_nested_glances_need_landlock_and_others_either(monkeypatch: pytest.MonkeyPatch) -> None:
    found = Support(bwrap=None, landlock="no Landlock", overlay=None)
    assert found.glance(nested=True) == "no Landlock" and found.glance(nested=False) is None
    assert Support(bwrap="no bwrap", landlock=None, overlay="x").glance(nested=False) is None


def hook_data(tool: str, **fields: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "tool_name": tool,
        "tool_use_id": "t",
        **fields,
    }


async def test_the_judges_guard_runs_every_command_confined_on_its_view(tmp_path: Path) -> None:
    hook = confine_guard(tmp_path).hooks[0]
    data = hook_data("Bash", cwd=str(tmp_path), tool_input={"command": "rm -rf .", "description": "d"})
    out = cast(dict[str, Any], await hook(cast(Any, data), "t", cast(Any, None)))["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow"
    assert out["updatedInput"] == {
        "command": plan("rm -rf .", workspace=tmp_path, role="judge").command,
        "description": "d",
    }
    # a subagent's command is not the judge's
    assert await hook(cast(Any, {**data, "agent_id": "a1"}), "t", cast(Any, None)) == {}


async def test_the_redaction_guard_masks_main_thread_output_and_keeps_its_structure(monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "known-token-value-123")
    hook = redact_guard(leave_longer_than=100).hooks[0]
    response = {
        "stdout": "t=known-token-value-123\n",
        "stderr": "sk-ant-api03-abcdefghijklmnop",
        "interrupted": False,
    }
    data = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": response}
    out = cast(dict[str, Any], await hook(cast(Any, data), "t", cast(Any, None)))["hookSpecificOutput"]
    assert out["updatedToolOutput"] == {
        "stdout": "t=[redacted]\n",
        "stderr": "[redacted]",
        "interrupted": False,
    }
    # nothing to mask: no rewrite (an identity rewrite would compete with a real one)
    clean = {**data, "tool_response": {"stdout": "ok\n", "stderr": ""}}
    assert await hook(cast(Any, clean), "t", cast(Any, None)) == {}
    # a field the spill guard rewrites is left to it (it redacts what it returns)
    long = {**data, "tool_response": {"stdout": "known-token-value-123 " + "x" * 200, "stderr": ""}}
    assert await hook(cast(Any, long), "t", cast(Any, None)) == {}
    # a subagent's output is not the main thread's
    assert await hook(cast(Any, {**data, "agent_id": "a1"}), "t", cast(Any, None)) == {}


async def test_the_spill_guard_redacts_the_whole_result_it_rewrites(tmp_path: Path) -> None:
    from flower import Workbench
    from flower.core.guard import spill_guard

    hook = spill_guard(Workbench(tmp_path), threshold=50).hooks[0]
    response = {"stdout": "line\n" * 40, "stderr": "GITHUB_TOKEN=abcd1234efgh"}
    data = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_response": response,
        "cwd": str(tmp_path),
    }
    out = cast(dict[str, Any], await hook(cast(Any, data), "t", cast(Any, None)))["hookSpecificOutput"]
    assert "全文已落盘" in out["updatedToolOutput"]["stdout"]
    assert out["updatedToolOutput"]["stderr"] == "GITHUB_TOKEN=[redacted]"
