"""flower-reaper: the CLI's process tree ends with the CLI, and with flower if flower is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from flower.core.reaper import REAL_CLI, WATCHED, supervisor

pytestmark = pytest.mark.skipif(supervisor() is None, reason="a subreaper needs Linux and flower-reaper")


def marked(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                stat = Path(f"/proc/{entry}/stat").read_text()
                if stat[stat.rfind(")") + 2] != "Z":
                    found.append(int(entry))
        except OSError:
            continue
    return found


def gone(marker: str, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not marked(marker):
            return True
        time.sleep(0.02)
    return False


def detached_sleeper(marker: str) -> str:
    """A shell line that starts a sleeper in a session of its own, like the CLI's Bash tool."""
    return f"setsid {sys.executable} -c 'import time; time.sleep(300)' {marker} &"


def reaped(script: str, **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, REAL_CLI: "/bin/sh", WATCHED: str(os.getpid())}
    return subprocess.Popen([str(supervisor()), "-c", script], env=env, text=True, **kw)  # type: ignore[call-overload]


def test_what_the_cli_left_behind_dies_with_it_and_its_exit_code_is_kept() -> None:
    marker = f"reaper-{uuid.uuid4().hex}"
    proc = reaped(
        f"{detached_sleeper(marker)} read line; echo got $line; exit 7",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while not marked(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marked(marker), "the sleeper never started"
    out, _ = proc.communicate("hello\n", timeout=30)  # stdin and stdout are the CLI's own
    assert (proc.returncode, out) == (7, "got hello\n")
    assert marked(marker) == []  # killed before the supervisor exited, not eventually


def test_a_signal_reaches_the_cli_and_the_supervisor_dies_the_same_way() -> None:
    marker = f"reaper-{uuid.uuid4().hex}"
    proc = reaped(f"{detached_sleeper(marker)} sleep 300")
    deadline = time.monotonic() + 20
    while not marked(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM
    assert marked(marker) == []


FLOWER_STAND_IN = """
import os, subprocess, sys, time
env = {**os.environ, sys.argv[2]: "/bin/sh", sys.argv[3]: str(os.getpid())}
subprocess.Popen([sys.argv[1], "-c", sys.argv[4]], env=env)
print("started", flush=True)
time.sleep(600)
"""


def test_a_killed_flower_leaves_no_tool_running() -> None:
    marker = f"reaper-{uuid.uuid4().hex}"
    script = f"{detached_sleeper(marker)} sleep 300 # {marker}"
    flower = subprocess.Popen(
        [sys.executable, "-c", FLOWER_STAND_IN, str(supervisor()), REAL_CLI, WATCHED, script],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert flower.stdout is not None and flower.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 20
        while len(marked(marker)) < 2 and time.monotonic() < deadline:  # the CLI and its tool
            time.sleep(0.02)
        assert len(marked(marker)) >= 2
        os.killpg(flower.pid, signal.SIGKILL)  # flower and its whole group, with no cleanup
        flower.wait(10)
        assert gone(marker), f"left running: {marked(marker)}"
    finally:
        if flower.poll() is None:
            flower.kill()
            flower.wait()
