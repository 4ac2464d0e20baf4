"""flower.rewind through LSP, with the real engine, the real Claude Code CLI and flower.sim: a
scripted two-round run, a preview that changes nothing and lists what would change, the rewind
itself (the round's files back, the person's own file kept and named, the step's conversation
cut at the end of round 1), and the refusals a person can cause: no such round, a run in the
folder held by another process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flower.core.lineage import Lineage
from flower.core.rundir import FlowLock
from flower.sim.scenarios import BARE_VERDICTS, HANDOVER, STARTER_ACTORS, _bash, delegate, looked, proof

pytestmark = pytest.mark.e2e

RUN_S = 180.0
ZH = {"FLOWER_LANG": "zh"}  # the messages asserted are the Chinese ones
ASK = "写两个文件,两轮做完"
BRIEF = (
    "## 目标\n写两个文件。\n\n## 验收标准\na.txt、b.txt 都在。\n\n## 边界\n只写文本。\n\n## 未知与假设\n无。"
)
GOAL = "## 目标\n两个文件。\n\n## 判定清单\n- 工作区根目录有 README.md,写了怎么运行\n"
ACCEPTED = BARE_VERDICTS["achieved"] + proof(["工作区根目录有 README.md,写了怎么运行"], "a.txt")


def report(what: str) -> dict[str, Any]:
    return {"text": f"结论:{what}\n依据:文件已写。\n产物:{what}\n未验证:无"}


def two_rounds() -> dict[str, Any]:
    return {
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [{"text": BRIEF}],
            "goal_setter": [{"text": GOAL}],
            "coordinator": [
                delegate("写 a.txt v1"),
                {"text": "第一轮做完了。"},
                delegate("a.txt 改成 v2,加 b.txt"),
                {"text": "第二轮做完了。"},
            ],
            "coder": [
                _bash("printf 'v1\\n' > a.txt"),
                report("a.txt"),
                _bash("printf 'v2\\n' > a.txt && printf 'b\\n' > b.txt"),
                report("b.txt"),
            ],
            # an accepting judge looks first: achieved needs proof (core/evidence.py)
            "judge": [{"text": BARE_VERDICTS["not_yet"]}, *looked(ACCEPTED, "a.txt")],
        },
        "rules": [{"actor": "handover", "reply": {"text": HANDOVER}}],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


async def test_rewind_from_the_editor_previews_then_puts_round_1_back(sim_factory, sim_lsp, workspace: Path):
    sim = sim_factory(two_rounds())
    async with sim_lsp(sim, options={"timeout_s": 0}, env=ZH) as s:
        assert (await s.command("flower.start", {"ask": ASK}))["ok"] is True
        await s.until(lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the run")
        assert s.run_phase() == "finished", s.events_of("run")[-1]
        assert (workspace / "a.txt").read_text() == "v2\n" and (workspace / "b.txt").exists()
        (workspace / "mine.txt").write_text("我自己写的\n", encoding="utf-8")
        work_session = Lineage.open(workspace / "runs", workspace).steps["干活"]

        preview = await s.command("flower.rewind", {"round": 1, "preview": True})

        assert preview["ok"] is True, preview
        assert (preview["changed"], preview["removed"], preview["kept"]) == (
            ["a.txt"],
            ["b.txt"],
            ["mine.txt"],
        )
        assert preview["rounds"] == [1, 2] and preview["session_cut"] is False
        assert "改回 1 个文件,删掉 1 个,你自己改过的 1 个保留原样" in preview["message"]
        assert (workspace / "a.txt").read_text() == "v2\n" and (
            workspace / "b.txt"
        ).exists()  # nothing changed

        done = await s.command("flower.rewind", {"round": 1, "remark": "先写 README"})

        assert done["ok"] is True and done["session_cut"] is True, done
        assert (workspace / "a.txt").read_text() == "v1\n" and not (workspace / "b.txt").exists()
        assert (workspace / "mine.txt").read_text(encoding="utf-8") == "我自己写的\n"
        lineage = Lineage.open(workspace / "runs", workspace)
        assert [r["round"] for r in lineage.rewinds] == [1]
        assert lineage.steps["干活"] == work_session  # the fork happens when the step continues
        assert lineage.point("干活") is not None

        missing = await s.command("flower.rewind", {"round": 9, "preview": True})
        assert missing["ok"] is False and "第 9 轮没有检查点" in missing["message"], missing

        # a flower of another process holds the folder: refused, nothing changed
        lock = FlowLock(workspace / "runs", "starter", who="flower go (another terminal)")
        lock.acquire()
        try:
            busy = await s.command("flower.rewind", {"round": 1})
        finally:
            lock.release()
        assert busy["ok"] is False and "flower go (another terminal)" in busy["message"], busy


async def test_a_folder_without_checkpoints_is_refused_with_one_line(sim_factory, sim_lsp, workspace: Path):
    async with sim_lsp(sim_factory(two_rounds()), options={"timeout_s": 0}, env=ZH) as s:
        refused = await s.command("flower.rewind", {"round": 1})
    assert refused["ok"] is False and "还没有检查点" in refused["message"], refused
