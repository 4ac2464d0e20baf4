"""No progress stops and asks, through the real `flower` command, the real Claude Code CLI and
flower.sim: a coordinator that changes nothing and a judge that fails the same check every
round; after three such rounds the run asks, and each answer does what it says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import Child, child_processes, cli_env  # noqa: F401 (child_processes: a fixture)

from flower.core.goal import Goal
from flower.core.human import read_log
from flower.sim.scenario import ScenarioData, TurnData
from flower.sim.scenarios import BRIEF, GOAL, HANDOVER, STARTER_ACTORS, _bash, delegate, judge_script
from flower.workflow.goal import AMEND_QUESTION, STALL_AMEND, STALL_CONTINUE, STALL_STOP

pytestmark = pytest.mark.e2e

ASK = "写一个 hello.py"
STALLED = "连续 3 轮判定没通过的都是同样这些条目,工作区也一个文件都没变"
FAILED = "工作区根目录有 README.md,写了怎么运行"  # the one check VERDICTS["not_yet"] fails
IDLE = "看了一遍,没有要改的。"
NEW_GOAL = "README.md 不要了,hello.py 的文档字符串写明用法就算数"


def idle_rounds(verdicts: list[str], *, coordinator: list[TurnData] | None = None) -> ScenarioData:
    """A run whose coordinator changes nothing round after round (unless `coordinator` says
    otherwise) while the judge rules `verdicts` in order."""
    return {
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [{"text": BRIEF}],
            "goal_setter": [{"text": GOAL}],
            "coordinator": coordinator or [{"text": IDLE} for _ in verdicts],
            "judge": judge_script(tuple(verdicts)),
        },
        "rules": [{"actor": "handover", "reply": {"text": HANDOVER}}],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


def start(sim: Any, claude_root: Path, ws: Path, *argv: str) -> Child:
    return Child(
        "--timeout", "120", *argv, ASK, cwd=ws, env=cli_env(sim, claude_root, FLOWER_STALL_ROUNDS="")
    )


@pytest.fixture
def children(child_processes: list[Child]) -> list[Child]:  # noqa: F811 (the imported fixture)
    return child_processes  # test_cli_e2e's: every child started is killed at the end


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    # the work was done before these rounds: what the judge's look reads (it changes no more)
    (path / "hello.py").write_text('print("hello")\n', encoding="utf-8")
    (path / "README.md").write_text("Run: python3 hello.py\n", encoding="utf-8")
    return path


def stall_question(ws: Path) -> Any:
    [ask] = [a for a in read_log(ws / ".flower" / "notes" / "问答记录.md") if STALLED in a.question]
    return ask


def test_continue_goes_on_and_counts_three_rounds_afresh(sim_factory, claude_root, ws, children):
    sim = sim_factory(idle_rounds(["not_yet"] * 5))
    run = start(sim, claude_root, ws, "--rounds", "5")
    children.append(run)

    run.wait_for(STALLED)
    assert len(sim.openings("judge")) == 3  # asked after the third verdict, before a fourth round
    assert f"- {FAILED}" in run.output
    run.wait_for(f"3) {STALL_STOP}")
    run.type("1")

    assert run.finish(240) == 1, run.output  # the five rounds ran out without the goal
    assert len(sim.openings("judge")) == 5
    assert run.output.count(STALLED) == 1  # rounds 4 and 5 are two, not three, in a row
    ask = stall_question(ws)
    assert (ask.options, ask.state, ask.answer) == (
        [STALL_CONTINUE, STALL_AMEND, STALL_STOP],
        "answered",
        STALL_CONTINUE,
    )


def test_changing_the_goal_amends_it_and_the_judge_rules_on_the_new_one(
    sim_factory, claude_root, ws, children
):
    sim = sim_factory(idle_rounds(["not_yet", "not_yet", "not_yet", "achieved"]))
    run = start(sim, claude_root, ws, "--rounds", "5")
    children.append(run)

    run.wait_for(f"3) {STALL_STOP}")
    run.type("2")
    run.wait_for(AMEND_QUESTION)
    run.type(NEW_GOAL)

    assert run.finish(240) == 0, run.output
    goal = Goal.load(ws / ".flower" / "notes" / "目标.md")
    assert goal is not None and NEW_GOAL in goal.statement and FAILED in goal.checks
    judged = sim.openings("judge")
    assert len(judged) == 4
    assert NEW_GOAL in judged[3].first_user_text and NEW_GOAL not in judged[2].first_user_text


def test_stop_ends_the_run_on_the_third_round_and_says_why(sim_factory, claude_root, ws, children):
    sim = sim_factory(idle_rounds(["not_yet"] * 5))
    run = start(sim, claude_root, ws, "--rounds", "5")
    children.append(run)

    run.wait_for(f"3) {STALL_STOP}")
    run.type("3")

    assert run.finish(240) == 1, run.output
    assert len(sim.openings("judge")) == 3 and len(sim.requests_for("coordinator")) == 3
    assert "在步骤 '干活' 中止:连续 3 轮没有进展(同样的判定项没通过,工作区没变),按你的选择停下" in run.output
    assert stall_question(ws).answer == STALL_STOP


def test_a_round_that_changes_the_workspace_is_progress_and_nothing_is_asked(
    sim_factory, claude_root, ws, children
):
    # round 2 writes a file: rounds 1 | 2 (changed) | 3, 4 make no run of three
    coordinator: list[TurnData] = [
        {"text": IDLE},
        delegate("写 notes.txt"),
        {"text": "写了 notes.txt。"},
        {"text": IDLE},
        {"text": IDLE},
    ]
    scenario = idle_rounds(["not_yet"] * 4, coordinator=coordinator)
    scenario["scripts"]["coder"] = [
        _bash("printf 'n\\n' > notes.txt"),
        {"text": "结论:写了\n依据:文件在\n产物:notes.txt\n未验证:无"},
    ]
    sim = sim_factory(scenario)
    run = start(sim, claude_root, ws, "--rounds", "4", "--stall-rounds", "3")
    children.append(run)

    assert run.finish(240) == 1, run.output
    assert (ws / "notes.txt").is_file() and len(sim.openings("judge")) == 4
    assert STALLED not in run.output


def test_stall_rounds_from_the_flag_and_zero_never_asks(sim_factory, claude_root, ws, children):
    sim = sim_factory(idle_rounds(["not_yet"] * 4))
    run = start(sim, claude_root, ws, "--rounds", "4", "--stall-rounds", "0")
    children.append(run)

    assert run.finish(240) == 1, run.output
    assert len(sim.openings("judge")) == 4 and "轮判定没通过的都是同样这些条目" not in run.output
