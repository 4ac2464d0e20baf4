"""The editor and a terminal never run one folder's flow at the same time: each refuses while the
other holds it, with the same line (who, since when, pid)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clients import vscode_capabilities
from fake_engine import read_log
from pytest_lsp import client_capabilities

from flower.sim.env import DUMMY_KEY

HOLDER = """
import sys, time
from flower.core.rundir import FlowLock
FlowLock(sys.argv[1], "starter", who="flower go").acquire()
print("held", flush=True)
time.sleep(600)
"""


# Who shows a refusal: a client that declares flower's `results` extension (VS Code's) shows a
# command's refused result itself, except flower.start's, which the server shows; to any other
# client the server shows every refusal.
@pytest.mark.parametrize(
    ("capabilities", "shown_by_server"),
    [(vscode_capabilities(), 1), (client_capabilities("visual-studio-code"), 2)],
    ids=["vscode", "standard-client"],
)
async def test_start_and_continue_refuse_while_a_terminal_flower_works_on_the_folder(
    fake_lsp, script, workspace, capabilities, shown_by_server
):
    script([{"step": {"name": "干活", "index": 1, "total": 1}}, {"end_step": {"name": "干活"}}])
    notes = workspace / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_text("# 需求确认书\n", encoding="utf-8")  # a folder to continue
    terminal = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(workspace / "runs"), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert terminal.stdout is not None and (await terminal.stdout.readline()).strip() == b"held"
        async with fake_lsp(capabilities=capabilities) as s:
            for command, args in (("flower.start", {"ask": "X"}), ("flower.continue", {})):
                result = await s.command(command, args)
                assert result["ok"] is False, command
                message = result["message"]
                assert "a flower already runs the flow" in message and "flower go" in message
                assert f"pid {terminal.pid}" in message and "\n" not in message
            assert (await s.state())["running"] is False
            assert read_log(s.run_dir) == []  # nothing ran
            shown = [m.message for m in s.client.messages if "a flower already runs the flow" in m.message]
            assert len(shown) == shown_by_server
            terminal.kill()
            await terminal.wait()
            assert (await s.command("flower.continue", {}))["ok"] is True  # free once it is gone
            # the run went through to its end (the runtime closed), whatever the client is told
            await s.until(lambda: any(e.get("closed") for e in read_log(s.run_dir)))
    finally:
        if terminal.returncode is None:
            terminal.kill()
            await terminal.wait()


async def test_a_terminal_flower_is_refused_while_the_editor_runs_the_folder(fake_lsp, script, workspace):
    script([{"step": {"name": "干活", "index": 1, "total": 1}}, {"wait_interrupt": 60}])
    async with fake_lsp() as s:
        await s.command("flower.start", {"ask": "X"})
        await s.until(lambda: s.events_of("step"))
        env = {**os.environ, "ANTHROPIC_API_KEY": DUMMY_KEY}
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "flower", "写一个 hello.py", "--timeout", "0"],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1
        [line] = [x for x in done.stderr.splitlines() if "这里已经有一个 flower" in x]
        assert "编辑器里的 flower-lsp" in line and f"pid {s.client._server.pid}" in line
        await s.command("flower.stop", {})
    assert not (Path(workspace) / "runs" / "sessions.db").exists()  # the refused one opened nothing
