"""Runtime.run end to end: the real CLI, flower.sim as the model."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from flower import AgentSpec, HandoffPolicy, Resilience, Runtime, Workbench
from flower.core.delivery import Undelivered
from flower.core.events import Event

pytestmark = pytest.mark.e2e

FAST = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2, probe_timeout=1.0, max_offline_wait=30)


@pytest.fixture
def make_runtime(workspace: Path, tmp_path: Path):
    made: list[Runtime] = []

    def make(**kw: Any) -> Runtime:
        kw.setdefault("resilience", FAST)
        rt = Runtime(workspace=workspace, run_dir=tmp_path / "runs", **kw)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()


def bash(command: str) -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": "run"}}}


SOLO = AgentSpec(
    name="solo", instructions="You are the solo test agent.", allowed_tools=["Read", "Bash", "Write"]
)


async def test_a_step_succeeds_and_keeps_the_books(use_sim, workspace, make_runtime):
    sim = use_sim(
        {
            "scripts": {
                "main": [
                    bash("echo hi > hi.txt"),
                    {"text": "done: hi.txt", "usage": {"input_tokens": 900, "cache_read_input_tokens": 4100}},
                ]
            }
        }
    )
    rt = make_runtime()
    events: list[Event] = []
    r = await rt.run(SOLO, "write hi.txt", step_name="干活", on_event=events.append)

    assert r.ok and r.error is None and r.text == "done: hi.txt"
    assert (workspace / "hi.txt").read_text() == "hi\n"
    assert r.session_id and r.attempts == 1 and not r.resumed and r.retired == []
    assert r.num_turns == 2 and r.cost_usd > 0 and r.context == 5000
    assert rt.total_cost() == round(r.cost_usd, 4)
    rows = json.loads(rt.manifest_path.read_text())
    assert [(row["step"], row["session_id"], row["run"], row["ok"]) for row in rows] == [
        ("干活", r.session_id, rt.run_id, True)
    ]
    assert rows[0]["duration_s"] == r.duration_s > 0
    # a context figure after every model turn of the main thread
    figures = [e.payload for e in events if e.kind == "system" and e.payload.get("subtype") == "context"]
    assert (
        len(figures) == 2
        and figures[-1]["used"] == 5000
        and figures[-1]["step"] == "干活"
        and figures[-1]["generation"] == 1
    )
    assert rt.has_session(r.session_id) and rt.context_of(r.session_id) == 5000
    assert len(sim.requests) == 2


async def test_allowed_tools_read_really_stops_writes(use_sim, workspace, make_runtime):
    sim = use_sim(
        {
            "scripts": {
                "main": [
                    {
                        "tool": {
                            "name": "Write",
                            "input": {"file_path": str(workspace / "x.txt"), "content": "x"},
                        }
                    },
                    bash("touch y.txt"),
                    "gave up",
                ]
            }
        }
    )
    reader = AgentSpec(name="读者", instructions="read only", allowed_tools=["Read"])
    rt = make_runtime()
    r = await rt.run(reader, "try to write")

    assert r.ok and not (workspace / "x.txt").exists() and not (workspace / "y.txt").exists()
    # a role with Read only is not even offered Write or Bash (the session's base tool set)
    assert "Write" not in sim.last().tool_names and "Bash" not in sim.last().tool_names
    results = sim.last().tool_results()
    assert len(results) == 2 and all(t.get("is_error") for t in results)
    assert all("No such tool available" in str(t["content"]) for t in results)


async def test_the_coordinator_cannot_do_hands_on_work_but_its_worker_can(use_sim, workspace, make_runtime):
    from claude_agent_sdk import AgentDefinition

    sim = use_sim(
        {
            "actors": {"coder": {"system": "You are the runtime coder"}},
            "scripts": {
                "main": [
                    bash("echo boss > boss.txt"),
                    {
                        "tool": {
                            "name": "Write",
                            "input": {"file_path": str(workspace / "boss2.txt"), "content": "x"},
                        }
                    },
                    {
                        "tool": {
                            "name": "Agent",
                            "input": {
                                "subagent_type": "coder",
                                "description": "d",
                                "prompt": "write it",
                                "run_in_background": False,
                            },
                        }
                    },
                    "the coder wrote it",
                ],
                "coder": [bash("echo worker > worker.txt"), "wrote worker.txt"],
            },
        }
    )
    boss = AgentSpec(
        name="协调者",
        instructions="coordinate",
        allowed_tools=["Agent", "Read", "Bash"],
        delegate_only=True,
        agents={
            "coder": AgentDefinition(
                description="writes", prompt="You are the runtime coder.", tools=["Bash", "Write"]
            )
        },
    )
    rt = make_runtime(workbench=True)
    r = await rt.run(boss, "get it done")

    assert r.ok
    assert not (workspace / "boss.txt").exists() and not (workspace / "boss2.txt").exists()
    assert (workspace / "worker.txt").read_text() == "worker\n"
    shown = [str(t["content"]) for t in sim.last().tool_results()]
    assert sum("Agent" in s for s in shown[:2]) == 2  # the denial says what to do instead: delegate


async def test_a_529_is_waited_out_and_the_same_session_resumed(use_sim, workspace, make_runtime):
    sim = use_sim(
        {"scripts": {"main": [bash("echo one > one.txt"), {"fault": 529}, "finished after the outage"]}},
        max_retries=0,
    )
    rt = make_runtime()
    events: list[Event] = []
    r = await rt.run(SOLO, "do it", on_event=events.append)

    # an overload is a limit (issue 26): waited out, never a failed attempt
    assert r.ok and r.attempts == 1 and r.resumed is True
    assert r.text == "finished after the outage"
    waits = [e.payload for e in events if e.kind == "retry" and e.payload.get("subtype") == "limit"]
    assert [(w["phase"], w["limit"]) for w in waits] == [("wait", "overloaded"), ("resumed", "overloaded")]
    assert not [e for e in events if e.kind == "retry" and "kind" in e.payload]  # no failed attempt said
    last = sim.last()
    assert Resilience().resume_prompt in last.last_user_text  # resumed, not restarted
    assert "echo one > one.txt" in last.all_text  # the earlier history came back
    assert "API Error" not in last.all_text  # the synthetic error never reaches the model again
    row = json.loads(rt.manifest_path.read_text())[-1]
    assert row["attempts"] == 1 and row["resumed"] is True and row["ok"] is True
    assert any("529" in e for e in row["errors"])  # the books still say what happened


async def test_a_dropped_connection_and_an_api_that_goes_away_are_survived(use_sim, workspace, make_runtime):
    sim = use_sim(
        {
            "scripts": {
                "main": [
                    {"fault": "drop", "after_events": 2},
                    {"fault": "away", "seconds": 2.0},
                    "still here",
                ]
            }
        },
        max_retries=0,
    )
    rt = make_runtime()
    events: list[Event] = []
    r = await rt.run(SOLO, "keep going", on_event=events.append)

    assert r.ok and r.text == "still here"
    # the CLI re-sends a broken stream without streaming itself; that request met the outage
    assert [(q.reply, q.stream) for q in sim.requests] == [
        ("fault:drop", True),
        ("fault:away", False),
        ("text", True),
    ]
    assert r.attempts == 2 and r.resumed
    offline = [e.text for e in events if e.kind == "retry" and e.payload.get("phase") == "offline"]
    assert (
        len(offline) == 2 and f"127.0.0.1:{sim.port}" in offline[0]
    )  # waited for the endpoint, said so twice
    assert (
        len({q.headers.get("x-claude-code-session-id") for q in sim.requests}) == 1
    )  # one session throughout


async def test_a_401_stops_at_once_with_a_clear_message(use_sim, workspace, make_runtime):
    sim = use_sim({"scripts": {"main": [{"fault": 401, "times": 10}]}}, max_retries=0)
    rt = make_runtime()
    r = await rt.run(SOLO, "hi")

    assert not r.ok and r.attempts == 1
    assert "Invalid API key" in r.error
    assert len(sim.requests) == 1


async def test_a_human_interrupt_resumes_the_same_session_with_their_words(use_sim, workspace, make_runtime):
    sim = use_sim(
        {"scripts": {"main": [bash("python3 -c 'import time; time.sleep(30)'"), "switching to the new plan"]}}
    )
    rt = make_runtime()
    started = threading.Event()

    def watch(event: Event) -> None:
        if event.kind == "tool_call" and event.tool == "Bash":
            started.set()

    async def person() -> None:
        await asyncio.to_thread(started.wait, 30)
        await asyncio.sleep(0.5)
        threading.Thread(target=rt.interrupt, args=("换个方案:不要等了",)).start()  # from another thread

    helper = asyncio.create_task(person())
    r = await rt.run(SOLO, "wait for it", on_event=watch)
    await helper

    assert r.ok and r.text == "switching to the new plan"
    assert r.attempts == 1  # an interruption is not a failed attempt
    last = sim.last()
    assert "换个方案:不要等了" in last.last_user_text and Runtime.INTERRUPT_NOTE in last.last_user_text
    assert "time.sleep(30)" in last.all_text  # same session
    assert len({req.headers.get("x-claude-code-session-id") for req in sim.requests}) == 1


async def test_an_interrupt_settles_once_the_model_answered_the_words_or_says_the_step_is_over(
    use_sim, workspace, make_runtime
):
    sim = use_sim(
        {"scripts": {"main": [bash("python3 -c 'import time; time.sleep(30)'"), "switching to the new plan"]}}
    )
    rt = make_runtime()
    started = threading.Event()
    deliveries: list[Future[None]] = []

    def watch(event: Event) -> None:
        if event.kind == "tool_call" and event.tool == "Bash":
            started.set()

    async def person() -> None:
        await asyncio.to_thread(started.wait, 30)
        deliveries.append(await asyncio.to_thread(rt.interrupt, "换个方案"))

    helper = asyncio.create_task(person())
    r = await rt.run(SOLO, "wait for it", on_event=watch)
    await helper
    assert r.ok
    assert deliveries[0].result(timeout=0) is None  # settled before the step returned: delivered
    assert "换个方案" in sim.last().last_user_text
    late = rt.interrupt("太晚了")  # no step in flight: said so at once, for the inbox
    with pytest.raises(Undelivered) as missed:
        late.result(timeout=0)
    assert missed.value.step_over


HANDOFF_REPLY = (
    "## 现在在做什么\n写 report.md\n\n## 已经定下的\n用 markdown\n\n## 走不通的路\n无\n\n"
    "## 下一步\n补完第二节\n\n## 现场\nreport.md 写了一半"
)


async def test_a_full_context_is_handed_over_to_a_new_session(use_sim, workspace, make_runtime):
    sim = use_sim(
        {
            "scripts": {
                "main": [
                    {
                        "text": "working on report.md",
                        "usage": {"input_tokens": 2000, "cache_read_input_tokens": 50_000},
                    },
                    "continued from the handoff",
                ]
            },
            "rules": [{"when": {"last_user_contains": "写一份交接书"}, "reply": HANDOFF_REPLY, "times": 1}],
        }
    )
    wb = Workbench(workspace)
    rt = make_runtime(
        workbench=wb, handoff=HandoffPolicy(window=100_000, headroom=50_000)
    )  # at 50K, warn at 30K
    events: list[Event] = []
    r = await rt.run(SOLO, "write report.md", step_name="干活", on_event=events.append)

    assert r.ok and r.text == "continued from the handoff"
    assert len(r.retired) == 1 and r.retired[0] != r.session_id
    doc = (wb.notes / "交接-干活.md").read_text()
    assert "补完第二节" in doc and "降级" not in doc
    phases = [e.payload["phase"] for e in events if e.kind == "handoff"]
    assert phases == ["near", "writing", "done"]
    first_of_new = next(q for q in sim.requests if q.headers.get("x-claude-code-session-id") == r.session_id)
    assert "补完第二节" in first_of_new.last_user_text  # the new session starts from the document
    assert "working on report.md" not in first_of_new.all_text  # and not from the old history
    assert r.attempts == 1


async def test_prompt_too_long_triggers_a_degraded_handoff(use_sim, workspace, make_runtime):
    use_sim({"scripts": {"main": [bash("ls"), {"fault": "too_long"}, "fresh start worked"]}}, max_retries=0)
    wb = Workbench(workspace)
    rt = make_runtime(workbench=wb)
    events: list[Event] = []
    r = await rt.run(SOLO, "the original task, described at length", step_name="干活", on_event=events.append)

    assert r.ok and len(r.retired) == 1
    done = next(e.payload for e in events if e.kind == "handoff" and e.payload.get("phase") == "done")
    assert done["degraded"] is True
    assert "the original task, described at length" in (wb.notes / "交接-干活.md").read_text()


async def test_handoff_stops_at_max_generations(use_sim, workspace, make_runtime):
    use_sim(
        {
            "default": {"text": "huge", "usage": {"input_tokens": 20_000}},
            "rules": [{"when": {"last_user_contains": "写一份交接书"}, "reply": HANDOFF_REPLY}],
        }
    )
    rt = make_runtime(handoff=HandoffPolicy(window=60_000, headroom=50_000, max_generations=2))
    r = await rt.run(SOLO, "go")

    assert not r.ok and len(r.retired) == 2
    assert "max_generations=2" in r.error and "window" in r.error


async def test_no_credential_reaches_the_manifest_even_when_the_api_echoes_it(
    use_sim, make_runtime, monkeypatch
):
    secret = "sk-ant-api03-" + "Q" * 40
    use_sim(
        {
            "scripts": {
                "main": [
                    {"fault": 400, "times": 10, "message": f"bad request for key {secret} (Bearer {secret})"}
                ]
            }
        },
        max_retries=0,
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    rt = make_runtime()
    r = await rt.run(SOLO, "hi")

    assert not r.ok and secret in (r.error or "")  # the caller in this process may see it
    manifest = rt.manifest_path.read_text()
    assert secret not in manifest and "[redacted]" in manifest  # what is written down never has it
