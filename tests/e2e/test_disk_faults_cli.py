"""A disk that fills up, turns read-only or sits below the free-space floor, under the real
`flower` command, the real CLI and flower.sim: the run stops with one line that names the folder
and what to do (exit status 1, no traceback), nothing written is corrupted, and once the cause is
gone the next `flower` continues the same work session. scripts/faults/disk.py runs the
generated campaign of the same class."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import cli_env, flower

from flower.core.brief import Brief
from flower.core.lineage import Lineage
from flower.core.rundir import read_json
from flower.sim import disks, scenarios

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(disks.available() is not None, reason=str(disks.available())),
]

REQUEST = "写一个 hello.py"


@pytest.fixture
def disk() -> Iterator[Path]:
    with disks.tmpfs(24 << 20) as point:
        yield point


def when(sim: Any, ready: Callable[[list[Any]], bool], act: Callable[[], object]) -> threading.Event:
    """Run `act` once flower.sim's requests so far satisfy `ready` (or never, once the event is set)."""
    over = threading.Event()

    def watch() -> None:
        while not over.is_set():
            if ready(list(sim.requests)):
                act()
                return
            time.sleep(0.005)

    threading.Thread(target=watch, daemon=True).start()
    return over


def second_work_turn(requests: list[Any]) -> bool:
    return sum(1 for q in requests if q.actor == "coordinator") >= 2  # the session is on the books


def fault_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "没法写进" in line or "低于" in line]


def intact(ws: Path, run_dir: Path) -> None:
    read_json(run_dir / "lineage.json")
    read_json(run_dir / "manifest.json")
    conn = sqlite3.connect(run_dir / "sessions.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    brief = Brief.load(ws / ".flower" / "notes" / "需求.md")
    assert brief is not None and brief.complete()
    assert not list(run_dir.glob(".*.tmp"))


def flow_on(sim_factory: Any, claude_root: Path, **limits: str) -> tuple[Any, dict[str, str]]:
    """flower.sim playing a starter flow that converges from any point, and the env to reach it."""
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    return sim, cli_env(sim, claude_root, **limits)


def go_on(ws: Path, run_dir: Path, env: dict[str, str], sim: Any) -> tuple[Any, list[Any]]:
    seen = len(sim.requests)
    done = flower("-r", str(run_dir), "--timeout", "0", cwd=ws, env=env, stdin="\n")
    return done, sim.requests[seen:]


def test_a_disk_that_fills_during_the_work_stops_the_run_and_the_next_run_continues(
    sim_factory, claude_root, tmp_path, disk
):
    sim, env = flow_on(sim_factory, claude_root, FLOWER_DISK_WARN_MB="1", FLOWER_DISK_FLOOR_MB="0")
    ws, run_dir = tmp_path / "proj", disk / "runs"
    ws.mkdir()
    over = when(sim, second_work_turn, lambda: disks.fill(disk))
    first = flower("-r", str(run_dir), REQUEST, "--timeout", "0", cwd=ws, env=env)
    over.set()

    assert first.returncode == 1, first.stdout + first.stderr
    assert "Traceback" not in first.stdout + first.stderr
    [line] = fault_lines(first.stderr)  # one line, said once
    assert str(run_dir) in line and "磁盘满了" in line and "腾出空间" in line
    assert "TranscriptMirrorBatcher" not in first.stderr
    # stopped: no judge and no handover spent on a disk that refuses their books
    assert "干活·判定" not in first.stdout and "交接给下一个工具" not in first.stdout
    work = Lineage.open(run_dir, ws).steps["干活"]

    disks.free(disk)
    intact(ws, run_dir)
    done, asked = go_on(ws, run_dir, env, sim)
    assert done.returncode == 0, done.stdout + done.stderr
    coordinator = [q for q in asked if q.actor == "coordinator"]
    assert coordinator and coordinator[0].headers.get("x-claude-code-session-id") == work  # the same session
    assert not [q for q in asked if q.actor in ("clarifier", "goal_setter")]  # nothing redone
    intact(ws, run_dir)


def test_a_workspace_disk_remounted_read_only_mid_run_stops_with_its_line(
    sim_factory, claude_root, tmp_path, disk
):
    sim, env = flow_on(sim_factory, claude_root, FLOWER_DISK_WARN_MB="1", FLOWER_DISK_FLOOR_MB="0")
    ws, run_dir = disk / "proj", tmp_path / "runs"  # the books elsewhere: nothing holds the disk open
    ws.mkdir()
    # once the goal is being set: flower's next write there is 目标.md
    over = when(
        sim,
        lambda requests: any(q.actor == "goal_setter" for q in requests),
        lambda: disks.remount(disk, read_only=True),
    )
    first = flower("-r", str(run_dir), REQUEST, "--timeout", "0", cwd=ws, env=env)
    over.set()
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Traceback" not in first.stdout + first.stderr
    [line] = fault_lines(first.stderr)
    assert "只读" in line and str(ws / ".flower" / "notes") in line
    goal_session = Lineage.open(run_dir, ws).steps["设定目标"]
    assert not (ws / ".flower" / "notes" / "目标.md").exists()

    assert disks.remount(disk, read_only=False)
    intact(ws, run_dir)
    done, asked = go_on(ws, run_dir, env, sim)
    assert done.returncode == 0, done.stdout + done.stderr
    goal_setter = [q for q in asked if q.actor == "goal_setter"]
    assert goal_setter and goal_setter[0].headers.get("x-claude-code-session-id") == goal_session
    assert not [q for q in asked if q.actor == "clarifier"]  # the brief was kept: not asked again


def test_below_the_free_space_floor_no_step_starts_and_no_money_is_spent(
    sim_factory, claude_root, tmp_path, disk
):
    sim, env = flow_on(sim_factory, claude_root, FLOWER_DISK_WARN_MB="12", FLOWER_DISK_FLOOR_MB="8")
    ws, run_dir = tmp_path / "proj", disk / "runs"
    ws.mkdir()
    run_dir.mkdir()
    disks.fill(disk, leave=4 << 20)
    first = flower("-r", str(run_dir), REQUEST, "--timeout", "0", cwd=ws, env=env)
    assert first.returncode == 1 and sim.requests == []
    [line] = fault_lines(first.stderr)
    assert "FLOWER_DISK_FLOOR_MB" in line and "没花钱" in line and str(run_dir) in line

    disks.free(disk)
    disks.fill(disk, leave=10 << 20)  # above the floor, below the warning threshold
    again = flower("-r", str(run_dir), REQUEST, "--timeout", "0", cwd=ws, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "FLOWER_DISK_WARN_MB" in again.stdout  # warned in one line per step, and went on
    disks.free(disk)
