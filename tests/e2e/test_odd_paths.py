"""Odd folders through the real `flower` command, the real CLI and flower.sim: in a generated
folder (spaces, quotes, `$`, backticks, Chinese, accented letters, long names and their mixtures;
a fresh sample every test session, its seed printed) the second `flower` continues the first one's
session and the worker does not redo its work; a folder the CLI and its SDK would file under two
keys is refused with one line before anything runs."""

from __future__ import annotations

import os
import random
import time
from typing import Any

import pytest
from claude_agent_sdk import project_key_for_directory
from test_cli_e2e import cli_env, flower

from flower.core.lineage import Lineage
from flower.sim import oddpaths, scenarios
from flower.stores.sqlite import path_too_long

pytestmark = pytest.mark.e2e

REQUEST = "写一个 hello.py"
SEED = int(os.environ.get("FLOWER_ODD_PATHS_SEED") or time.time_ns() % 1_000_000)
CASES = 8


def pytest_report_header() -> str:  # pragma: no cover - shown by pytest when collected as a plugin
    return f"odd paths seed {SEED}"


def session_of(request: Any) -> str | None:
    return request.headers.get("x-claude-code-session-id")


# two `flower` runs of up to 900 s each: the suite's 300 s default would cut the second one off on a
# loaded machine (that, not the key, was what stopped cases of this test in parallel runs)
@pytest.mark.timeout(2 * 900 + 120)
@pytest.mark.parametrize("case", range(CASES))
def test_a_second_flower_in_an_odd_folder_continues_the_same_session(
    case, sim_factory, claude_root, tmp_path
):
    rng = random.Random(f"{SEED}:{case}")
    ws = oddpaths.folder(rng, tmp_path / "odd")
    print(f"seed {SEED} case {case}: {ws}")  # shown on failure: the case can be run again
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    env = cli_env(sim, claude_root)
    run_dir, extra = ws / "runs", []
    if path_too_long(run_dir / "sessions.db") is not None:
        # SQLite cannot open a database this deep: one line says so and how to go on
        refused = flower(REQUEST, "--timeout", "0", cwd=ws, env={**env, "FLOWER_LANG": "en"}, timeout=900)
        out = refused.stdout + refused.stderr
        assert refused.returncode == 1 and "Traceback" not in out, out
        assert "--run-dir" in out and "SQLite" in out, out
        assert sim.requests == []  # nothing was spent
        # ... and with the run folder somewhere shorter, the work runs and continues there
        run_dir = tmp_path / "runs"
        extra = ["-r", str(run_dir)]
    first = flower(REQUEST, "--timeout", "0", *extra, cwd=ws, env=env, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    lineage = Lineage.open(run_dir, ws)
    work = lineage.steps.get("干活")
    assert work, lineage
    # the CLI filed the transcripts where the SDK's key says, and the store holds them there
    config = claude_root / "claude-config" / "projects"
    assert (config / project_key_for_directory(ws) / f"{work}.jsonl").is_file(), sorted(os.listdir(config))
    coder_before = len(sim.requests_for("coder"))

    seen = len(sim.requests)
    again = flower("--timeout", "0", *extra, cwd=ws, env=env, stdin="\n", timeout=900)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "Traceback" not in out
    asked = sim.requests[seen:]
    coordinator = [r for r in asked if r.actor == "coordinator"]
    assert coordinator and {session_of(r) for r in coordinator} == {work}, out
    assert len(sim.requests_for("coder")) == coder_before  # the worker did not redo its work
    assert Lineage.open(run_dir, ws).woke == 2


@pytest.mark.parametrize("make", [oddpaths.astral, oddpaths.decomposed], ids=["emoji", "decomposed"])
def test_a_folder_the_cli_and_the_sdk_would_key_apart_is_refused_with_one_line(
    make, sim_factory, claude_root, tmp_path
):
    rng = random.Random(f"{SEED}:{make.__name__}")
    ws = tmp_path / make(rng)
    ws.mkdir()
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    done = flower(REQUEST, "--timeout", "0", cwd=ws, env=cli_env(sim, claude_root, FLOWER_LANG="en"))
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and "rename the folder" in lines[0] and str(ws) in lines[0], out
    assert sim.requests == []  # nothing was spent
    assert not (ws / "runs").exists()


def test_a_folder_name_over_the_filesystem_limit_gets_one_line(sim_factory, claude_root, tmp_path):
    ws = tmp_path / ("花" * 90)  # 270 bytes of UTF-8: over NAME_MAX
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    done = flower(
        REQUEST,
        "--timeout",
        "0",
        "-w",
        str(ws),
        cwd=tmp_path,
        env=cli_env(sim, claude_root, FLOWER_LANG="en"),
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and "File name too long" in lines[0], out
