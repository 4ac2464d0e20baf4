"""The history read back from disk tells what the run's events told while it ran: the real engine
and Claude Code CLI, flower.sim scripting a question mid-work, two rejected rounds, a handoff
through a small window, and a second wake."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from flower.core.agent import HandoffPolicy
from flower.core.events import ContextUpdate, Event, HandoffDone, Question, VerdictGiven
from flower.core.lineage import Lineage
from flower.core.runtime import Runtime
from flower.sim.long_run import CHECKS, WORK_QUESTION, long_run_scenario
from flower.workflow.history import read_history
from flower.workflow.starter import starter_flow

pytestmark = pytest.mark.e2e

WINDOW = 200_000  # the handoff threshold is 150K


async def one_run(workspace: Path, run_dir: Path, ask: str, events: list[Event]) -> None:
    flow = starter_flow(ask, workspace=workspace, run_dir=run_dir, timeout_s=30, rounds=3)
    channel, workbench = flow.channel, flow.workbench
    assert channel is not None and workbench is not None  # the starter flow has both
    runtime = Runtime(
        workspace=workspace,
        run_dir=run_dir,
        workbench=workbench,
        trim=True,
        handoff=HandoffPolicy(window=WINDOW),
    )

    async def person() -> None:
        while True:
            question = await channel.next_ask()
            if question is not None:
                channel.answer(question.id, question.options[0])

    helper = asyncio.create_task(person())
    try:
        await flow.run(runtime, on_event=events.append)
    finally:
        helper.cancel()
        runtime.close()


def readings(events: list[Event]) -> list[tuple[int, str, str | None]]:
    """The context meter's readings, one per model turn (a turn's content blocks repeat it)."""
    out: list[tuple[int, str, str | None]] = []
    for e in events:
        if isinstance(e, ContextUpdate) and (not out or out[-1] != (e.used, e.step, e.session_id)):
            out.append((e.used, e.step, e.session_id))
    return out


async def test_the_history_on_disk_tells_what_the_events_told(use_sim, workspace, tmp_path):
    use_sim(long_run_scenario(rounds=3, threshold=150_000, start=110_000, growth=12_000, wakes=1))
    run_dir = tmp_path / "runs"
    first: list[Event] = []
    second: list[Event] = []
    await one_run(workspace, run_dir, "写一个 hello.py", first)
    await one_run(workspace, run_dir, "", second)

    h = read_history(workspace, run_dir=run_dir, policy=HandoffPolicy(window=WINDOW))
    rows = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    lineage = Lineage.open(run_dir, workspace)

    # wakes and sessions as the lineage and the manifest say
    assert (h.woke, len(h.wakes), h.sessions) == (2, lineage.woke, lineage.steps)
    assert [w.run for w in h.wakes] == list(dict.fromkeys(r["run"] for r in rows))
    assert [[s.name for s in w.steps] for w in h.wakes] == [["确认需求", "设定目标", "干活"], ["干活"]]
    work = h.wakes[0].steps[2]
    assert [r.step for r in work.rounds] == ["干活", "干活#round2", "干活#round3"]
    by_step = {r["step"]: r for r in rows if r["run"] == h.wakes[0].run}
    for record in work.rounds:
        row = by_step[record.step]
        assert (record.session_id, record.cost_usd, record.num_turns, record.retired) == (
            row["session_id"],
            row["cost_usd"],
            row["num_turns"],
            row["retired"],
        )
    assert h.cost_usd == pytest.approx(sum(r["cost_usd"] for r in rows))
    assert h.num_turns == sum(r["num_turns"] for r in rows)

    # the context of every main-thread turn, as the meter read it live
    assert [(t.used, t.step, t.session_id) for t in h.turns] == readings(first) + readings(second)

    # the verdicts as the judge gave them
    given = [e for e in first + second if isinstance(e, VerdictGiven)]
    judged = [r.verdict for w in h.wakes for s in w.steps for r in s.rounds if r.verdict is not None]
    assert [(v.state, v.reason, v.failed, v.round, v.session_id) for v in judged] == [
        (e.state, e.reason, e.failed, e.round, e.session_id) for e in given
    ]
    # and their evidence, from the trail kept beside each judge's row
    assert [(v.evidence, v.trail, v.unproven) for v in judged] == [
        (e.evidence, e.trail, e.unproven) for e in given
    ]
    assert all(e.backed for e in judged[-1].evidence) and judged[-1].trail
    assert [v.state for v in judged] == ["not_yet", "not_yet", "achieved", "achieved"]
    assert judged[0].failed == [CHECKS[1]]

    # the handoff, its document and the successor's generation
    (done,) = [e for e in first if isinstance(e, HandoffDone)]
    (handoff,) = [h_ for r in work.rounds for h_ in r.handoffs]
    assert (handoff.step, handoff.retired, handoff.path, handoff.degraded) == (
        done.step,
        done.retired,
        done.path,
        False,
    )
    assert handoff.used >= 150_000 and handoff.generation == 2
    assert [t.generation for t in h.turns if t.lane == "干活"][-1] == 2

    # the questions where they were asked, settled as they were
    settled = [e for e in first if isinstance(e, Question) and e.state != "asked"]
    placed: dict[str, list[Any]] = {
        r.step: r.questions for w in h.wakes for s in w.steps for r in s.rounds if r.questions
    }
    assert {step: [(q.question, q.state, q.answer) for q in qs] for step, qs in placed.items()} == {
        "确认需求": [(settled[0].text, "answered", settled[0].answer)],
        "干活#round2": [(WORK_QUESTION, "answered", "中文")],
    }
    assert [m.kind for m in h.marks].count("verdict") == 4 and [m.kind for m in h.marks].count("handoff") == 1
