"""The hook layer, by calling the hook callbacks with the input shapes the real CLI sends.

The tool_response shapes below were captured from the bundled CLI 2.1.327; the e2e suite
(tests/e2e/test_guards_cli.py) proves the same guards against the CLI itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk import AgentDefinition, HookMatcher
from claude_agent_sdk.types import HookInput

from flower.core import guard
from flower.core.guard import (
    BULKY,
    HANDS_ON,
    WRITE_ONLY,
    delegate_guard,
    index_guard,
    isolate_guard,
    isolated,
    merge_hooks,
    spill_guard,
    wants_isolation,
    whitelist_guard,
    workbench_hooks,
)
from flower.core.workbench import Workbench


async def call(m: HookMatcher | None, data: dict[str, Any]) -> dict[str, Any]:
    assert m is not None and len(m.hooks) == 1
    # a hand-built hook input, shaped as the CLI sends it; the answer read as the JSON it becomes
    out = await m.hooks[0](cast("HookInput", data), "toolu_1", {"signal": None})
    return cast("dict[str, Any]", out)


def banned(allowed: list[str] | None) -> str | None:
    """The tools whitelist_guard denies, as its matcher says."""
    m = whitelist_guard(allowed)
    assert m is not None
    return m.matcher


def pre(tool: str, agent_id: str | None = None, **tool_input: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": "/nowhere",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
    }
    if agent_id:
        data.update(agent_id=agent_id, agent_type="coder")
    return data


def post(
    tool: str, response: Any, cwd: Path, agent_id: str | None = None, **tool_input: Any
) -> dict[str, Any]:
    data = pre(tool, agent_id, **tool_input)
    data.update(hook_event_name="PostToolUse", cwd=str(cwd), tool_response=response)
    return data


def denial(out: dict[str, Any]) -> str:
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse"
    assert spec["permissionDecision"] == "deny"
    return spec["permissionDecisionReason"]


@pytest.fixture
def wb(tmp_path: Path) -> Workbench:
    ws = tmp_path / "ws"
    ws.mkdir()
    return Workbench(ws).ensure()


def bash_response(stdout: str, stderr: str = "") -> dict[str, Any]:
    return {
        "stdout": stdout,
        "stderr": stderr,
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }


def read_response(path: Path, content: str) -> dict[str, Any]:
    return {
        "type": "text",
        "file": {
            "filePath": str(path),
            "content": content,
            "numLines": content.count("\n") + 1,
            "startLine": 1,
            "totalLines": 9,
        },
    }


def spill_name(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16] + ".txt"


# -- constants and the main-thread test --------------------------------------------------------


def test_tool_group_constants() -> None:
    assert HANDS_ON == "Bash|Write|Edit|NotebookEdit"
    assert WRITE_ONLY == "Write|Edit|NotebookEdit"
    assert BULKY == "Bash|Read|Grep|Glob|WebFetch|WebSearch"


@pytest.mark.parametrize(
    ("data", "main"),
    [({}, True), ({"agent_id": None}, True), ({"agent_id": ""}, True), ({"agent_id": "a1"}, False)],
)
def test_main_thread_is_the_absence_of_agent_id(data: dict[str, Any], main: bool) -> None:
    assert guard._is_main_thread(data) is main


# -- whitelist_guard -----------------------------------------------------------------------------


def test_whitelist_bans_the_hands_on_tools_not_allowed() -> None:
    m = whitelist_guard(["Read", "Glob", "Grep"])
    assert isinstance(m, HookMatcher)
    assert m.matcher == "Bash|Write|Edit|NotebookEdit"
    assert banned(["Read", "Bash"]) == "Write|Edit|NotebookEdit"
    assert banned(None) == HANDS_ON


def test_whitelist_returns_none_when_nothing_to_ban() -> None:
    assert whitelist_guard(["Read", "Write", "Edit", "Bash", "NotebookEdit", "Glob"]) is None


def test_whitelist_counts_a_scoped_permission_rule_as_having_the_tool() -> None:
    assert banned(["Read", "Bash(git status:*)"]) == "Write|Edit|NotebookEdit"


async def test_whitelist_denies_the_main_thread_with_role_and_reason() -> None:
    m = whitelist_guard(["Read"], role="判定者")
    reason = denial(await call(m, pre("Write", file_path="/x/a.txt", content="hi")))
    assert reason.startswith("判定者 没有 Write。")
    assert "这是有意的,不是配置遗漏" in reason
    assert "结论写在回复正文里" in reason
    assert "不要换个写法绕过" in reason
    assert "这个角色 没有 Bash" in denial(await call(whitelist_guard(["Read"]), pre("Bash", command="ls")))


async def test_whitelist_lets_subagents_through() -> None:
    m = whitelist_guard(["Read"])
    assert await call(m, pre("Bash", agent_id="a1", command="rm -rf x")) == {}


async def test_whitelist_passes_allowed_tools_even_if_the_matcher_fires() -> None:
    # a looser matcher on the CLI side (e.g. regex) must not deny a tool the role has
    m = whitelist_guard(["Read", "Bash"])
    assert await call(m, pre("Bash", command="ls")) == {}


def test_deny_guards_fail_closed() -> None:
    # if the callback crashes, the CLI must block rather than let the tool run
    wall = whitelist_guard(["Read"])
    assert wall is not None and wall.on_failure == "block"
    assert delegate_guard().on_failure == "block"


# -- delegate_guard --------------------------------------------------------------------------------


def test_delegate_matcher_is_the_tools_string() -> None:
    assert delegate_guard().matcher == HANDS_ON
    assert delegate_guard(tools=WRITE_ONLY).matcher == WRITE_ONLY


@pytest.mark.parametrize("tool", ["Bash", "Write", "Edit", "NotebookEdit"])
async def test_delegate_denies_main_thread_and_points_the_way(tool: str) -> None:
    reason = denial(await call(delegate_guard(), pre(tool, command="pytest", file_path="/x")))
    assert tool in reason
    assert "Agent 工具" in reason and "subagent" in reason
    assert "目标" in reason and "验收标准" in reason
    assert ".flower/artifacts/" in reason
    assert "路径和结论" in reason


@pytest.mark.parametrize("tool", ["Bash", "Write", "Edit", "NotebookEdit"])
async def test_delegate_lets_every_subagent_call_through(tool: str) -> None:
    m = delegate_guard()
    assert await call(m, pre(tool, agent_id="agent-7", command="rm -rf build", file_path="/x")) == {}


async def test_delegate_without_glance_denies_even_a_glance() -> None:
    assert denial(await call(delegate_guard(), pre("Bash", command="git status")))


@pytest.mark.parametrize(
    "command", ["git status", "ls -la", "git status -s && git log --oneline -10", "cat README.md"]
)
async def test_glance_lets_ephemeral_bash_run_on_the_main_thread(command: str) -> None:
    assert await call(delegate_guard(allow_glance=True), pre("Bash", command=command)) == {}


@pytest.mark.parametrize(
    "command", ["rm x", "pytest -q", "git status && rm -rf x", "git commit -m x", "ls > out.txt"]
)
async def test_glance_still_denies_commands_that_change_state(command: str) -> None:
    reason = denial(await call(delegate_guard(allow_glance=True), pre("Bash", command=command)))
    assert "Agent 工具" in reason


async def test_glance_does_not_open_write_or_edit() -> None:
    m = delegate_guard(allow_glance=True)
    assert denial(await call(m, pre("Write", file_path="/x/a", content="")))
    assert denial(await call(m, pre("Bash")))  # no command at all


# -- spill_guard -----------------------------------------------------------------------------------


def test_spill_matcher_defaults() -> None:
    wb = Workbench(Path("/tmp/never-created"))
    assert spill_guard(wb).matcher == BULKY
    assert spill_guard(wb, tools="Bash").matcher == "Bash"


async def test_big_bash_stdout_is_spilled_and_replaced_by_a_pointer(wb: Workbench) -> None:
    full = "\n".join(str(i) for i in range(1, 5001))
    response = bash_response(full, stderr="warning: x")
    before = json.dumps(response)

    out = await call(spill_guard(wb), post("Bash", response, wb.workspace, command="seq 1 5000"))

    spill = wb.root / "spill" / spill_name(full)
    assert spill.read_text(encoding="utf-8") == full
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PostToolUse"
    new = spec["updatedToolOutput"]
    # structure kept exactly: same keys, untouched fields identical
    assert list(new) == list(response)
    assert {k: v for k, v in new.items() if k != "stdout"} == {
        k: v for k, v in response.items() if k != "stdout"
    }
    pointer, _, head = new["stdout"].partition("\n")
    assert str(spill) in pointer and "Read" in pointer and str(len(full)) in pointer
    assert head == full[:400]
    assert json.dumps(response) == before, "the hook input must not be mutated"


async def test_spill_threshold_is_exclusive(wb: Workbench) -> None:
    m = spill_guard(wb, threshold=100)
    assert await call(m, post("Bash", bash_response("x" * 100), wb.workspace, command="c")) == {}
    out = await call(m, post("Bash", bash_response("x" * 101), wb.workspace, command="c"))
    assert out["hookSpecificOutput"]["updatedToolOutput"]["stdout"].startswith("[")


async def test_small_results_pass_untouched(wb: Workbench) -> None:
    assert (
        await call(spill_guard(wb), post("Bash", bash_response("hi"), wb.workspace, command="echo hi")) == {}
    )
    assert not (wb.root / "spill").exists()


async def test_nested_read_content_is_spilled_in_place(wb: Workbench, tmp_path: Path) -> None:
    src = wb.workspace / "big.txt"
    content = "line\n" * 2000
    response = read_response(src, content)

    out = await call(spill_guard(wb), post("Read", response, wb.workspace, file_path=str(src)))

    new = out["hookSpecificOutput"]["updatedToolOutput"]
    assert new["type"] == "text"
    assert list(new["file"]) == list(response["file"])
    assert new["file"]["filePath"] == str(src) and new["file"]["numLines"] == response["file"]["numLines"]
    assert new["file"]["content"].endswith(content[:400])
    assert (wb.root / "spill" / spill_name(content)).read_text() == content


async def test_every_long_field_gets_its_own_spill_file(wb: Workbench) -> None:
    out_text, err_text = "o" * 5000, "e" * 6000
    out = await call(
        spill_guard(wb), post("Bash", bash_response(out_text, err_text), wb.workspace, command="c")
    )
    new = out["hookSpecificOutput"]["updatedToolOutput"]
    assert str(wb.root / "spill" / spill_name(out_text)) in new["stdout"]
    assert str(wb.root / "spill" / spill_name(err_text)) in new["stderr"]
    assert sorted(p.name for p in (wb.root / "spill").iterdir()) == sorted(
        [spill_name(out_text), spill_name(err_text)]
    )


async def test_lists_are_never_touched(wb: Workbench) -> None:
    big = "f" * 9000
    response = {"mode": "files_with_matches", "filenames": [big, {"text": big}], "numFiles": 2}
    assert await call(spill_guard(wb), post("Grep", response, wb.workspace, pattern="x")) == {}


async def test_grep_content_is_spilled_but_its_filename_list_kept(wb: Workbench) -> None:
    content = "a.txt:1:hit\n" * 1000
    response = {
        "mode": "content",
        "numFiles": 0,
        "filenames": ["a.txt"],
        "content": content,
        "numLines": 1000,
    }
    new = (await call(spill_guard(wb), post("Grep", response, wb.workspace, pattern="hit")))[
        "hookSpecificOutput"
    ]["updatedToolOutput"]
    assert new["filenames"] == ["a.txt"] and new["numLines"] == 1000
    assert new["content"] != content


async def test_images_and_cli_persisted_output_are_left_alone(wb: Workbench) -> None:
    image = {"type": "image", "file": {"base64": "A" * 20000, "type": "image/png", "originalSize": 15000}}
    assert (
        await call(spill_guard(wb), post("Read", image, wb.workspace, file_path=str(wb.workspace / "p.png")))
        == {}
    )
    bash_image = dict(bash_response("data:image/png;base64," + "A" * 20000), isImage=True)
    assert await call(spill_guard(wb), post("Bash", bash_image, wb.workspace, command="cat p.png")) == {}
    # over ~30k chars the CLI persists the full output itself and shows only a preview
    persisted = dict(
        bash_response("1\n" * 15000),
        persistedOutputPath="/cli/tool-results/x.txt",
        persistedOutputSize=348894,
    )
    assert await call(spill_guard(wb), post("Bash", persisted, wb.workspace, command="seq 1 60000")) == {}
    assert not (wb.root / "spill").exists()


async def test_non_dict_responses_pass(wb: Workbench) -> None:
    assert await call(spill_guard(wb), post("WebFetch", "x" * 9000, wb.workspace, url="http://x")) == {}
    assert await call(spill_guard(wb), post("Bash", None, wb.workspace, command="c")) == {}


async def test_reading_a_spill_file_back_is_not_spilled_again(wb: Workbench) -> None:
    full = "y" * 9000
    m = spill_guard(wb)
    first = await call(m, post("Bash", bash_response(full), wb.workspace, command="c"))
    spill = wb.root / "spill" / spill_name(full)
    assert str(spill) in first["hookSpecificOutput"]["updatedToolOutput"]["stdout"]

    assert await call(m, post("Read", read_response(spill, full), wb.workspace, file_path=str(spill))) == {}
    rel = spill.relative_to(wb.workspace)
    assert await call(m, post("Read", read_response(spill, full), wb.workspace, file_path=str(rel))) == {}
    grep = {"mode": "content", "filenames": [], "content": full, "numLines": 1}
    assert await call(m, post("Grep", grep, wb.workspace, pattern="y", path=str(spill.parent))) == {}
    assert await call(m, post("Bash", bash_response(full), wb.workspace, command=f"cat {rel}")) == {}
    assert (
        await call(m, post("Bash", bash_response(full), wb.workspace, command=f"sed -n 1,99p {spill}")) == {}
    )
    # a file next to the spill dir is still spilled
    other = wb.root / "spilled.txt"
    assert await call(m, post("Read", read_response(other, full), wb.workspace, file_path=str(other)))
    assert await call(m, post("Bash", bash_response(full), wb.workspace, command=f"cat {other}"))


async def test_spill_follows_an_external_workbench(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    wb = Workbench(ws, home=tmp_path / "bench")
    full = "z" * 5000
    await call(spill_guard(wb), post("Bash", bash_response(full), ws, command="c"))
    assert (tmp_path / "bench" / "spill" / spill_name(full)).read_text() == full
    assert not (ws / ".flower").exists()


async def test_main_only_skips_subagents(wb: Workbench) -> None:
    big = bash_response("q" * 5000)
    assert (
        await call(
            spill_guard(wb, main_only=True), post("Bash", big, wb.workspace, agent_id="a1", command="c")
        )
        == {}
    )
    assert await call(spill_guard(wb, main_only=True), post("Bash", big, wb.workspace, command="c"))
    assert await call(spill_guard(wb), post("Bash", big, wb.workspace, agent_id="a1", command="c"))


async def test_unwritable_spill_dir_keeps_the_original(wb: Workbench) -> None:
    (wb.root / "spill").write_text("a file where the directory should be")
    assert (
        await call(spill_guard(wb), post("Bash", bash_response("w" * 5000), wb.workspace, command="c")) == {}
    )


# -- index_guard -----------------------------------------------------------------------------------


def test_index_guard_matcher() -> None:
    assert index_guard(Workbench(Path("/tmp/never-created"))).matcher == "Write|Edit"


async def test_index_refreshes_after_a_write_into_the_workbench(wb: Workbench) -> None:
    target = wb.artifacts / "report.md"
    target.write_text("# desc: the weekly report\n")
    out = await call(
        index_guard(wb), post("Write", {"type": "create"}, wb.workspace, file_path=str(target), content="x")
    )
    assert out == {}
    index = wb.index_path.read_text(encoding="utf-8")
    assert "report.md" in index and "the weekly report" in index


async def test_index_resolves_relative_paths_against_cwd(wb: Workbench) -> None:
    (wb.notes / "decision.md").write_text("# use sqlite\n")
    await call(index_guard(wb), post("Edit", {}, wb.workspace, file_path=".flower/notes/decision.md"))
    assert "decision.md" in wb.index_path.read_text(encoding="utf-8")


async def test_index_ignores_writes_outside_the_workbench(wb: Workbench) -> None:
    (wb.workspace / "main.py").write_text("print()\n")
    assert (
        await call(index_guard(wb), post("Write", {}, wb.workspace, file_path=str(wb.workspace / "main.py")))
        == {}
    )
    assert await call(index_guard(wb), post("Write", {}, wb.workspace)) == {}
    assert not wb.index_path.exists()


# -- isolation -------------------------------------------------------------------------------------


def agent(name: str = "coder") -> AgentDefinition:
    return AgentDefinition(description=f"{name} role", prompt=f"You are {name}.", tools=["Bash"])


def test_isolated_marks_the_same_object_without_a_field() -> None:
    a = agent()
    assert wants_isolation(a) is False
    assert isolated(a) is a
    assert wants_isolation(a) is True
    assert "_flower_isolate" not in dataclasses.asdict(a)
    assert isolated(a, False) is a and wants_isolation(a) is False
    assert wants_isolation(None) is False


def test_replace_drops_the_mark() -> None:
    # the documented price of a Python-side attribute
    assert wants_isolation(dataclasses.replace(isolated(agent()))) is False


def test_isolate_guard_matcher() -> None:
    assert isolate_guard({}).matcher == "Agent"


async def test_isolate_injects_worktree_for_marked_roles() -> None:
    injected: list[tuple[str, str]] = []
    agents = {"coder": isolated(agent()), "reader": agent("reader")}
    m = isolate_guard(agents, on_inject=lambda kind, desc: injected.append((kind, desc)))
    tool_input: dict[str, Any] = {
        "subagent_type": "coder",
        "description": "fix bug",
        "prompt": "fix it",
        "run_in_background": False,
    }

    out = await call(m, pre("Agent", **tool_input))

    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse" and spec["permissionDecision"] == "allow"
    assert spec["updatedInput"] == {**tool_input, "isolation": "worktree"}
    assert injected == [("coder", "fix bug")]
    assert await call(m, pre("Task", **tool_input))  # the tool's older name


@pytest.mark.parametrize(
    "tool_input",
    [
        {"subagent_type": "reader", "description": "d", "prompt": "p"},  # unmarked role
        {"subagent_type": "coder", "description": "d", "prompt": "p", "cwd": "/elsewhere"},  # model chose cwd
        {"subagent_type": "coder", "description": "d", "prompt": "p", "isolation": "none"},  # model chose
        {"subagent_type": "ghost", "description": "d", "prompt": "p"},  # unknown role
        {"description": "d", "prompt": "p"},  # general-purpose
    ],
)
async def test_isolate_adds_nothing_otherwise(tool_input: dict[str, Any]) -> None:
    injected: list[Any] = []
    m = isolate_guard(
        {"coder": isolated(agent()), "reader": agent("reader")}, on_inject=lambda *a: injected.append(a)
    )
    assert await call(m, pre("Agent", **tool_input)) == {}
    assert await call(m, pre("Bash", **tool_input)) == {}
    assert injected == []


async def test_a_failing_notifier_does_not_cancel_isolation() -> None:
    def boom(kind: str, desc: str) -> None:
        raise RuntimeError("ui gone")

    m = isolate_guard({"coder": isolated(agent())}, on_inject=boom)
    out = await call(m, pre("Agent", subagent_type="coder", description="d", prompt="p"))
    assert out["hookSpecificOutput"]["updatedInput"]["isolation"] == "worktree"


# -- workbench_hooks / merge_hooks -------------------------------------------------------------------


def shape(hooks: dict[str, list[HookMatcher]]) -> dict[str, list[str | None]]:
    return {event: [m.matcher for m in ms] for event, ms in hooks.items()}


def test_workbench_hooks_default(wb: Workbench) -> None:
    assert shape(workbench_hooks(wb)) == {"PreToolUse": [HANDS_ON], "PostToolUse": ["Write|Edit", BULKY]}


def test_workbench_hooks_without_delegation_or_spill_drops_empty_events(wb: Workbench) -> None:
    assert shape(workbench_hooks(wb, delegate_only=False, spill_threshold=None)) == {
        "PostToolUse": ["Write|Edit"]
    }
    assert shape(workbench_hooks(wb, delegate_only=False, spill_threshold=0)) == {
        "PostToolUse": ["Write|Edit"]
    }


def test_workbench_hooks_adds_isolation_only_for_marked_roles(wb: Workbench) -> None:
    assert shape(workbench_hooks(wb, agents={"r": agent()})) == {
        "PreToolUse": [HANDS_ON],
        "PostToolUse": ["Write|Edit", BULKY],
    }
    hooks = workbench_hooks(wb, delegate_only=False, agents={"r": agent(), "c": isolated(agent())})
    assert shape(hooks) == {"PreToolUse": ["Agent"], "PostToolUse": ["Write|Edit", BULKY]}


async def test_workbench_hooks_pass_their_settings_through(wb: Workbench) -> None:
    hooks = workbench_hooks(wb, allow_glance=True, spill_threshold=50)
    assert await call(hooks["PreToolUse"][0], pre("Bash", command="git status")) == {}
    out = await call(
        hooks["PostToolUse"][1], post("Bash", bash_response("v" * 51), wb.workspace, command="c")
    )
    assert (wb.root / "spill" / spill_name("v" * 51)).exists() and out
    assert await call(workbench_hooks(wb)["PreToolUse"][0], pre("Bash", command="git status")) != {}


def test_merge_hooks_concatenates_in_order_without_dedup(wb: Workbench) -> None:
    a, b, c = delegate_guard(), index_guard(wb), whitelist_guard(["Read"])
    merged = merge_hooks(
        {"PreToolUse": [a]}, None, {"PostToolUse": [b], "PreToolUse": [c]}, {"PreToolUse": [a]}, {}
    )
    assert merged == {"PreToolUse": [a, c, a], "PostToolUse": [b]}


def test_merge_hooks_drops_empty_events_and_none_entries() -> None:
    m = delegate_guard()
    assert merge_hooks() == {}
    assert merge_hooks(None, {"Stop": []}) == {}
    assert merge_hooks({"PreToolUse": [whitelist_guard(["Bash", "Write", "Edit", "NotebookEdit"]), m]}) == {
        "PreToolUse": [m]
    }


def test_merge_hooks_does_not_alias_its_inputs() -> None:
    first = {"PreToolUse": [delegate_guard()]}
    merged = merge_hooks(first, {"PreToolUse": [delegate_guard()]})
    assert len(first["PreToolUse"]) == 1 and len(merged["PreToolUse"]) == 2
