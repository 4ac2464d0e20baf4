"""A stop that follows the start at once stops the run at once.

It used to wait out the whole grace period: the run's first await (opening the progress bar) went
through asyncio.wait_for, which on Python 3.11 swallows a cancellation that lands as the awaited
answer arrives, so the run went on as if nothing had been asked. The engine and the server wait
with asyncio.timeout instead (test_no_wait_for below keeps it that way)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flower.sim import scenarios

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("attempt", range(3))
async def test_a_stop_right_after_the_start_stops_the_run(sim_factory, sim_lsp, attempt):
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim) as s:
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        stopped = await s.command("flower.stop")  # well inside the client's own request timeout
        assert stopped["ok"] is True, stopped
        await s.until(lambda: s.run_phase() == "stopped", what="the run to end stopped")
        assert (await s.command("flower.stop"))["ok"] is False  # nothing is left running


def test_no_wait_for():
    """asyncio.wait_for can lose a cancellation on 3.11; every timed wait uses asyncio.timeout."""
    found = []
    for package in (ROOT / "engine" / "flower", ROOT / "server" / "flower_lsp"):
        for path in package.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr == "wait_for":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
