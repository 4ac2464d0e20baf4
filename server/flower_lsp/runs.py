"""Runs: one engine run per workspace folder, in-process as an asyncio task.

Commands: flower.continue (wake and go on), flower.start (with `new`), flower.say (interrupt the
step in flight, or the inbox between steps), flower.stop (cancel the task; the lineage is written
the moment a session starts and the manifest in the step's `finally`, so the next continue picks
it up), flower.answer. A work-done progress follows the run; cancelling it stops the run.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from . import protocol as p

if TYPE_CHECKING:
    from flower.core.events import Event

    from .server import FlowerServer, Folder

log = logging.getLogger(__name__)

STOP_GRACE_S = 30.0
STARTER = "starter"  # the flow the editor runs: the same lock as `flower go` in a terminal
LOCK_WHO = "编辑器里的 flower-lsp"
WHAT_TO_DO = "要做什么?一句话就够。"
START_ACTION = "New run…"


@dataclass
class Live:
    """What the run is doing now, as the meter and flower/state report it."""

    step: str = ""
    turn_step: str = ""  # the Runtime step of the last model turn (a judge round has its own name)
    index: int = 0
    total: int = 0
    round: int = 1
    generation: int = 1
    used: int = 0
    window: int = 0
    warn_at: int = 0
    at: int = 0
    cost_usd: float = 0.0
    handing_off: bool = False

    @property
    def near(self) -> bool:
        return self.warn_at > 0 and self.used >= self.warn_at


@dataclass
class Memory:
    """What the server remembers about a folder across runs (until it restarts)."""

    verdict: p.VerdictInfo | None = None
    handoff: str | None = None
    live: Live = field(default_factory=Live)


class Run:
    """One workflow run in one folder."""

    def __init__(
        self,
        server: FlowerServer,
        folder: Folder,
        workflow: Any,
        runtime: Any,
        *,
        waking: bool,
        banner: str | None,
    ) -> None:
        self.server = server
        self.folder = folder
        self.workflow = workflow
        self.runtime = runtime
        self.channel = workflow.channel
        self.waking = waking
        self.banner = banner
        self.memory = server.runs.memory_of(folder)
        self.memory.live = self.live = Live()
        self.task: asyncio.Task[None] | None = None
        self.done = asyncio.Event()
        self.started_at = time.time()
        self.token: str | None = None
        self.outcome = ""
        self.lock: Any = None  # the folder's flow lock (flower.core.rundir.FlowLock), held while running

    # -- engine callbacks (always end up on the loop thread) ----------------------------------
    def emit(self, event: Event) -> None:
        self.server.call_soon(self._observe, event)

    def _observe(self, event: Event) -> None:
        self._track(event)
        self.server.dispatch(self, event)

    def on_step(self, step: Any, result: Any) -> None:
        from flower.core.events import Event

        payload = {
            "phase": "done",
            "ok": bool(getattr(result, "ok", False)),
            "cost_usd": getattr(result, "cost_usd", 0.0),
            "session_id": getattr(result, "session_id", None),
            "error": getattr(result, "error", None),
        }
        self.emit(Event("step", text=str(getattr(step, "name", "")), payload=payload))

    def on_stderr(self, line: str) -> None:
        self.server.log_line(f"[{self.folder.name}] {line}")

    def _track(self, event: Event) -> None:
        live, data = self.live, event.payload
        if event.kind == "step" and data.get("phase") != "done":
            live.step = event.text or live.step
            live.index = _int(data.get("index"), live.index)
            live.total = _int(data.get("total"), live.total)
            live.generation, live.turn_step = 1, ""
        elif event.kind == "system" and data.get("subtype") == "context":
            live.used = _int(data.get("used"), live.used)
            live.window = _int(data.get("window"), live.window)
            live.warn_at = _int(data.get("warn_at"), live.warn_at)
            live.at = _int(data.get("at"), live.at)
            live.generation = _int(data.get("generation"), live.generation)
            if isinstance(data.get("step"), str) and data["step"]:
                live.turn_step = data["step"]
            live.cost_usd = round(self.finished_cost() + _float(data.get("cost_usd")), 6)
        elif event.kind == "handoff":
            phase = data.get("phase")
            if phase == "writing":
                live.handing_off = True
            elif phase == "done":
                live.handing_off = False
                live.generation = _int(data.get("generation"), live.generation + 1)
                live.used = 0
        elif event.kind == "task" and data.get("kind") == "verdict":
            verdict = verdict_info(data)
            self.memory.verdict = verdict
            if verdict.state != "achieved":
                live.round = verdict.round + 1
        if event.kind == "handoff" and data.get("phase") == "done" and data.get("path"):
            self.memory.handoff = str(data["path"])

    def finished_cost(self) -> float:
        try:
            return float(self.runtime.total_cost())
        except Exception:
            return 0.0

    @property
    def busy(self) -> bool:
        return bool(getattr(self.runtime, "busy", False))

    # -- progress ----------------------------------------------------------------------------
    async def begin_progress(self) -> None:
        caps = getattr(self.server.client_capabilities, "window", None)
        if not getattr(caps, "work_done_progress", False):
            return
        token = f"flower-run-{uuid.uuid4().hex}"
        progress = self.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(token), 10)
            progress.begin(
                token,
                types.WorkDoneProgressBegin(
                    title=f"Flower · {self.folder.name}",
                    message="starting",
                    cancellable=True,
                    percentage=0,
                ),
            )
        except Exception:
            log.info("the client refused a progress bar", exc_info=True)
            return
        self.token = token
        future = progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(
                lambda f: f.cancelled() and self.server.call_soon(self._cancelled_by_client)
            )

    def _cancelled_by_client(self) -> None:
        if self.task is not None and not self.task.done():
            self.server.spawn(self.server.runs.stop_run(self, why="cancelled from the progress bar"))

    def report_progress(self) -> None:
        if self.token is None:
            return
        live = self.live
        message = f"{live.step} {live.index}/{live.total}" if live.total else (live.step or "running")
        if live.round > 1:
            message += f" · round {live.round}"
        percentage = int((live.index - 1) * 100 / live.total) if live.total and live.index else None
        self.server.call_soon(
            self._report,
            types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True),
        )

    def _report(self, value: types.WorkDoneProgressReport) -> None:
        if self.token is None or self.server.protocol._shutdown:
            return
        try:
            self.server.work_done_progress.report(self.token, value)
        except Exception:
            log.debug("progress report failed", exc_info=True)

    def end_progress(self, message: str) -> None:
        token, self.token = self.token, None
        if token is None:
            return
        self.server.work_done_progress.tokens.pop(token, None)
        if self.server.protocol._shutdown:
            return
        try:
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        except Exception:
            log.debug("progress end failed", exc_info=True)


class Runs:
    """The folder -> run table and the commands that act on it."""

    def __init__(self, server: FlowerServer) -> None:
        self.server = server
        self.active: dict[str, Run] = {}
        self._claimed: set[str] = set()  # folders between "start accepted" and "task running"
        self.memory: dict[str, Memory] = {}
        self.on_start: list[Callable[[Run], None]] = []

    def memory_of(self, folder: Folder) -> Memory:
        return self.memory.setdefault(folder.uri, Memory())

    def busy(self, folder: Folder) -> bool:
        return folder.uri in self.active or folder.uri in self._claimed

    def _refusal(self, folder: Folder) -> p.CommandResult:
        run = self.active.get(folder.uri)
        where = f" (step {run.live.step} {run.live.index}/{run.live.total})" if run and run.live.step else ""
        return p.CommandResult(
            False,
            f"A run is already in progress in {folder.name}{where}: stop it first, or say something to it.",
        )

    # -- start / continue ------------------------------------------------------------------------
    async def start(self, folder: Folder, ask: str, *, new: bool = False) -> p.CommandResult:
        if self.busy(folder):
            return self._refusal(folder)
        self._claimed.add(folder.uri)  # before the first await: two starts cannot both pass
        try:
            return await self._start(folder, ask, new=new)
        finally:
            self._claimed.discard(folder.uri)

    async def _start(self, folder: Folder, ask: str, *, new: bool) -> p.CommandResult:
        from flower.core.rundir import FlowBusy, FlowLock

        # another process (a `flower` in a terminal) may be working on this folder's flow
        lock = FlowLock(folder.run_dir, STARTER, who=LOCK_WHO)
        try:
            lock.acquire()
        except FlowBusy as busy:
            return p.CommandResult(False, str(busy))
        except OSError as exc:
            return self._failed(folder, "cannot start", exc)
        try:
            result = await self._start_claimed(folder, ask, new=new, lock=lock)
        except BaseException:
            lock.release()
            raise
        if not result.ok:
            lock.release()
        return result

    async def _start_claimed(self, folder: Folder, ask: str, *, new: bool, lock: Any) -> p.CommandResult:
        engine, opts = self.server.engine, self.server.options
        try:
            wake = await asyncio.to_thread(engine.wake_state, folder.path, folder.run_dir)
        except Exception as exc:
            return self._failed(folder, "cannot read the run state", exc)
        waking = bool(wake.get("waking")) and not new
        if not ask.strip() and not waking:
            return p.CommandResult(
                False, f"Nothing to continue in {folder.name}: give a request to start a run.", offer="start"
            )

        def build() -> tuple[Any, Any, str | None]:
            banner = engine.banner(folder.path, folder.run_dir) if waking else None
            workflow = engine.workflow(
                ask, workspace=folder.path, run_dir=folder.run_dir, new=new, timeout_s=opts.timeout_s
            )
            runtime = engine.runtime(
                workflow, workspace=folder.path, run_dir=folder.run_dir, window=opts.window
            )
            return workflow, runtime, banner

        try:
            workflow, runtime, banner = await asyncio.to_thread(build)
        except Exception as exc:
            return self._failed(folder, "cannot start", exc)
        run = Run(self.server, folder, workflow, runtime, waking=waking, banner=banner)
        run.lock = lock  # released when the run ends
        try:
            runtime.on_stderr = run.on_stderr
            if getattr(run.channel, "on_event", None) is None:
                run.channel.on_event = run.emit  # questions and mail reach the same sink as the steps
        except Exception as exc:
            _close(runtime)
            return self._failed(folder, "cannot start", exc)
        self.active[folder.uri] = run
        run.task = asyncio.ensure_future(self._drive(run))  # strong reference: self.active
        for hook in list(self.on_start):
            try:
                hook(run)
            except Exception:
                log.exception("a feature failed on run start")
        verb = (
            "Continuing"
            if waking and not ask.strip()
            else ("Continuing with your words" if waking else "Started")
        )
        return p.CommandResult(True, f"{verb} in {folder.name}.")

    async def continue_(self, folder: Folder) -> p.CommandResult:
        if self.busy(folder):
            return self._refusal(folder)
        try:
            wake = await asyncio.to_thread(self.server.engine.wake_state, folder.path, folder.run_dir)
        except Exception as exc:
            return self._failed(folder, "cannot read the run state", exc)
        if wake.get("waking"):
            return await self.start(folder, "")
        self.server.spawn(self._offer_start(folder))
        return p.CommandResult(
            False, f"Nothing to continue in {folder.name}: no 需求.md yet. Start a new run?", offer="start"
        )

    async def _offer_start(self, folder: Folder) -> None:
        """window/showMessageRequest offering a new run; the request itself comes through flower/ask."""
        from .questions import ask_client

        try:
            choice = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message=f"Nothing to continue in {folder.name}. Start a new run?",
                    actions=[types.MessageActionItem(title=START_ACTION)],
                )
            )
        except Exception:
            log.info("the client did not answer the offer to start", exc_info=True)
            return
        if choice is None or getattr(choice, "title", None) != START_ACTION:
            return
        reply = await ask_client(
            self.server,
            p.AskParams(
                folder=folder.uri,
                id=f"start-{uuid.uuid4().hex[:8]}",
                question=WHAT_TO_DO,
                options=[],
                free_text=True,
                timeout_s=None,
            ),
        )
        if reply is not None and reply.answer and reply.answer.strip():
            result = await self.start(folder, reply.answer.strip())
            if not result.ok:
                self.server.show(result.message, types.MessageType.Warning)

    def _failed(self, folder: Folder, what: str, exc: BaseException) -> p.CommandResult:
        log.warning("%s in %s", what, folder.path, exc_info=exc)
        message = f"flower: {what} in {folder.name}: {exc}"
        self.server.show(message, types.MessageType.Error)
        return p.CommandResult(False, message)

    # -- the run itself --------------------------------------------------------------------------
    async def _drive(self, run: Run) -> None:
        from flower.core.events import Event

        from .banner import announce
        from .questions import serve_questions

        server = run.server
        phase, text, extra = "failed", "", {}
        questions: asyncio.Task[None] | None = None
        try:
            await run.begin_progress()
            if run.banner:
                announce(server, run.folder, run.banner)
            run.emit(
                Event(
                    "run",
                    text=f"run started in {run.folder.name}",
                    payload={"phase": "started", "waking": run.waking},
                )
            )  # type: ignore[arg-type]
            questions = asyncio.ensure_future(serve_questions(server, run))
            ctx = await run.workflow.run(run.runtime, on_event=run.emit, on_step=run.on_step)
            phase, text, extra = outcome(ctx)
        except asyncio.CancelledError:
            phase, text = "stopped", run.outcome or "stopped"
        except Exception as exc:
            log.exception("the run in %s failed", run.folder.path)
            phase, text = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            if questions is not None:
                questions.cancel()
            _close(run.runtime)
            extra = {**extra, "phase": phase, "cost_usd": round(run.finished_cost(), 6)}
            # straight to the listeners: the loop may be going away, nothing may be deferred now
            try:
                run._observe(Event("run", text=text, payload=extra))  # type: ignore[arg-type]
            except Exception:
                log.exception("could not report the end of the run")
            run.end_progress(text)
            if self.active.get(run.folder.uri) is run:
                del self.active[run.folder.uri]
            if run.lock is not None:
                run.lock.release()
            run.done.set()

    # -- say / answer / stop ---------------------------------------------------------------------
    def say(self, folder: Folder, text: str) -> p.CommandResult:
        run = self.active.get(folder.uri)
        if run is None:
            return p.CommandResult(
                False, f"Nothing is running in {folder.name}: continue or start a run first."
            )
        if run.busy:
            run.runtime.interrupt(text)
            return p.CommandResult(True, "Interrupted: the step resumes with your words.")
        mail = run.channel.send(text)
        if mail is None:
            return p.CommandResult(False, "Nothing to send.")
        return p.CommandResult(True, "Sent to the agent's inbox (and appended to 需求.md).")

    def answer(self, folder: Folder, ask_id: str, text: str) -> p.CommandResult:
        run = self.active.get(folder.uri)
        if run is None:
            return p.CommandResult(False, f"Nothing is running in {folder.name}.")
        if run.channel.answer(ask_id, text):
            return p.CommandResult(True, f"Answered {ask_id}.")
        return p.CommandResult(False, f"Question {ask_id} is no longer waiting for an answer.")

    async def stop(self, folder: Folder) -> p.CommandResult:
        run = self.active.get(folder.uri)
        if run is None:
            return p.CommandResult(False, f"Nothing is running in {folder.name}.")
        return await self.stop_run(run, why="stopped")

    async def stop_run(self, run: Run, *, why: str) -> p.CommandResult:
        run.outcome = why
        if run.task is not None and not run.task.done():
            run.task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(run.done.wait()), STOP_GRACE_S)
        except TimeoutError:
            return p.CommandResult(
                False, f"The run in {run.folder.name} did not stop within {STOP_GRACE_S:.0f} s."
            )
        return p.CommandResult(True, f"Stopped the run in {run.folder.name}; Flower: Continue resumes it.")

    async def shutdown(self) -> None:
        runs = list(self.active.values())
        for run in runs:
            run.outcome = "the server is shutting down"
            if run.task is not None:
                run.task.cancel()
        if runs:
            await asyncio.wait([asyncio.ensure_future(r.done.wait()) for r in runs], timeout=STOP_GRACE_S)


def outcome(ctx: Any) -> tuple[str, str, dict[str, Any]]:
    """How a finished workflow ended, from its ctx: (phase, line, details)."""
    ctx = ctx if isinstance(ctx, dict) else {}
    verdict = ctx.get("_verdict")
    details: dict[str, Any] = {
        "failed_at": ctx.get("_failed_at"),
        "aborted": ctx.get("_aborted"),
        "verdict": getattr(verdict, "state", None),
        "rounds": ctx.get("_goal_rounds"),
    }
    if ctx.get("_aborted"):
        return "failed", f"stopped: {ctx['_aborted']}", details
    if ctx.get("_failed_at"):
        return "failed", f"failed at step {ctx['_failed_at']}", details
    return "finished", "finished" + (f" ({details['verdict']})" if details["verdict"] else ""), details


def verdict_info(data: dict[str, Any]) -> p.VerdictInfo:
    state = data.get("state") if data.get("state") in ("achieved", "not_yet", "unreachable") else ""
    failed = data.get("failed") if isinstance(data.get("failed"), list) else []
    return p.VerdictInfo(
        state=state,
        reason=str(data.get("reason") or ""),
        failed=[str(f) for f in failed],
        round=_int(data.get("round"), 1),
        goal_path=str(data.get("goal_path") or ""),
    )


def _close(runtime: Any) -> None:
    try:
        runtime.close()
    except Exception:
        log.debug("closing the runtime failed", exc_info=True)


def _int(value: Any, default: int) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def register(server: FlowerServer) -> None:
    from .server import invalid_params

    def parse(cls: type, command: str, args: tuple[Any, ...]) -> Any:
        try:
            return p.command_args(cls, command, args)
        except p.ProtocolError as exc:
            raise invalid_params(exc) from exc

    def folder_of(ls, ref: str | None) -> Folder:
        try:
            return ls.folder(ref)
        except p.ProtocolError as exc:
            raise invalid_params(exc) from exc

    @server.command(p.CONTINUE)
    async def cmd_continue(ls, *args: Any) -> dict[str, Any]:
        a = parse(p.ContinueArgs, p.CONTINUE, args)
        result = await ls.runs.continue_(folder_of(ls, a.folder))
        if not result.ok and result.offer is None:
            ls.show(result.message, types.MessageType.Warning)  # a client may drop the result
        return p.to_json(result)

    @server.command(p.START)
    async def cmd_start(ls, *args: Any) -> dict[str, Any]:
        a = parse(p.StartArgs, p.START, args)
        result = await ls.runs.start(folder_of(ls, a.folder), a.ask, new=a.new)
        if not result.ok and result.offer is None:
            ls.show(result.message, types.MessageType.Warning)
        return p.to_json(result)

    @server.command(p.SAY)
    def cmd_say(ls, *args: Any) -> dict[str, Any]:
        a = parse(p.SayArgs, p.SAY, args)
        if not a.text.strip():
            raise invalid_params(p.ProtocolError(f"{p.SAY}: 'text' must not be empty"))
        return p.to_json(ls.runs.say(folder_of(ls, a.folder), a.text))

    @server.command(p.STOP)
    async def cmd_stop(ls, *args: Any) -> dict[str, Any]:
        a = parse(p.StopArgs, p.STOP, args)
        return p.to_json(await ls.runs.stop(folder_of(ls, a.folder)))

    @server.command(p.ANSWER)
    def cmd_answer(ls, *args: Any) -> dict[str, Any]:
        a = parse(p.AnswerArgs, p.ANSWER, args)
        return p.to_json(ls.runs.answer(folder_of(ls, a.folder), a.id, a.text))
