"""Runs: one engine run per workspace folder, in-process as an asyncio task.

Commands: flower.continue (wake and go on), flower.start (with `new`), flower.say (interrupt the
step in flight, or the inbox between steps), flower.stop (cancel the task; the lineage is written
the moment a session starts and the manifest in the step's `finally`, so the next continue picks
it up), flower.answer. Every other part follows a run through the server's hooks.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from flower.base.i18n import N_, _
from flower.core import sizes
from flower.core.delivery import STOPPED, Undelivered
from flower.core.events import Event

from . import protocol as p
from . import wire
from .common import Folder, Reported, invalid_params, parse_args
from .engine import EngineRun
from .host import Feature, FlowerServer
from .questions import Questions
from .run import Memory, Run, RunEnded, RunPhase

if TYPE_CHECKING:
    from flower.core.rundir import FlowLock
    from flower.workflow.outcome import Outcome

log = logging.getLogger(__name__)

STOP_GRACE_S = 30.0
STARTER = "starter"  # the flow the editor runs: the same lock as `flower go` in a terminal
LOCK_WHO = "编辑器里的 flower-lsp"
WHAT_TO_DO = N_("要做什么?一句话就够。")
NOTHING_RUNNING = N_("{folder} 里没有在跑的运行。")
START_ACTION = N_("新的运行…")
NO_RUN_TO_SAY = N_("{folder} 里没有在跑的运行:先接着做或者开一个。")
RUN_ENDED_UNSAID = N_("{folder} 里的运行已经结束了,你的话没送出去:接着做或者开一个新的运行再说。")
SAY_REFUSED = N_("没送到:{why}。说短一点,或者把它写进文件再说一句文件在哪。")
SAY_LATE = N_("还没送到:这一步 {seconds:.0f} 秒内还没带着你的话接着跑。送到或者没送到,都会再告诉你。")
SAY_WAIT_S = 25.0  # under the 30 s every request is answered within


class Runs(Feature):
    """The folder -> run table and the commands that act on it."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self.active: dict[str, Run] = {}
        self._claimed: set[str] = set()  # folders between "start accepted" and "task running"
        self.memory: dict[str, Memory] = {}

    def register(self) -> None:
        # pygls marks the function it registers (a bound method cannot be marked) and hands the
        # server to a first parameter named `ls`
        command = self.server.command

        @command(p.CONTINUE)
        async def flower_continue(ls: FlowerServer, *args: object) -> object:
            return await self._continue_command(args)

        @command(p.START)
        async def flower_start(ls: FlowerServer, *args: object) -> object:
            return await self._start_command(args)

        @command(p.SAY)
        async def flower_say(ls: FlowerServer, *args: object) -> object:
            return await self._say_command(args)

        @command(p.STOP)
        async def flower_stop(ls: FlowerServer, *args: object) -> object:
            return await self._stop_command(args)

        @command(p.ANSWER)
        def flower_answer(ls: FlowerServer, *args: object) -> object:
            return self._answer_command(args)

    def memory_of(self, folder: Folder) -> Memory:
        return self.memory.setdefault(folder.uri, Memory())

    def busy(self, folder: Folder) -> bool:
        return folder.uri in self.active or folder.uri in self._claimed

    def _refusal(self, folder: Folder) -> p.CommandResult:
        run = self.active.get(folder.uri)
        where = (
            _("(步骤 {step} {index}/{total})").format(
                step=run.live.step, index=run.live.index, total=run.live.total
            )
            if run and run.live.step
            else ""
        )
        return p.CommandResult(
            False,
            _("{folder} 里已经有一个运行在跑{where}:先停下它,或者对它说句话。").format(
                folder=folder.name, where=where
            ),
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
            return self._failed(folder, _("开不了运行"), exc)
        try:
            result = await self._start_claimed(folder, ask, new=new, lock=lock)
        except BaseException:
            lock.release()
            raise
        if not result.ok:
            lock.release()
        return result

    async def _start_claimed(self, folder: Folder, ask: str, *, new: bool, lock: FlowLock) -> p.CommandResult:
        engine = self.server.engine
        # the folder's options as they are now, whichever client set them and when; a client
        # that can show no question: the engine's own no-answer path, at once
        settings = self.server.settings_for(folder)
        if not self.server.get(Questions).can_show:
            settings = settings.but(timeout_s=0.0)
        try:
            wake = await asyncio.to_thread(engine.wake_state, settings)
        except Exception as exc:
            return self._failed(folder, _("读不了运行状态"), exc)
        waking = wake["waking"] and not new
        if not ask.strip() and not waking:
            return p.CommandResult(
                False,
                _("{folder} 里没有可以接着做的:给一句诉求来开一个运行。").format(folder=folder.name),
                offer="start",
            )

        def build() -> tuple[EngineRun, str | None]:
            banner = engine.banner(settings) if waking else None
            work = engine.start(ask, settings.but(new=new))
            return work, banner

        try:
            work, banner = await asyncio.to_thread(build)
        except Exception as exc:
            return self._failed(folder, _("开不了运行"), exc)
        run = Run(
            folder, work, waking=waking, banner=banner, memory=self.memory_of(folder), deliver=self._deliver
        )
        run.lock = lock  # released when the run ends
        run.settings = settings.but(new=new)
        stop = wake.get("stopped") if waking else None
        run.stopped = stop.kind if stop is not None else None
        try:
            work.runtime.on_stderr = lambda line: self.server.client.log(f"[{folder.name}] {line}")
            for notice in getattr(work.runtime, "warnings", []):  # no sandbox, a refused .env
                self.server.client.log(f"[{folder.name}] {notice}", types.MessageType.Warning)
            if work.channel.on_event is None:
                work.channel.on_event = run.emit  # questions and mail reach the same sink as the steps
        except Exception as exc:
            run.close()
            return self._failed(folder, _("开不了运行"), exc)
        self.active[folder.uri] = run
        run.task = asyncio.ensure_future(self._drive(run))  # strong reference: self.active
        if waking and not ask.strip():
            done = _("在 {folder} 里接着做。")
        elif waking:
            done = _("带着你的话在 {folder} 里接着做。")
        else:
            done = _("在 {folder} 里开始了。")
        return p.CommandResult(True, done.format(folder=folder.name))

    async def continue_(self, folder: Folder) -> p.CommandResult:
        if self.busy(folder):
            return self._refusal(folder)
        try:
            wake = await asyncio.to_thread(self.server.engine.wake_state, self.server.settings_for(folder))
        except Exception as exc:
            return self._failed(folder, _("读不了运行状态"), exc)
        if wake["waking"]:
            return await self.start(folder, "")
        if self._server_offers():
            self.server.spawn(self._offer_start(folder))
        return p.CommandResult(
            False,
            _("{folder} 里没有可以接着做的:还没有 需求.md。开一个新的运行?").format(folder=folder.name),
            offer="start",
        )

    def _server_offers(self) -> bool:
        """Whether the server offers a new run itself: the client does not declare `offer` and can
        show a message request."""
        can = self.server.client.can
        return not can.flower.offer and can.show_message_request

    async def _offer_start(self, folder: Folder) -> None:
        """window/showMessageRequest offering a new run; the request itself is asked as a question
        of the server's own (flower/ask, or the fallback, and flower.answer either way)."""
        try:
            choice = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message=_("{folder} 里没有可以接着做的。开一个新的运行?").format(folder=folder.name),
                    actions=[types.MessageActionItem(title=_(START_ACTION))],
                )
            )
        except Exception:
            log.info("the client did not answer the offer to start", exc_info=True)
            return
        if choice is None or choice.title != _(START_ACTION):
            return
        answer = await self.server.get(Questions).ask_own(
            p.AskParams(
                folder=folder.uri,
                id=f"start-{uuid.uuid4().hex[:8]}",
                question=_(WHAT_TO_DO),
                options=[],
                free_text=True,
                timeout_s=None,
            ),
        )
        if answer and answer.strip():
            result = await self.start(folder, answer.strip())
            if not result.ok:
                self.server.client.show(result.message, types.MessageType.Warning)

    def _failed(self, folder: Folder, what: str, exc: BaseException) -> p.CommandResult:
        log.warning("%s in %s", what, folder.path, exc_info=exc)
        message = _("flower:{folder} 里{what}:{error}").format(what=what, folder=folder.name, error=exc)
        self.server.client.show(message, types.MessageType.Error)
        return Reported(False, message)

    # -- the run itself --------------------------------------------------------------------------
    def _deliver(self, run: Run, event: Event) -> None:
        self.server.client.call_soon(self._observe, run, event)

    def _observe(self, run: Run, event: Event) -> None:
        run.track(event)
        self.server.observe(run, event)

    async def _drive(self, run: Run) -> None:
        outcome: Outcome | None = None
        phase: RunPhase = "failed"
        text = ""
        try:
            await self.server.run_started(run)
            outcome = await run.work.run(run.emit)
        except asyncio.CancelledError:
            phase, text = "stopped", run.stop_reason or "stopped"
        except Exception as exc:
            log.exception("the run in %s failed", run.folder.path)
            text = f"{type(exc).__name__}: {exc}"
        finally:
            run.close()
            cost = round(run.finished_cost(), 6)
            ended = RunEnded.of(outcome, cost) if outcome is not None else RunEnded(phase, text, cost)
            # straight to the features: the loop may be going away, nothing may be deferred now
            self.server.run_ended(run, ended)
            if self.active.get(run.folder.uri) is run:
                del self.active[run.folder.uri]
            if run.lock is not None:
                run.lock.release()
            run.done.set()

    # -- say / answer / stop ---------------------------------------------------------------------
    async def say(self, folder: Folder, text: str) -> p.CommandResult:
        """Words for the run, answered only once they reached it: the model answered the step
        resumed with them, or they are in the inbox and 需求.md; otherwise why not."""
        run = self.active.get(folder.uri)
        if run is None:
            return p.CommandResult(False, _(NO_RUN_TO_SAY).format(folder=folder.name))
        size, limit = await asyncio.to_thread(sizes.line_length, text), sizes.say_limit()
        if size > limit:  # its echo would not reach flower whole (flower.core.sizes)
            return p.CommandResult(
                False,
                _(
                    "这段话太长了({size} MiB),说的话最多 {limit} MiB({var} 的一半:"
                    "Claude Code 可能在一条消息里把它传回两次):把它写进工作区里的文件,再说一句文件在哪。"
                ).format(size=sizes.mib(size), limit=sizes.mib(limit), var=sizes.LIMIT_VAR),
            )
        if run.busy:
            delivery = asyncio.wrap_future(run.runtime.interrupt(text))
            try:
                await self._until_delivered(run, delivery, SAY_WAIT_S)
            except TimeoutError:
                self.server.spawn(self._tell_when_delivered(run, delivery))
                return p.CommandResult(False, _(SAY_LATE).format(seconds=SAY_WAIT_S))
            except Undelivered as missed:
                if not missed.step_over:
                    return p.CommandResult(False, _(SAY_REFUSED).format(why=missed.reason))
                # the step ended before it took them: they go to the inbox instead
            else:
                return p.CommandResult(True, _("送到了:这一步带着你的话接着跑了。"))
        if self.active.get(folder.uri) is not run or run.done.is_set():
            return p.CommandResult(False, _(RUN_ENDED_UNSAID).format(folder=folder.name))
        if len(text) > sizes.INBOX_CHARS:  # 需求.md would carry it into every later prompt
            return p.CommandResult(
                False,
                _(
                    "这段话太长了({size} 字),放不进收件箱(最多 {limit} 字,它也会追加进 需求.md):"
                    "把它写进工作区里的文件,再说一句文件在哪。"
                ).format(size=len(text), limit=sizes.INBOX_CHARS),
            )
        mail = await asyncio.to_thread(run.channel.send, text)
        if mail is None:
            return p.CommandResult(False, _("没有要送的话。"))
        return p.CommandResult(True, _("送进了它的收件箱(也追加进了 需求.md)。"))

    @staticmethod
    async def _until_delivered(run: Run, delivery: asyncio.Future[None], within_s: float) -> None:
        """The delivery's outcome; Undelivered when the run ended first, TimeoutError past the bound."""
        ended: asyncio.Future[object] = asyncio.ensure_future(run.done.wait())
        either: set[asyncio.Future[object]] = {delivery, ended}  # type: ignore[arg-type]  # only awaited
        try:
            async with asyncio.timeout(within_s):
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
        if delivery.done():
            delivery.result()  # raises Undelivered when the words did not get there
            return
        raise Undelivered(STOPPED)

    async def _tell_when_delivered(self, run: Run, delivery: asyncio.Future[None]) -> None:
        """The late outcome of a Say answered "not yet", as one message."""
        try:
            await self._until_delivered(run, delivery, STOP_GRACE_S * 20)
        except (Undelivered, TimeoutError) as missed:
            why = missed.reason if isinstance(missed, Undelivered) else "no answer"
            self.server.client.show(_(SAY_REFUSED).format(why=why), types.MessageType.Warning)
        else:
            self.server.client.show(_("送到了:这一步带着你的话接着跑了。"), types.MessageType.Info)

    def answer(self, folder: Folder, ask_id: str | None, text: str) -> p.CommandResult:
        """An answer to the engine's question `ask_id` or to one of the server's own; without an
        id, to the folder's oldest waiting question (the engine's first)."""
        run = self.active.get(folder.uri)
        questions = self.server.get(Questions)
        if ask_id is None:
            waiting = [a.id for a in run.channel.pending()] if run is not None else []
            waiting += [q.id for q in questions.own_waiting(folder.uri)]
            if not waiting:
                return p.CommandResult(False, _("{folder} 里没有等着回答的提问。").format(folder=folder.name))
            ask_id = waiting[0]
        if (run is not None and run.channel.answer(ask_id, text)) or questions.answer_own(
            folder.uri, ask_id, text
        ):
            return p.CommandResult(True, _("回答了 {id}。").format(id=ask_id))
        if run is None:
            return p.CommandResult(False, _(NOTHING_RUNNING).format(folder=folder.name))
        return p.CommandResult(False, _("提问 {id} 已经不等回答了。").format(id=ask_id))

    async def stop(self, folder: Folder) -> p.CommandResult:
        run = self.active.get(folder.uri)
        if run is None:
            return p.CommandResult(False, _(NOTHING_RUNNING).format(folder=folder.name))
        return await self.stop_run(run, why="stopped")

    async def stop_run(self, run: Run, *, why: str) -> p.CommandResult:
        run.stop_reason = why
        if run.task is not None and not run.task.done():
            run.task.cancel()
        try:
            async with asyncio.timeout(STOP_GRACE_S):
                await run.done.wait()
        except TimeoutError:
            return p.CommandResult(
                False,
                _("{folder} 里的运行 {seconds:.0f} 秒内没停下来。").format(
                    folder=run.folder.name, seconds=STOP_GRACE_S
                ),
            )
        return p.CommandResult(
            True,
            _("停下了 {folder} 里的运行;Flower: Continue 让它接着做。").format(folder=run.folder.name),
        )

    async def on_shutdown(self) -> None:
        runs = list(self.active.values())
        for run in runs:
            run.stop_reason = "the server is shutting down"
            if run.task is not None:
                run.task.cancel()
        if runs:
            await asyncio.wait([asyncio.ensure_future(r.done.wait()) for r in runs], timeout=STOP_GRACE_S)

    # -- the commands ----------------------------------------------------------------------------
    async def _continue_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.ContinueArgs, p.CONTINUE, args)
        result = await self.continue_(self.server.folder_arg(a.folder))
        if result.offer is not None and self._server_offers():
            return wire.to_json(result)  # the offer to start is the message the person sees
        return self.server.client.reply(result)

    async def _start_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.StartArgs, p.START, args)
        result = await self.start(self.server.folder_arg(a.folder), a.ask, new=a.new)
        if not result.ok and result.offer is None and not isinstance(result, Reported):
            self.server.client.show(result.message, types.MessageType.Warning)
            result = Reported(result.ok, result.message, result.offer, result.uri)
        return self.server.client.reply(result)

    async def _say_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.SayArgs, p.SAY, args)
        if not a.text.strip():
            raise invalid_params(wire.ProtocolError(f"{p.SAY}: 'text' must not be empty"))
        return self.server.client.reply(await self.say(self.server.folder_arg(a.folder), a.text))

    async def _stop_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.StopArgs, p.STOP, args)
        return self.server.client.reply(await self.stop(self.server.folder_arg(a.folder)))

    def _answer_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.AnswerArgs, p.ANSWER, args)
        return self.server.client.reply(self.answer(self.server.folder_arg(a.folder), a.id, a.text))
