"""A fleet on one machine for the tests and the demo: workers as separate processes standing for
separate machines (each its own HOME, Claude Code config and work folder), local bare
repositories, the real `flower` command, one flower.sim as the model.

Nothing here is used by a flower run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..fleet.model import Execution, RunDetail, RunSummary
from ..fleet.records import FleetBook
from . import scenarios
from .env import isolated_env
from .scenario import ScenarioData

__all__ = ["ANSWER", "FleetRig", "WorkerProcess", "fleet_scenario", "overlaps"]

GIT_ID = [
    "-c",
    "user.name=flower tests",
    "-c",
    "user.email=tests@flower.invalid",
    "-c",
    "init.defaultBranch=main",
]
ANSWER = "hello, fleet"  # the clarifier's brief follows once it has seen this answer


def fleet_scenario(*, bash_seconds: float = 0.0, asks: bool = False) -> ScenarioData:
    """The resumable starter run (any role answers by what its conversation holds, so a run
    killed anywhere and continued elsewhere still ends with its goal met), with a handover; its
    coder's command takes ``bash_seconds``. With ``asks`` the clarifier asks until its
    conversation holds ``ANSWER``: a run continued on another worker asks again."""
    scenario = scenarios.resumable_starter_scenario(bash_seconds=0)
    slow = f"python3 -c 'import time; time.sleep({bash_seconds:g})'"
    for rule in scenario["rules"]:
        tool = rule["reply"].get("tool")
        if rule.get("actor") == "coder" and tool is not None and tool["name"] == "Bash":
            given = tool.setdefault("input", {})
            command = given.get("command")
            if isinstance(command, str):
                given["command"] = command.replace("sleep 0", slow)
        when = rule.get("when")
        if asks and rule.get("actor") == "clarifier" and when is not None and when.get("messages_contain"):
            when["messages_contain"] = ANSWER
    scenario["rules"].insert(0, {"actor": "handover", "when": {}, "reply": {"text": scenarios.HANDOVER}})
    return scenario


def overlaps(intervals: dict[str, list[Execution]]) -> list[tuple[str, Execution, Execution]]:
    """Pairs of executions of one run that overlap in time (an open one reaches to now)."""
    found = []
    now = time.time()
    for run, executions in intervals.items():
        ordered = sorted(executions, key=lambda e: e.started_at)
        for i, first in enumerate(ordered):
            for second in ordered[i + 1 :]:
                if second.started_at < (first.ended_at or now):
                    found.append((run, first, second))
    return found


@dataclass
class WorkerProcess:
    name: str
    proc: subprocess.Popen[str]
    log: Path

    @property
    def output(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def kill(self) -> float:
        """kill -9, the worker and every process it started; when (this machine's clock)."""
        at = time.time()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
        return at

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)


@dataclass
class FleetRig:
    root: Path
    url: str
    sim_url: str
    takeover_s: float = 12.0
    workers: list[WorkerProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.book = FleetBook(self.url)

    # -- repositories ------------------------------------------------------------------------

    def git(self, *args: str, cwd: Path) -> str:
        done = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {done.stderr}")
        return done.stdout.strip()

    def origin(self, name: str, files: dict[str, str] | None = None) -> Path:
        """A bare repository with one commit on main (a README, and ``files``)."""
        bare = self.root / "repos" / f"{name}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "--bare", str(bare), cwd=self.root)
        seed = self.root / "seeds" / name
        seed.parent.mkdir(parents=True, exist_ok=True)
        self.git("clone", "-q", str(bare), str(seed), cwd=self.root)
        for path, text in {"README.md": f"# {name}\n", **(files or {})}.items():
            (seed / path).write_text(text, encoding="utf-8")
        self.git("add", "-A", cwd=seed)
        self.git("commit", "-q", "-m", "start", cwd=seed)
        self.git("push", "-q", "origin", "main", cwd=seed)
        return bare

    def branches(self, bare: Path) -> dict[str, str]:
        out = self.git("for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads", cwd=bare)
        return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())

    def show_file(self, bare: Path, branch: str, path: str) -> str:
        return self.git("show", f"{branch}:{path}", cwd=bare)

    # -- the command -------------------------------------------------------------------------

    def env(self, name: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(isolated_env(self.sim_url, self.root / name / "claude"))
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("FLOWER_STORE", None)
        return env

    def flower(
        self, *argv: str, who: str = "person", timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flower", "--store", self.url, *argv],
            cwd=self.root,
            env=self.env(who),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def submit(self, repository: Path | str, request: str, *options: str) -> str:
        done = self.flower("submit", str(repository), request, *options)
        if done.returncode != 0:
            raise RuntimeError(f"flower submit: {done.stdout}{done.stderr}")
        return done.stdout.strip().splitlines()[-1]

    def start_worker(self, name: str, *, concurrency: int = 1) -> WorkerProcess:
        log = self.root / name / "worker.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "flower", "--store", self.url, "worker", "--name", name]
        argv += ["--work-dir", str(self.root / name / "work"), "--concurrency", str(concurrency)]
        argv += ["--takeover", repr(self.takeover_s)]
        proc = subprocess.Popen(
            argv,
            cwd=self.root / name,
            env=self.env(name),
            stdin=subprocess.DEVNULL,
            stdout=log.open("w", encoding="utf-8"),
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        worker = WorkerProcess(name, proc, log)
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        for worker in self.workers:
            worker.kill()

    # -- watching ----------------------------------------------------------------------------

    def summary(self, run_id: str) -> RunSummary:
        found = self.book.summary(run_id)
        if found is None:
            raise AssertionError(f"no run {run_id}")
        return found

    def detail(self, run_id: str) -> RunDetail:
        found = self.book.detail(run_id)
        if found is None:
            raise AssertionError(f"no run {run_id}")
        return found

    def note(self, run_id: str) -> str:
        note = self.summary(run_id).note
        return note.text() if note is not None else ""

    def state(self, run_id: str) -> str:
        summary = self.book.summary(run_id)
        return summary.state if summary is not None else "?"

    def events(self, run_id: str) -> list[str]:
        detail = self.book.detail(run_id)
        return [f"{e.worker} {e.text()}" for e in detail.events] if detail is not None else []

    def wait(self, condition: Callable[[], bool], what: str, *, timeout: float = 600) -> float:
        """Wait for ``condition`` (never for a duration); how long it took."""
        started = time.monotonic()
        while not condition():
            if time.monotonic() - started > timeout:
                logs = "\n".join(f"--- {w.name}\n{w.output[-3000:]}" for w in self.workers)
                raise AssertionError(f"never happened within {timeout:.0f} s: {what}\n{logs}")
            time.sleep(0.2)
        return time.monotonic() - started

    def engines(self) -> int:
        """How many workers the job engine has registered (each one fetching jobs)."""
        with self.book.connect() as conn:
            row = conn.execute(f"SELECT count(*) FROM {self.book._s}.procrastinate_workers").fetchone()
        count = row[0] if row is not None else 0
        return count if isinstance(count, int) else 0

    def over(self, run_ids: list[str]) -> bool:
        return all(self.state(r) in ("finished", "failed", "cancelled") for r in run_ids)
