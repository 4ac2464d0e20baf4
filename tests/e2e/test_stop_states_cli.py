"""The stopped states through the real `flower` command, the real Claude Code CLI and flower.sim:
three identical failed rounds with `--stall-rounds 2` stop the run on the person's word; then
`flower history` says "stopped: no progress" with what continuing will do, and the next
`flower` says it under the seeds' resume banner."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_e2e import Child, child_processes, cli_env, flower  # noqa: F401 (child_processes: a fixture)
from test_no_progress_cli import ASK, idle_rounds

from flower.core.stops import STOPS_FILE, last_stop
from flower.workflow.goal import STALL_STOP

pytestmark = pytest.mark.e2e

STALLED = "连续 2 轮判定没通过的都是同样这些条目,工作区也一个文件都没变"
NEXT = "再跑 flower 就接着做(还是没有进展会再问你),也可以先改目标(目标.md)再跑,或者就此停下"


@pytest.fixture
def children(child_processes: list[Child]) -> list[Child]:  # noqa: F811 (the imported fixture)
    return child_processes


def test_a_stop_on_no_progress_is_told_by_the_history_and_the_next_banner(
    sim_factory, claude_root, tmp_path: Path, children
):
    ws = tmp_path / "proj"
    ws.mkdir()
    sim = sim_factory(idle_rounds(["not_yet"] * 3))
    env = cli_env(sim, claude_root, FLOWER_STALL_ROUNDS="")
    run = Child("--timeout", "120", "--rounds", "3", "--stall-rounds", "2", ASK, cwd=ws, env=env)
    children.append(run)

    run.wait_for(STALLED)
    run.wait_for(f"3) {STALL_STOP}")
    run.type("3")
    assert run.finish(240) == 1, run.output
    assert len(sim.openings("judge")) == 2  # stopped after round 2, no third round (a round: a session)
    stop = last_stop(ws / "runs")
    assert stop is not None and stop.kind == "no_progress", (ws / "runs" / STOPS_FILE).read_text()

    told = flower("history", cwd=ws, env=env)
    assert told.returncode == 0, told.stdout + told.stderr
    assert "第 1 次唤醒" in told.stdout
    assert "干活  2 轮" in told.stdout and "第 2 轮 not_yet" in told.stdout
    [line] = [ln for ln in told.stdout.splitlines() if "stopped: no progress" in ln]
    assert "连续 2 轮没有进展" in line and "按你的选择停下" in line and NEXT in line

    again = Child("--timeout", "120", "--rounds", "3", "--stall-rounds", "2", ASK, cwd=ws, env=env)
    children.append(again)
    again.wait_for(NEXT)
    lines = again.output.splitlines()
    [banner] = [i for i, ln in enumerate(lines) if ln.startswith("<- 在 ") and "接上上次  需求已确认" in ln]
    assert "第 2 次唤醒" in lines[banner]  # the seeds' line, as it always was
    assert lines[banner + 1].startswith("   上次停在 stopped: no progress —— 连续 2 轮没有进展")
    assert lines[banner + 1].endswith(NEXT)
    again.kill()
