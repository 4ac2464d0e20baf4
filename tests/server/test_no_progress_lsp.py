"""No progress asks an editor too: the real engine and the real Claude Code CLI through the language
server, flower.sim as the model. A coordinator that changes nothing, a judge failing the same
check: after FLOWER_STALL_ROUNDS=2 rounds the question comes as flower/ask, in the client's
language, and answering "stop" ends the run before a third round."""

from __future__ import annotations

from typing import Any

import pytest

from flower.base.i18n import _
from flower.sim.scenarios import BRIEF, GOAL, HANDOVER, STARTER_ACTORS, VERDICTS
from flower.workflow.goal import STALL_AMEND, STALL_CONTINUE, STALL_STOP

pytestmark = pytest.mark.e2e

RUN_S = 180.0


async def test_the_no_progress_question_reaches_the_editor_and_stop_ends_the_run(
    sim_factory, sim_lsp, english
):
    sim = sim_factory(
        {
            "actors": dict(STARTER_ACTORS),
            "scripts": {
                "clarifier": [{"text": BRIEF}],
                "goal_setter": [{"text": GOAL}],
                "coordinator": [{"text": "看了一遍,没有要改的。"} for _ in range(3)],
                "judge": [{"text": VERDICTS["not_yet"]} for _ in range(3)],
            },
            "rules": [{"actor": "handover", "reply": {"text": HANDOVER}}],
            "default": {"text": "(flower.sim: this actor's script is used up)"},
        }
    )
    choices = [_(STALL_CONTINUE), _(STALL_AMEND), _(STALL_STOP)]
    assert choices == ["Keep going", "Change the goal", "Stop"]
    async with sim_lsp(sim, options={"timeout_s": 120}, env={"FLOWER_STALL_ROUNDS": "2"}) as s:

        async def person(params: dict[str, Any]) -> Any:
            return {"answer": params["options"][2]}

        s.answer_ask = person
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.until(
            lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the run to end"
        )

        [asked] = s.asks
        assert asked["options"] == choices
        assert asked["question"].startswith("2 rounds in a row failed these same checks")
        assert s.run_phase() == "stopped"  # on the person's word, not a failure
        assert len(sim.requests_for("judge")) == 2  # stopped: no third round
