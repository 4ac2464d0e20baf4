"""Notices as window/showMessage through a real pytest-lsp client: the real engine and the real
Claude Code CLI, flower.sim as the model. The editor gets a notification when the run asks and
when it finishes, whatever view is open: the server sends it without being asked for it."""

from __future__ import annotations

import pytest
from lsprotocol import types

from flower.sim import scenarios

pytestmark = pytest.mark.e2e

RUN_S = 180.0


async def test_the_question_and_the_end_are_shown_as_messages(sim_factory, sim_lsp, workspace):
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:

        async def person(params):
            return {"answer": params["options"][0]}

        s.answer_ask = person
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.until(lambda: s.run_phase() in ("finished", "failed", "stopped"), RUN_S, what="the end")
        assert s.run_phase() == "finished", s.events_of("run")[-1]

        shown = [(m.type, m.message) for m in s.client.messages if m.message.startswith("flower · ")]
        assert shown[0] == (types.MessageType.Info, f"flower · asking you: {scenarios.QUESTION}")
        kind, last = shown[-1]
        assert kind == types.MessageType.Info and last.startswith("flower · finished")
        assert len(shown) == 2, shown  # nothing else of the run is a notice
