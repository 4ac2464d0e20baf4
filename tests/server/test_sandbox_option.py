"""The editor's `sandbox` initialization option reaches the real engine: `require` on a machine
without bubblewrap refuses to start, `auto` there says so once in the Flower output, and a bad
value is reported and replaced by the default."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from flower.sim import scenarios

pytestmark = pytest.mark.e2e


def without_sandbox_tools(tmp_path: Path) -> dict[str, str]:
    """A PATH with what a Bash command needs, but no bubblewrap or socat."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "env", "cat", "ls", "echo", "git", "uname", "true"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return {"PATH": str(bin_dir)}


async def test_require_without_bubblewrap_refuses_to_start_and_says_why(sim_factory, sim_lsp, tmp_path):
    sim = sim_factory(scenarios.starter_scenario())
    env = without_sandbox_tools(tmp_path)
    async with sim_lsp(sim, env=env, options={"sandbox": "require", "timeout_s": 0}) as s:
        result = await s.command("flower.start", {"ask": "写一个 hello.py"})
    assert result["ok"] is False
    assert "the sandbox is required but bubblewrap (bwrap) and socat are missing" in result["message"]
    assert sim.requests == []  # refused before anything was asked of the model


async def test_auto_without_bubblewrap_says_so_once_in_the_output(sim_factory, sim_lsp, tmp_path):
    sim = sim_factory(scenarios.starter_scenario())
    async with sim_lsp(sim, env=without_sandbox_tools(tmp_path), options={"timeout_s": 0}) as s:
        sent = s.record_all()
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.until(lambda: s.events_of("step"), 60, what="the first step")
        await s.command("flower.stop")
    notes = [
        m.params.message
        for m in sent
        if getattr(m, "method", "") == types.WINDOW_LOG_MESSAGE and "no sandbox" in m.params.message
    ]
    assert len(notes) == 1 and notes[0].endswith(
        "flower: no sandbox: bubblewrap (bwrap) and socat are missing; commands run unconfined"
    )


async def test_a_bad_sandbox_value_is_reported_and_the_default_used(sim_factory, sim_lsp, tmp_path):
    sim = sim_factory(scenarios.starter_scenario())
    # no bubblewrap here: had "sometimes" been taken for require, the start would be refused
    async with sim_lsp(sim, env=without_sandbox_tools(tmp_path), options={"sandbox": "sometimes"}) as s:

        def refusal() -> str | None:
            said = [m.message for m in s.client.messages if "ignoring initializationOptions" in m.message]
            return said[0] if said else None

        await s.until(refusal, what="the bad option to be reported")
        assert "'require', 'auto', 'off'" in (refusal() or "")
        assert (await s.command("flower.start", {"ask": "写一个 hello.py"}))["ok"] is True
        await s.command("flower.stop")
