"""One PostgreSQL database shared by many runs and by several machines, through the real `flower`
command, the real Claude Code CLI and flower.sim: eight runs at once lose nothing and keep their
own lineages; a starter flow killed on one machine is continued on another (another clone of the
same repository, a fresh run folder, the same store URL) without redoing what was finished; a
different piece of work never picks it up; the store's password shows nowhere."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk.types import SessionKey
from test_cli_e2e import Child, cli_env, flower

from flower.base.loose import mapping
from flower.core.identity import identify
from flower.core.shared import shared_key
from flower.sim import scenarios
from flower.sim.postgres import LocalPostgres
from flower.sim.scenario import ScenarioData
from flower.stores.postgres import PostgresRunBook, PostgresSessionStore
from flower.workflow.starter import WORK, wake_state

pytestmark = pytest.mark.e2e

REQUEST = "写一个 hello.py"
RUNS = 8
GIT_ID = [
    "-c",
    "user.name=flower tests",
    "-c",
    "user.email=tests@flower.invalid",
    "-c",
    "init.defaultBranch=main",
]

TWO_STEPS_FLOW = """\
from flower import AgentSpec, Step, Workflow

HANDS = AgentSpec(name="hands", instructions="", allowed_tools=["Bash"])


def main():
    return Workflow([Step("一", HANDS, "做第一步"), Step("二", HANDS, "做第二步")], name="two")
"""


def bash(command: str) -> dict[str, Any]:
    return {"tool": {"name": "Bash", "input": {"command": command, "description": command[:30]}}}


# Stateless rules: any number of runs share one sim, each answered by what its conversation holds.
TWO_STEPS = {
    "rules": [
        {"when": {"messages_contain": "step-two-output"}, "reply": {"text": "第二步好了"}},
        {
            "when": {"messages_contain": "做第二步"},
            "reply": bash("echo step-two-output > two.txt && cat two.txt"),
        },
        {"when": {"messages_contain": "step-one-output"}, "reply": {"text": "第一步好了"}},
        {"when": {}, "reply": bash("echo step-one-output > one.txt && cat one.txt")},
    ],
    "default": {"text": "(flower.sim: no rule)"},
}


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


def local_uuids(claude_root: Path) -> dict[str, set[str]]:
    """session id -> the uuids of every entry the CLI wrote to its own files (main + subagents)
    that a store receives (the CLI keeps its api-request lines to itself)."""
    found: dict[str, set[str]] = {}
    for path in (claude_root / "claude-config" / "projects").rglob("*.jsonl"):
        parts = path.relative_to(claude_root / "claude-config" / "projects").parts
        session = parts[1].removesuffix(".jsonl")
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if isinstance(entry.get("uuid"), str) and not str(entry.get("type", "")).startswith(
                "api-request"
            ):
                found.setdefault(session, set()).add(entry["uuid"])
    return found


def stored(url: str, workspace: Path) -> dict[str, list[str]]:
    """session id -> the uuids the store holds for it (main + subagents), under the workspace's key."""
    key = shared_key(identify(workspace))
    store = PostgresSessionStore(url)

    async def read() -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for listed in await store.list_sessions(key):
            sid = listed["session_id"]
            main: SessionKey = {"project_key": key, "session_id": sid}
            subs = await store.list_subkeys({"project_key": key, "session_id": sid})
            keys: list[SessionKey] = [main]
            keys += [{"project_key": key, "session_id": sid, "subpath": sub} for sub in subs]
            for k in keys:
                for entry in await store.load(k) or []:
                    uid = dict(entry).get("uuid")
                    if isinstance(uid, str):
                        out.setdefault(sid, []).append(uid)
        return out

    try:
        return asyncio.run(read())
    finally:
        store.close()


def files_text(*roots: Path) -> str:
    """Everything flower and the CLI wrote under these folders, as one text to search."""
    chunks = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and ".git" not in path.parts:
                chunks.append(path.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(chunks)


# -- many runs, one database ---------------------------------------------------------------------------


def test_eight_runs_through_the_cli_against_one_database_lose_nothing_and_keep_their_own_lineage(
    sim_factory, pg_url, postgres: LocalPostgres, tmp_path
):
    sim = sim_factory(TWO_STEPS)
    children = []
    for i in range(RUNS):
        ws = tmp_path / f"run{i}"
        ws.mkdir()
        (ws / "flows.py").write_text(TWO_STEPS_FLOW, encoding="utf-8")
        env = cli_env(sim, tmp_path / f"claude{i}")
        argv = [sys.executable, "-m", "flower", "--store", pg_url, "run", "flows.py:main"]
        proc = subprocess.Popen(
            argv, cwd=ws, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        children.append((ws, tmp_path / f"claude{i}", proc))
    outputs = []
    for ws, _, proc in children:
        out, err = proc.communicate(timeout=600)
        outputs.append(out + err)
        assert proc.returncode == 0, f"{ws.name}:\n{out}\n{err}"
        assert "第二步好了" in out

    book = PostgresRunBook.direct(pg_url)
    lineages, sessions_seen = [], set()
    for (ws, claude, _), output in zip(children, outputs, strict=True):
        # 0 errors: every step of every run ok, nothing failed on the way, not even a mirror batch
        rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
        assert [r["step"] for r in rows] == ["一", "二"]
        assert all(r["ok"] and r["error"] is None and r["errors"] == [] for r in rows), rows
        assert "mirror_error" not in output
        # 0 lost rows: every entry the CLI wrote is in the database, once
        local, db = local_uuids(claude), stored(pg_url, ws)
        assert set(local) == set(db)
        for sid, uuids in local.items():
            assert sorted(db[sid]) == sorted(set(db[sid])), "duplicated rows"
            assert uuids <= set(db[sid]), f"{ws.name}: lost {len(uuids - set(db[sid]))} rows"
        # each run's lineage is its own: its steps, its sessions, in the database and in its file
        identity = identify(ws)
        shared = book.lineage(identity.key)
        assert shared is not None and shared["woke"] == 1
        steps = mapping(shared["steps"])
        assert set(steps) == {"一", "二"}
        assert set(steps.values()) == set(db)
        on_disk = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))
        assert on_disk["steps"] == shared["steps"]
        assert [r["session_id"] for r in book.manifest(identity.key)] == [r["session_id"] for r in rows]
        lineages.append(shared)
        sessions_seen |= set(db)
    assert len(sessions_seen) == 2 * RUNS  # no run continued or wrote into another's session
    assert len({json.dumps(lin["steps"], sort_keys=True) for lin in lineages}) == RUNS
    password = postgres.password
    assert all(password not in output for output in outputs)
    assert password not in files_text(*(ws for ws, _, _ in children))


# -- continue anywhere ---------------------------------------------------------------------------------


def slow_starter(seconds: int) -> ScenarioData:
    """The resumable starter run, its coder's command taking `seconds` in a workspace that holds
    a `.slow` file (a kill lands in it), no time elsewhere.

    A plain `sleep N && ...` is refused by the CLI's own guard, so the wait is Python's."""
    scenario = scenarios.resumable_starter_scenario(bash_seconds=0)
    slow = f"python3 -c \"import os, time; os.path.exists('.slow') and time.sleep({seconds})\""
    for rule in scenario["rules"]:
        tool = rule["reply"].get("tool")
        if rule["actor"] == "coder" and tool is not None and tool["name"] == "Bash":
            tool["input"]["command"] = str(tool["input"]["command"]).replace("sleep 0", slow)
    return scenario


def clone(origin: Path, where: Path) -> Path:
    where.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "-q", str(origin), str(where), cwd=origin.parent)
    return where


def test_a_starter_flow_killed_on_machine_a_is_continued_on_machine_b(
    sim_factory, pg_url, postgres: LocalPostgres, tmp_path
):
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin), cwd=tmp_path)
    a = clone(origin, tmp_path / "machine-a" / "proj")
    (a / "README.md").write_text("# proj\n", encoding="utf-8")
    git("add", "README.md", cwd=a)
    git("commit", "-q", "-m", "start", cwd=a)
    git("push", "-q", "-u", "origin", "main", cwd=a)

    sim = sim_factory(slow_starter(120))
    (a / ".slow").touch()  # only here: the checkout on machine B works at full speed
    env_a = cli_env(sim, tmp_path / "claude-a")
    first = Child("--store", pg_url, "--timeout", "0", REQUEST, cwd=a, env=env_a)
    book = PostgresRunBook.direct(pg_url)
    identity = identify(a)
    try:
        # killed while the work step's coder runs its (long) command: mid-step, nothing finished
        wait_until(lambda: any(r.actor == "coder" for r in sim.requests), "the coder at work")
        wait_until(
            lambda: WORK in mapping((book.lineage(identity.key) or {}).get("steps")),
            "the work session recorded",
        )
        work = mapping((book.lineage(identity.key) or {}).get("steps"))[WORK]
        wait_until(lambda: work in stored(pg_url, a), "the work session mirrored")
        # meanwhile, on machine B: the same work is taken, by whom and where is said
        b = clone(origin, tmp_path / "machine-b" / "elsewhere" / "checkout")
        early = flower(
            "--store",
            pg_url,
            "-r",
            str(tmp_path / "early-runs"),
            "--timeout",
            "0",
            REQUEST,
            cwd=b,
            env=cli_env(sim, tmp_path / "claude-early"),
        )
        assert early.returncode == 1, early.stdout + early.stderr
        assert f"这份工作已经有一个 flower 在 {socket.gethostname()} 上跑流程「starter」" in early.stderr
        assert "flower go" in early.stderr and f"pid {first.proc.pid}" in early.stderr
    finally:
        first.kill()
    assert first.proc.returncode == -9
    assert not (a / "hello.py").exists()
    done_on_a = {r.actor for r in sim.requests}
    assert {"clarifier", "goal_setter", "coordinator", "coder"} <= done_on_a and "judge" not in done_on_a

    # the person brings the workspace along with git; the run folder stays on machine A
    git("add", "-A", ".flower", cwd=a)
    git("commit", "-q", "-m", "flower notes", cwd=a)
    git("push", "-q", cwd=a)
    git("pull", "-q", cwd=b)
    assert not (b / "runs").exists()
    assert identify(b) == identity  # same remote, same branch: the same work

    state = wake_state(b, run_dir=b / "runs", store=pg_url)
    assert state["waking"] and state["steps"][WORK] == work and state["woke"] == 1

    seen = len(sim.requests)
    env_b = cli_env(sim, tmp_path / "claude-b")
    second = flower("--store", pg_url, "--timeout", "0", cwd=b, env=env_b, stdin="\n")
    assert second.returncode == 0, second.stdout + second.stderr
    on_b = sim.requests[seen:]

    assert "接上上次" in second.stdout and "第 2 次唤醒" in second.stdout
    assert f"== {WORK} " in second.stdout and "<- 接上次 · 第 2 次唤醒" in second.stdout
    # finished steps are not redone: no clarifying, no goal setting on machine B; the finished
    # run ends with its handover to the next tool, in the work session too
    assert {r.actor for r in on_b} == {"coordinator", "coder", "judge", "handover"}
    handover = [r for r in on_b if r.actor == "handover"]
    assert {r.headers.get("x-claude-code-session-id") for r in handover} == {work}
    # the work step continues the same session: its first request carries A's conversation
    coordinating = [r for r in on_b if r.actor == "coordinator"]
    assert {r.headers.get("x-claude-code-session-id") for r in coordinating} == {work}
    assert "按下面的需求确认书和目标把活干完" in coordinating[0].all_text  # A's first prompt
    assert "接着上次没做完的活继续" in coordinating[0].all_text  # B's resume prompt
    # and never sends machine A's folder: paths in the history point into B's checkout
    assert all(str(a) not in r.all_text for r in on_b)
    assert (b / "hello.py").read_text(encoding="utf-8") == 'print("hello")\n'

    shared = book.lineage(identity.key)
    assert shared is not None and mapping(shared["steps"])[WORK] == work and shared["woke"] == 2
    local = json.loads((b / "runs" / "lineage.json").read_text(encoding="utf-8"))
    assert local == {"workspace": str(b), "woke": 2, "steps": shared["steps"]}
    runs = {r["run"] for r in book.manifest(identity.key)}
    assert len(runs) == 2  # A's books (its in-flight row included) and B's, side by side
    # the judge's trail is in the store's decisions of its session, beside the books
    [judge_row] = [r for r in book.manifest(identity.key) if r["step"] == "干活·判定#1"]
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        kept = conn.execute(
            "SELECT session_id, ref, detail FROM flower.decisions WHERE kind = 'evidence'"
        ).fetchall()
    [(session, label, detail)] = kept
    assert (session, label) == (judge_row["session_id"], "干活·判定#1")
    assert json.loads(detail)["state"] == "achieved" and json.loads(detail)["trail"]

    # a different piece of work never picks the run up: another branch, another repository
    other_branch = clone(origin, tmp_path / "machine-c" / "proj")
    git("checkout", "-q", "-b", "experiment", cwd=other_branch)
    other_repo = tmp_path / "machine-d" / "proj"
    other_repo.mkdir(parents=True)
    git("init", "-q", cwd=other_repo)
    git("remote", "add", "origin", str(tmp_path / "another.git"), cwd=other_repo)
    for folder in (other_branch, other_repo):
        assert identify(folder).key != identity.key
        probe = wake_state(folder, run_dir=folder / "runs", store=pg_url)
        assert probe["steps"] == {} and probe["woke"] == 0

    password = postgres.password
    assert password not in first.output + second.stdout + second.stderr
    assert password not in files_text(a, b, tmp_path / "claude-a", tmp_path / "claude-b")
    assert password not in json.dumps(book.manifest(identity.key)) + json.dumps(shared)


def test_a_store_that_cannot_be_reached_is_said_without_its_password(sim_factory, claude_root, tmp_path):
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    url = f"postgresql://flower:hunter2-secret@/flower?host={tmp_path / 'nowhere'}"
    done = flower("--store", url, "--timeout", "0", REQUEST, cwd=tmp_path, env=cli_env(sim, claude_root))
    assert done.returncode == 1
    assert "打不开会话库" in done.stderr and "postgresql://flower:***@/flower" in done.stderr
    assert "hunter2-secret" not in done.stdout + done.stderr + files_text(tmp_path)
    assert sim.requests == []  # nothing was spent before the store was known to work


def test_flower_store_in_the_environment_chooses_the_store(sim_factory, claude_root, pg_url, tmp_path):
    sim = sim_factory(TWO_STEPS)
    (tmp_path / "flows.py").write_text(TWO_STEPS_FLOW, encoding="utf-8")
    env = cli_env(sim, claude_root, FLOWER_STORE=pg_url)
    done = flower("run", "flows.py:main", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "runs" / "sessions.db").exists()  # the transcripts went to the database
    assert len(stored(pg_url, tmp_path)) == 2
    assert os.environ.get("FLOWER_STORE") is None  # the test's own process never chose one


# -- the claim on the flow survives the connection -------------------------------------------------

# the first step's command says it started, then waits while the workspace holds a `hold` file:
# the test decides when it ends (a restart, a takeover happen while it runs)
HELD = (
    "python3 -c \"import os, time; open('started', 'w').close(); "
    "[time.sleep(0.2) for _ in iter(lambda: os.path.exists('hold'), False)]\""
)


def held_steps() -> dict[str, Any]:
    scenario = json.loads(json.dumps(TWO_STEPS))
    first = scenario["rules"][-1]["reply"]["tool"]
    first["input"] = {"command": f"{HELD} && echo step-one-output", "description": "wait", "timeout": 600000}
    return scenario


def lease_holder(url: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT holder_id, holder FROM flower.flows").fetchall()


def held_work(tmp_path: Path) -> Path:
    """A workspace with the two-step flow, its first command held (`hold`) until the test lets go."""
    ws = tmp_path / "work"
    ws.mkdir()
    (ws / "flows.py").write_text(TWO_STEPS_FLOW, encoding="utf-8")
    (ws / "hold").touch()
    return ws


def test_a_run_keeps_its_claim_through_a_database_restart_and_a_second_process_stays_out(
    sim_factory, private_postgres: LocalPostgres, tmp_path
):
    url = private_postgres.url()
    sim = sim_factory(held_steps())
    ws = held_work(tmp_path)
    # generous bounds for a busy machine: a restart here takes seconds, not a minute
    env = cli_env(sim, tmp_path / "claude", FLOWER_LEASE_S="120", FLOWER_STORE_OUTAGE_S="60")
    first = Child("--store", url, "run", "flows.py:main", cwd=ws, env=env)
    try:
        wait_until(lambda: (ws / "started").exists(), "the first step at work", timeout=240)
        assert len(lease_holder(url)) == 1
        private_postgres.pause()
        try:
            # a second process started during the outage refuses: it cannot reach the store
            during = flower(
                "--store", url, "-r", str(tmp_path / "during"), "run", "flows.py:main", cwd=ws, env=env
            )
            assert during.returncode == 1, during.stdout + during.stderr
            assert "打不开会话库" in during.stderr and "Traceback" not in during.stdout + during.stderr
            wait_until(lambda: "断了" in first.output, "the run saying its store is gone")
        finally:
            private_postgres.resume()
        wait_until(lambda: "又连上了" in first.output, "the run connected again")
        # the lease is still the first run's: a second process now is told who works on it
        after = flower("--store", url, "-r", str(tmp_path / "after"), "run", "flows.py:main", cwd=ws, env=env)
        assert after.returncode == 1, after.stdout + after.stderr
        assert f"这份工作已经有一个 flower 在 {socket.gethostname()} 上跑流程「two」" in after.stderr
        assert f"pid {first.proc.pid}" in after.stderr
        (ws / "hold").unlink()
        assert first.proc.wait(timeout=300) == 0, first.output
    finally:
        first.kill()
    out = first.output
    assert "第二步好了" in out and "Traceback" not in out, out
    said = [line for line in out.splitlines() if "会话库" in line and "断了" in line]
    assert len(said) == 1 and said[0].startswith("! 会话库 postgresql://flower:***@"), out
    assert len([line for line in out.splitlines() if "又连上了" in line]) == 1, out
    rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert [r["step"] for r in rows] == ["一", "二"] and all(r["ok"] for r in rows), rows
    # nothing the CLI wrote was lost on the way: every entry is in the database
    local, db = local_uuids(tmp_path / "claude"), stored(url, ws)
    for sid, uuids in local.items():
        assert uuids <= set(db.get(sid, [])), f"lost {len(uuids - set(db.get(sid, [])))} entries"
    assert lease_holder(url) == []  # released at the end
    assert private_postgres.password not in out


def test_a_run_whose_claim_is_taken_over_stops_with_one_line(sim_factory, pg_url, tmp_path):
    import psycopg

    sim = sim_factory(held_steps())
    ws = held_work(tmp_path)
    env = cli_env(sim, tmp_path / "claude", FLOWER_LEASE_S="12")
    first = Child("--store", pg_url, "run", "flows.py:main", cwd=ws, env=env)
    try:
        wait_until(lambda: (ws / "started").exists(), "the first step at work", timeout=240)
        # what another machine does once it found this lease expired
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE flower.flows SET holder_id = 'elsewhere', "
                """holder = '{"host": "machine-b", "who": "flower go", "pid": 4242}'::jsonb"""
            )
        code = first.proc.wait(timeout=300)
    finally:
        first.kill()
    out = first.output
    assert code == 1, out
    taken = [line for line in out.splitlines() if "接手了" in line]
    assert len(taken) == 1, out
    assert "流程「two」在会话库里已经被 machine-b 上的另一个 flower 接手了" in taken[0]
    assert "Traceback" not in out
    assert not any("做第二步" in r.all_text for r in sim.requests)  # the run went no further
    assert [h for h, _ in lease_holder(pg_url)] == ["elsewhere"]  # the new holder's lease stays


def test_a_database_gone_longer_than_the_bound_stops_the_run_with_one_line_and_it_continues_later(
    sim_factory, private_postgres: LocalPostgres, tmp_path
):
    url = private_postgres.url()
    sim = sim_factory(held_steps())
    ws = held_work(tmp_path)
    env = cli_env(sim, tmp_path / "claude", FLOWER_LEASE_S="8")  # waits 4 s at most
    first = Child("--store", url, "run", "flows.py:main", cwd=ws, env=env)
    try:
        wait_until(lambda: (ws / "started").exists(), "the first step at work", timeout=240)
        private_postgres.pause()
        try:
            code = first.proc.wait(timeout=300)
        finally:
            private_postgres.resume()
    finally:
        first.kill()
    out = first.output
    assert code == 1, out
    stopped = [line for line in out.splitlines() if "连不上超过 4 秒" in line]
    assert len(stopped) == 1 and "这个 run 停下了" in stopped[0], out
    assert "Traceback" not in out and private_postgres.password not in out, out
    # once the database is back, the same command continues the same session and finishes
    book = PostgresRunBook.direct(url)
    before = mapping((book.lineage(identify(ws).key) or {}).get("steps"))
    assert "一" in before, before
    (ws / "hold").unlink()
    again = flower("--store", url, "run", "flows.py:main", cwd=ws, env=env, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "第二步好了" in again.stdout and "Traceback" not in again.stdout + again.stderr
    after = mapping((book.lineage(identify(ws).key) or {}).get("steps"))
    assert after["一"] == before["一"]  # the same session, continued


# -- each way the shared store fails, said as itself ----------------------------------------------


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("stopped", "数据库服务器没在跑"),
        ("wrong password", "数据库不认这个用户或密码"),
        ("missing database", "库 nosuchdb 不存在:先建好它(createdb nosuchdb)"),
        ("unreachable host", "到不了数据库主机"),
    ],
)
def test_each_way_the_store_fails_has_its_own_line_and_no_traceback(
    fault: str, said: str, sim_factory, private_postgres: LocalPostgres, tmp_path
):
    sim = sim_factory(scenarios.resumable_starter_scenario(bash_seconds=0))
    url = {
        "stopped": private_postgres.url(),
        "wrong password": private_postgres.url().replace(private_postgres.password, "wrong-pw-4711"),
        "missing database": private_postgres.url("nosuchdb"),
        "unreachable host": "postgresql://flower:s3cret-pw@no-such-host.invalid:5432/flower",
    }[fault]
    if fault == "stopped":
        private_postgres.pause()
    try:
        done = flower(
            "--store", url, "--timeout", "0", REQUEST, cwd=tmp_path, env=cli_env(sim, tmp_path / "c")
        )
    finally:
        if fault == "stopped":
            private_postgres.resume()
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("x 打不开会话库:"), text
    assert said in lines[0] and "Traceback" not in text
    for secret in (private_postgres.password, "wrong-pw-4711", "s3cret-pw"):
        assert secret not in text
    assert sim.requests == []  # nothing spent before the store was known to work
