"""A disk that fills in the middle of a run started from the editor: the run ends as failed with
the line that names the folder and what to do (never as finished), and once space is freed the
next Continue resumes the same work session. The real engine, the real CLI, flower.sim."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flower.core.lineage import Lineage
from flower.sim import disks, scenarios

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(disks.available() is not None, reason=str(disks.available())),
]

RUN_S = 240.0
LIMITS = {"FLOWER_DISK_WARN_MB": "1", "FLOWER_DISK_FLOOR_MB": "0"}


@pytest.fixture
def disk() -> Iterator[Path]:
    with disks.tmpfs(24 << 20) as point:
        yield point


def ended(s: Any) -> bool:
    return s.run_phase() in ("finished", "failed", "stopped")


async def test_a_full_disk_ends_the_run_as_failed_with_its_line_and_continue_resumes(
    sim_factory, sim_lsp, workspace, disk
):
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    run_dir = disk / "runs"
    options = {"timeout_s": 0, "run_dir": str(run_dir)}
    async with sim_lsp(sim, options=options, env=LIMITS) as s:
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.until(lambda: len(sim.requests_for("coordinator")) >= 2, RUN_S, what="the work's second turn")
        disks.fill(disk)
        await s.until(lambda: ended(s), RUN_S, what="the run to end")
        end = s.events_of("run")[-1]
        assert end["payload"]["phase"] == "failed", end
        text = end["text"]  # the suite's client speaks English
        assert "cannot write into" in text and str(run_dir) in text and "free some space" in text
        work = Lineage.open(run_dir, workspace).steps["干活"]

    disks.free(disk)
    async with sim_lsp(sim, options=options, env=LIMITS) as s:
        seen = len(sim.requests)
        assert (await s.command("flower.continue"))["ok"] is True
        await s.until(lambda: ended(s), RUN_S, what="the continued run to end")
        assert s.run_phase() == "finished", s.events_of("run")[-1]
        resumed = [q for q in sim.requests[seen:] if q.actor == "coordinator"]
        assert resumed and resumed[0].headers.get("x-claude-code-session-id") == work
