"""flower.fork through LSP, with the real engine, the real Claude Code CLI and flower.sim: the
scripted two-round run of the rewind test, a preview that makes nothing and says where the fork
would go and what it would hold, the fork itself (a new workspace with round 1's files and a run
folder whose step resumes round 1's conversation, the original run untouched), the refusals a
person can cause (no such round, a folder that is taken), and a fork made while a flower of
another process holds the folder, which goes on untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_rewind_lsp import ASK, RUN_S, ZH, two_rounds

from flower.core.lineage import Lineage
from flower.core.rundir import FlowLock

pytestmark = pytest.mark.e2e


def files_of(ws: Path) -> dict[str, bytes]:
    """The workspace's files outside flower's own folders, path -> bytes."""
    skip = (".flower", "runs", ".git")
    return {
        str(f.relative_to(ws)): f.read_bytes()
        for f in sorted(ws.rglob("*"))
        if f.is_file() and f.relative_to(ws).parts[0] not in skip
    }


async def test_fork_from_the_editor_previews_then_makes_a_new_run_from_round_1(
    sim_factory, sim_lsp, workspace: Path
):
    sim = sim_factory(two_rounds())
    async with sim_lsp(sim, options={"timeout_s": 0}, env=ZH) as s:
        assert (await s.command("flower.start", {"ask": ASK}))["ok"] is True
        await s.until(lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the run")
        assert s.run_phase() == "finished", s.events_of("run")[-1]
        before = files_of(workspace)
        assert before["a.txt"] == b"v2\n" and "b.txt" in before
        beside = set(workspace.parent.iterdir())

        preview = await s.command("flower.fork", {"round": 1, "preview": True})

        assert preview["ok"] is True, preview
        assert "a.txt" in preview["files"] and "b.txt" not in preview["files"], preview
        assert preview["rounds"] == [1, 2] and preview["session_cut"] is True
        new_ws = Path(preview["workspace"])
        assert new_ws.parent == workspace.parent and new_ws.name.startswith(f"{workspace.name}-fork-r1-")
        assert Path(preview["run_dir"]) == new_ws / "runs"
        assert f"从第 1 轮分出一份新的运行:新工作区 {new_ws}" in preview["message"], preview
        assert set(workspace.parent.iterdir()) == beside  # nothing made

        done = await s.command("flower.fork", {"round": 1, "into": str(new_ws), "remark": "换个写法"})

        assert done["ok"] is True and done["session_cut"] is True, done
        assert done["workspace"] == str(new_ws) and "原来的运行没动" in done["message"]
        forked = files_of(new_ws)
        assert forked["a.txt"] == b"v1\n" and "b.txt" not in forked, forked
        assert files_of(workspace) == before  # the original is untouched
        assert Lineage.open(workspace / "runs", workspace).rewinds == []
        lineage = Lineage.open(new_ws / "runs", new_ws)
        assert [(r["kind"], r["round"], r["remark"]) for r in lineage.rewinds] == [("fork", 1, "换个写法")]
        point = lineage.point("干活")
        assert point is not None and point["round"] == 1

        taken = await s.command("flower.fork", {"round": 1, "into": str(new_ws), "preview": True})
        assert taken["ok"] is False and "已经存在而且不是空的" in taken["message"], taken

        missing = await s.command("flower.fork", {"round": 9, "preview": True})
        assert missing["ok"] is False and "第 9 轮没有检查点" in missing["message"], missing

        # a flower of another process holds the folder: the fork is made beside it, the lock
        # stays that flower's and the original's files stay as they were
        lock = FlowLock(workspace / "runs", "starter", who="flower go (another terminal)")
        lock.acquire()
        try:
            beside = await s.command("flower.fork", {"round": 1, "into": str(workspace.parent / "other")})
            assert lock.held
        finally:
            lock.release()
        assert beside["ok"] is True, beside
        assert files_of(workspace.parent / "other") == files_of(new_ws)
        assert files_of(workspace) == before


async def test_a_folder_without_checkpoints_cannot_be_forked(sim_factory, sim_lsp, workspace: Path):
    async with sim_lsp(sim_factory(two_rounds()), options={"timeout_s": 0}, env=ZH) as s:
        refused = await s.command("flower.fork", {"round": 1, "preview": True})
    assert refused["ok"] is False and "还没有检查点" in refused["message"], refused
