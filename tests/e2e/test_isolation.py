"""Tests never leave the machine and never write outside their temp folders.

The CLI is run under strace (its connect() calls are the ground truth; the SDK's own Python
side is covered by the loopback guard that flower.sim's fixtures install).
"""

from __future__ import annotations

import re
import shutil
import stat
from pathlib import Path

import claude_agent_sdk
import pytest
from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, query

pytestmark = pytest.mark.e2e

BUNDLED_CLI = Path(claude_agent_sdk.__path__[0]) / "_bundled" / "claude"


def host_state() -> dict[str, float]:
    """Modification times of everything the CLI would touch on the host if not isolated."""
    state: dict[str, float] = {}
    home_claude = Path.home() / ".claude"
    for path in [Path.home() / ".claude.json", *Path("/tmp").glob("claude-*"), Path("/tmp/cc-socks")]:
        if path.exists():
            state[str(path)] = path.stat().st_mtime
    if home_claude.exists():
        for path in [home_claude, *home_claude.rglob("*")]:
            state[str(path)] = path.stat().st_mtime
    return state


async def test_the_cli_connects_only_to_loopback_and_writes_only_temp_dirs(
    sim_factory, sim_env, workspace, tmp_path
):
    assert shutil.which("strace"), "strace is missing: the README's test command installs it (apt)"
    log = tmp_path / "connect.log"
    wrapper = tmp_path / "claude-traced"
    # exec, so that stopping the run stops the CLI (a plain child would be orphaned)
    wrapper.write_text(f'#!/bin/sh\nexec strace -f -qq -e trace=connect -o "{log}" "{BUNDLED_CLI}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    sim = sim_factory(
        {
            "actors": {"coder": {"system": "You are the isolation coder"}},
            "scripts": {
                "main": [
                    {
                        "tool": {
                            "name": "Agent",
                            "input": {
                                "subagent_type": "coder",
                                "description": "d",
                                "prompt": "p",
                                "run_in_background": False,
                            },
                        }
                    },
                    "done",
                ],
                "coder": [{"tool": {"name": "Bash", "input": {"command": "ls"}}}, "listed"],
            },
        }
    )
    before = host_state()
    options = ClaudeAgentOptions(
        cwd=str(workspace),
        env=sim_env(sim),
        cli_path=str(wrapper),
        setting_sources=[],
        allowed_tools=["Agent", "Bash"],
        agents={
            "coder": AgentDefinition(
                description="lists", prompt="You are the isolation coder.", tools=["Bash"]
            )
        },
        stderr=lambda line: None,
    )
    async for _ in query(prompt="go", options=options):
        pass

    inet = [line for line in log.read_text().splitlines() if "AF_INET" in line]
    addresses = [
        m.group(1)
        for line in inet
        for m in [re.search(r'inet_(?:addr|pton)\((?:AF_INET6, )?"([^"]+)"', line)]
        if m
    ]
    assert len(addresses) == len(inet), f"unparsed connect lines: {inet}"
    assert f"htons({sim.port})" in "\n".join(inet), (
        "the CLI never reached flower.sim: the trace proves nothing"
    )
    assert set(addresses) <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}, (
        f"non-loopback connects: {set(addresses)}"
    )
    assert host_state() == before, "the CLI wrote outside its temp folders"
    assert any((tmp_path / "claude" / "claude-config" / "projects").rglob("*.jsonl")), (
        "transcripts went elsewhere"
    )
