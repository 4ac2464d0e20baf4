"""Say answers only once the words reached the model, through the real engine, the real Claude
Code CLI and flower.sim: words said mid-step are answered "delivered" only after the model was
shown them, an 8 MB Say the CLI refuses ("Prompt is too long") is answered "not delivered"
with that reason, and a 20 MB one, whose echo from the CLI could be a line past the SDK's bound
(which would end the step), is refused before the turn is touched; the run goes on and finishes
either way. On a machine too busy for the answer within 25 s, the reply says "not yet" and the
outcome comes as a message: the same words."""

from __future__ import annotations

import pytest
from test_starter import REQUEST, RUN_S, answer_the_clarifier, finished

from flower.sim import scenarios
from flower.sim.scenario import ScenarioData

pytestmark = pytest.mark.e2e

MB = 1000 * 1000


def mid_turn_scenario() -> ScenarioData:
    scenario = scenarios.starter_scenario(verdicts=("achieved",))
    scenario["scripts"]["coordinator"][1]["delay"] = 120  # mid-turn when the person speaks
    return scenario


@pytest.mark.parametrize(
    ("size", "answer"),
    [
        (100_000, "Delivered: the step resumed with your words."),
        (8 * MB, "Not delivered: Prompt is too long."),
        (20 * MB, "Too long to say (19 MiB); words can be at most 16 MiB (half of FLOWER_MAX_MESSAGE_MB"),
    ],
    ids=["100 KB", "8 MB", "20 MB"],
)
async def test_a_say_is_answered_after_it_reached_the_model_or_says_why_not(
    sim_factory, sim_lsp, size, answer
):
    delivered = answer.startswith("Delivered")
    sim = sim_factory(mid_turn_scenario())
    async with sim_lsp(sim, options={"timeout_s": 60}) as s:
        answer_the_clarifier(s)
        await s.command("flower.start", {"ask": REQUEST})
        await s.until(lambda: len(sim.requests_for("coordinator")) == 2, RUN_S, what="the second turn")
        words = "HEAD-OF-SAY " + "x" * size + " TAIL-OF-SAY"
        said = await s.command("flower.say", {"text": words}, timeout=60)
        if said["message"].startswith("Not delivered yet"):  # a busy machine: told later instead
            assert said["ok"] is False
            later = await s.until(
                lambda: [
                    m.message
                    for m in s.client.messages
                    if m.message.startswith(("Delivered", "Not delivered:"))
                ],
                RUN_S,
            )
            said = {"ok": later[0].startswith("Delivered"), "message": later[0], "offer": None, "uri": None}
        seen = [r for r in sim.requests if "TAIL-OF-SAY" in r.all_text]
        if delivered:
            assert said == {
                "ok": True,
                "message": "Delivered: the step resumed with your words.",
                "offer": None,
                "uri": None,
            }
            assert seen and words in seen[0].all_text  # shown to the model, whole, before the answer
        else:
            assert said["ok"] is False, said
            assert said["message"].startswith(answer), said
            assert not seen
        await finished(s)  # the step went on either way
