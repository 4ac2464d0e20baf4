"""Notices as window/showMessage through a real pytest-lsp client: the real engine and the real
Claude Code CLI, flower.sim as the model. The editor gets a notification when the run asks and
when it finishes, whatever view is open: the server sends it without being asked for it."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types
from test_fallbacks import action, ended, stock

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


async def test_a_client_asked_by_message_request_gets_no_second_popup_for_the_question(
    sim_factory, sim_lsp, workspace
):
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, capabilities=stock(), options={"timeout_s": 60}) as s:
        asked: list[str] = []

        def person(params: types.ShowMessageRequestParams) -> Any:
            if not params.message.startswith("Flower asks"):
                return None
            asked.append(params.message)
            return action(params, 0)

        s.answer_offer = person
        await s.command("flower.start", {"ask": "写一个 hello.py"})
        await s.until(lambda: ended(s), RUN_S, what="the end")

        assert len(asked) == 1 and scenarios.QUESTION in asked[0]  # the question itself popped up
        shown = [m.message for m in s.client.messages if m.message.startswith("flower · ")]
        assert len(shown) == 1 and shown[0].startswith("flower · finished"), shown
