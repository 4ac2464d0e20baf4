"""Usage limits, rate limits and overloads against the real Claude Code CLI and flower.sim: the
step waits until the reset and resumes the same session; no attempt is spent; a flower killed
during the wait and started again waits for the same reset."""

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

from flower import AgentSpec, Resilience, Runtime
from flower.core.events import Event, LimitWait
from flower.core.limits import LIMIT_FILE

pytestmark = pytest.mark.e2e

FAST = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2, probe_timeout=1.0, max_offline_wait=30)
SOLO = AgentSpec(name="solo", instructions="You are the solo test agent.", allowed_tools=["Read", "Bash"])
CHILD = Path(__file__).with_name("step_child.py")
USAGE = "usage limit reached, resets at {reset_clock}"


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


def sessions(sim: Any) -> list[str | None]:
    return [q.headers.get("x-claude-code-session-id") for q in sim.requests_for("main")]


class Clocked:
    """Events with the wall-clock moment each one arrived."""

    def __init__(self) -> None:
        self.events: list[tuple[float, Event]] = []

    def __call__(self, ev: Event) -> None:
        self.events.append((time.time(), ev))

    def waits(self) -> list[tuple[float, LimitWait]]:
        return [(t, e) for t, e in self.events if isinstance(e, LimitWait)]


async def test_a_usage_limit_is_waited_out_and_the_same_session_goes_on(use_sim, runtime):
    sim = use_sim(
        {
            "scripts": {
                "main": [ls(), {"fault": 429, "resets_in": 4, "message": USAGE}, "finished after the reset"]
            }
        },
        max_retries=0,
    )
    rt = runtime()
    seen = Clocked()
    began = time.time()
    r = await rt.run(SOLO, "the task", step_name="干活", on_event=seen)

    assert r.ok and r.text == "finished after the reset"
    assert r.attempts == 1 and r.resumed and not r.retired  # no attempt spent, no handoff
    (_t_wait, wait), (t_done, done) = seen.waits()
    assert (wait.phase, wait.limit, done.phase) == ("wait", "usage", "resumed")
    assert began < wait.until <= began + 30 and done.until == wait.until
    assert "usage limit reached" in (wait.error or "")
    assert t_done >= wait.until  # waited until the moment the message named
    after = sim.requests_for("main")[-1]
    assert after.wall >= wait.until and after.reply == "text"
    assert len(set(sessions(sim))) == 1  # the same session, resumed
    assert any(u.get("name") == "Bash" for u in after.tool_uses())  # with the work done before the limit
    assert not (rt.run_dir / LIMIT_FILE).exists()  # the wait is over


async def test_a_429_with_retry_after_waits_what_it_says(use_sim, runtime):
    # the CLI retries once itself, after the retry-after; refused again, flower waits as long
    sim = use_sim(
        {"scripts": {"main": [{"fault": 429, "retry_after": 2, "times": 2}, "after the rate limit"]}},
        max_retries=1,
    )
    rt = runtime()
    seen = Clocked()
    r = await rt.run(SOLO, "the task", on_event=seen)

    assert r.ok and r.text == "after the rate limit" and r.attempts == 1
    (_t_wait, wait), (t_done, _done) = seen.waits()
    assert wait.limit == "rate" and 1.5 <= wait.seconds <= 4.0  # the retry-after, with the CLI's jitter
    assert t_done >= wait.until
    assert [q.reply for q in sim.requests_for("main")] == ["fault:429", "fault:429", "text"]


async def test_an_overload_is_waited_out_too(use_sim, runtime):
    sim = use_sim({"scripts": {"main": [ls(), {"fault": 529}, "after the overload"]}}, max_retries=0)
    rt = runtime()
    seen = Clocked()
    r = await rt.run(SOLO, "the task", on_event=seen)

    assert r.ok and r.text == "after the overload" and r.attempts == 1 and r.resumed
    assert [e.limit for _t, e in seen.waits()] == ["overloaded", "overloaded"]
    assert len(set(sessions(sim))) == 1


async def test_a_reset_beyond_the_longest_wait_stops_with_what_to_do(use_sim, runtime, monkeypatch):
    monkeypatch.setenv("FLOWER_LIMIT_WAIT_MAX", "5")
    use_sim(
        {"scripts": {"main": [{"fault": 429, "resets_in": 3600, "message": USAGE}, "never"]}}, max_retries=0
    )
    rt = runtime()
    seen = Clocked()
    r = await rt.run(SOLO, "the task", on_event=seen)

    assert not r.ok and not seen.waits()
    assert "FLOWER_LIMIT_WAIT_MAX" in (r.error or "") and "usage limit reached" in (r.error or "")


def child(workspace: Path, run_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(workspace), str(run_dir), "干活", "the task", "--resume-lineage"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
        start_new_session=True,
    )


async def until_exists(path: Path, proc: subprocess.Popen[str], within: float = 180.0) -> None:
    deadline = time.monotonic() + within
    while not path.exists():  # noqa: ASYNC240 (a stat per tenth of a second, while a child works)
        assert proc.poll() is None, f"the child ended before it waited: {proc.communicate()}"
        assert time.monotonic() < deadline, f"{path} did not appear within {within:g} s"
        await asyncio.sleep(0.1)


async def test_a_flower_killed_during_the_wait_waits_for_the_same_reset_when_run_again(
    use_sim, workspace, tmp_path
):
    sim = use_sim(
        {
            "scripts": {
                "main": [ls(), {"fault": 429, "resets_in": 45, "message": USAGE}, "finished after the reset"]
            }
        },
        max_retries=0,
    )
    run_dir = tmp_path / "runs"
    first = child(workspace, run_dir)
    try:
        await until_exists(run_dir / LIMIT_FILE, first)
        kept = json.loads((run_dir / LIMIT_FILE).read_text())
        os.killpg(first.pid, signal.SIGKILL)  # no chance to tidy up
        first.wait(60)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert kept["kind"] == "usage" and kept["step"] == "干活"
    assert json.loads((run_dir / LIMIT_FILE).read_text()) == kept  # the moment outlives the process
    served = len(sim.requests_for("main"))
    assert [q.reply for q in sim.requests_for("main")] == ["tool_use:Bash", "fault:429"]

    started_again = time.time()
    assert started_again < kept["until"], "the first flower reached its wait too late to show anything"
    second = child(workspace, run_dir)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["ok"] and result["text"] == "finished after the reset" and result["attempts"] == 1
    later = sim.requests_for("main")[served:]
    assert later and all(q.wall >= kept["until"] for q in later)  # nothing was asked before the reset
    assert len(set(sessions(sim))) == 1  # the same session, through the lineage
    assert any(u.get("name") == "Bash" for u in later[0].tool_uses())
    assert not (run_dir / LIMIT_FILE).exists()
