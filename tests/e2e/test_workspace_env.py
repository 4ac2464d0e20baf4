"""A workspace .env cannot inject code: BASH_ENV and PYTHONSTARTUP planted there run nothing, and
`flower` says in one line that it ignored them. The sandbox is off here, so what holds is the
.env filter alone; the control runs the same commands with the same variables and they do run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flower.sim.env import isolated_env

pytestmark = pytest.mark.e2e


def plant(ws: Path, out: Path) -> dict[str, str]:
    (ws / "evil.sh").write_text(f"echo bash_env >> {out}\n")
    (ws / "evil.py").write_text(f"open({str(out)!r}, 'a').write('pythonstartup\\n')\n")
    planted = {"BASH_ENV": str(ws / "evil.sh"), "PYTHONSTARTUP": str(ws / "evil.py")}
    (ws / ".env").write_text("".join(f"{k}={v}\n" for k, v in planted.items()))
    return planted


COMMANDS = ("true", "echo | python3 -i")  # a non-interactive bash, an interactive python


def test_control_these_variables_do_run_their_code(tmp_path):
    ws, out = tmp_path / "ws", tmp_path / "ran.txt"
    ws.mkdir()
    planted = plant(ws, out)
    for command in COMMANDS:
        subprocess.run(
            ["bash", "-c", command], env={**os.environ, **planted}, capture_output=True, check=True
        )
    assert set(out.read_text().split()) == {"bash_env", "pythonstartup"}


def test_a_planted_bash_env_and_pythonstartup_run_nothing_and_are_named_in_one_line(
    sim_factory, claude_root, tmp_path
):
    ws, out = tmp_path / "ws", tmp_path / "ran.txt"
    ws.mkdir()
    plant(ws, out)
    bash = [{"tool": {"name": "Bash", "input": {"command": c, "description": "run"}}} for c in COMMANDS]
    sim = sim_factory({"scripts": {"main": [*bash, "done"]}})
    env = {**os.environ, **isolated_env(sim.base_url, claude_root)}
    for name in ("BASH_ENV", "PYTHONSTARTUP"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "flower", "once", "-t", "Bash", "--sandbox", "off", "-w", str(ws), "go"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(sim.last().tool_results()) == 2  # both commands ran, unconfined
    assert not out.exists()  # and neither planted file ran with them
    said = [line for line in done.stderr.splitlines() if "忽略了" in line]
    why = "(工作区的 .env 只提供凭据和模型设置)"
    assert said == [f"flower: {(ws / '.env').resolve()}: 忽略了 BASH_ENV, PYTHONSTARTUP{why}"]
