"""A clock that jumps under a running `flower` (libfaketime on the real process, the real CLI and
flower.sim): backwards by hours, forwards by hours, in the middle of a step. The step's duration
is what passed (never negative), the manifest keeps the wall clock's times as the seeds define
them, and the history keeps the wakes in the order they ran."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_e2e import cli_env

from flower.workflow.history import read_history

pytestmark = pytest.mark.e2e

LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def faked(env: dict[str, str], stamp: Path) -> dict[str, str]:
    """The environment of a process whose wall clock is off by what `stamp` says (re-read on every call), with
    the monotonic clock left alone, as an NTP step or a person setting the time leaves it."""
    if not LIB.is_file() or shutil.which("faketime") is None:
        pytest.fail("libfaketime is missing: run `make system-deps` (Debian's faketime)", pytrace=False)
    stamp.write_text("+0\n")
    return {
        **env,
        "LD_PRELOAD": str(LIB),
        "FAKETIME_TIMESTAMP_FILE": str(stamp),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_DISABLE_SHM": "1",
    }


# flower's own process runs on the jumping clock; the CLI it starts does not (the bundled CLI does
# not start with libfaketime preloaded), so the preload is taken out of what its children inherit
FAKED_FLOWER = (
    "import os, sys; os.environ.pop('LD_PRELOAD', None); "
    "from flower.__main__ import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize("jump", ["-2h", "-1d", "+3h"])
def test_a_clock_jump_mid_step_gives_a_true_duration_and_keeps_the_order(
    jump, sim_factory, claude_root, tmp_path
):
    ws = tmp_path / "ws"
    ws.mkdir()
    sim = sim_factory({"scripts": {"main": [{"text": "first", "hold": "jump"}, {"text": "second"}]}})
    stamp = tmp_path / "clock"
    env = faked(cli_env(sim, claude_root), stamp)
    argv = [sys.executable, "-c", FAKED_FLOWER, "once", "说一句话"]
    began = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 300
    while not sim.requests and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sim.requests, "the model was never asked"
    stamp.write_text(f"{jump}\n")  # the clock jumps while the step is waiting for the model
    sim.release("jump")
    out, _ = proc.communicate(timeout=300)
    took = time.monotonic() - began
    assert proc.returncode == 0, out
    rows = json.loads((ws / "runs" / "manifest.json").read_text())
    row = rows[-1]
    assert 0 <= row["duration_s"] <= took + 1, (row, took)
    # the wall-clock fields are the clock's, jump included, as the seeds define them
    wall = row["ended_at"] - row["started_at"]
    assert (wall < 0) == jump.startswith("-"), row

    # a second wake, its clock back to normal: the history keeps the order the wakes ran in
    stamp.write_text("+0\n")
    second = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    rows = json.loads((ws / "runs" / "manifest.json").read_text())
    history = read_history(ws)
    assert [w.run for w in history.wakes] == list(dict.fromkeys(r["run"] for r in rows))
    assert all(w.duration_s >= 0 for w in history.wakes)
