"""The role factories through the Runtime: who can do hands-on work, and the workbench."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from flower import (
    AgentSpec,
    HumanChannel,
    Lineage,
    Runtime,
    Step,
    Workbench,
    Workflow,
    coordinator,
    judge,
    worker,
)

pytestmark = pytest.mark.e2e


def bash(command: str) -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": "run"}}}


def write(path: Path, content: str) -> dict[str, Any]:
    return {"tool": {"name": "Write", "input": {"file_path": str(path), "content": content}}}


@pytest.fixture
def runtime_of(workspace: Path, tmp_path: Path):
    made: list[Runtime] = []

    def make(**kw: Any) -> Runtime:
        rt = Runtime(workspace=workspace, run_dir=tmp_path / "runs", **kw)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()


async def test_a_judge_without_can_run_cannot_write_or_run(use_sim, workspace, runtime_of):
    sim = use_sim(
        {
            "scripts": {
                "main": [write(workspace / "verdict.txt", "x"), bash("touch ran.txt"), "## 结论\n未达成"]
            }
        }
    )
    ch = HumanChannel(timeout_s=0)
    r = await runtime_of().run(judge("判定者", ch), "judge this round")

    assert r.ok and not (workspace / "verdict.txt").exists() and not (workspace / "ran.txt").exists()
    # the judge is not even offered Write or Bash (the session's base tool set), so both calls fail
    assert "Write" not in sim.last().tool_names and "Bash" not in sim.last().tool_names
    results = sim.last().tool_results()
    assert len(results) == 2 and all(t.get("is_error") for t in results)
    assert all("No such tool available" in str(t["content"]) for t in results)


async def test_a_judge_with_can_run_may_run_commands_but_still_not_write(use_sim, workspace, runtime_of):
    sim = use_sim(
        {
            "scripts": {
                "main": [
                    bash("echo checked > ran.txt && cat ran.txt"),
                    write(workspace / "verdict.txt", "x"),
                    "## 结论\n达成",
                ]
            }
        }
    )
    ch = HumanChannel(timeout_s=0)
    r = await runtime_of().run(judge("判定者", ch, can_run=True), "judge this round")

    assert r.ok and not (workspace / "verdict.txt").exists()
    # the command ran (it read back what it wrote) on a view of the workspace that is thrown away
    ran = sim.last().tool_results()[0]
    assert "checked" in str(ran["content"]) and not (workspace / "ran.txt").exists()


async def test_the_coordinator_role_delegates_and_its_worker_writes_into_the_indexed_workbench(
    use_sim, workspace, runtime_of
):
    wb = Workbench(workspace)
    artifact = wb.artifacts / "weekly.md"
    sim = use_sim(
        {
            "actors": {"coder": {"system": "你负责实现"}},
            "scripts": {
                "main": [
                    bash("echo boss > boss.txt"),
                    bash("git status"),  # a glance is allowed on the main thread
                    {
                        "tool": {
                            "name": "Agent",
                            "input": {
                                "subagent_type": "coder",
                                "description": "d",
                                "prompt": "write the summary",
                                "run_in_background": False,
                            },
                        }
                    },
                    "the coder wrote it",
                ],
                "coder": [
                    write(artifact, "# desc: weekly summary\n" + "x" * 100),
                    bash("seq 1 3000"),
                    "结论:写好了",
                ],
            },
        }
    )
    boss = coordinator("协调者", "", {"coder": worker("写代码", "你负责实现。")})
    r = await runtime_of(workbench=wb).run(boss, "summarise the week")

    assert r.ok and not (workspace / "boss.txt").exists() and artifact.is_file()
    main_results = [str(t["content"]) for t in sim.last().tool_results()]
    assert "Agent" in main_results[0] and "hook error" in main_results[0]  # the wall says: delegate
    assert "hook error" not in main_results[1]  # git status ran
    index = wb.index_path.read_text()
    assert "weekly.md" in index and "weekly summary" in index  # the next agent knows it exists
    # the worker's big output was spilled, and the model saw a pointer instead
    coder_seen = str(sim.last("coder").tool_results()[-1]["content"])
    spilled = list((wb.root / "spill").glob("*.txt"))
    assert len(spilled) == 1 and str(spilled[0]) in coder_seen and "2999\n3000" not in coder_seen
    assert spilled[0].read_text().splitlines()[-1] == "3000"


SOLO = AgentSpec(name="solo", instructions="lineage test", allowed_tools=["Read"])


async def _two_runs(use_sim, workspace: Path, run_dir: Path, between) -> tuple[dict, dict, Any]:
    use_sim({"default": {"text": "ok"}})
    step = [Step("干活", SOLO, "do it", resume_prompt="continue")]
    rt = Runtime(workspace=workspace, run_dir=run_dir)
    try:
        first = await Workflow(step).run(rt)
    finally:
        rt.close()
    workspace, run_dir = between(workspace, run_dir)
    rt = Runtime(workspace=workspace, run_dir=run_dir)
    events: list = []
    try:
        second = await Workflow(list(step)).run(rt, on_event=events.append)
    finally:
        rt.close()
    resumed = [e.payload["resumed"] for e in events if e.kind == "step"]
    return first, second, resumed


async def test_the_same_folder_continues_the_same_session(use_sim, workspace, tmp_path):
    first, second, resumed = await _two_runs(use_sim, workspace, tmp_path / "runs", lambda ws, rd: (ws, rd))
    assert (
        second["_sessions"]["干活"] == first["_sessions"]["干活"]
        and resumed == [True]
        and second["_woke"] == 2
    )


async def test_a_copied_workspace_starts_fresh_without_error(use_sim, workspace, tmp_path):
    def copy(ws: Path, rd: Path) -> tuple[Path, Path]:
        shutil.copytree(
            tmp_path, tmp_path.parent / (tmp_path.name + "-copy"), ignore=shutil.ignore_patterns("claude")
        )
        base = tmp_path.parent / (tmp_path.name + "-copy")
        return base / "ws", base / "runs"

    first, second, resumed = await _two_runs(use_sim, workspace, tmp_path / "runs", copy)
    assert (
        second["_sessions"]["干活"] != first["_sessions"]["干活"]
        and resumed == [False]
        and second["_woke"] == 1
    )


async def test_a_deleted_sessions_db_starts_fresh_without_error(use_sim, workspace, tmp_path):
    def drop_db(ws: Path, rd: Path) -> tuple[Path, Path]:
        for p in rd.glob("sessions.db*"):
            p.unlink()
        return ws, rd

    first, second, resumed = await _two_runs(use_sim, workspace, tmp_path / "runs", drop_db)
    assert second["_sessions"]["干活"] != first["_sessions"]["干活"] and resumed == [False]


async def test_a_corrupted_lineage_is_set_aside_and_rebuilt_from_the_manifest(use_sim, workspace, tmp_path):
    def corrupt(ws: Path, rd: Path) -> tuple[Path, Path]:
        (rd / "lineage.json").write_text(
            '{"workspace": "' + str(ws) + '", "steps": {"干活": '
        )  # cut mid-write
        return ws, rd

    first, second, resumed = await _two_runs(use_sim, workspace, tmp_path / "runs", corrupt)
    # damage is not "does not fit": the work goes on in its session, the file is kept aside
    assert (
        second["_sessions"]["干活"] == first["_sessions"]["干活"]
        and resumed == [True]
        and second["_woke"] == 2
    )
    [copy] = (tmp_path / "runs").glob("lineage.json.corrupt-*")
    assert copy.read_text().endswith('"steps": {"干活": ')
    assert Lineage.open(tmp_path / "runs", workspace).steps == second["_sessions"]  # and is sound again


async def test_an_isolated_worker_works_in_its_own_git_worktree(use_sim, workspace, runtime_of):
    import subprocess

    git = ["git", "-C", str(workspace), "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(workspace)], check=True)
    (workspace / "a.txt").write_text("a")
    await asyncio.to_thread(subprocess.run, [*git, "add", "."], check=True)
    await asyncio.to_thread(subprocess.run, [*git, "commit", "-qm", "init"], check=True)
    sim = use_sim(
        {
            "actors": {"coder": {"system": "你负责实现"}},
            "scripts": {
                "main": [
                    {
                        "tool": {
                            "name": "Agent",
                            "input": {
                                "subagent_type": "coder",
                                "description": "d",
                                "prompt": "write b.txt",
                                "run_in_background": False,
                            },
                        }
                    },
                    "done",
                ],
                "coder": [bash("pwd && echo b > b.txt"), "结论:写好了"],
            },
        }
    )
    # isolated workers cannot write into the shared checkout: the workbench lives beside it
    wb = Workbench(workspace, home=workspace.parent / f".flower-{workspace.name}")
    boss = coordinator("协调者", "", {"coder": worker("写代码", "你负责实现。", isolate=True)})
    r = await runtime_of(workbench=wb).run(boss, "go")

    assert r.ok
    where = str(sim.last("coder").tool_results()[-1]["content"]).splitlines()[0]
    assert where.startswith(str(workspace / ".claude" / "worktrees")), where  # the hook injected isolation
    assert "isolation" not in sim.last("main").tool_uses()[0]["input"]  # the model never asked for it
    assert not (workspace / "b.txt").exists() and (Path(where) / "b.txt").read_text() == "b\n"
