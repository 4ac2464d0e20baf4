"""Resource faults: the disk under a real scripted starter flow fills up, turns read-only, refuses
even root, or vanishes, at a random point of the run; then the cause is removed and the same
command runs again.

Each case is a tmpfs of a random size holding either the run folder (`-r`) or the whole
workspace, with the real `flower` command, the bundled Claude Code CLI and flower.sim. The fault
is applied once flower.sim has served a random number of model requests (or before the run, for
the free-space floor). Checked, as a user would: the first run stopped with one clear line that
names the folder (exit status 1, no traceback) or, when no write was refused, finished with every
transcript entry in the store; nothing already written is lost or corrupted (lineage.json and
manifest.json parse, sessions.db passes integrity_check, 需求.md / 目标.md are whole, every spill
file holds what its name says, no temporary file is left); once the cause is gone, the second run
ends well and continues the work step's session.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from faults.tally import Context, Tally, run_flower, shows_traceback
from flower.core.brief import Brief
from flower.core.goal import Goal
from flower.core.lineage import Lineage
from flower.core.rundir import Damaged, read_json
from flower.sim import disks
from flower.sim.env import isolated_env
from flower.sim.scenarios import resumable_starter_scenario
from flower.sim.server import SimServer

CLASS = "disk"
ABOUT = "tmpfs disks filled, made read-only or immutable, or vanished at random points of a run"

REQUEST = "写一个 hello.py"
KINDS = ("full", "full", "full", "readonly", "immutable", "vanished", "floor")
FAULT_WORDS = ("没法写进", "低于")


def _session_of(request: Any) -> str | None:
    value = request.headers.get("x-claude-code-session-id")
    return value if isinstance(value, str) else None


class Case:
    def __init__(self, ctx: Context, n: int) -> None:
        rng = ctx.rng
        self.kind = KINDS[rng.randrange(len(KINDS))]
        # a read-only remount is refused while a file there is open for writing (sessions.db):
        # that disk holds the workspace, the books live elsewhere
        self.target = "workspace-only" if self.kind == "readonly" else rng.choice(("run_dir", "workspace"))
        # a floor case needs a disk that is above the 8 MB floor once the filler is gone
        self.size = rng.randint(16 if self.kind == "floor" else 6, 40) << 20
        self.after = rng.randint(1, 8)  # model requests served before the fault (a whole run: 9)
        self.leave = rng.choice((0, 0, 4096, 65536))
        self.name = f"#{n} {self.kind} {self.target} {self.size >> 20}MB after {self.after} requests"
        self.root = ctx.workdir / f"case-{n}"
        self.applied_at: int | None = None

    def folders(self, disk: Path) -> tuple[Path, Path]:
        """(workspace, run_dir) for this case on `disk`."""
        if self.target == "workspace":
            ws = disk / "proj"
            return ws, ws / "runs"
        if self.target == "workspace-only":
            return disk / "proj", self.root / "runs"
        return self.root / "proj", disk / "runs"


def _env(sim: SimServer, root: Path, *, floor_mb: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(isolated_env(sim.base_url, root / "claude"))
    env.update(PYTHONUNBUFFERED="1", FLOWER_DISK_WARN_MB="2", FLOWER_DISK_FLOOR_MB=floor_mb)
    return env


def _apply(case: Case, disk: Path, run_dir: Path, over: threading.Event) -> bool:
    """Bring the fault about; whether it came (a read-only remount waits for a moment when no
    file on the disk is open for writing, and may never find one before the run ends)."""
    if case.kind == "full":
        disks.fill(disk, leave=case.leave)
    elif case.kind == "readonly":
        while not disks.remount(disk, read_only=True):
            if over.is_set():
                return False
            time.sleep(0.01)
    elif case.kind == "immutable":
        disks.immutable(run_dir)
    elif case.kind == "vanished":
        os.rename(run_dir, run_dir.with_name("runs.away"))  # as an unmount would take it away
    return True


def _remove(case: Case, disk: Path, run_dir: Path) -> None:
    if case.kind in ("full", "floor"):
        disks.free(disk)
    elif case.kind == "readonly":
        disks.remount(disk, read_only=False)
    elif case.kind == "immutable":
        disks.immutable(run_dir, on=False)
    elif case.kind == "vanished":
        away = run_dir.with_name("runs.away")
        if away.exists():
            if run_dir.exists():
                raise AssertionError(f"{run_dir} was made anew while the real one was away")
            os.rename(away, run_dir)


def _damage(ws: Path, run_dir: Path) -> list[str]:
    """What the fault left lost or corrupted, one line each."""
    out: list[str] = []
    for name in ("lineage.json", "manifest.json"):
        try:
            read_json(run_dir / name)
        except Damaged as exc:
            out.append(f"{name}: {exc.reason}")
        except OSError:
            pass
    db = run_dir / "sessions.db"
    if db.exists():
        try:
            conn = sqlite3.connect(db)
            try:
                verdict = conn.execute("PRAGMA integrity_check").fetchall()
            finally:
                conn.close()
            if verdict != [("ok",)]:
                out.append(f"sessions.db: {verdict[:2]}")
        except sqlite3.Error as exc:
            out.append(f"sessions.db: {exc}")
    notes = ws / ".flower" / "notes"
    brief, goal = Brief.load(notes / "需求.md"), Goal.load(notes / "目标.md")
    if brief is not None and not brief.complete():
        out.append(f"需求.md: {brief.problem()}")
    if goal is not None and (goal.damage or not goal.complete()):
        out.append(f"目标.md: {goal.damage or 'incomplete'}")
    for spill in (ws / ".flower" / "spill").glob("*.txt"):
        if hashlib.sha256(spill.read_bytes()).hexdigest()[:16] != spill.stem:
            out.append(f"spill {spill.name}: does not hold what its name says (partial?)")
    for folder in (run_dir, notes, ws / ".flower"):
        out += [f"temporary file left: {t}" for t in folder.glob(".*.tmp")] if folder.is_dir() else []
    return out


def _stored_everything(root: Path, ws: Path, run_dir: Path) -> list[str]:
    """The main transcripts' entries the CLI wrote that the store lacks (a run that 'succeeded'
    while the store refused writes)."""
    missing: list[str] = []
    config = root / "claude" / "claude-config" / "projects"
    db = run_dir / "sessions.db"
    if not db.exists():
        return ["sessions.db missing"]
    conn = sqlite3.connect(db)
    try:
        stored = {r[0] for r in conn.execute("SELECT uuid FROM entries WHERE uuid IS NOT NULL")}
    finally:
        conn.close()
    for sid in Lineage.open(run_dir, ws).steps.values():
        for jsonl in config.glob(f"*/{sid}.jsonl"):
            for line in jsonl.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    uid = json.loads(line).get("uuid")
                except ValueError:
                    continue
                if isinstance(uid, str) and uid not in stored:
                    missing.append(uid)
    return missing


def _one_case(case: Case, tally: Tally) -> None:
    case.root.mkdir(parents=True, exist_ok=True)
    with SimServer(resumable_starter_scenario(bash_seconds=0)) as sim, disks.tmpfs(case.size) as disk:
        ws, run_dir = case.folders(disk)
        ws.mkdir(parents=True, exist_ok=True)
        floor = "8" if case.kind == "floor" else "0"
        env = _env(sim, case.root, floor_mb=floor)
        done_event = threading.Event()

        def fault() -> None:
            if case.kind == "floor":
                return
            while len(sim.requests) < case.after and not done_event.is_set():
                time.sleep(0.005)
            if not done_event.is_set():
                at = len(sim.requests)
                if _apply(case, disk, run_dir, done_event):
                    case.applied_at = at

        if case.kind == "floor":
            run_dir.mkdir(parents=True, exist_ok=True)
            disks.fill(disk, leave=4 << 20)  # 4 MB left, under the 8 MB floor
            case.applied_at = 0
        watcher = threading.Thread(target=fault, daemon=True)
        watcher.start()
        first = run_flower(["-r", str(run_dir), REQUEST, "--timeout", "0"], ws, env)
        done_event.set()
        watcher.join(30)
        said = first.stdout + first.stderr
        if shows_traceback(said):
            tally.tracebacks_shown += 1
            tally.fail(case.name, "a traceback was shown: " + said[-400:])
        work_before = Lineage.open(run_dir, ws).steps.get("干活") if run_dir.is_dir() else None
        lines = [
            x for x in first.stderr.splitlines() if x.startswith("x ") and any(w in x for w in FAULT_WORDS)
        ]
        if first.returncode == 0:
            if case.applied_at is not None and case.kind != "vanished":
                lost = _stored_everything(case.root, ws, run_dir)
                if lost:
                    tally.fail(case.name, f"ended as a success while {len(lost)} entries were never stored")
        elif len(lines) != 1:
            tally.fail(
                case.name, f"stopped (exit {first.returncode}) without one clear line: {first.stderr[-600:]}"
            )
        elif case.kind == "floor" and len(sim.requests) != 0:
            tally.fail(case.name, f"below the floor, yet {len(sim.requests)} model requests were made")
        _remove(case, disk, run_dir)
        damage = _damage(ws, run_dir)
        if damage:
            tally.lost_or_corrupted += len(damage)
            tally.fail(case.name, "; ".join(damage))
        seen = len(sim.requests)
        brief = Brief.load(ws / ".flower" / "notes" / "需求.md")
        # what a person runs again: plain `flower` once the brief is settled, else the same command
        again = ["-r", str(run_dir), "--timeout", "0"] + (
            [] if brief is not None and brief.complete() else [REQUEST]
        )
        second = run_flower(again, ws, env, stdin="\n")
        if shows_traceback(second.stdout + second.stderr):
            tally.tracebacks_shown += 1
            tally.fail(case.name, "a traceback on the second run")
        asked = sim.requests[seen:]
        work = [_session_of(q) for q in asked if q.actor == "coordinator"]
        if second.returncode != 0:
            tally.fail(
                case.name,
                f"the second run did not end well (exit {second.returncode}): {second.stderr[-600:]}",
            )
        elif work_before and work and work[0] != work_before:
            tally.fail(case.name, f"the work step started over in a new session ({work[0]} != {work_before})")
        else:
            tally.continued += 1
        more = _damage(ws, run_dir)
        if more:
            tally.lost_or_corrupted += len(more)
            tally.fail(case.name, "after the second run: " + "; ".join(more))
        tally.notes.append(
            f"{case.name}: fault at request {case.applied_at}, first exit {first.returncode}, "
            f"second exit {second.returncode}"
        )


def run(ctx: Context) -> Tally:
    tally = Tally()
    reason = disks.available()
    if reason is not None:
        tally.fail("setup", f"cannot make tmpfs disks here: {reason}")
        return tally
    for n in range(1, ctx.cases + 1):
        case = Case(ctx, n)
        tally.tried += 1
        try:
            _one_case(case, tally)
        except Exception as exc:  # a broken case is a broken promise, said with its case
            tally.fail(case.name, f"{type(exc).__name__}: {exc}")
    return tally
