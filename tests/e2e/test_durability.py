"""Durable under every fault, through the real `flower` command, the real CLI and flower.sim:
one flow at a time in a folder, nothing lost when processes share a run_dir, every damaged file
set aside and named with what could be rebuilt, a fatal error stopping the flow at once, and a
sample of the kill campaign (scripts/kill_campaign.py runs the whole one)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import Child, cli_env, flower

from flower.core.goal import Goal
from flower.core.lineage import Lineage
from flower.sim import scenarios
from flower.sim.scenario import ScenarioData, TurnData

pytestmark = pytest.mark.e2e

REQUEST = "写一个 hello.py"
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def session_of(request: Any) -> str | None:
    return request.headers.get("x-claude-code-session-id")


def first_run(sim_factory: Any, claude_root: Path, ws: Path) -> tuple[Any, dict[str, str], Lineage]:
    """A whole starter flow in `ws`, to be continued; (sim, env, its lineage)."""
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    env = cli_env(sim, claude_root)
    done = flower(REQUEST, "--timeout", "0", cwd=ws, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lineage = Lineage.open(ws / "runs", ws)
    assert set(lineage.steps) == {"确认需求", "设定目标", "干活"}
    return sim, env, lineage


def go_on(ws: Path, env: dict[str, str], sim: Any) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """Plain `flower` in the folder (Enter at the prompt = continue); what it asked the model."""
    seen = len(sim.requests)
    done = flower("--timeout", "0", cwd=ws, env=env, stdin="\n")
    return done, sim.requests[seen:]


@pytest.fixture
def started() -> Iterator[list[Child]]:
    """`flower` processes a test starts; whatever is still running at its end is killed."""
    children: list[Child] = []
    yield children
    for child in children:
        child.kill()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


# -- one flow at a time --------------------------------------------------------------------------------


def test_four_flower_commands_in_one_folder_run_one_flow_and_the_others_say_who(
    sim_factory, claude_root, ws, started
):
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    env = cli_env(sim, claude_root)
    first = Child(REQUEST, cwd=ws, env=env)  # asks its question and waits for the person
    started.append(first)
    first.wait_for(f"? {scenarios.QUESTION}")
    holder = first.proc.pid  # start_new_session: the pid is the flower process itself

    others: list[subprocess.CompletedProcess[str]] = []
    threads = [
        threading.Thread(target=lambda: others.append(flower(REQUEST, "--timeout", "0", cwd=ws, env=env)))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert [o.returncode for o in others] == [1, 1, 1]
    for other in others:
        [line] = [x for x in other.stderr.splitlines() if "这里已经有一个 flower" in x]
        assert "流程「starter」" in line and "flower go" in line and f"pid {holder}" in line
        assert "--wait" in line and other.stdout == ""  # said so in one line, did nothing else

    first.type("1")
    assert first.finish() == 0, first.output
    assert Lineage.open(ws / "runs", ws).woke == 1
    rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert len({r["run"] for r in rows}) == 1


def test_with_wait_the_four_run_one_after_another(sim_factory, claude_root, ws, started):
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    env = cli_env(sim, claude_root)
    first = Child(REQUEST, cwd=ws, env=env)
    started.append(first)
    first.wait_for(f"? {scenarios.QUESTION}")
    waiting = [Child("--wait", REQUEST, "--timeout", "0", cwd=ws, env=env) for _ in range(3)]
    started.extend(waiting)
    for w in waiting:
        w.wait_for("排队等它跑完")  # queued behind the first, not refused and not running

    first.type("1")
    assert first.finish() == 0, first.output
    for w in waiting:
        assert w.finish(240) == 0, w.output
    assert Lineage.open(ws / "runs", ws).woke == 4
    rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    spans = sorted(
        (
            min(r["started_at"] for r in rows if r["run"] == run),
            max(r["ended_at"] for r in rows if r["run"] == run),
        )
        for run in {r["run"] for r in rows}
    )
    assert len(spans) == 4
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # never two at once
    work = {session_of(q) for q in sim.requests_for("coordinator")}
    assert len(work) == 1  # all four continued the same work session


def test_four_processes_with_four_step_workflows_on_one_run_dir_lose_nothing(use_sim, ws, tmp_path):
    use_sim({"default": {"text": "ok"}})
    run_dir = tmp_path / "shared-runs"
    children = [
        subprocess.Popen(
            [sys.executable, str(HERE / "workflows_child.py"), str(ws), str(run_dir), f"wf{k}", "3"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    reports = {}
    for k, child in enumerate(children):
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err[-3000:]
        reports[f"wf{k}"] = [json.loads(line) for line in out.splitlines()]
    lineage = Lineage.open(run_dir, ws)
    expected: dict[str, str] = {}
    for _name, rounds in reports.items():
        assert [r["failed"] for r in rounds] == [None, None, None]
        assert len({json.dumps(r["sessions"], sort_keys=True) for r in rounds}) == 1  # continued
        expected.update(rounds[-1]["sessions"])
    assert len(expected) == 16 and lineage.steps == expected  # 0 lost entries
    assert lineage.woke == 12  # 4 processes x 3 wake-ups, none lost
    assert sorted(r["woke"] for rounds in reports.values() for r in rounds) == list(range(1, 13))
    rows = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert len(rows) == 48 and len({r["run"] for r in rows}) == 12


# -- damaged files ------------------------------------------------------------------------------------


def backups(folder: Path, name: str) -> list[Path]:
    return sorted(folder.glob(f"{name}.corrupt-*"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # truncated
        lambda raw: b"\x00\xffnot json at all",  # garbage
        lambda raw: b"",  # empty
        lambda raw: b'{"workspace": 7, "woke": "many", "steps": []}',  # wrong types
    ],
    ids=["truncated", "garbage", "empty", "wrong-typed"],
)
def test_a_damaged_lineage_is_set_aside_and_the_work_goes_on_in_its_session(
    sim_factory, claude_root, ws, damage
):
    sim, env, lineage = first_run(sim_factory, claude_root, ws)
    path = ws / "runs" / "lineage.json"
    broken = damage(path.read_bytes())
    path.write_bytes(broken)

    done, asked = go_on(ws, env, sim)

    assert done.returncode == 0, done.stdout + done.stderr
    [line] = [x for x in done.stdout.splitlines() if "lineage.json 坏了" in x]
    [backup] = backups(ws / "runs", "lineage.json")
    assert str(backup) in line and "找回 3 个步骤的会话" in line
    assert backup.read_bytes() == broken  # the damaged file itself, kept
    assert "第 2 次唤醒" in done.stdout  # the wake count came back from the manifest
    assert session_of(next(q for q in asked if q.actor == "coordinator")) == lineage.steps["干活"]
    assert Lineage.open(ws / "runs", ws).steps == lineage.steps


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_manifest_keeps_every_row_that_still_reads(sim_factory, claude_root, ws, damage):
    sim, env, _ = first_run(sim_factory, claude_root, ws)
    path = ws / "runs" / "manifest.json"
    rows = json.loads(path.read_text(encoding="utf-8"))
    text = path.read_text(encoding="utf-8")
    broken = text[: text.rindex('"step"')] if damage == "truncated" else "\ufffd garbage " + text[7:]
    path.write_text(broken, encoding="utf-8")
    survivors = rows[:-1] if damage == "truncated" else rows[1:]

    done, _ = go_on(ws, env, sim)

    assert done.returncode == 0, done.stdout + done.stderr
    [line] = [x for x in done.stdout.splitlines() if "manifest.json 坏了" in x]
    [backup] = backups(ws / "runs", "manifest.json")
    assert str(backup) in line and f"读得出的 {len(survivors)} 行都留下了" in line
    assert backup.read_text(encoding="utf-8") == broken
    now = json.loads(path.read_text(encoding="utf-8"))
    assert now[: len(survivors)] == survivors and len(now) > len(survivors)  # kept, and this run's added


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_store_is_set_aside_and_the_sessions_come_back(sim_factory, claude_root, ws, damage):
    sim, env, lineage = first_run(sim_factory, claude_root, ws)
    db = ws / "runs" / "sessions.db"
    raw = db.read_bytes()
    broken = {"garbage": os.urandom(4096), "truncated": raw[: len(raw) // 2], "empty": b""}[damage]
    db.write_bytes(broken)
    for extra in ("sessions.db-wal", "sessions.db-shm"):
        (ws / "runs" / extra).unlink(missing_ok=True)

    done, asked = go_on(ws, env, sim)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    [line] = [x for x in done.stdout.splitlines() if "sessions.db 坏了" in x]
    [backup] = backups(ws / "runs", "sessions.db")
    assert str(backup) in line and backup.read_bytes() == broken
    assert "找不回" not in line  # Claude Code's own transcripts gave every step's session back
    resumed = next(q for q in asked if q.actor == "coordinator")
    assert session_of(resumed) == lineage.steps["干活"]
    assert "结论:hello.py 写好了" in resumed.all_text  # with its history, not an empty session


def test_a_store_sqlite_cannot_open_is_a_clear_message_not_a_traceback(sim_factory, claude_root, ws):
    sim, env, _ = first_run(sim_factory, claude_root, ws)
    db = ws / "runs" / "sessions.db"
    db.unlink()
    db.mkdir()
    done, asked = go_on(ws, env, sim)
    assert done.returncode == 1 and asked == []
    assert "Traceback" not in done.stderr and "sessions.db 是个目录" in done.stderr and "mv " in done.stderr


def test_a_broken_brief_is_named_with_what_is_wrong_and_backed_up_before_a_rewrite(
    sim_factory, claude_root, ws
):
    sim, env, _ = first_run(sim_factory, claude_root, ws)
    brief = ws / ".flower" / "notes" / "需求.md"
    broken = "# 需求确认书\n\n## 目标\n写一个 hello.py\n"
    brief.write_text(broken, encoding="utf-8")

    done, asked = go_on(ws, env, sim)
    assert done.returncode == 1 and asked == []
    assert str(brief) in done.stderr and "缺「验收标准」、「边界」、「未知与假设」" in done.stderr
    assert brief.read_text(encoding="utf-8") == broken  # nothing was rewritten

    again = flower("再确认一次需求", "--timeout", "0", cwd=ws, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    [copy] = sorted((brief.parent / "archive").glob("需求-*.md"))
    assert copy.read_text(encoding="utf-8") == broken
    assert str(copy) in again.stdout and "缺「验收标准」" in again.stdout


def test_a_half_goal_is_not_a_short_checklist(sim_factory, claude_root, ws):
    sim, env, _ = first_run(sim_factory, claude_root, ws)
    goal = ws / ".flower" / "notes" / "目标.md"
    whole = goal.read_bytes()
    goal.write_bytes(whole[: len(whole) // 2])
    left = Goal.load(goal)
    assert left is not None and left.checks  # what is left still parses as a checklist

    done, asked = go_on(ws, env, sim)

    assert done.returncode == 0, done.stdout + done.stderr
    [line] = [x for x in done.stdout.splitlines() if str(goal) in x and "原文件备份在" in x]
    assert "截断" in line or "UTF-8" in line
    [copy] = sorted((goal.parent / "archive").glob("目标-*.md"))
    assert copy.read_bytes() == whole[: len(whole) // 2]
    assert [q.actor for q in asked].count("goal_setter") == 1  # the goal was set again
    judged = next(q for q in asked if q.actor == "judge")
    assert all(check in judged.all_text for check in Goal.parse(scenarios.GOAL).checks)  # on all three


# -- a fatal error stops at once -----------------------------------------------------------------------

FAULT: TurnData = {"fault": 401, "times": 50}  # the key stays bad: every retry is refused again


def insert_fault(where: str) -> ScenarioData:
    sc = scenarios.starter_scenario(verdicts=("not_yet", "achieved"))
    scripts = sc["scripts"]
    position = {
        "clarify": ("clarifier", 0),
        "goal": ("goal_setter", 0),
        "work": ("coordinator", 0),
        "worker": ("coder", 0),
        "judge": ("judge", 0),
        "work-round-2": ("coordinator", 2),
    }[where]
    actor, index = position
    scripts[actor].insert(index, FAULT)
    if where == "worker":
        scripts["coordinator"].insert(1, FAULT)  # the key is bad for everyone from now on
    return sc


@pytest.mark.parametrize("where", ["clarify", "goal", "work", "worker", "judge", "work-round-2"])
def test_a_401_at_any_step_stops_the_flow_at_once_and_keeps_the_lineage(
    sim_factory, claude_root, ws, where, record_property
):
    sim = sim_factory(insert_fault(where))
    env = cli_env(sim, claude_root)
    if where != "worker":
        # the CLI's own policy (10 retries, 3 minutes for a 401): flower sees the first retry
        # notice of a main-thread session and stops it. A subagent's retries are not reported
        # by the SDK: there the CLI's policy runs its course (bounded to 2 retries here).
        del env["CLAUDE_CODE_MAX_RETRIES"]
    done = flower(REQUEST, "--timeout", "0", cwd=ws, env=env)
    ended = time.time()

    assert done.returncode == 1, done.stdout + done.stderr
    assert "停下了,没有再试" in done.stderr and "flower setup" in done.stderr
    faults = [q for q in sim.requests if q.reply.startswith("fault:401")]
    cut = sim.requests.index(faults[0])
    after = sim.requests[cut:]
    assert all(q.reply.startswith("fault:401") for q in after)  # no step, round or judge after it
    known = {session_of(q) for q in sim.requests[: cut + 1]}
    assert {session_of(q) for q in after} <= known  # and no fresh session: only the CLI's own retries
    lineage = Lineage.open(ws / "runs", ws)
    for step, actor in (("确认需求", "clarifier"), ("设定目标", "goal_setter"), ("干活", "coordinator")):
        worked = [session_of(q) for q in sim.requests if q.actor == actor and not q.reply.startswith("fault")]
        if worked:
            assert lineage.steps.get(step) == worked[-1]  # still the session that holds the work
    stopped_in = round(ended - faults[0].at, 2)
    record_property("seconds_from_first_401_to_exit", stopped_in)
    print(f"\n401 at {where}: flower exited {stopped_in} s after the first refused request")


# -- kills ---------------------------------------------------------------------------------------------


def test_a_kill_campaign_sample_loses_nothing(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "kill_campaign.py"),
            "--kills",
            "4",
            "--seed",
            "11",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\nkill campaign sample: {figures}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert figures["runs"] == 4 and figures["reruns_finished"] == 4
    assert figures["steps_not_continued"] == 0 and figures["finished_steps_redone"] == 0
    assert figures["files_torn"] == 0 and figures["processes_left"] == 0
