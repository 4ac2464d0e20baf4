"""Driving one run: the work on the event loop, and the person connected to it.

stdin is read all the time by one thread, not only while a question is open: what was typed
during hours of work must never be swallowed as the answer to the next question. On a
terminal that thread reads key by key with ISIG off, so Ctrl-C reaches flower as a key and
never the Claude Code child (it shares our process group and would interrupt itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..base.files import DiskFault
from ..base.i18n import N_, _
from ..base.loop import run_to_end
from ..core.aside import WAIT_S, EventWindow, aside_question
from ..core.display import first_line, format_tokens
from ..core.events import ContextUpdate, Event, Question, Result, StepStarted, SystemNote, ToolResult
from ..core.notices import Notices
from .lineedit import Edited, EndOfInput, Interrupted, LineEditor, Submitted
from .render import Render
from .terminal import LineSource, RawTerminal, Screen, is_terminal
from .text import step_label

if TYPE_CHECKING:  # types only: `flower --help` must not pay for these imports
    from types import FrameType

    from ..core.human import Ask, HumanChannel
    from ..core.notify import Notifier
    from ..core.runtime import Runtime

_R = TypeVar("_R")


class _Work(Protocol):
    """The running work, as quitting sees it: something to cancel unless it is done."""

    def done(self) -> bool: ...

    def cancel(self) -> bool: ...


ANSWER_PROMPT = N_("你的回答 (回车=跳过,让它自己判断) > ")
IDLE_PROMPT = N_("(直接说 = 加需求,下个检查点送达;? 开头 = 顺便问一句,不打扰它干活) > ")
WORDS_PROMPT = "> "
INTERRUPT_ASK = N_("想说点什么?(回车 = 不说,直接继续)")
INTERRUPT_NOTE = N_("  (说了话才打断这一轮,正在跑的 subagent 会丢掉半成品;再按一次 Ctrl-C = 退出)")
QUIT_NOTE = N_("! 退出。血缘已经落盘:同一目录再跑 flower 会接着上次。")
ASIDE_ASKED = N_("# 旁路问答:{question}(答好了显示在这里,不打扰正在跑的运行)")
ASIDE_HEAD = N_("# 旁路")
ASIDE_COST = N_("  (${cost:.4f},没有打扰正在跑的运行)")
ASIDE_FAILED = N_("# 旁路问答失败:{why}")
ASIDE_EMPTY = N_("  . 问号后面要写问题,例如:? 现在到哪一步了")
ASIDE_WAITING = N_("(等 {n} 条旁路问答收尾…)")
ASIDE_GAVE_UP = N_("  . {n} 条旁路问答 {seconds:.0f} 秒没答完,不等了")
UNREACHABLE = N_("  ~ 模型端点 {host}:{port} 不应答(连不上)—— 在等它,连上了就接着跑;Ctrl-C 两次退出")
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")

# A second Ctrl-C within this many seconds quits even if the first one's prompt was answered.
DOUBLE_PRESS_S = 2.0
# After asking the run to stop, give it this long to close its sessions before leaving anyway.
QUIT_GRACE_S = 10.0


class Driver:
    """Runs one piece of work on the event loop and connects the person to it: event lines,
    the status line, answers to questions, words on Ctrl-C, quitting, signal rescue."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        screen: Screen,
        source: LineSource,
        channel: HumanChannel | None = None,
        verbose: bool = False,
        quit_note: Callable[[], str] | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.rt = runtime
        self.notifier = notifier
        self.notices = Notices(str(getattr(runtime, "workspace", "") or ""))
        self.quit_note = quit_note or (lambda: _(QUIT_NOTE))
        self.screen = screen
        self.source = source
        self.channel = channel
        self.render = Render(verbose=verbose)
        self.quit_requested = False
        self._lock = threading.RLock()
        self._awaiting_words = False
        self._last_ctrl_c = 0.0
        self._interrupting = False
        self._typed = ""  # what is typed but not yet entered (key-by-key mode only)
        self._cursor: int | None = None  # where in it the cursor is, when not at its end
        self.window = EventWindow()  # what a side question is shown of this run
        self._asides: set[asyncio.Task[None]] = set()
        self._stop = threading.Event()
        self._raw: RawTerminal | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._work: _Work | None = None
        self._step = ""
        self._context = ""
        self._results_seen = 0
        self._attempt_base = 0.0
        self._attempt_cost = 0.0

    # -- events ------------------------------------------------------------------------
    def on_event(self, ev: Event) -> None:
        try:
            self._on_event(ev)
        except Exception as exc:  # a broken renderer must never stop hours of work
            self.screen.say(
                _("  x (显示出错:{name}: {exc})").format(name=type(exc).__name__, exc=exc), err=True
            )

    def _on_event(self, ev: Event) -> None:
        self._track_cost(ev)
        self.window.add(ev)
        if isinstance(ev, StepStarted):
            self._step = ev.text
        if isinstance(ev, ContextUpdate):
            self._step = step_label(ev.step or self._step)
            self._context = _("上下文 {used}/{window}").format(
                used=format_tokens(ev.used), window=format_tokens(ev.window)
            )
        if isinstance(ev, Result) and self._interrupting:
            self._interrupting = False
            lines = [_("  ! 这一轮被你打断了,带着你的话接着跑")]
        elif isinstance(ev, ToolResult) and self._interrupting and ev.is_error:
            lines = [_("  . (打断了:这个工具调用没跑完)")]
        else:
            lines = self.render.lines(ev)
        for line in lines:
            self.screen.say(line)
        notice = self.notices.of(ev)
        if notice is not None and self.notifier is not None:
            self.notifier.send(notice)  # rung with the lines it is about, before any prompt
        if isinstance(ev, Result) and not self.screen.live:
            self.screen.say(f"  {self.status_text()}")
        if isinstance(ev, Question):
            if ev.state == "asked" and self.source.closed and self.channel is not None:
                # nobody can answer any more: skip at once instead of waiting out the timeout
                self.channel.decline(ev.id, "标准输入已关闭")
            self._refresh_prompt()
        self.screen.status(self.status_text())

    def ended(self, ok: bool, text: str = "", *, budget: bool = False) -> None:
        """The run is over: its notice, and the notify commands still running let finish."""
        if self.notifier is None:
            return
        self.notifier.send(self.notices.ended(ok, text, budget=budget))
        self.notifier.close()

    def _track_cost(self, ev: Event) -> None:
        done = len(self.rt.results)
        if done != self._results_seen:
            self._results_seen, self._attempt_base, self._attempt_cost = done, 0.0, 0.0
        if isinstance(ev, SystemNote) and ev.text == "init":
            # a new CLI process: its reported total starts from zero again
            self._attempt_base += self._attempt_cost
            self._attempt_cost = 0.0
        elif isinstance(ev, Result) and ev.cost_usd is not None:
            self._attempt_cost = max(self._attempt_cost, float(ev.cost_usd))

    def cost_so_far(self) -> float:
        if len(self.rt.results) != self._results_seen:
            return round(self.rt.total_cost(), 4)  # the in-flight step has landed in the books
        return round(self.rt.total_cost() + self._attempt_base + self._attempt_cost, 4)

    def status_text(self) -> str:
        parts = [p for p in (self._step, self._context) if p]
        parts.append(_("累计 ${cost_so_far:.2f}").format(cost_so_far=self.cost_so_far()))
        parts.append(self.render.elapsed())
        return "- " + " · ".join(parts)

    # -- the person ----------------------------------------------------------------------
    def _pending(self) -> list[Ask]:
        if self.channel is None:
            return []
        try:
            return list(self.channel.pending())
        except Exception:
            return []

    def _refresh_prompt(self, typed: str | None = None, cursor: int | None = None) -> None:
        """Show the prompt that fits now; half-typed text is kept and redrawn with it."""
        with self._lock:
            if typed is not None:
                self._typed = typed
                self._cursor = cursor if cursor is not None and cursor < len(typed) else None
            if self._awaiting_words:
                label = WORDS_PROMPT
            elif self._pending():
                label = _(ANSWER_PROMPT)
            elif self._typed or self._reading_the_person():
                label = _(IDLE_PROMPT)
            else:
                label = None
            shown, at = self._typed, self._cursor
        if label is None:
            if self.screen.prompt is not None:
                self.screen.close_prompt()
            return
        self.screen.open_prompt(label)
        self.screen.typed(shown, at)

    def _reading_the_person(self) -> bool:
        """Key by key at a terminal, with an inbox to say things to: the idle prompt stays on
        screen, under the status line, for as long as the run goes on."""
        return self.channel is not None and self._raw is not None and not self.source.closed

    def handle_line(self, text: str) -> None:
        """One line from the person (any thread): a side question, words after Ctrl-C, an answer,
        or the inbox."""
        label = self.screen.prompt
        self.screen.close_prompt(keep=text if label is not None else None)
        text = text.strip()
        with self._lock:
            self._typed, self._cursor = "", None
        question = aside_question(text)
        if question is not None:
            self.ask_aside(question)
            self._refresh_prompt()
            return
        with self._lock:
            words = self._awaiting_words
            self._awaiting_words = False
        if words:
            if text:
                delivery = self.rt.interrupt(text)
                missed = delivery.exception() if delivery.done() else None
                if missed is not None:  # refused before the turn was touched: it runs on
                    self.screen.say(_("x 没送到:{why}").format(why=missed))
                else:
                    self._interrupting = True
                    self.screen.say(_("! 打断这一轮,带上你的话:{text}").format(text=text))
            else:
                self.screen.say(_(". 不说话,接着跑"))
            self._refresh_prompt()
            return
        channel, pending = self.channel, self._pending()
        if channel is not None and pending:
            ask = pending[0]
            if not text:
                channel.decline(ask.id, "")
            else:
                options = list(ask.options)
                if text.isdigit() and 1 <= int(text) <= len(options):
                    text = options[int(text) - 1]
                channel.answer(ask.id, text)
        elif text:
            if channel is not None:
                channel.send(text)  # the receipt comes back as a "mail" event
            else:
                self.screen.say(_("  . 这个流程没有收件箱,这句话没送出去;想打断它就按 Ctrl-C"))
        self._refresh_prompt()

    def handle_eof(self) -> None:
        """stdin closed: nobody can answer; whatever is waiting is skipped, not waited out."""
        channel = self.channel
        if channel is not None:
            for ask in self._pending():
                channel.decline(ask.id, "标准输入已关闭")
        with self._lock:
            self._awaiting_words = False
        self._refresh_prompt()

    def ctrl_c(self) -> None:
        """Once: ask for words (they interrupt the round). Twice, or again while asked: quit."""
        now = time.monotonic()
        with self._lock:
            again = self._awaiting_words or (now - self._last_ctrl_c) < DOUBLE_PRESS_S
            self._last_ctrl_c = now
            if not again:
                self._awaiting_words = True
        if again:
            self.quit()
            return
        self.screen.say("")
        self.screen.say(f"! {_(INTERRUPT_ASK)}")
        self.screen.say(_(INTERRUPT_NOTE))
        waiting = len(self._pending())
        if waiting:
            self.screen.say(_("  (有 {waiting} 个提问还等着,打断不影响它们)").format(waiting=waiting))
        if self.source.closed:
            self.screen.say(_("  (标准输入已关闭,没法说话:接着跑)"))
        self._refresh_prompt()

    def quit(self) -> None:
        loop, work = self._loop, self._work
        if self.quit_requested:
            return
        self.quit_requested = True
        if loop is None or work is None:
            return

        def cancel() -> None:
            if not work.done():
                work.cancel()
            for task in list(self._asides):  # quitting does not wait for side questions either
                task.cancel()

        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(cancel)
        # the SDK normally closes its CLI child within a second; never hang the person
        threading.Thread(target=self._watchdog, name="flower-quit", daemon=True).start()

    def _watchdog(self) -> None:
        time.sleep(QUIT_GRACE_S)
        self.restore_terminal()
        try:
            self.screen.say(self.quit_note(), err=True)
        finally:
            os._exit(130)

    # -- side questions ---------------------------------------------------------------------
    def ask_aside(self, question: str) -> None:
        """A side question (any thread): asked at once, answered when it is answered; the run
        goes on meanwhile and never waits for it."""
        if not question:
            self.screen.say(_(ASIDE_EMPTY))
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            self.screen.say(_(ASIDE_FAILED).format(why=_("没有正在跑的运行")), err=True, tone="red")
            return
        self.screen.say(_(ASIDE_ASKED).format(question=question))
        with contextlib.suppress(RuntimeError):  # the loop closed in between: the run is over
            loop.call_soon_threadsafe(self._start_aside, question)

    def _start_aside(self, question: str) -> None:
        task = asyncio.ensure_future(self._answer_aside(question, self.window.lines()))
        self._asides.add(task)
        task.add_done_callback(self._asides.discard)

    async def _answer_aside(self, question: str, recent: list[str]) -> None:
        from ..core.aside import ask_aside

        rt = self.rt
        answer = await ask_aside(
            question, recent, workspace=rt.workspace, run_dir=rt.run_dir, workbench=rt.workbench
        )
        if not answer.ok:
            self.screen.say(_(ASIDE_FAILED).format(why=first_line(answer.error, 200)), err=True, tone="red")
            return
        lines = [_(ASIDE_HEAD), *(f"  {line}" for line in answer.text.strip().splitlines() if line.strip())]
        self.screen.say("\n".join([*lines, _(ASIDE_COST).format(cost=answer.cost_usd)]))

    async def _settle_asides(self) -> None:
        """The run is over: give the side questions still open up to WAIT_S to be answered."""
        open_ = [t for t in self._asides if not t.done()]
        if not open_:
            return
        self.screen.say(_(ASIDE_WAITING).format(n=len(open_)))
        _done, late = await asyncio.wait(open_, timeout=WAIT_S)
        for task in late:
            task.cancel()
        if late:
            self.screen.say(_(ASIDE_GAVE_UP).format(n=len(late), seconds=WAIT_S))

    async def _warn_if_unreachable(self) -> None:
        """Say within seconds when the model's endpoint does not answer: the CLI's own retries
        would otherwise show nothing but a ticking status line for minutes."""
        from ..core.resilience import endpoint, reachable

        if any(os.environ.get(v) for v in PROXY_VARS):
            return  # through a proxy the endpoint itself may well be out of reach, and fine
        host, port = endpoint()
        if not await reachable(host, port, self.rt.resilience.probe_timeout):
            self.screen.say(_(UNREACHABLE).format(host=host, port=port))

    # -- the reader thread ------------------------------------------------------------------
    def _reader(self) -> None:
        editor = LineEditor() if self._raw is not None else None
        while not self._stop.is_set():
            if editor is None:
                line = self.source.read_line(timeout=0.2, stop=self._stop)
                if line is None:
                    if self.source.closed:
                        self.handle_eof()
                        return
                    continue
                self.handle_line(line)
                continue
            data = self.source.read_bytes(0.2)
            if data is None:
                self.handle_eof()
                return
            for action in editor.feed(data):
                if isinstance(action, Submitted):
                    self.handle_line(action.text)
                elif isinstance(action, Edited):
                    self._refresh_prompt(typed=action.text, cursor=action.cursor)
                elif isinstance(action, Interrupted):
                    self.ctrl_c()
                elif isinstance(action, EndOfInput):
                    self.source.closed = True
                    self.handle_eof()
                    return

    def restore_terminal(self) -> None:
        raw = self._raw
        if raw is not None:
            raw.restore()

    # -- running -----------------------------------------------------------------------------
    async def run(self, work: Callable[[], Awaitable[_R]]) -> tuple[_R, None] | tuple[None, int]:
        """Run `work()`; (its value, None), or (None, 130) when the person quit."""
        from ..core.runtime import rescue_on_signals

        self._loop = loop = asyncio.get_running_loop()
        self._work = running = asyncio.ensure_future(work())
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
        rescue_on_signals(self.rt)
        for sig in previous:
            rescue = signal.getsignal(sig)
            if not callable(rescue):  # not the rescue just installed: nothing to wrap
                continue

            def handler(
                signum: int,
                frame: FrameType | None,
                rescue: Callable[[int, FrameType | None], object] = rescue,
            ) -> None:
                self.restore_terminal()  # the signal's default action ends us: leave a sane terminal
                rescue(signum, frame)

            signal.signal(sig, handler)
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self.ctrl_c)
        if self.source.tty and self.source.fd is not None and is_terminal(self.screen.err):
            raw = RawTerminal(self.source.fd)
            # before the thread starts: keys typed in between would be swallowed by line mode
            if raw.enter():
                self._raw = raw
        reader = None
        if not self.source.closed:
            reader = threading.Thread(target=self._reader, name="flower-stdin", daemon=True)
            reader.start()
            self._refresh_prompt()
        probe = asyncio.ensure_future(self._warn_if_unreachable())
        try:
            value = await running
            await self._settle_asides()
            return value, None
        except asyncio.CancelledError:
            if self.quit_requested:
                return None, 130
            raise
        finally:
            probe.cancel()
            for task in list(self._asides):
                task.cancel()
            self._stop.set()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            for sig, saved in previous.items():
                signal.signal(sig, saved)
            self.restore_terminal()
            self.screen.close_prompt()
            self.screen.status("")
            if reader is not None:
                reader.join(1.0)


def drive(
    runtime: Runtime,
    work: Callable[[Driver], Awaitable[_R]],
    *,
    screen: Screen,
    source: LineSource,
    channel: HumanChannel | None,
    verbose: bool,
    quit_note: Callable[[], str] | None = None,
    notifier: Notifier | None = None,
) -> tuple[_R, None, Driver] | tuple[None, int, Driver]:
    """Run `work`; (value, None) when it ended, (None, exit code) when it did not."""
    driver = Driver(
        runtime, screen=screen, source=source, channel=channel, verbose=verbose, quit_note=quit_note
    )
    driver.notifier = notifier
    try:
        ran = run_to_end(driver.run(lambda: work(driver)))
    except DiskFault as fault:  # a write the disk refused outside the steps' own books
        screen.say(_("x {fault}").format(fault=fault.line()), err=True)
        return None, 1, driver
    except Exception as exc:  # a broken workflow: say what broke, keep the books, exit 1
        if verbose:
            import traceback

            screen.say(traceback.format_exc().rstrip(), err=True)
        screen.say(f"x {type(exc).__name__}: {exc}", err=True)
        return None, 1, driver
    return (ran[0], None, driver) if ran[1] is None else (None, ran[1], driver)
