"""A scripted stand-in for the engine, loaded by the server under test through
FLOWER_LSP_ENGINE=fake_engine:FakeEngine (this directory on PYTHONPATH).

It runs no CLI: its workflow plays the JSON list of actions in the file named by
FLOWER_FAKE_SCRIPT (re-read on every run, so a test can change it between runs), with a real
HumanChannel, real Lineage and real Goal parsing, and writes what happened on its side (answers,
interrupts, mail, cancellation) as JSON lines to <run_dir>/fake-log.jsonl.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from flower.core.aside import AsideAnswer
from flower.core.delivery import STEP_OVER, STOPPED, Undelivered
from flower.core.events import (
    ContextUpdate,
    Event,
    GoalUnverifiable,
    HandoffDone,
    HandoffNear,
    HandoffWriting,
    StepFinished,
    StepStarted,
    Text,
    VerdictGiven,
)
from flower.core.goal import Goal, Verdict
from flower.core.human import HumanChannel
from flower.core.lineage import Lineage
from flower.core.run_settings import RunSettings
from flower.core.window import handover_at
from flower.workflow.outcome import Outcome
from flower.workflow.starter import WakeState

SCRIPT_VAR = "FLOWER_FAKE_SCRIPT"
LOG_NAME = "fake-log.jsonl"


def notes_of(workspace: Path) -> Path:
    return Path(workspace) / ".flower" / "notes"


def log(run_dir: Path, **entry: Any) -> None:
    with open(Path(run_dir) / LOG_NAME, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, ensure_ascii=False) + "\n")


def read_log(run_dir: Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / LOG_NAME
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class FakeRuntime:
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.busy = False
        self.on_stderr: Callable[[str], None] | None = None
        self.said: list[str] = []
        self.interrupted = asyncio.Event()
        self.deliveries: list[Future[None]] = []  # settled when a wait_interrupt takes the words
        self.cost = 0.0

    def interrupt(self, message: str = "") -> Future[None]:
        self.said.append(message)
        delivery: Future[None] = Future()
        self.deliveries.append(delivery)
        self.interrupted.set()
        return delivery

    def settle(self, error: Undelivered | None) -> None:
        deliveries, self.deliveries = self.deliveries, []
        for delivery in deliveries:
            if error is None:
                delivery.set_result(None)
            else:
                delivery.set_exception(error)

    def total_cost(self) -> float:
        return self.cost

    def close(self) -> None:
        log(self.run_dir, closed=True)


class FakeRun:
    """A run that plays the script: the engine's typed events, a real channel, real lineage."""

    def __init__(
        self, ask: str, workspace: Path, run_dir: Path, channel: HumanChannel, script: list[dict[str, Any]]
    ) -> None:
        self.ask, self.workspace, self.run_dir = ask, workspace, run_dir
        self.channel, self.script = channel, script
        self.runtime = FakeRuntime(run_dir)

    async def run(self, on_event: Callable[[Event], None]) -> Outcome:
        emit, runtime = on_event, self.runtime
        lineage = Lineage.open(self.run_dir, self.workspace)
        woke = lineage.bump()
        goal_path = notes_of(self.workspace) / "目标.md"
        verdict: Verdict | None = None
        rounds: int | None = None
        log(self.run_dir, started=self.ask, woke=woke)
        try:
            for action in self.script:
                ((kind, arg),) = action.items()
                if kind == "step":
                    runtime.busy = True
                    lineage.remember(arg["name"], f"session-{arg['name']}")
                    emit(
                        StepStarted(
                            text=arg["name"],
                            index=arg["index"],
                            total=arg["total"],
                            resumed=woke > 1,
                            woke=woke,
                        )
                    )
                elif kind == "end_step":
                    runtime.busy = False
                    runtime.settle(Undelivered(STEP_OVER, step_over=True))
                    runtime.cost += arg.get("cost_usd", 0.0)
                    emit(
                        StepFinished(
                            text=arg["name"], ok=arg.get("ok", True), cost_usd=arg.get("cost_usd", 0.0)
                        )
                    )
                elif kind == "context":
                    emit(ContextUpdate(text="context", **figures(arg)))
                elif kind == "handoff":
                    emit(handoff(arg))
                elif kind == "brief":
                    path = notes_of(self.workspace) / "需求.md"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(arg, encoding="utf-8")
                elif kind == "goal":
                    goal_path.parent.mkdir(parents=True, exist_ok=True)
                    goal_path.write_text(arg, encoding="utf-8")
                    goal = Goal.parse(arg)
                    if goal.unverifiable:
                        emit(
                            GoalUnverifiable(
                                text="unverifiable",
                                unverifiable=goal.unverifiable,
                                total=len(goal.checks),
                                path=str(goal_path),
                            )
                        )
                elif kind == "verdict":
                    verdict = Verdict(
                        state=arg["state"], reason=arg.get("reason", ""), failed=arg.get("failed", [])
                    )
                    rounds = arg.get("round", 1)
                    emit(
                        VerdictGiven(
                            text="verdict",
                            state=arg["state"],
                            reason=verdict.reason,
                            failed=verdict.failed,
                            round=arg.get("round", 1),
                            goal_path=str(goal_path),
                        )
                    )
                elif kind == "ask":
                    ask = await self.channel.ask(arg["question"], arg.get("options"))
                    log(self.run_dir, ask=ask.id, state=ask.state, answer=ask.answer)
                elif kind == "stderr":
                    if runtime.on_stderr is not None:
                        runtime.on_stderr(arg)
                elif kind == "text":
                    emit(Text(text=arg))
                elif kind == "sleep":
                    await asyncio.sleep(arg)
                elif kind == "wait_interrupt":
                    await asyncio.wait_for(runtime.interrupted.wait(), arg)
                    runtime.settle(None)
                    log(self.run_dir, interrupt=runtime.said)
                elif kind == "refuse_interrupt":  # the CLI refused the resumed turn's prompt
                    await asyncio.wait_for(runtime.interrupted.wait(), arg["within"])
                    runtime.interrupted.clear()
                    runtime.settle(Undelivered(arg["why"]))
                    log(self.run_dir, refused=runtime.said)
                elif kind == "wait_mail":
                    for _ in range(int(arg * 50)):
                        if self.channel.pending_mail():
                            break
                        await asyncio.sleep(0.02)
                    log(self.run_dir, mail=[m.text for m in self.channel.pending_mail()])
                elif kind == "print":
                    print(arg, flush=True)  # a careless library or child process writing to stdout
                    os.system(f"echo {shlex.quote(arg)}")  # noqa: ASYNC221 (a child writing to fd 1 is the point)
                elif kind == "mark":
                    log(self.run_dir, mark=arg)
                elif kind == "fail":
                    raise RuntimeError(arg)
                else:
                    raise ValueError(f"unknown fake action {kind!r}")
        except asyncio.CancelledError:
            runtime.settle(Undelivered(STOPPED))
            log(self.run_dir, cancelled=True)
            raise
        log(self.run_dir, finished=True)
        return Outcome(verdict=verdict, rounds=rounds)


def figures(arg: dict[str, Any]) -> dict[str, Any]:
    """A context reading as the Runtime makes it: at = the window less a quarter, warn_at 20K below."""
    window = arg.get("window", 1_000_000)
    at = handover_at(window)
    return {
        "used": arg["used"],
        "window": window,
        "at": at,
        "warn_at": at - 20_000,
        "step": arg.get("step", ""),
        "generation": arg.get("generation", 1),
        "session_id": "s",
        "cost_usd": arg.get("cost_usd", 0.0),
    }


def handoff(arg: dict[str, Any]) -> Event:
    """A handoff phase from the script: near (with a context reading), writing, done."""
    phase = arg["phase"]
    if phase == "near":
        return HandoffNear(text="near", **figures(arg))
    if phase == "writing":
        return HandoffWriting(text="writing", step=arg.get("step", ""), used=arg.get("used", 0))
    return HandoffDone(
        text="done",
        degraded=arg.get("degraded", False),
        path=arg.get("path"),
        sections=arg.get("sections", {}),
        step=arg.get("step", ""),
        retired=arg.get("retired"),
        generation=arg.get("generation", 2),
    )


class FakeEngine:
    def warm(self) -> None:
        pass

    def wake_state(self, settings: RunSettings) -> WakeState:
        workspace, run_dir = settings.workspace, settings.run_dir
        notes = notes_of(workspace)
        goal = Goal.load(notes / "目标.md")
        lineage = Lineage.open(run_dir, workspace)
        return {
            "waking": (notes / "需求.md").is_file(),
            "brief": notes / "需求.md",
            "goal": notes / "目标.md",
            "checks": len(goal.checks) if goal is not None else 0,
            "woke": lineage.woke,
            "steps": dict(lineage.steps),
        }

    def banner(self, settings: RunSettings) -> str | None:
        workspace = settings.workspace
        state = self.wake_state(settings)
        if not state["waking"]:
            return None
        return f"<- 在 {workspace} 接上上次  需求已确认 · 第 {state['woke'] + 1} 次唤醒"

    def start(self, ask: str, settings: RunSettings) -> FakeRun:
        workspace, run_dir, timeout_s = settings.workspace, settings.run_dir, settings.timeout_s
        notes = notes_of(workspace)
        notes.mkdir(parents=True, exist_ok=True)  # an unwritable workspace fails here, as the real flow does
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        # what the server handed over: the folder's options at the moment this run started
        log(
            run_dir,
            settings={"store": settings.store, "sandbox": settings.sandbox, "window": settings.window},
        )
        script = json.loads(Path(os.environ[SCRIPT_VAR]).read_text(encoding="utf-8"))
        channel = HumanChannel(
            timeout_s=timeout_s, log_path=notes / "问答记录.md", amend_path=notes / "需求.md"
        )
        return FakeRun(ask, Path(workspace), Path(run_dir), channel, script)

    async def aside(self, question: str, settings: RunSettings, *, recent: list[str]) -> AsideAnswer:
        """Answers from what it was shown; a question containing "fail" fails, as an oracle can."""
        run_dir = settings.run_dir
        os.makedirs(run_dir, exist_ok=True)  # asked before any run made it
        log(run_dir, aside=question, recent=recent)
        if "fail" in question:
            return AsideAnswer(question, False, error="APIError: the oracle could not answer")
        last = recent[-1] if recent else "-"
        return AsideAnswer(question, True, text=f"saw {len(recent)} events\nlast: {last}", cost_usd=0.0123)
