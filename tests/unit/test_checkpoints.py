"""The checkpoint store and the rewind plan, on real folders and real git repositories."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flower.core.checkpoints import CheckpointError, Checkpoints
from flower.core.lineage import Lineage
from flower.core.rewind import JOURNAL, plan, recover, rewind


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True).stdout


def tree_of(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes (a .git folder included: it is compared too)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(params=["repo", "plain"])
def ws(request, tmp_path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / ".gitignore").write_text("node_modules/\n*.log\n", encoding="utf-8")
    (folder / "a.txt").write_text("a1\n", encoding="utf-8")
    if request.param == "repo":
        git(folder, "init", "-q")
        git(folder, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
        git(folder, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    return folder


def test_a_checkpoint_keeps_the_files_git_would_and_none_of_flowers_own(ws, tmp_path):
    (ws / "node_modules" / "x").mkdir(parents=True)
    (ws / "node_modules" / "x" / "big.js").write_text("ignored\n", encoding="utf-8")
    (ws / "build.log").write_text("ignored\n", encoding="utf-8")
    (ws / ".flower" / "notes").mkdir(parents=True)
    (ws / ".flower" / "notes" / "目标.md").write_text("flower's own\n", encoding="utf-8")
    (ws / "runs").mkdir()
    (ws / "runs" / "manifest.json").write_text("[]", encoding="utf-8")
    (ws / ".env").write_text("ANTHROPIC_API_KEY=sk-ant-api03-abcdefabcdefabcdefabcdef\n", encoding="utf-8")
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("print(1)\n", encoding="utf-8")
    git_before = tree_of(ws / ".git") if (ws / ".git").exists() else {}
    store = Checkpoints(ws / "runs", ws)

    cp = store.take(round_no=1, phase="before")

    assert sorted(cp.files) == [".gitignore", "a.txt", "src/main.py"]
    assert cp.skipped == {".env": "env"}
    assert store.skipped_line(cp) is not None and ".env" in (store.skipped_line(cp) or "")
    for entry in cp.files.values():
        assert store.blob(entry.sha) == (ws / next(p for p, e in cp.files.items() if e == entry)).read_bytes()
    blobs = [p.read_bytes() for p in (ws / "runs" / "checkpoints" / "blobs").rglob("*") if p.is_file()]
    assert not any(b"sk-ant" in b for b in blobs)  # the credential never left its file
    if git_before:
        assert tree_of(ws / ".git") == git_before  # not one byte of the repository changed


def test_checkpoints_are_incremental_and_content_addressed(ws):
    for n in range(20):
        (ws / f"f{n}.txt").write_text(f"file {n}\n" * 100, encoding="utf-8")
    store = Checkpoints(ws / "runs", ws)
    first = store.take(round_no=1, phase="before")
    again = store.take(round_no=1, phase="after")
    (ws / "f3.txt").write_text("changed\n", encoding="utf-8")
    (ws / "copy.txt").write_bytes((ws / "f4.txt").read_bytes())  # same content: no new blob
    third = store.take(round_no=2, phase="before")

    assert first.added_bytes > 0 and again.added_bytes == 0
    assert third.added_bytes == len(b"changed\n")
    assert third.parent == again.seq and again.parent == first.seq
    assert [cp.seq for cp in store.line()] == [third.seq, again.seq, first.seq]
    assert third.files["copy.txt"].sha == third.files["f4.txt"].sha
    # the lists are incremental too: one with nothing changed is a fraction of the first
    assert store.path_of(again.seq).stat().st_size * 3 < store.path_of(first.seq).stat().st_size
    fresh = Checkpoints(ws / "runs", ws)  # read back from disk alone, changes applied in order
    assert [fresh.load(cp.seq).files for cp in (first, again, third)] == [
        first.files,
        again.files,
        third.files,
    ]


def test_big_files_and_the_run_limit_are_recorded_as_skipped(ws):
    (ws / "big.bin").write_bytes(b"x" * 3000)
    (ws / "m1.bin").write_bytes(b"y" * 900)
    (ws / "m2.bin").write_bytes(b"z" * 900)
    store = Checkpoints(ws / "runs", ws, file_limit=2000, run_limit=1000)

    cp = store.take(round_no=1, phase="before")

    assert cp.skipped == {"big.bin": "size", "m2.bin": "run"}  # m1.bin fitted, m2.bin would not
    assert "m1.bin" in cp.files and store.stored_bytes() <= 1000
    line = store.skipped_line(cp)
    assert line is not None and "big.bin" in line and "m2.bin" in line


@pytest.mark.parametrize(
    "entry",
    [{"sha": 5}, {"sha": "ab", "mode": "644"}, {"sha": "ab", "colour": "red"}, "ab"],
    ids=["sha-number", "mode-text", "unknown-key", "not-an-object"],
)
def test_a_damaged_entry_is_said_when_the_checkpoint_is_read(ws, entry):
    # not loaded as it is, to fail later in a restore (a number's sha[:2], a text mode)
    store = Checkpoints(ws / "runs", ws)
    cp = store.take(round_no=1, phase="before")
    record = {**cp.record(), "files": {"a.txt": entry}}
    store.path_of(cp.seq).write_bytes(gzip.compress(json.dumps(record).encode("utf-8")))
    with pytest.raises(CheckpointError, match=f"检查点 {cp.seq}"):
        Checkpoints(ws / "runs", ws).load(cp.seq)


def three_rounds(ws: Path) -> Checkpoints:
    """A run's checkpoints over three rounds: a.txt changes each round, b.txt comes in round 2."""
    store = Checkpoints(ws / "runs", ws)
    for n in (1, 2, 3):
        store.take(round_no=n, phase="before", step="干活", flow="starter")
        (ws / "a.txt").write_text(f"a{n + 1}\n", encoding="utf-8")
        if n == 2:
            (ws / "sub").mkdir()
            (ws / "sub" / "b.txt").write_text("b\n", encoding="utf-8")
        store.take(round_no=n, phase="after", step="干活", flow="starter", session=f"s{n}", at=f"u{n}")
    return store


def test_a_rewind_puts_back_the_runs_files_and_keeps_the_persons_edits(ws):
    store = three_rounds(ws)
    (ws / "mine.txt").write_text("my own note\n", encoding="utf-8")  # by hand, after the run
    git_before = tree_of(ws / ".git") if (ws / ".git").exists() else {}

    report = rewind(store, 1, remark="换个做法")

    assert (ws / "a.txt").read_text(encoding="utf-8") == "a2\n"  # as round 1 left it
    assert not (ws / "sub").exists()  # created later: gone, its folder too
    assert (ws / "mine.txt").read_text(encoding="utf-8") == "my own note\n"
    assert report.plan.kept == ["mine.txt"] and report.session_cut
    lineage = Lineage.open(ws / "runs", ws)
    assert lineage.point("干活") == {
        "session": "s1",
        "at": "u1",
        "round": 1,
        "remark": "换个做法",
        "id": report.id,
    }
    assert [r["round"] for r in lineage.rewinds] == [1]
    assert store.head() is not None and store.next_round() == 2  # the next round is 2 again, a branch
    assert store.at_round(3) is None and any(cp.round == 3 for cp in store.all())  # kept, off the line
    if git_before:
        assert tree_of(ws / ".git") == git_before
    assert not (store.root / JOURNAL).exists()


def test_restore_my_edits_puts_them_back_too_and_keeps_their_bytes(ws):
    store = three_rounds(ws)
    (ws / "a.txt").write_text("edited by hand\n", encoding="utf-8")

    kept = plan(store, 2)
    assert kept.kept == ["a.txt"] and "a.txt" not in kept.changes
    report = rewind(store, 2, restore_edits=True)

    assert (ws / "a.txt").read_text(encoding="utf-8") == "a3\n"
    assert report.plan.restored_edits == ["a.txt"]
    assert store.blob(report.saved["a.txt"]) == b"edited by hand\n"


def test_a_rewind_to_a_round_without_a_checkpoint_says_which_there_are(ws):
    store = three_rounds(ws)
    with pytest.raises(CheckpointError, match="1、2、3"):
        rewind(store, 7)


@pytest.mark.parametrize("kill_after", range(1, 12))
def test_a_journal_left_by_a_killed_rewind_is_replayed_to_the_new_state(ws, tmp_path, kill_after):
    store = three_rounds(ws)
    code = (
        "import sys\n"
        "from flower.core.checkpoints import Checkpoints\n"
        "from flower.core.rewind import rewind\n"
        f"rewind(Checkpoints({str(ws / 'runs')!r}, {str(ws)!r}), 1)\n"
    )
    env = {**os.environ, "FLOWER_FAULT_REWIND_KILL_AFTER": str(kill_after)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode in (0, -9), done.stderr
    target = store.at_round(1)
    assert target is not None

    recover(Checkpoints(ws / "runs", ws))

    now = {
        p: hashlib.sha256((ws / p).read_bytes()).hexdigest() for p in Checkpoints(ws / "runs", ws).listed()
    }
    assert now == {p: e.sha for p, e in target.files.items()}
    assert not (store.root / JOURNAL).exists()
