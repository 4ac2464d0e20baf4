"""Shared-store faults: the PostgreSQL server under a real scripted starter flow is restarted, or
stopped for a moment, or stopped for longer than a run waits, at a random point of the run; a
second `flower` on the same work is started during the outage or just after it.

Each case is a fresh database on a private PostgreSQL server (one for the class, stopped and
started with `pg_ctl` as an outage would), the real `flower` command with `--store`, the bundled
Claude Code CLI and flower.sim. Checked, as a user would: a restart or a short outage is waited
through and the run ends well; an outage past the bound (``FLOWER_STORE_OUTAGE_S``) stops the run
with one line, and once the server is back the same command continues the work step's session;
the second `flower` never works on the run while the first holds it (it is refused with a line:
the store is out of reach, or who holds the flow); every entry the CLI wrote is in the store; no
person sees a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from faults.tally import Context, Tally, run_flower, shows_traceback
from flower.core.identity import identify
from flower.core.shared import shared_key
from flower.sim.env import isolated_env
from flower.sim.postgres import LocalPostgres, PostgresUnavailable
from flower.sim.scenarios import resumable_starter_scenario
from flower.sim.server import SimServer

CLASS = "database"
ABOUT = "a private PostgreSQL restarted, stopped briefly or for too long at random points of runs"

REQUEST = "写一个 hello.py"
KINDS = ("restart", "restart", "brief", "brief", "long")
LEASE_S = 20  # so a run waits 10 s at most (half the lease) before it stops by itself
WORK = "干活"
REFUSED = ("打不开会话库", "这份工作已经有一个 flower")


class Case:
    def __init__(self, ctx: Context, n: int, server: LocalPostgres) -> None:
        rng = ctx.rng
        self.kind = KINDS[rng.randrange(len(KINDS))]
        self.after = rng.randint(1, 8)  # model requests served before the fault (a whole run: 9)
        self.down_s = 0.0 if self.kind == "restart" else round(rng.uniform(0.5, 4.0), 1)
        self.second = rng.choice(("during", "after", "none"))  # when a second flower tries the work
        self.name = f"#{n} {self.kind} {self.down_s:g}s after {self.after} requests, second {self.second}"
        self.root = ctx.workdir / f"case-{n}"
        self.url = server.create_database(f"case_{n}")
        self.applied_at: int | None = None


def _env(sim: SimServer, root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(isolated_env(sim.base_url, root / "claude"))
    env.update(PYTHONUNBUFFERED="1", FLOWER_LEASE_S=str(LEASE_S))
    env.pop("FLOWER_STORE_OUTAGE_S", None)
    return env


def _start(argv: list[str], ws: Path, env: dict[str, str], out: Path) -> subprocess.Popen[str]:
    """`flower` in the background, its output in files (a pipe nobody reads would block it)."""
    with open(out.with_suffix(".out"), "w") as stdout, open(out.with_suffix(".err"), "w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "flower", *argv], cwd=ws, env=env, stdin=subprocess.DEVNULL,
            stdout=stdout, stderr=stderr, text=True,
        )  # fmt: skip


def _stored(url: str, ws: Path) -> set[str]:
    import psycopg

    key = shared_key(identify(ws))
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT e.uuid FROM flower.entries e JOIN flower.transcripts t ON t.id = e.transcript "
            "WHERE t.project_key = %s AND e.uuid IS NOT NULL",
            (key,),
        ).fetchall()
    return {r[0] for r in rows}


def _lineage(url: str, ws: Path) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT data FROM flower.lineages WHERE workspace = %s", (identify(ws).key,)
        ).fetchone()
    return dict(row[0]) if row is not None and isinstance(row[0], dict) else {}


def _missing(root: Path, stored: set[str], sessions: set[str]) -> list[str]:
    """The entries the CLI wrote to its own transcripts of these sessions that the store lacks."""
    out: list[str] = []
    for jsonl in (root / "claude" / "claude-config" / "projects").glob("*/*.jsonl"):
        if jsonl.stem not in sessions:
            continue
        for line in jsonl.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            uid = entry.get("uuid")
            kept = not str(entry.get("type", "")).startswith("api-request")  # the CLI keeps those
            if isinstance(uid, str) and kept and uid not in stored:
                out.append(uid)
    return out


def _one_case(case: Case, server: LocalPostgres, tally: Tally, counts: dict[str, int]) -> None:
    ws = case.root / "proj"
    ws.mkdir(parents=True)
    with (
        SimServer(resumable_starter_scenario(bash_seconds=0)) as sim,
        SimServer(resumable_starter_scenario(bash_seconds=0)) as other,
    ):
        env = _env(sim, case.root)
        # the second flower talks to a model of its own: any request it makes is work it did
        env2 = _env(other, case.root / "second")
        store = ["--store", case.url, "--timeout", "0"]
        first = _start(["-r", str(case.root / "runs"), *store, REQUEST], ws, env, case.root / "first")
        overlap: list[int] = []  # the second's model requests made while the first still ran

        def watch() -> None:
            first.wait()
            overlap.append(len(other.requests))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        second: subprocess.CompletedProcess[str] | None = None
        down = 0.0
        while len(sim.requests) < case.after and first.poll() is None:
            time.sleep(0.005)
        if first.poll() is None:
            case.applied_at = len(sim.requests)
            server.pause()
            began = time.monotonic()
            try:
                if case.second == "during":
                    second = run_flower(["-r", str(case.root / "during"), *store, REQUEST], ws, env2)
                if case.kind == "long":
                    first.wait(timeout=300)  # it stops by itself once the bound is past
                else:
                    time.sleep(case.down_s)  # the outage itself: how long the server stays down
            finally:
                down = time.monotonic() - began
                server.resume()
            if case.second == "after" and first.poll() is None:
                second = run_flower(["-r", str(case.root / "after"), *store, REQUEST], ws, env2)
        first.wait(timeout=600)
        watcher.join(30)
        out = (case.root / "first.out").read_text(encoding="utf-8", errors="replace")
        err = (case.root / "first.err").read_text(encoding="utf-8", errors="replace")
        said = out + err
        if shows_traceback(said):
            tally.tracebacks_shown += 1
            tally.fail(case.name, "a traceback was shown: " + said[-400:])
        if second is not None:
            counts["second"] += 1
            text = second.stdout + second.stderr
            if overlap and overlap[0] > 0:
                counts["twice"] += 1
                tally.fail(case.name, f"a second flower worked while the first ran: {text[-400:]}")
            elif second.returncode != 0 and not any(w in second.stderr for w in REFUSED):
                tally.fail(case.name, f"a second flower stopped without its line: {text[-400:]}")
            if shows_traceback(text):
                tally.tracebacks_shown += 1
                tally.fail(case.name, "a traceback on the second flower")
        # a short outage is waited through; one past the bound stops the run; close to the bound
        # (within a heartbeat and a margin for a busy machine) either is right
        bound = LEASE_S / 2
        long = case.kind == "long" or down > bound + min(LEASE_S / 6, 5) + 2
        short = case.kind != "long" and down < bound - 2
        stopped = [x for x in err.splitlines() if x.startswith("x ") and "连不上超过" in x]
        finished = first.returncode == 0
        if case.applied_at is None:
            pass  # the run was over before the fault: nothing to judge but the figures below
        elif long and (finished or len(stopped) != 1):
            tally.fail(
                case.name, f"an outage past the bound did not stop the run with one line: {err[-600:]}"
            )
        elif not finished and len(stopped) != 1:
            tally.fail(
                case.name, f"the run stopped without one clear line (exit {first.returncode}): {err[-600:]}"
            )
        elif short and not finished:
            tally.fail(
                case.name, f"a short outage was not waited through (exit {first.returncode}): {err[-600:]}"
            )
        work_before = _lineage(case.url, ws).get("steps", {}).get(WORK)
        if not finished:
            seen = len(sim.requests)
            again = run_flower(["-r", str(case.root / "runs"), *store], ws, env, stdin="\n")
            if shows_traceback(again.stdout + again.stderr):
                tally.tracebacks_shown += 1
                tally.fail(case.name, "a traceback on the second run")
            work = [
                q.headers.get("x-claude-code-session-id")
                for q in sim.requests[seen:]
                if q.actor == "coordinator"
            ]
            if again.returncode != 0:
                tally.fail(
                    case.name, f"the run did not continue (exit {again.returncode}): {again.stderr[-600:]}"
                )
                return
            if work_before and work and work[0] != work_before:
                tally.fail(
                    case.name, f"the work step started over in a new session ({work[0]} != {work_before})"
                )
                return
        tally.continued += 1
        sessions = set(_lineage(case.url, ws).get("steps", {}).values())
        lost = _missing(case.root, _stored(case.url, ws), sessions)
        if lost:
            tally.lost_or_corrupted += len(lost)
            tally.fail(case.name, f"{len(lost)} entries the CLI wrote are not in the store")
        tally.notes.append(
            f"{case.name}: fault at request {case.applied_at}, down {down:.1f} s, "
            f"first exit {first.returncode}"
            + (f", second exit {second.returncode}" if second is not None else "")
        )


def run(ctx: Context) -> Tally:
    tally = Tally()
    server = LocalPostgres()
    try:
        server.start()
    except PostgresUnavailable as exc:
        tally.fail("setup", f"cannot start a private PostgreSQL here: {exc}")
        return tally
    counts = {"second": 0, "twice": 0}
    try:
        for n in range(1, ctx.cases + 1):  # one at a time: each case stops the one server
            case = Case(ctx, n, server)
            tally.tried += 1
            try:
                _one_case(case, server, tally, counts)
            except Exception as exc:  # a broken case is a broken promise, said with its case
                tally.fail(case.name, f"{type(exc).__name__}: {exc}")
    finally:
        server.stop()
    tally.notes.append(
        f"second flowers started on a held run: {counts['second']}, "
        f"runs executed twice at once: {counts['twice']} (must be 0)"
    )
    return tally
