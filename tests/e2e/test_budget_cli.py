"""Budgets through the real `flower` command, the real Claude Code CLI and flower.sim: a run
that reaches its ceiling mid-run stops in the state "stopped: budget" (not a failed round, the
books whole), a forecast line before each round, and `flower --budget` with new money continues
the same conversation; a round ceiling stops the round that reaches it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_e2e import cli_env, flower
from test_rewind_cli import ASK, three_rounds

from flower.core.budget import BUDGET_FILE
from flower.core.lineage import Lineage

pytestmark = pytest.mark.e2e


def rows(ws: Path) -> list[dict]:
    return json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))


def measured(sim_factory, claude_root, tmp_path) -> list[dict]:
    """The manifest of the same scripted run without a budget: what each step costs."""
    ws = tmp_path / "measure"
    ws.mkdir()
    sim = sim_factory(three_rounds(0))
    done = flower("--timeout", "0", ASK, cwd=ws, env=cli_env(sim, claude_root))
    assert done.returncode == 0, done.stdout + done.stderr
    return rows(ws)


def test_a_run_stops_at_its_budget_and_continues_with_a_new_one(sim_factory, claude_root, tmp_path):
    costs = measured(sim_factory, claude_root, tmp_path)
    steps = [r["step"] for r in costs]
    first_verdict = steps.index("干活·判定#1")
    through_round_1 = sum(r["cost_usd"] for r in costs[: first_verdict + 1])
    assert through_round_1 > 0, costs
    # enough for the brief, the goal and round 1, not for the whole of round 2
    budget = round(through_round_1 + 0.2 * costs[first_verdict + 1]["cost_usd"], 6)

    ws = tmp_path / "proj"
    ws.mkdir()
    sim = sim_factory(three_rounds(1))
    env = cli_env(sim, claude_root)
    stopped = flower("--timeout", "0", ASK, "--budget", str(budget), cwd=ws, env=env)

    out = stopped.stdout + stopped.stderr
    assert stopped.returncode == 1, out
    assert "stopped: budget" in stopped.stderr and "flower --budget" in stopped.stderr
    assert "判定第 1 轮" in stopped.stdout and "判定第 2 轮" not in stopped.stdout
    assert "  $ 已花 " in stopped.stdout  # the forecast before a round
    book = json.loads((ws / "runs" / BUDGET_FILE).read_text(encoding="utf-8"))
    assert book["run_usd"] == budget and book["spent_usd"] >= budget - 1e-9
    manifest = rows(ws)
    spent = sum(r["cost_usd"] for r in manifest)
    assert spent == pytest.approx(book["spent_usd"], abs=1e-6)  # one figure, the CLI's
    assert spent < budget + costs[first_verdict + 1]["cost_usd"]  # stopped within round 2
    held = Lineage.open(ws / "runs", ws).steps["干活"]
    assert held  # the work step's conversation is kept for the next run

    # the history and the next banner say which stop it was and what continuing will do
    told = flower("history", cwd=ws, env=env)
    assert told.returncode == 0, told.stdout + told.stderr
    [line] = [ln for ln in told.stdout.splitlines() if "stopped: budget" in ln]
    assert "flower --budget" in line

    asked_before = len(sim.requests_for("coordinator"))
    again = flower("--timeout", "0", "--budget", "5", cwd=ws, env=env, stdin="")
    lines = again.stdout.splitlines()
    [banner] = [i for i, ln in enumerate(lines) if ln.startswith("<- 在 ")]
    assert lines[banner + 1].startswith("   上次停在 stopped: budget —— ")

    assert again.returncode == 0, again.stdout + again.stderr
    assert "stopped: budget" not in again.stderr  # not stopped again: only the banner recalls it
    # the first wake's stop stays in the history, the second one ran to its end
    assert flower("history", cwd=ws, env=env).stdout.count("stopped: budget") == 1
    assert "接上次" in again.stdout
    resumed = sim.requests_for("coordinator")[asked_before]
    assert resumed.headers.get("x-claude-code-session-id") == held  # the same conversation
    assert "达成" in again.stdout


def test_a_round_budget_stops_the_round_that_reaches_it(sim_factory, claude_root, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    sim = sim_factory(three_rounds(0))
    stopped = flower(
        "--timeout", "0", ASK, "--round-budget", "0.000001", cwd=ws, env=cli_env(sim, claude_root)
    )
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "stopped: budget" in stopped.stderr and "--round-budget" in stopped.stderr
    assert "判定第 1 轮" not in stopped.stdout
    # the ceiling is the CLI's own max_budget_usd: the very first step asks the model once
    assert len(rows(ws)) == 1 and rows(ws)[0]["cost_usd"] > 0
