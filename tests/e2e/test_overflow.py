"""One "prompt is too long" must not latch: the real Claude Code CLI against flower.sim's
too_long fault, through Runtime.run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flower import AgentSpec, Resilience, Runtime, Workbench
from flower.core.events import Event

pytestmark = pytest.mark.e2e

FAST = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2, probe_timeout=1.0, max_offline_wait=30)
SOLO = AgentSpec(name="solo", instructions="You are the solo test agent.", allowed_tools=["Read", "Bash"])


@pytest.fixture
def runtime(workspace: Path, tmp_path: Path):
    made: list[Runtime] = []

    def make(**kw: Any) -> Runtime:
        rt = Runtime(workspace=workspace, run_dir=tmp_path / "runs", resilience=FAST, **kw)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()


def ls() -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": "ls", "description": "look"}}}


def handoffs(events: list[Event]) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.kind == "handoff" and e.payload.get("phase") == "done"]


async def test_one_overflow_then_unrelated_failures_hands_over_once(use_sim, workspace, runtime):
    # an overload and a refusal after the handoff used to count as "context full" too: the first
    # overflow was still in the step's errors, so every later failure handed over again
    script = [ls(), {"fault": "too_long"}, ls(), {"fault": 529}, ls(), {"fault": 403}, "never reached"]
    sim = use_sim({"scripts": {"main": script}}, max_retries=0)
    rt = runtime(workbench=Workbench(workspace))
    events: list[Event] = []
    r = await rt.run(SOLO, "the task", step_name="干活", on_event=events.append)

    assert len(r.retired) == 1 and len(handoffs(events)) == 1
    # the 529 was waited out in the same, second session: a limit, not a failed attempt
    assert r.resumed and r.attempts == 1
    assert not r.ok and "403" in (r.error or "")  # the 403 is fatal: stopped, not handed over
    sessions = [q.headers.get("x-claude-code-session-id") for q in sim.requests_for("main")]
    assert len(set(sessions)) == 2 and len(sessions) == 6  # one successor, no more
    assert "prompt is too long" in " ".join(r.errors).lower()  # the overflow is still in the books


async def test_an_overflow_in_the_fresh_session_is_handed_over_again(use_sim, workspace, runtime):
    # each turn is judged alone: a second, real overflow is a second handoff
    use_sim(
        {"scripts": {"main": [ls(), {"fault": "too_long"}, ls(), {"fault": "too_long"}, "fresh again"]}},
        max_retries=0,
    )
    rt = runtime(workbench=Workbench(workspace))
    events: list[Event] = []
    r = await rt.run(SOLO, "the task", step_name="干活", on_event=events.append)

    assert r.ok and r.text == "fresh again"
    assert len(r.retired) == 2 and [h["degraded"] for h in handoffs(events)] == [True, True]


async def test_repeated_degraded_handoffs_stop_the_step_and_say_the_limit(use_sim, workspace, runtime):
    # every fresh session is refused right after its first turn: handing over would never end
    sim = use_sim({"scripts": {"main": [ls(), {"fault": "too_long"}] * 4}}, max_retries=0)
    rt = runtime(workbench=Workbench(workspace))
    events: list[Event] = []
    r = await rt.run(SOLO, "the task", step_name="干活", on_event=events.append)

    assert Runtime.MAX_DEGRADED_HANDOFFS == 2
    assert not r.ok and len(r.retired) == 2 and len(handoffs(events)) == 2
    assert "MAX_DEGRADED_HANDOFFS=2" in (r.error or "") and "prompt is too long" in (r.error or "").lower()
    assert len(sim.requests_for("main")) == 6  # three sessions of two requests, then it stopped
