"""`flower rewind N` and `flower fork N` through the real `flower` command, the real Claude Code
CLI and flower.sim: a scripted three-round run, then back to round 1 (files, the person's own
edit kept, .git untouched, the next request to the model ending with round 1), a fork from
round 2 continued beside the original, a rewind refused while a run holds the folder, and kills
at every write of a rewind."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_cli_e2e import cli_env, flower

from flower.core.checkpoints import Checkpoints
from flower.core.lineage import Lineage
from flower.core.rewind import JOURNAL, KILL_AFTER
from flower.core.rundir import FlowLock
from flower.sim.scenarios import BARE_VERDICTS, HANDOVER, STARTER_ACTORS, _bash, delegate, looked, proof
from flower.workflow.history import read_history

pytestmark = pytest.mark.e2e

ASK = "写 notes.txt,三轮做完"
DONE = ["第一轮做完了:a.txt 是 v1。", "第二轮做完了:a.txt 是 v2,加了 b.txt。", "第三轮做完了:加了 c.txt。"]
AFTER = "退回之后这一轮做完了。"


def report(what: str) -> dict[str, Any]:
    return {"text": f"结论:{what}\n依据:文件已写。\n产物:{what}\n未验证:无"}


def three_rounds(extra_coordinator: int = 1) -> dict[str, Any]:
    """Three judged rounds (not yet, not yet, achieved), each changing files, and one more round
    for every run that continues afterwards (`extra_coordinator`)."""
    return {
        "actors": dict(STARTER_ACTORS),
        "scripts": {
            "clarifier": [{"text": BRIEF}],
            "goal_setter": [{"text": GOAL}, {"text": GOAL}],
            "coordinator": [
                delegate("写 a.txt v1"),
                {"text": DONE[0]},
                delegate("a.txt 改成 v2,加 b.txt"),
                {"text": DONE[1]},
                delegate("加 c.txt"),
                {"text": DONE[2]},
                *[{"text": AFTER} for _ in range(extra_coordinator)],
            ],
            "coder": [
                _bash("printf 'v1\\n' > a.txt"),
                report("a.txt"),
                _bash("printf 'v2\\n' > a.txt && mkdir -p sub && printf 'b\\n' > sub/b.txt"),
                report("b.txt"),
                _bash("printf 'c\\n' > c.txt"),
                report("c.txt"),
            ],
            "judge": [
                {"text": BARE_VERDICTS["not_yet"]},
                {"text": BARE_VERDICTS["not_yet"]},
                # an accepting judge looks first: achieved needs proof (core/evidence.py)
                *[turn for _ in range(1 + extra_coordinator) for turn in looked(ACCEPTED, "a.txt")],
            ],
        },
        "rules": [{"actor": "handover", "reply": {"text": HANDOVER}}],
        "default": {"text": "(flower.sim: this actor's script is used up)"},
    }


BRIEF = (
    "## 目标\n写三个文本文件。\n\n## 验收标准\na.txt、b.txt、c.txt 都在。\n\n"
    "## 边界\n只写文本。\n\n## 未知与假设\n无。"
)
GOAL = "## 目标\n三个文件。\n\n## 判定清单\n- 工作区根目录有 README.md,写了怎么运行\n"
ACCEPTED = BARE_VERDICTS["achieved"] + proof(["工作区根目录有 README.md,写了怎么运行"], "a.txt")


def tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def workspace_files(ws: Path) -> dict[str, bytes]:
    """What the person sees of their project: flower's own folders and .git aside."""
    return {
        p.relative_to(ws).as_posix(): p.read_bytes()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and p.relative_to(ws).parts[0] not in (".git", ".flower", "runs")
    }


def repo(ws: Path) -> None:
    ws.mkdir()
    (ws / "README.md").write_text("# proj\n", encoding="utf-8")
    (ws / ".gitignore").write_text("runs/\n.flower/\n", encoding="utf-8")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "0"],
    ):
        subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


def run_three(sim_factory: Any, claude_root: Path, ws: Path, *, extra: int = 1) -> tuple[Any, dict[str, str]]:
    sim = sim_factory(three_rounds(extra))
    env = cli_env(sim, claude_root)
    done = flower("--timeout", "0", ASK, cwd=ws, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "判定第 3 轮:达成" in done.stdout
    return sim, env


@pytest.mark.parametrize("kind", ["repo", "plain"])
def test_rewind_to_round_1_gives_back_its_files_and_its_conversation(
    sim_factory, claude_root, tmp_path, kind
):
    ws = tmp_path / "proj"
    if kind == "repo":
        repo(ws)
    else:
        ws.mkdir()
        (ws / "README.md").write_text("# proj\n", encoding="utf-8")
    sim, env = run_three(sim_factory, claude_root, ws)
    store = Checkpoints(ws / "runs", ws)
    round1 = store.at_round(1)
    assert round1 is not None and store.rounds() == [1, 2, 3]
    assert (ws / "c.txt").exists() and (ws / "sub" / "b.txt").exists()
    (ws / "mine.txt").write_text("我自己写的\n", encoding="utf-8")  # by hand, after the run
    git_before = tree(ws / ".git") if kind == "repo" else {}
    work_session = Lineage.open(ws / "runs", ws).steps["干活"]

    listed = flower("rewind", cwd=ws, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "第 1 轮" in listed.stdout and "第 3 轮" in listed.stdout

    back = flower("rewind", "1", "--remark", "这次先写 README", cwd=ws, env=env)

    assert back.returncode == 0, back.stdout + back.stderr
    assert "<- 退回到第 1 轮判定之后" in back.stdout
    assert "  - c.txt" in back.stdout and "  - sub/b.txt" in back.stdout and "  ~ a.txt" in back.stdout
    assert "你自己改过的 1 个文件保留原样:mine.txt" in back.stdout
    assert "干活 的会话回到第 1 轮结束" in back.stdout
    files = workspace_files(ws)
    assert files.pop("mine.txt") == "我自己写的\n".encode()
    assert {p: hashlib.sha256(b).hexdigest() for p, b in files.items()} == {
        p: e.sha for p, e in round1.files.items()
    }  # byte for byte checkpoint 1
    assert (ws / "a.txt").read_bytes() == b"v1\n" and not (ws / "sub").exists()
    if kind == "repo":
        assert tree(ws / ".git") == git_before  # the repository's own folder: not one byte changed
    lineage = Lineage.open(ws / "runs", ws)
    assert [r["round"] for r in lineage.rewinds] == [1]
    rows = json.loads((ws / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert rows[-1]["step"] == "rewind" and rows[-1]["rewind"]["round"] == 1

    before = len(sim.requests_for("coordinator"))
    again = flower(cwd=ws, env=env, stdin="")

    assert again.returncode == 0, again.stdout + again.stderr
    asked = sim.requests_for("coordinator")[before]
    assert "工作区已经退回到第 1 轮结束时的样子" in asked.last_user_text
    assert "这次先写 README" in asked.last_user_text
    said = [m for m in asked.messages if m.get("role") == "assistant"]
    assert DONE[0] in json.dumps(said[-1], ensure_ascii=False)  # the conversation ends with round 1
    assert DONE[1] not in asked.all_text and DONE[2] not in asked.all_text
    forked = Lineage.open(ws / "runs", ws).steps["干活"]
    assert forked != work_session  # a fork: the old session, rounds 2 and 3 included, is kept
    assert Lineage.open(ws / "runs", ws).point("干活") is None
    assert "第 2 轮" in flower("rewind", cwd=ws, env=env).stdout  # the branch has its own round 2
    story = read_history(ws, run_dir=ws / "runs")
    [branch] = story.branches
    assert (branch.kind, branch.round, branch.from_round, branch.remark) == (
        "rewind",
        1,
        3,
        "这次先写 README",
    )
    assert branch.after_wake == 1 and len(story.wakes) == 2  # the second wake goes on from round 1


def test_a_fork_from_round_2_and_the_original_both_go_on_apart(sim_factory, claude_root, tmp_path):
    ws = tmp_path / "proj"
    repo(ws)
    sim, env = run_three(sim_factory, claude_root, ws, extra=2)
    original = workspace_files(ws)
    into = tmp_path / "proj-fork"

    made = flower("fork", "2", "--into", str(into), cwd=ws, env=env)

    assert made.returncode == 0, made.stdout + made.stderr
    assert "<- 从第 2 轮分出一份新的运行" in made.stdout and "(git worktree)" in made.stdout
    assert workspace_files(ws) == original  # the original untouched
    assert (into / "a.txt").read_bytes() == b"v2\n" and (into / "sub" / "b.txt").exists()
    assert not (into / "c.txt").exists()  # round 3's file is not in the fork
    (ws / "only-original.txt").write_text("o\n", encoding="utf-8")

    fork_run = flower(cwd=into, env=env, stdin="")
    orig_run = flower(cwd=ws, env=env, stdin="")

    assert fork_run.returncode == 0, fork_run.stdout + fork_run.stderr
    assert orig_run.returncode == 0, orig_run.stdout + orig_run.stderr
    assert not (into / "only-original.txt").exists() and not (into / "c.txt").exists()
    assert (ws / "c.txt").exists()
    prompts = [r.last_user_text for r in sim.requests_for("coordinator")]
    assert sum("退回到第 2 轮" in p for p in prompts) == 1  # the fork resumed at round 2, once
    assert Checkpoints(into / "runs", into).head() is not None


def test_a_rewind_while_a_run_holds_the_folder_is_refused(sim_factory, claude_root, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    _sim, env = run_three(sim_factory, claude_root, ws)
    before = workspace_files(ws)
    lock = FlowLock(ws / "runs", "starter", who="flower go")
    lock.acquire()  # as a run in progress holds it
    try:
        refused = flower("rewind", "1", cwd=ws, env=env)
    finally:
        lock.release()

    assert refused.returncode == 1
    [line] = [x for x in refused.stderr.splitlines() if x.strip()]
    assert line.startswith("x 这里有一个 flower 正在跑:flower go")
    assert workspace_files(ws) == before


def test_a_rewind_killed_at_any_write_leaves_the_old_or_the_new_files(sim_factory, claude_root, tmp_path):
    ws = tmp_path / "proj"
    repo(ws)
    _sim, env = run_three(sim_factory, claude_root, ws)
    for n in range(20):  # more files for the rewind to change: more places to be killed at
        (ws / f"late-{n}.txt").write_text(f"{n}\n", encoding="utf-8")
    store = Checkpoints(ws / "runs", ws)
    store.take(round_no=3, phase="end", step="干活", flow="starter")
    run_dir = tmp_path / "pristine-runs"
    subprocess.run(["cp", "-a", str(ws / "runs"), str(run_dir)], check=True)
    pristine = workspace_files(ws)
    target = store.at_round(1)
    assert target is not None
    new = {p: e.sha for p, e in target.files.items()}
    old = {p: hashlib.sha256(b).hexdigest() for p, b in pristine.items()}
    killed = 0
    for point in range(1, 40):
        # each kill starts from the same run: the files and books as the three rounds left them
        subprocess.run(["rm", "-rf", str(ws / "runs")], check=True)
        subprocess.run(["cp", "-a", str(run_dir), str(ws / "runs")], check=True)
        for p in list(workspace_files(ws)):
            (ws / p).unlink()
        for p, b in pristine.items():
            (ws / p).parent.mkdir(parents=True, exist_ok=True)
            (ws / p).write_bytes(b)
        done = flower("rewind", "1", cwd=ws, env={**env, KILL_AFTER: str(point)})
        if done.returncode == 0:
            break
        assert done.returncode == -9, done.stderr
        killed += 1
        assert (ws / "runs" / "checkpoints" / JOURNAL).exists()  # the journal went first
        nxt = flower("rewind", cwd=ws, env={k: v for k, v in env.items() if k != KILL_AFTER})
        assert nxt.returncode == 0, nxt.stderr
        assert "上次退回到第 1 轮时被打断了" in nxt.stderr
        now = {p: hashlib.sha256(b).hexdigest() for p, b in workspace_files(ws).items()}
        assert now in (old, new), f"mixed after a kill at write {point}"
        assert now == new
        assert not (ws / "runs" / "checkpoints" / JOURNAL).exists()
    assert killed >= 20, killed
    assert os.path.exists(ws / "a.txt")
