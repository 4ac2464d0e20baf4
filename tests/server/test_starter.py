"""The whole starter flow driven only through LSP: the real engine and the real Claude Code CLI,
flower.sim as the model. The client answers through flower/ask, follows progress, the context
meter and the banner, sees verdicts on the lines of 目标.md, resumes an unreachable verdict with
a code action, and picks up the same sessions after a restart or a dropped connection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from flower.core.lineage import Lineage
from flower.sim import scenarios
from flower.workflow.goal import ACCEPT, AMEND, WRONG

pytestmark = pytest.mark.e2e

RUN_S = 180.0
REQUEST = "写一个 hello.py"
STEPS = {"确认需求", "设定目标", "干活"}


def goal_path(workspace: Path) -> Path:
    return workspace / ".flower" / "notes" / "目标.md"


def answer_the_clarifier(s: Any, *, otherwise: Any = None) -> None:
    async def person(params: dict[str, Any]) -> Any:
        if params["question"] == scenarios.QUESTION:
            return {"answer": params["options"][0]}
        return await otherwise(params)

    s.answer_ask = person


async def finished(s: Any) -> None:
    await s.until(lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the run to end")
    assert s.run_phase() == "finished", s.events_of("run")[-1]


async def test_a_full_starter_run_driven_only_through_lsp(sim_factory, sim_lsp, workspace):
    sim = sim_factory(scenarios.starter_scenario(context=78_000))
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        answer_the_clarifier(s)
        assert (await s.command("flower.start", {"ask": REQUEST}))["ok"] is True
        await finished(s)

        # the clarifier's question came as flower/ask and its answer reached the model
        assert s.asks == [
            {
                "folder": s.folder,
                "id": "q1",
                "question": scenarios.QUESTION,
                "options": scenarios.OPTIONS,
                "free_text": True,
                "timeout_s": 60.0,
            }
        ]
        assert any(
            b.get("content", [{}])[0].get("text") == "hello" for b in sim.last("clarifier").tool_results()
        )

        # progress: one bar, a report per step and round, closed with the outcome (the bar ends
        # after the run's last event: wait for its end)
        await s.until(
            lambda: any(isinstance(v, types.WorkDoneProgressEnd) for v in s.progress()), what="the end"
        )
        begin, *reports, end = s.progress()
        assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
        messages = [r.message for r in reports]
        for expected in ("确认需求 1/3", "设定目标 2/3", "干活 3/3", "干活 3/3 · round 2"):
            assert expected in messages
        assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "finished (achieved)"

        # the meter: a figure after every model turn of a main thread, judges included
        main_turns = [r for r in sim.requests if r.actor != "coder"]
        assert len(s.contexts) >= len(main_turns)
        assert {c["step"] for c in s.contexts} == STEPS | {"干活#round2", "干活·判定#1", "干活·判定#2"}
        assert all(
            c["used"] > 78_000 and c["window"] > c["warn_at"] > c["used"] and not c["near"]
            for c in s.contexts
        )
        assert s.contexts[-1]["round"] == 2 and s.contexts[-1]["cost_usd"] > 0

        # verdicts on 目标.md: round 1 marks the README check, round 2 (achieved) clears it
        path = goal_path(workspace)
        text = path.read_text(encoding="utf-8").splitlines()
        [rejected, accepted] = s.history(path)
        assert [(d.range.start.line, d.severity) for d in rejected] == [(5, types.DiagnosticSeverity.Warning)]
        assert text[5] == "- 工作区根目录有 README.md,写了怎么运行"
        assert accepted == [] and s.diagnostics(path) == []
        assert [e["text"].split(":")[0] for e in s.events_of("verdict")] == ["verdict #1", "verdict #2"]

        state = await s.state()
        assert (state["running"], state["waking"], state["checks"], state["woke"]) == (False, True, 3, 1)
        assert set(state["steps"]) == STEPS and state["verdict"]["state"] == "achieved"
        assert (workspace / "hello.py").is_file() and (workspace / "README.md").is_file()


async def test_restart_and_continue_pick_up_the_same_sessions_with_the_banner(
    sim_factory, sim_lsp, workspace
):
    sim = sim_factory(scenarios.starter_scenario(context=78_000))
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        answer_the_clarifier(s)
        await s.command("flower.start", {"ask": REQUEST})
        await finished(s)
        before = (await s.state())["steps"]
        assert s.banners == []  # a first run wakes nothing

    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        await s.until(lambda: s.banners, what="the banner on initialized")
        banner = s.banners[0]["text"]
        assert (
            banner.startswith("<- continuing in ")
            and " where it stopped  brief confirmed · goal 3 checks · 干活 context " in banner
        )
        assert banner.endswith(" · wake 2")
        result = await s.command("flower.continue")
        assert result == {"ok": True, "message": "Continuing in ws.", "offer": None, "uri": None}
        await finished(s)
        assert [b["text"] for b in s.banners] == [banner, banner]  # again as the run wakes
        assert [e["text"] for e in s.events_of("step") if e["text"].startswith("==")] == [
            "== 干活 ==  3/3  <- continued · wake 2"
        ]  # clarify and goal were frozen: skipped
        state = await s.state()
        assert state["steps"] == before and state["woke"] == 2
        # the coordinator was resumed, not restarted: the model saw the first run's conversation
        assert "这一轮做完了" in sim.last("coordinator").all_text


async def test_an_unreachable_verdicts_code_action_resumes_the_run_as_chosen(sim_factory, sim_lsp, workspace):
    sim = sim_factory(scenarios.starter_scenario(verdicts=("unreachable", "achieved")))
    async with sim_lsp(sim, options={"timeout_s": 120}) as s:
        withdrawn = asyncio.Event()

        async def leave_it_open(params: dict[str, Any]) -> Any:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                withdrawn.set()
                raise

        answer_the_clarifier(s, otherwise=leave_it_open)
        await s.command("flower.start", {"ask": REQUEST})
        await s.until(lambda: len(s.asks) == 2, RUN_S, what="the unreachable question")
        assert s.asks[1]["options"] == [ACCEPT, AMEND, WRONG]
        path = goal_path(workspace)
        [error] = s.diagnostics(path)
        assert (error.range.start.line, error.severity, error.code) == (
            6,
            types.DiagnosticSeverity.Error,
            "unreachable",
        )
        assert path.read_text(encoding="utf-8").splitlines()[6] == "- hello.py 只用标准库"

        actions = await asyncio.wait_for(
            s.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    range=error.range,
                    context=types.CodeActionContext(diagnostics=[error]),
                )
            ),
            20,
        )
        assert [a.title for a in actions] == [f"Flower: {o}" for o in (ACCEPT, AMEND, WRONG)]
        wrong = actions[2].command
        assert (await s.command(wrong.command, *wrong.arguments))["ok"] is True

        await finished(s)
        await asyncio.wait_for(withdrawn.wait(), 10)  # the open prompt was withdrawn
        assert [(v["payload"]["state"], v["payload"]["round"]) for v in s.events_of("verdict")] == [
            ("unreachable", 1),
            ("achieved", 2),
        ]
        assert s.diagnostics(path) == []
        # "the judge is wrong" sent the work back for another round, with the person's word
        assert any("人认为判定有误" in r.all_text for r in sim.requests_for("coordinator"))


async def test_a_dropped_connection_mid_run_is_resumed_by_the_next_continue(sim_factory, sim_lsp, workspace):
    scenario = scenarios.starter_scenario(verdicts=("achieved",))
    scenario["scripts"]["coordinator"][1]["delay"] = 120  # the coordinator is mid-turn when the editor goes
    sim = sim_factory(scenario)
    run_dir = workspace / "runs"
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        answer_the_clarifier(s)
        await s.command("flower.start", {"ask": REQUEST})
        await s.until(
            lambda: len(sim.requests_for("coordinator")) == 2, RUN_S, what="the coordinator's second turn"
        )
        work_session = Lineage.open(run_dir, workspace).steps["干活"]
        server = s.client._server
        server.stdin.close()
        await asyncio.wait_for(server.wait(), 60)

    # the books are consistent: lineage kept the work session, the manifest is whole
    assert Lineage.open(run_dir, workspace).steps["干活"] == work_session
    rows = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert [(r["step"], r["ok"]) for r in rows] == [("确认需求", True), ("设定目标", True), ("干活", False)]
    assert rows[-1]["session_id"] == work_session

    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        await s.until(lambda: s.banners)
        await s.command("flower.continue")
        await finished(s)
        state = await s.state()
        assert (
            state["steps"]["干活"] == work_session
            and state["woke"] == 2
            and state["verdict"]["state"] == "achieved"
        )
        assert "派给 coder" in sim.last("coordinator").all_text  # the same conversation went on


async def test_the_meter_says_when_a_handoff_is_near(sim_factory, sim_lsp, workspace):
    sim = sim_factory(scenarios.starter_scenario(context=735_000))  # past warn_at (730K of 1M), short of 750K
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        answer_the_clarifier(s)
        await s.command("flower.start", {"ask": REQUEST})
        await finished(s)
        assert s.contexts and all(
            c["near"] and not c["handing_off"] and c["generation"] == 1 for c in s.contexts
        )
        near = [e for e in s.events_of("handoff") if e["payload"].get("phase") == "near"]
        # once per generation of every main-thread session (each step, each judge round)
        assert {e["payload"]["step"] for e in near} == STEPS | {"干活#round2", "干活·判定#1", "干活·判定#2"}
        assert all("close to the handoff threshold 750.0K" in e["text"] for e in near)
        assert (await s.state())["near"] is True
