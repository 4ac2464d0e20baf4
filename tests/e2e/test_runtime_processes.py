"""What survives a process: lineage on disk mid-step, kills, signals, parallel processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from claude_agent_sdk import project_key_for_directory

from flower import Lineage
from flower.core.transcripts import catch_up
from flower.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.e2e

CHILD = Path(__file__).with_name("step_child.py")
LONG = {
    "tool": {
        "name": "Bash",
        "input": {"command": "python3 -c 'import time; time.sleep(120)'", "description": "long"},
    }
}


def start_child(workspace: Path, run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(workspace), str(run_dir), "干活", "do the long thing", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def lineage_step(run_dir: Path, workspace: Path) -> str | None:
    return Lineage.open(run_dir, workspace).steps.get("干活")


def test_sigkill_mid_step_leaves_the_session_on_disk_and_a_second_process_continues_it(
    use_sim, workspace, tmp_path
):
    run_dir = tmp_path / "runs"
    sim = use_sim({"scripts": {"main": [LONG, "picked up where it stopped"]}})
    child = start_child(workspace, run_dir)
    try:
        # invariant one: the id is written the moment it is known, not when the step ends
        sid = wait_for(lambda: lineage_step(run_dir, workspace))
        wait_for(lambda: [q for q in sim.requests if q.reply == "tool_use:Bash"])  # the long tool is running
        time.sleep(1.0)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # no cleanup at all, like a power cut
        child.wait(10)
    assert child.returncode == -signal.SIGKILL
    store = SqliteSessionStore(run_dir / "sessions.db")
    # recoverable from the moment its id is on disk: what the mirror had not written yet, the
    # CLI's own transcript has (how far the mirror got before the kill is the machine's timing)
    catch_up(store, project_key_for_directory(workspace), sid)
    assert store.has_session(project_key_for_directory(workspace), sid)
    store.close()

    second = start_child(workspace, run_dir, "--resume-lineage")
    out, err = second.communicate(timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["ok"] and result["session_id"] == sid, err[-2000:]
    assert result["text"] == "picked up where it stopped"
    resumed = sim.last()
    assert (
        "do the long thing" in resumed.all_text and "time.sleep(120)" in resumed.all_text
    )  # same conversation


def test_sigterm_rescues_the_in_flight_step_into_the_manifest(use_sim, workspace, tmp_path):
    run_dir = tmp_path / "runs"
    use_sim({"scripts": {"main": [LONG]}})
    child = start_child(workspace, run_dir)
    sid = wait_for(lambda: lineage_step(run_dir, workspace))
    time.sleep(1.0)
    os.killpg(child.pid, signal.SIGTERM)
    child.wait(30)
    assert child.returncode == -signal.SIGTERM  # it still dies the way the signal meant
    rows = json.loads((run_dir / "manifest.json").read_text())
    assert [(r["step"], r["session_id"], r["error"], r["ok"]) for r in rows] == [
        ("干活", sid, "killed-by-signal", False)
    ]
    assert rows[0]["ended_at"] >= rows[0]["started_at"] > 0


def test_two_processes_writing_one_manifest_keep_each_others_rows(use_sim, workspace, tmp_path):
    run_dir = tmp_path / "runs"
    use_sim({"default": {"text": "quick"}})
    children = [start_child(workspace, run_dir, "--steps", "3") for _ in range(2)]
    for child in children:
        _out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err[-2000:]
    rows = json.loads((run_dir / "manifest.json").read_text())
    runs = {r["run"] for r in rows}
    assert len(rows) == 6 and len(runs) == 2
    for run in runs:
        assert sorted(r["step"] for r in rows if r["run"] == run) == ["干活-0", "干活-1", "干活-2"]
