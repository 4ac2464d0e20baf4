"""The run_dir discipline: locked merge-writes, damaged files set aside, one flow at a time."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flower.core.lineage import Lineage
from flower.core.rundir import (
    Damaged,
    FlowBusy,
    FlowLock,
    claim_flow,
    read_json,
    set_aside,
    update_json,
)


def test_read_json_says_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    assert read_json(path) is None
    for content, says in [
        (b"", "空文件"),
        (b"   \n", "只有空白"),
        (b"\xff\xfe{}", "不是 UTF-8"),
        (b'{"a": ', "不是完整的 JSON"),
    ]:
        path.write_bytes(content)
        with pytest.raises(Damaged, match=says):
            read_json(path)


def test_a_damaged_file_is_set_aside_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(b'[{"step": "a", "run": "r1"}, {"st')
    seen: list[Any] = []

    def change(disk: Any, repair: Any) -> Any:
        seen.append((disk, repair))
        return ["rebuilt"]

    written, repair = update_json(path, change)
    assert written == ["rebuilt"] and json.loads(path.read_text()) == ["rebuilt"]
    assert seen[0][0] is None and repair is seen[0][1]
    assert repair.backup.name.startswith("manifest.json.corrupt-")
    assert repair.backup.read_bytes() == b'[{"step": "a", "run": "r1"}, {"st'  # kept byte for byte
    assert "不是完整的 JSON" in repair.line() and str(repair.backup) in repair.line()


def test_set_aside_never_replaces_an_earlier_copy(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    copies = []
    for i in range(3):
        path.write_text(f"copy {i}")
        (tmp_path / "sessions.db-wal").write_text(f"wal {i}")
        copies.append(set_aside(path, companions=("-wal", "-shm")))
    assert len(set(copies)) == 3
    assert sorted(c.read_text() for c in copies) == ["copy 0", "copy 1", "copy 2"]
    assert sorted(Path(f"{c}-wal").read_text() for c in copies) == ["wal 0", "wal 1", "wal 2"]
    assert not path.exists()


def _remember_many(run_dir: str, ws: str, tag: str, n: int, go: Any) -> None:
    go.wait()
    lineage = Lineage.open(run_dir, ws)
    lineage.bump()
    for i in range(n):
        lineage.remember(f"{tag}-{i}", f"sid-{tag}-{i}")


def test_processes_sharing_a_lineage_never_lose_an_entry_or_a_wake(tmp_path: Path) -> None:
    run_dir, ws = tmp_path / "runs", tmp_path / "ws"
    ws.mkdir()
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    workers = [
        ctx.Process(target=_remember_many, args=(str(run_dir), str(ws), f"p{k}", 40, go)) for k in range(4)
    ]
    for w in workers:
        w.start()
    go.set()  # all four start writing at once
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    lineage = Lineage.open(run_dir, ws)
    assert len(lineage.steps) == 160 and lineage.woke == 4
    assert lineage.steps["p3-39"] == "sid-p3-39"
    assert sorted(p.name for p in run_dir.iterdir()) == ["lineage.json"]  # no lock or temp file left


def test_a_flow_lock_refuses_a_second_holder_and_names_the_first(tmp_path: Path) -> None:
    first = FlowLock(tmp_path / "runs", "starter", who="flower go")
    first.acquire()
    try:
        second = FlowLock(tmp_path / "runs", "starter", who="flower-lsp")
        with pytest.raises(FlowBusy) as refused:
            second.acquire()
        holder = refused.value.holder
        assert (holder.pid, holder.who) == (os.getpid(), "flower go")
        assert abs(holder.since - time.time()) < 60
        line = str(refused.value)
        assert "\n" not in line and "flower go" in line and f"pid {os.getpid()}" in line and "starter" in line
        FlowLock(tmp_path / "runs", "another-flow").acquire()  # other flows are not held up
    finally:
        first.release()
    FlowLock(tmp_path / "runs", "starter").acquire()  # free again once released


def test_a_claim_inside_its_own_claim_is_no_second_claim(tmp_path: Path) -> None:
    lock = FlowLock(tmp_path, "wf")
    lock.acquire()
    try:
        with claim_flow(tmp_path, "wf"):  # what Workflow.run does inside the CLI's claim
            pass
        assert lock.held
    finally:
        lock.release()


HOLDER = """
import sys, time
from flower.core.rundir import FlowLock
FlowLock(sys.argv[1], "starter", who="held by a child").acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_a_lock_whose_holder_was_killed_does_not_block(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(FlowBusy, match="held by a child"):
            FlowLock(tmp_path, "starter").acquire()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
        lock = FlowLock(tmp_path, "starter")
        lock.acquire()  # the kernel dropped the dead holder's lock
        assert lock.held
        lock.release()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_waiting_for_a_flow_blocks_until_the_holder_lets_go(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    told: list[FlowBusy] = []
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        lock = FlowLock(tmp_path, "starter")

        # the holder goes away once we are waiting: the wait ends then, not before
        def waiting(busy: FlowBusy) -> None:
            told.append(busy)
            os.kill(child.pid, signal.SIGTERM)

        lock.acquire(wait=True, waiting=waiting)
        assert lock.held and child.wait(30) == -signal.SIGTERM
        assert [b.holder.who for b in told] == ["held by a child"]
        lock.release()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
