"""No message is too big to survive, through the real `flower` command, the real CLI and
flower.sim: a worker's report over the bound flower reads from the CLI stops the step at once with
one line that says what to do (no retry: the same line would be refused again), and a report
under it goes through whole."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from test_cli_e2e import cli_env, flower

from flower.core.resilience import RESUME_PROMPT
from flower.core.sizes import DEFAULT_MB, LIMIT_VAR
from flower.sim import scenarios
from flower.sim.scenario import ScenarioData

pytestmark = pytest.mark.e2e

REQUEST = "写一个 hello.py"
MB = 1024 * 1024
REPORT_HEAD = "结论:hello.py 写好了。\n依据:python3 hello.py 输出 hello。\n产物:hello.py\n未验证:无\n"


def with_report(size: int) -> ScenarioData:
    """The resumable starter flow whose worker reports `size` characters."""
    scenario = copy.deepcopy(scenarios.resumable_starter_scenario(bash_seconds=0))
    for rule in scenario["rules"]:
        if rule["actor"] == "coder" and "text" in rule["reply"]:
            rule["reply"]["text"] = REPORT_HEAD + "R" * (size - len(REPORT_HEAD))
    return scenario


def test_a_report_over_the_bound_stops_the_step_at_once_with_one_line(sim_factory, claude_root, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    sim = sim_factory(with_report(50 * 1000 * 1000))
    done = flower(
        REQUEST, "--timeout", "0", cwd=ws, env=cli_env(sim, claude_root, FLOWER_LANG="en"), timeout=900
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Traceback" not in out
    # the one line of what happened and what to do, in the language spoken
    assert "stopped, no retry: message too big" in out and f"{DEFAULT_MB} MiB" in out, out
    assert f"raise {LIMIT_VAR}" in out, out
    # no retry storm: the worker answered once, nothing resumed the step, one attempt booked
    assert len(sim.requests_for("coder")) == 2, [r.reply for r in sim.requests]
    assert not any(RESUME_PROMPT in r.all_text for r in sim.requests)
    rows = json.loads((ws / "runs" / "manifest.json").read_text())
    work = [r for r in rows if r["step"] == "干活"]
    assert [r["attempts"] for r in work] == [1] and not work[0]["ok"]


def test_a_big_report_under_the_bound_goes_through_whole(sim_factory, claude_root, tmp_path):
    size = 20 * 1000 * 1000
    assert size < DEFAULT_MB * MB
    ws = tmp_path / "proj"
    ws.mkdir()
    sim = sim_factory(with_report(size))
    done = flower(
        REQUEST, "--timeout", "0", cwd=ws, env=cli_env(sim, claude_root, FLOWER_LANG="en"), timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # the coordinator was shown the worker's report, all of it or a pointer to all of it on disk
    # (the CLI itself persists a tool result this long and shows a preview naming its file)
    shown = sim.requests_for("coordinator")[1].all_text
    assert REPORT_HEAD[:16] in shown
    whole = size - len(REPORT_HEAD)
    assert shown.count("R") >= whole or _spilled_whole(ws, size) or _named_whole(shown, whole), shown[-3000:]


def test_a_lower_bound_is_the_one_applied(sim_factory, claude_root, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    sim = sim_factory(with_report(3 * MB))
    env = cli_env(sim, claude_root, FLOWER_LANG="en", **{LIMIT_VAR: "2"})
    done = flower(REQUEST, "--timeout", "0", cwd=ws, env=env, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "2 MiB" in out and LIMIT_VAR in out, out
    assert len(sim.requests_for("coder")) == 2


def _named_whole(shown: str, whole: int) -> bool:
    """A file the text names holds the whole report."""
    for candidate in re.findall(r"/[^\s\"'<>)]+", shown):
        path = Path(candidate.rstrip(".,;:"))
        if path.is_file() and path.read_text(errors="replace").count("R") >= whole:
            return True
    return False


def _spilled_whole(ws: Path, size: int) -> bool:
    spill = ws / ".flower" / "spill"
    return (
        any(p.stat().st_size >= size - len(REPORT_HEAD) for p in spill.glob("*.txt"))
        if spill.is_dir()
        else False
    )
