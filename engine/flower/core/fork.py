"""Fork a run from a judged round: a new workspace and run folder, the original left untouched.

The new workspace is a git worktree of the repository (detached at its HEAD) when the workspace
is one, else a new folder; either way its files are then made exactly what the checkpoint of
that round holds, and flower's workbench is copied beside them. The new run folder gets the
books (manifest, session store, checkpoints: blobs are hard-linked where the disk allows) and a
lineage whose step resumes the round's session, cut at its end and forked, like a rewind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..base.files import write_bytes
from ..base.i18n import _
from ..base.loop import run_to_end
from .checkpoints import (
    FOLDER,
    SCAN_GIT,
    Checkpoint,
    CheckpointError,
    Checkpoints,
    in_repository,
    restore_file,
)
from .lineage import Lineage
from .projectkey import project_key
from .recovery import MANIFEST
from .rewind import JOURNAL, _manifest_row


@dataclass
class Forked:
    round: int
    workspace: Path
    run_dir: Path
    worktree: bool  # the new workspace is a git worktree of the original repository
    files: int
    session_cut: bool


def default_places(run_dir: Path, workspace: Path, round_no: int) -> tuple[Path, Path]:
    """Where a fork goes unless told: beside the workspace; its run folder where the original's is
    relative to its workspace (inside it, or beside the original run folder)."""
    tag = f"fork-r{round_no}-{time.strftime('%Y%m%d-%H%M%S')}"
    new_ws = workspace.parent / f"{workspace.name}-{tag}"
    if run_dir.is_relative_to(workspace):
        return new_ws, new_ws / run_dir.relative_to(workspace)
    return new_ws, run_dir.parent / f"{run_dir.name}-{tag}"


@dataclass
class ForkPlan:
    """Where a fork from `target` would go and what it would hold (nothing made yet)."""

    target: Checkpoint
    workspace: Path
    run_dir: Path
    worktree: bool  # the new workspace would be a git worktree of the original repository

    @property
    def round(self) -> int:
        return self.target.round

    @property
    def files(self) -> list[str]:
        """The workspace paths the new workspace gets with the round's bytes, in path order."""
        return sorted(self.target.files)


def plan_fork(
    store: Checkpoints, round_no: int, *, into: Path | None = None, run_into: Path | None = None
) -> ForkPlan:
    """The fork from round `round_no`; CheckpointError when there is no such round or the new
    workspace's folder is taken."""
    target = store.at_round(round_no)
    if target is None:
        rounds = store.rounds()
        known = _("、").join(str(n) for n in rounds) if rounds else _("没有")
        raise CheckpointError(
            _("第 {round} 轮没有检查点(这次运行判定过的轮:{known})").format(round=round_no, known=known)
        )
    ws_default, run_default = default_places(store.run_dir, store.workspace, round_no)
    new_ws = (into or ws_default).expanduser().resolve()
    if run_into is not None:
        new_run = run_into.expanduser().resolve()
    elif store.run_dir.is_relative_to(store.workspace):
        new_run = new_ws / store.run_dir.relative_to(store.workspace)
    else:
        new_run = run_default
    if new_ws.exists() and any(new_ws.iterdir()):
        raise CheckpointError(_("{path} 已经存在而且不是空的:换一个地方(--into)").format(path=new_ws))
    return ForkPlan(target, new_ws, new_run, _can_worktree(store.workspace))


def fork(
    store: Checkpoints,
    round_no: int,
    *,
    into: Path | None = None,
    run_into: Path | None = None,
    remark: str = "",
) -> Forked:
    found = plan_fork(store, round_no, into=into, run_into=run_into)
    target, new_ws, new_run = found.target, found.workspace, found.run_dir
    worktree = found.worktree and _worktree(store.workspace, new_ws)
    new_ws.mkdir(parents=True, exist_ok=True)
    reader = Checkpoints(store.run_dir, new_ws)  # the original's blobs, the new workspace's files
    reader.root = store.root
    if worktree:
        for rel in _tracked(new_ws):
            if rel not in target.files and rel not in target.skipped:
                restore_file(reader, rel, None)  # checked out, but not there at that round
    for rel, entry in target.files.items():
        restore_file(reader, rel, entry)
    bench = store.workspace / ".flower"
    if bench.is_dir():
        shutil.copytree(bench, new_ws / ".flower", symlinks=True, dirs_exist_ok=True)
    _books(store, target, new_ws, new_run, remark=remark, round_no=round_no)
    return Forked(
        round=round_no,
        workspace=new_ws,
        run_dir=new_run,
        worktree=worktree,
        files=len(target.files),
        session_cut=bool(target.at and target.session),
    )


def _can_worktree(workspace: Path) -> bool:
    """Whether a fork's workspace can be a worktree: the workspace is a repository's top folder
    with a commit (a folder inside one, or one without commits, gets a plain folder)."""
    if not in_repository(workspace):
        return False
    top = _git(workspace, "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != workspace:
        return False
    return _git(workspace, "rev-parse", "--verify", "-q", "HEAD") is not None


def _worktree(workspace: Path, new_ws: Path) -> bool:
    """Make `new_ws` a detached worktree of the workspace's repository (False if git refuses)."""
    new_ws.parent.mkdir(parents=True, exist_ok=True)
    return _git(workspace, "worktree", "add", "--detach", "-q", str(new_ws), "HEAD") is not None


def _git(where: Path, *args: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        done = subprocess.run(
            ["git", "-C", str(where), *args], capture_output=True, text=True, timeout=300, env=env
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _tracked(ws: Path) -> list[str]:
    out = _git(ws, "ls-files", "-z")
    return [n for n in (out or "").split("\0") if n]


def _books(
    store: Checkpoints, target: Checkpoint, new_ws: Path, new_run: Path, *, remark: str, round_no: int
) -> None:
    """The new run folder: the original's books, re-keyed to the new workspace."""
    new_run.mkdir(parents=True, exist_ok=True)
    manifest = store.run_dir / MANIFEST
    if manifest.is_file():
        write_bytes(new_run / MANIFEST, manifest.read_bytes())
    old_lineage = Lineage.open(store.run_dir, store.workspace)
    sessions = {*old_lineage.steps.values(), target.session} - {""}
    db = store.run_dir / "sessions.db"
    if db.is_file():
        _copy_sessions(
            db, new_run / "sessions.db", project_key(store.workspace), project_key(new_ws), sessions
        )
    _link_checkpoints(store.root, new_run / FOLDER)
    fid = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
    lineage = Lineage(new_run / "lineage.json", new_ws, dict(old_lineage.steps), old_lineage.woke)
    if target.step and target.session:
        lineage.set_point(
            target.step,
            {"session": target.session, "at": target.at, "round": target.round, "remark": remark, "id": fid},
        )
    latest = store.head()
    record: dict[str, object] = {
        "id": fid,
        "kind": "fork",
        "round": target.round,
        "from_round": latest.round if latest is not None else target.round,
        "checkpoint": target.seq,
        "at": time.time(),
        "remark": remark,
        "from": str(store.workspace),
    }
    lineage.record_rewind(record)
    _manifest_row(new_run, record)
    copy = Checkpoints(new_run, new_ws)
    head = Checkpoint(
        seq=copy._next_seq(),
        round=target.round,
        phase="fork",
        parent=target.seq,
        step=target.step,
        flow=target.flow,
        session=target.session,
        at=target.at,
        files=dict(target.files),
        skipped=dict(target.skipped),
        created=time.time(),
    )
    copy.write(head)
    copy.set_head(head.seq, stored=store.stored_bytes())


def _copy_sessions(db: Path, dest: Path, old_key: str, new_key: str, sessions: set[str]) -> None:
    """A consistent copy of the session store (SQLite's backup), with the sessions the new run
    resumes filed under the new workspace's key too."""
    source = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        target = sqlite3.connect(dest)
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()
    from ..stores.sqlite import SqliteSessionStore

    copy = SqliteSessionStore(dest)
    try:
        for sid in sorted(sessions):
            entries = run_to_end(copy.load({"project_key": old_key, "session_id": sid}))
            if entries:
                copy.add({"project_key": new_key, "session_id": sid}, entries)
    finally:
        copy.close()


def _link_checkpoints(src: Path, dest: Path) -> None:
    """The original's checkpoints, hard-linked (blobs never change once written), copied where
    links cannot be made; never its journal or its scanning folder."""
    if not src.is_dir():
        return
    for folder, dirs, files in os.walk(src):
        rel = Path(folder).relative_to(src)
        dirs[:] = [d for d in dirs if not (rel == Path(".") and d == SCAN_GIT)]
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if rel == Path(".") and name in (JOURNAL, "head.json"):
                continue
            try:
                os.link(Path(folder) / name, dest / rel / name)
            except OSError:
                with contextlib.suppress(OSError):
                    shutil.copy2(Path(folder) / name, dest / rel / name)


__all__ = ["ForkPlan", "Forked", "default_places", "fork", "plan_fork"]
