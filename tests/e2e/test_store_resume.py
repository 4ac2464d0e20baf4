"""Resume from SQLite: what the model is shown again, and what the store still keeps."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import HookContext, HookInput, HookJSONOutput, HookMatcher

from flower import AgentSpec, EphemeralPolicy, Resilience, Runtime, TrimPolicy
from flower.sim.cache import SimClock
from flower.sim.server import SimServer
from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.e2e
UseSim = Callable[..., SimServer]


def bash(command: str) -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": "run"}}}


async def no_rm(data: HookInput, tool_use_id: str | None, ctx: HookContext) -> HookJSONOutput:
    tool_input = data.get("tool_input")
    if isinstance(tool_input, dict) and str(tool_input.get("command", "")).startswith("rm "):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no rm in this test",
            }
        }
    return {}


async def test_resume_from_the_store_feeds_back_pruned_trimmed_and_expired_history(
    use_sim: UseSim, workspace: Path, claude_root: Path, tmp_path: Path
) -> None:
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(workspace)], check=True)
    (workspace / "tracked.txt").write_text("x")
    sim = use_sim(
        {
            "scripts": {
                "main": [
                    bash("git status"),
                    bash("seq 1 3000"),
                    bash("rm a.txt"),
                    bash("rm b.txt"),
                    {"fault": 500},
                    "first run done",
                    "second run sees a clean history",
                ]
            }
        },
        max_retries=0,
    )
    spec = AgentSpec(
        name="worker",
        instructions="store test",
        allowed_tools=["Bash", "Read"],
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[no_rm])]},
    )
    rt = Runtime(
        workspace=workspace,
        run_dir=tmp_path / "runs",
        trim=TrimPolicy(keep_recent=1),
        ephemeral=EphemeralPolicy(keep_recent=1),
        resilience=Resilience(base_delay=0.05, probe_interval=0.2),
    )
    clock = SimClock()
    assert isinstance(rt.store, PruningSessionStore)  # the runtime's own layers over SQLite
    rt.store.clock = clock
    try:
        first = await rt.run(spec, "inspect the repo", step_name="干活")
        assert first.ok and first.attempts == 2 and first.resumed  # the 500 was survived by resuming
        assert first.session_id
        # the CLI's own transcript is gone: only the store can bring the session back
        shutil.rmtree(claude_root / "claude-config" / "projects")
        clock.advance(3600)  # the person comes back an hour later: the prompt cache is gone
        second = await rt.run(spec, "what did you find?", step_name="干活", resume=first.session_id)
    finally:
        rt.close()

    assert (
        second.ok
        and second.session_id == first.session_id
        and second.text == "second run sees a clean history"
    )
    # the CLI reports cost cumulatively per session: the second step pays only for its own turn
    assert 0 < second.cost_usd < first.cost_usd
    shown = sim.last()
    text = shown.all_text
    # the chain is intact: the whole conversation is there, oldest prompt included
    assert (
        "inspect the repo" in text
        and "first run done" in text
        and shown.last_user_text.endswith("what did you find?")
    )
    # the synthetic API error is not shown again (the CLI leaves it out; the store keeps it)
    assert "API Error" not in text
    # the old `git status` result is expired with the policy's text
    assert "`git status` 的结果已过期" in text or "git status 的结果已过期" in text
    assert "On branch" not in text and "No commits yet" not in text
    # the old big result is a pointer to a spill file that holds every byte
    assert "2999\n3000" not in text
    spill = list((workspace / ".flower" / "spill").glob("*.txt"))
    assert len(spill) == 1 and spill[0].read_text().splitlines()[-1] == "3000" and str(spill[0]) in text
    # only the last denied call is kept (keep_denials=1)
    assert "rm b.txt" in text and "rm a.txt" not in text
    # tool_use and tool_result still pair up: no "Missing Tool Result Block"
    uses = {u["id"] for u in shown.tool_uses()}
    results = {r["tool_use_id"] for r in shown.tool_results()}
    assert uses == results and len(uses) == 3
    # SQLite still holds every original byte
    raw = SqliteSessionStore(tmp_path / "runs" / "sessions.db")
    try:
        entries = await raw.load({"project_key": rt.project_key, "session_id": first.session_id})
    finally:
        raw.close()
    stored = json.dumps(entries, ensure_ascii=False)
    assert (
        "API Error: 500" in stored
        and "2999\\n3000" in stored
        and "rm a.txt" in stored
        and "On branch" in stored
    )
