"""A folder's budget from the editor's settings (`flower.budget` as InitOptions.budget_usd):
the real engine and the real Claude Code CLI stop the run in the phase `budget` with the
"stopped: budget" line, and a budget changed after initialize applies to the next run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from test_starter import REQUEST, RUN_S, answer_the_clarifier

from flower.core.budget import BUDGET_FILE
from flower.sim import scenarios

pytestmark = pytest.mark.e2e

ENDED = ("finished", "failed", "stopped", "budget")


async def ended(s: Any, runs: int) -> dict[str, Any]:
    def done() -> bool:
        return len([e for e in s.events_of("run") if e["payload"]["phase"] in ENDED]) >= runs

    await s.until(done, RUN_S, what=f"run {runs} to end")
    return [e for e in s.events_of("run") if e["payload"]["phase"] in ENDED][-1]


async def test_a_budget_setting_stops_the_run_in_its_own_phase(sim_factory, sim_lsp, workspace: Path):
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, options={"timeout_s": 60, "budget_usd": 0.000001}) as s:
        answer_the_clarifier(s)
        assert (await s.command("flower.start", {"ask": REQUEST}))["ok"] is True
        end = await ended(s, 1)

        assert end["payload"]["phase"] == "budget", end
        assert end["text"].startswith("stopped: budget"), end
        assert end["payload"]["budget"] == end["text"]
        book = json.loads((workspace / "runs" / BUDGET_FILE).read_text(encoding="utf-8"))
        assert book["run_usd"] == 0.000001 and book["spent_usd"] > 0
        # the CLI was given the ceiling: one reply of the model, then no further request
        assert len(sim.requests_for("clarifier")) == 1

        # cleared in the settings (0 is "no ceiling"): the next run goes to its end
        s.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"flower": {"timeout_s": 60, "budget_usd": 0}})
        )
        assert (await s.command("flower.start", {"ask": REQUEST}))["ok"] is True
        again = await ended(s, 2)
        assert again["payload"]["phase"] == "finished", again
