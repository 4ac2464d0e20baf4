"""The starter flow end to end: the real CLI and engine, flower.sim as the model."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flower import Brief, Goal, Lineage, Runtime, starter_flow, wake_state
from flower.core.events import Event
from flower.core.human import TIMEOUT
from flower.sim import scenarios
from flower.workflow.clarify import CLARIFY_RESUME
from flower.workflow.goal import ACCEPT, AMEND, DEFAULT_REASON, WRONG
from flower.workflow.starter import banner_line

pytestmark = pytest.mark.e2e


class Flow:
    """Runs the starter flow in a test folder, answering questions like a person would."""

    def __init__(self, workspace: Path, run_dir: Path):
        self.ws, self.run_dir = workspace, run_dir
        self.events: list[Event] = []
        self.asked: list[Any] = []

    async def run(self, ask: str = "", *, answer: Any = "first", **kw: Any) -> dict[str, Any]:
        kw.setdefault("timeout_s", 30)
        flow = starter_flow(ask, workspace=self.ws, run_dir=self.run_dir, **kw)
        channel = flow.channel
        assert flow.workbench is not None and channel is not None  # the starter flow has both
        rt = Runtime(workspace=self.ws, run_dir=self.run_dir, workbench=flow.workbench)
        self.flow, self.runtime = flow, rt

        async def person() -> None:
            while True:
                question = await channel.next_ask()
                if question is None:
                    continue
                self.asked.append(question)
                reply = (
                    answer(question)
                    if callable(answer)
                    else (question.options[0] if answer == "first" else answer)
                )
                if reply is not None:
                    channel.answer(question.id, reply)

        task = asyncio.create_task(person())
        try:
            return await flow.run(rt, on_event=self.events.append)
        finally:
            task.cancel()
            rt.close()

    def verdicts(self) -> list[dict[str, Any]]:
        return [e.payload for e in self.events if e.kind == "task" and e.payload.get("kind") == "verdict"]

    def manifest_steps(self) -> list[str]:
        return [r["step"] for r in json.loads((self.run_dir / "manifest.json").read_text())]


@pytest.fixture
def flow(workspace: Path, tmp_path: Path) -> Flow:
    return Flow(workspace, tmp_path / "runs")


def sessions_of(sim: Any, actor: str) -> list[str]:
    return [q.headers.get("x-claude-code-session-id") for q in sim.requests_for(actor)]


async def test_three_steps_brief_goal_and_a_judge_every_round(use_sim, flow, workspace):
    sim = use_sim(scenarios.starter_scenario())
    ctx = await flow.run("写一个 hello.py")

    assert ctx.get("_failed_at") is None and ctx["_goal_rounds"] == 2
    notes = workspace / ".flower" / "notes"
    brief, goal = Brief.load(notes / "需求.md"), Goal.load(notes / "目标.md")
    assert brief is not None and goal is not None
    assert brief.complete() and goal.complete() and len(goal.checks) == 3
    assert (workspace / "hello.py").is_file() and (workspace / "README.md").is_file()
    assert flow.manifest_steps() == [
        "确认需求",
        "设定目标",
        "干活",
        "干活·判定#1",
        "干活#round2",
        "干活·判定#2",
    ]
    assert [v["state"] for v in flow.verdicts()] == ["not_yet", "achieved"]
    # a rejection sends the coordinator back to work in the SAME session, with what was missing
    coordinator = sessions_of(sim, "coordinator")
    assert len(set(coordinator)) == 1
    round2 = [q for q in sim.requests_for("coordinator") if "README.md,写了怎么运行" in q.last_user_text]
    assert round2, "the judge's feedback did not reach the coordinator"
    # every judge round is a fresh session, and judges never enter the lineage
    judges = set(sessions_of(sim, "judge"))
    assert len(judges) == 2
    lineage = Lineage.open(flow.run_dir, workspace)
    assert set(lineage.steps) == {"确认需求", "设定目标", "干活"} and not judges & set(lineage.steps.values())
    log = (notes / "问答记录.md").read_text()
    assert scenarios.QUESTION in log and "hello" in log


async def test_a_second_run_continues_with_the_banner_and_skips_frozen_steps(use_sim, flow, workspace):
    sim = use_sim(scenarios.starter_scenario())
    first = await flow.run("写一个 hello.py")
    before = len(sim.requests)
    state = wake_state(workspace, run_dir=flow.run_dir)
    assert (
        state["waking"]
        and state["checks"] == 3
        and state["woke"] == 1
        and state["steps"] == first["_sessions"]
    )

    second = await flow.run("")

    assert second["_sessions"] == first["_sessions"] and second["_woke"] == 2
    later = [q.actor for q in sim.requests[before:]]
    assert "clarifier" not in later and "goal_setter" not in later  # frozen steps are skipped
    judged = [q for q in sim.openings("judge") if q in sim.requests[before:]]
    assert later.count("coordinator") == 1 and len(judged) == 1  # one round, one judge session
    assert (
        sim.requests_for("coordinator")[-1].headers["x-claude-code-session-id"] == first["_sessions"]["干活"]
    )
    rt = Runtime(workspace=workspace, run_dir=flow.run_dir)
    try:
        context = rt.context_of(first["_sessions"]["干活"])
    finally:
        rt.close()
    line = banner_line(state, workspace=workspace, context=context)
    assert (
        "接上上次  需求已确认 · 目标 3 条 · 干活上下文 " in line
        and line.endswith("第 2 次唤醒")
        and context > 0
    )


async def test_a_word_added_on_wake_lands_in_the_brief_the_goal_and_the_coordinator(use_sim, flow, workspace):
    sim = use_sim(scenarios.starter_scenario())
    await flow.run("写一个 hello.py")
    said = "顺便加一个 --name 参数"

    await flow.run(said)

    brief_text = (workspace / ".flower" / "notes" / "需求.md").read_text()
    assert "## 唤醒时追加" in brief_text and said in brief_text
    goal_setters = sim.requests_for("goal_setter")
    assert len(goal_setters) == 2 and said in goal_setters[-1].last_user_text  # the checklist was re-derived
    assert said in sim.requests_for("coordinator")[-1].last_user_text  # and the coordinator heard it
    await flow.run(said)  # saying it again does not append it twice
    assert (workspace / ".flower" / "notes" / "需求.md").read_text().count(said) == 1


async def test_new_archives_the_history_and_starts_over(use_sim, flow, workspace):
    scenario = scenarios.starter_scenario()
    scenario["scripts"]["clarifier"].append({"text": scenarios.BRIEF})
    sim = use_sim(scenario)
    first = await flow.run("写一个 hello.py")

    again = await flow.run("另一件事", new=True)

    archive = workspace / ".flower" / "notes" / "archive"
    (folder,) = list(archive.iterdir())
    assert {p.name for p in folder.iterdir()} == {"lineage.json", "需求.md", "目标.md"}
    assert json.loads((folder / "lineage.json").read_text())["steps"] == first["_sessions"]
    assert again["_woke"] == 1 and again["_sessions"]["确认需求"] != first["_sessions"]["确认需求"]
    assert sim.requests_for("clarifier")[-1].first_user_text.strip().endswith("另一件事")
    assert (flow.run_dir / "sessions.db").is_file()  # the store is never touched


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in [root, *root.rglob("*")]}


async def test_wake_state_writes_not_one_byte(use_sim, flow, workspace, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    before = tree(empty)
    assert wake_state(empty, run_dir=empty / "runs") == {
        "waking": False,
        "brief": empty / ".flower" / "notes" / "需求.md",
        "goal": empty / ".flower" / "notes" / "目标.md",
        "checks": 0,
        "woke": 0,
        "steps": {},
        "stopped": None,  # the last wake did not stop short (there was none)
    }
    assert tree(empty) == before
    use_sim(scenarios.starter_scenario())
    await flow.run("写一个 hello.py")
    before = {**tree(workspace), **tree(flow.run_dir)}
    wake_state(workspace, run_dir=flow.run_dir)
    assert {**tree(workspace), **tree(flow.run_dir)} == before


async def test_malformed_documents_are_handled_with_clear_messages(use_sim, flow, workspace):
    notes = workspace / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_bytes(b"\xff\xfe garbage \x00 ## \xe7\x9b")
    assert wake_state(workspace, run_dir=flow.run_dir)["waking"] is False
    with pytest.raises(ValueError, match="要给一句诉求"):
        starter_flow("", workspace=workspace, run_dir=flow.run_dir)
    (notes / "目标.md").write_text("## 目标\n\n(未填)\n")  # a placeholder goal counts as missing
    use_sim(scenarios.starter_scenario())

    ctx = await flow.run("写一个 hello.py")

    assert ctx.get("_failed_at") is None
    brief, goal = Brief.load(notes / "需求.md"), Goal.load(notes / "目标.md")
    assert brief is not None and goal is not None
    assert brief.complete() and len(goal.checks) == 3


async def test_an_unparseable_verdict_counts_as_not_achieved(use_sim, flow):
    scenario = scenarios.starter_scenario()
    scenario["scripts"]["judge"] = [{"text": "嗯,看起来还行吧"}, *scenarios.judged("achieved")]
    sim = use_sim(scenario)

    ctx = await flow.run("写一个 hello.py")

    assert [v["state"] for v in flow.verdicts()] == ["", "achieved"]
    assert flow.verdicts()[0]["reason"] == DEFAULT_REASON
    assert DEFAULT_REASON in sim.requests_for("coordinator")[2].last_user_text  # sent back, told why
    assert ctx.get("_failed_at") is None


async def test_an_unreachable_verdict_asks_the_person_with_three_choices(use_sim, flow):
    scenario = scenarios.starter_scenario(verdicts=("unreachable",))
    use_sim(scenario)

    ctx = await flow.run(
        "写一个 hello.py", answer=lambda q: q.options[0] if q.options[0] != ACCEPT else ACCEPT
    )

    unreachable = flow.asked[-1]
    assert unreachable.options == [ACCEPT, AMEND, WRONG]
    assert ctx.get("_failed_at") is None and ctx["_goal_rounds"] == 1  # accepted: go on


async def test_an_unreachable_verdict_nobody_answers_stops_the_step(use_sim, flow):
    use_sim(scenarios.starter_scenario(verdicts=("unreachable",)))

    ctx = await flow.run(
        "写一个 hello.py",
        answer=lambda q: "hello" if q.options and "hello" in q.options else None,
        timeout_s=1.0,
    )

    assert ctx["_failed_at"] == "干活" and "没人回应" in ctx["_aborted"] and ctx["_goal_rounds"] == 1


async def test_a_question_nobody_answers_times_out_and_the_clarifier_decides(use_sim, flow, workspace):
    sim = use_sim(scenarios.starter_scenario())

    ctx = await flow.run("写一个 hello.py", answer=None, timeout_s=0.5)

    assert ctx.get("_failed_at") is None
    assert flow.asked[0].state == "timeout"
    assert "timeout" in (workspace / ".flower" / "notes" / "问答记录.md").read_text()
    shown = str(sim.requests_for("clarifier")[1].tool_results()[-1]["content"])
    assert TIMEOUT in shown  # the model is told nobody answered and to decide itself


async def test_a_quota_of_zero_asks_answers_at_once_without_asking(use_sim, flow):
    sim = use_sim(scenarios.starter_scenario())
    started = time.monotonic()

    ctx = await flow.run("写一个 hello.py", max_asks=0)

    assert ctx.get("_failed_at") is None and flow.asked == [] and time.monotonic() - started < 60
    assert flow.flow.channel.asks[0].state == "over_budget"
    assert sim.requests_for("clarifier")[1].tool_results()[-1]["content"]


CHILD = Path(__file__).with_name("flow_child.py")


def test_sigkill_during_clarify_continues_next_time_without_asking_again(use_sim, workspace, tmp_path):
    scenario = scenarios.starter_scenario()
    scenario["scripts"]["clarifier"] = [
        {
            "tool": {
                "name": "mcp__human__ask",
                "input": {"question": scenarios.QUESTION, "options": scenarios.OPTIONS},
            }
        },
        {"fault": "stall", "seconds": 120, "text": "never"},
        {"text": scenarios.BRIEF},
    ]
    sim = use_sim(scenario)
    run_dir = tmp_path / "runs"
    log = workspace / ".flower" / "notes" / "问答记录.md"
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(workspace), str(run_dir), "写一个 hello.py"],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (
        log.is_file() and "hello" in log.read_text() and len(sim.requests_for("clarifier")) >= 2
    ):
        time.sleep(0.2)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(10)
    first_session = Lineage.open(run_dir, workspace).steps[
        "确认需求"
    ]  # on disk although the step never ended

    # the person runs the same command again
    again = subprocess.run(
        [sys.executable, str(CHILD), str(workspace), str(run_dir), "写一个 hello.py"],
        capture_output=True,
        text=True,
        timeout=240,
    )

    assert again.returncode == 0, again.stderr[-3000:]
    resumed = sim.requests_for("clarifier")[2]
    assert resumed.headers["x-claude-code-session-id"] == first_session
    assert CLARIFY_RESUME in resumed.last_user_text and scenarios.QUESTION in resumed.all_text
    assert log.read_text().count(scenarios.QUESTION) == 1  # the person was not asked again
    brief = Brief.load(workspace / ".flower" / "notes" / "需求.md")
    assert brief is not None and brief.complete()
