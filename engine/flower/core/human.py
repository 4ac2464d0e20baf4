"""The human channel: the model asks a person, the person answers or speaks up unasked.

An in-process MCP server with two tools (``mcp__human__ask`` blocks until answered or timed
out; ``mcp__human__inbox`` never blocks) plus the methods a UI needs. Nobody answering is an
answer too: every way an ask can end becomes a fixed text the model can act on, never an
exception, because the normal state of a long-horizon run is that nobody is watching.

Threads: ``answer`` / ``decline`` / ``send`` may be called from any thread (a web handler, a
TUI input thread); they hand over to the event loop with ``call_soon_threadsafe`` because
``asyncio.Future.set_result`` is not thread-safe. ``on_event`` always runs on the loop thread
when a loop is known, and whatever it raises lands in ``ui_errors``.

Tool-call timeout of the CLI (measured with the bundled Claude Code 2.1.327): an in-process
("sdk") MCP server has no idle timeout, only a hard per-call limit: the server config's
``timeout`` (ms, values < 1000 ignored), else the ``MCP_TOOL_TIMEOUT`` env var, else about 27.8
hours. When the CLI cuts a call the model gets an error while the ask keeps waiting here, so
``mcp_servers()`` sets ``timeout`` from ``timeout_s``: neither a short ``MCP_TOOL_TIMEOUT`` in
the environment nor the default can cut an ask before the channel's own timeout ends it.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, TypeVar, TypeVarTuple

from ..base.files import append_text
from ..base.secrets import redact_value
from .events import Event, MailNote, MailState, Question, ask_state

if TYPE_CHECKING:  # the SDK is slow to import; _build_server imports it when called
    from claude_agent_sdk.types import McpSdkServerConfig, McpServerConfig
    from mcp.server import Server

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")

SERVER = "human"
ASK_TOOL = "ask"
INBOX_TOOL = "inbox"

OVER_BUDGET = "提问额度已用完。不要再问了 —— 把剩下的不确定项写进「未知与假设」那一段,按你自己的判断继续。"
TIMEOUT = (
    "无人应答。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。"
    "不要重复提问,也不要停在这里。"
)
DECLINED = "对方跳过了这个问题。按你自己的判断继续,并把假设写进「未知与假设」。"
INVALID = "问题是空的。把问题写清楚再问。"
INBOX_EMPTY = "没有新消息。"
# After each message: whether it is in the brief (every later step reads it) or only in this reply.
INBOX_RECORDED = "(已记进需求确认书 {path}:之后的步骤和判定都会读到)"
INBOX_NOT_RECORDED = "(没有记进需求确认书 需求.md,只在这次对话里转达:之后的步骤看不到,要紧的话你自己记下来)"

# Asks that never reached a person do not use up the budget.
_UNCOUNTED = ("over_budget", "invalid")

# Hard per-call limit the CLI enforces on MCP tools (ms); its own upper clamp is 2**31 - 1.
_CLI_MAX_TIMEOUT_MS = 2_147_483_647
# Headroom over timeout_s so that our own timeout always fires first and the model gets
# TIMEOUT instead of a CLI error.
_TIMEOUT_SLACK_S = 60.0

LOG_TITLE = "# 问答记录"
_LOG_STATE = {
    "asked": "(等待回答)",
    "timeout": "(无人应答)",
    "declined": "(已跳过)",
    "over_budget": "(提问额度已用完)",
    "invalid": "(问题是空的)",
}

ASK_DESCRIPTION = (
    "向人提一个问题并等待回答。只问你从现场查不到、又必须由人拍板的事;一次只问一件事。"
    "可以用 options 给出候选答案,对方也可以不选而自己写。"
    "没人回答、被跳过或额度用完时会返回一句说明 —— 照它说的继续,不要重复提问。"
)
INBOX_DESCRIPTION = (
    "查看人在运行中主动补充的话。不会阻塞,没有新消息时立刻返回。"
    "在检查点(派出一轮工作之后、下结论之前)看一眼。"
)


@dataclass
class Ask:
    """One question to a person."""

    id: str
    question: str
    options: list[str] = field(default_factory=list)
    asked_at: float = field(default_factory=time.time)
    state: str = "asked"
    answer: str = ""
    # When the ask left "asked"; freezes waited_s so the log shows how long it really waited.
    _settled_at: float | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def waited_s(self) -> float:
        end = self._settled_at if self._settled_at is not None else time.time()
        return round(max(0.0, end - self.asked_at), 1)

    def event(self, remaining: int = 0) -> Question:
        return Question(
            text=self.question,
            id=self.id,
            options=list(self.options),
            state=ask_state(self.state),
            answer=self.answer,
            remaining=remaining,
            asked_at=self.asked_at,
            raw=self,
        )


@dataclass
class Mail:
    """Something the person said without being asked; ``taken`` once the model read it."""

    id: str
    text: str
    sent_at: float = field(default_factory=time.time)
    taken: bool = False


@dataclass
class _Waiting:
    ask: Ask
    future: asyncio.Future[tuple[str, str]]
    loop: asyncio.AbstractEventLoop


class HumanServer(TypedDict):
    """The SDK's in-process server config with two settings its TypedDict lacks and the CLI reads."""

    type: Literal["sdk"]
    name: str
    instance: Server[object]  # its lifespan result is never read
    timeout: int  # ms, the CLI's hard limit on one call
    alwaysLoad: bool


class HumanChannel:
    """In-process MCP server (``mcp__human__ask``, ``mcp__human__inbox``) plus the UI side."""

    def __init__(
        self,
        *,
        on_event: Callable[[Event], None] | None = None,
        max_asks: int | None = None,
        timeout_s: float | None = 1800.0,
        log_path: str | Path | None = None,
        amend_path: str | Path | None = None,
        over_budget_text: str = OVER_BUDGET,
        timeout_text: str = TIMEOUT,
        declined_text: str = DECLINED,
    ) -> None:
        self.on_event = on_event
        self.max_asks = max_asks
        self.timeout_s = timeout_s
        self.log_path = Path(log_path) if log_path is not None else None
        self.amend_path = Path(amend_path) if amend_path is not None else None
        self.over_budget_text = over_budget_text
        self.timeout_text = timeout_text
        self.declined_text = declined_text
        self.asks: list[Ask] = []
        self.mail: list[Mail] = []
        self.ui_errors: list[str] = []

        # One lock for everything other threads touch: the waiting table, the pull queue, mail.
        self._lock = threading.RLock()
        self._file_lock = threading.Lock()
        self._ask_ids = itertools.count(1)
        self._mail_ids = itertools.count(1)
        self._waiting: dict[str, _Waiting] = {}
        self._fresh: deque[Ask] = deque()  # asked but not yet handed to next_ask()
        self._pullers: list[asyncio.Future[None]] = []
        self._amended: dict[str, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: McpSdkServerConfig | None = None

    # -- what the model sees -----------------------------------------------------------
    @property
    def tool_name(self) -> str:
        return f"mcp__{SERVER}__{ASK_TOOL}"

    @property
    def inbox_name(self) -> str:
        return f"mcp__{SERVER}__{INBOX_TOOL}"

    def mcp_servers(self) -> dict[str, McpServerConfig]:
        """``{"human": <sdk server config>}``, ready for ``mcp_servers=``; the key must be the server name."""
        if self._server is None:
            self._server = self._build_server()
        # alwaysLoad: otherwise the CLI defers MCP tools behind ToolSearch, and the model would
        # see only the names and have to search before it could ask anything.
        config: HumanServer = {**self._server, "timeout": self._cli_timeout_ms(), "alwaysLoad": True}
        return {SERVER: config}

    def _cli_timeout_ms(self) -> int:
        if self.timeout_s is None:
            return _CLI_MAX_TIMEOUT_MS
        seconds = max(float(self.timeout_s), 0.0) + _TIMEOUT_SLACK_S
        return min(int(seconds * 1000), _CLI_MAX_TIMEOUT_MS)

    def _build_server(self) -> McpSdkServerConfig:
        # Imported here: the SDK is slow to import and `import flower` must stay cheap.
        import claude_agent_sdk as sdk

        ask_schema = {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "要问的问题,一次一件事"},
                "options": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "可选:候选答案;对方也可以不选而自己写",
                },
            },
            "required": ["question"],
        }
        inbox_schema: dict[str, object] = {"type": "object", "properties": {}}
        ask_tool = sdk.SdkMcpTool(
            name=ASK_TOOL, description=ASK_DESCRIPTION, input_schema=ask_schema, handler=self._ask_tool
        )
        inbox_tool = sdk.SdkMcpTool(
            name=INBOX_TOOL,
            description=INBOX_DESCRIPTION,
            input_schema=inbox_schema,
            handler=self._inbox_tool,
        )
        return sdk.create_sdk_mcp_server(name=SERVER, tools=[ask_tool, inbox_tool])

    async def _ask_tool(self, args: dict[str, object]) -> dict[str, object]:
        question = args.get("question")  # the model's input: anything but a string is an empty question
        options = _clean_options(args.get("options"))  # ask() cleans them again: a no-op
        ask = await self.ask(question if isinstance(question, str) else "", options)
        reply: dict[str, object] = {"content": [{"type": "text", "text": self._reply_text(ask)}]}
        if ask.state == "invalid":
            reply["is_error"] = True
        return reply

    async def _inbox_tool(self, args: dict[str, object]) -> dict[str, object]:
        self._remember_loop()
        return {"content": [{"type": "text", "text": self._take_mail()}]}

    def _reply_text(self, ask: Ask) -> str:
        if ask.state == "answered":
            return ask.answer
        if ask.state == "over_budget":
            return self.over_budget_text
        if ask.state == "declined":
            return self.declined_text
        if ask.state == "invalid":
            return INVALID
        return self.timeout_text

    # -- asking ------------------------------------------------------------------------
    @property
    def remaining(self) -> int:
        """Asks left; -1 when unlimited (``max_asks=None``), neither 0 nor infinity."""
        if self.max_asks is None:
            return -1
        with self._lock:
            used = sum(1 for a in self.asks if a.state not in _UNCOUNTED)
        return max(0, self.max_asks - used)

    async def ask(self, question: str, options: list[str] | None = None) -> Ask:
        """Ask and wait; never raises except CancelledError. How it ended is in ``ask.state``."""
        loop = self._remember_loop()
        text = question.strip() if isinstance(question, str) else ""
        choices = _clean_options(options)
        with self._lock:
            ask = Ask(id=f"q{next(self._ask_ids)}", question=text, options=choices)
            if not text:
                ask.state = "invalid"
            elif self.max_asks is not None and self.remaining <= 0:
                ask.state = "over_budget"
            elif self.timeout_s is not None and self.timeout_s <= 0:
                # Fully automatic: no queue, no "asked" event, settled on the spot.
                ask.state = "timeout"
            self.asks.append(ask)
            if ask.state == "asked":
                waiting = _Waiting(ask, loop.create_future(), loop)
                self._waiting[ask.id] = waiting
                self._fresh.append(ask)
                self._wake_pullers()
        if ask.state != "asked":
            self._finish(ask)
            return ask

        self._emit(ask.event(self.remaining))
        try:
            state, answer = await self._wait(waiting)
        except asyncio.CancelledError:
            with self._lock:
                self._waiting.pop(ask.id, None)
            raise
        ask.state, ask.answer = state, answer
        self._finish(ask)
        return ask

    async def _wait(self, waiting: _Waiting) -> tuple[str, str]:
        timeout = self.timeout_s
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancellation (a stop)
            # that lands as the answer does
            async with asyncio.timeout(timeout):
                return await asyncio.shield(waiting.future)
        except TimeoutError:
            with self._lock:
                mine = self._waiting.pop(waiting.ask.id, None) is not None
            if mine:
                return "timeout", ""
            # An answer claimed the ask in the same instant; its result is already on the way.
            return await waiting.future

    def _finish(self, ask: Ask) -> None:
        ask._settled_at = time.time()
        self._emit(ask.event(self.remaining))
        self._append(self.log_path, self._log_entry(ask), header=LOG_TITLE)

    def pending(self) -> list[Ask]:
        """Asks waiting for a person right now, oldest first."""
        with self._lock:
            return [w.ask for w in self._waiting.values()]

    async def next_ask(self, timeout: float | None = None) -> Ask | None:  # noqa: ASYNC109 (the reference fixes this signature)
        """Pull mode: the next ask still waiting for an answer; None on timeout, raises if cancelled."""
        loop = self._remember_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            with self._lock:
                while self._fresh:
                    ask = self._fresh.popleft()
                    if ask.id in self._waiting:
                        return ask
                wake: asyncio.Future[None] = loop.create_future()
                self._pullers.append(wake)
            try:
                async with asyncio.timeout_at(deadline):  # None: no deadline
                    await wake
            except TimeoutError:
                return None
            finally:
                with self._lock:
                    if wake in self._pullers:
                        self._pullers.remove(wake)

    def _wake_pullers(self) -> None:
        for wake in self._pullers:
            _call_soon(wake.get_loop(), _resolve, wake, None)
        self._pullers.clear()

    def answer(self, ask_id: str, text: str) -> bool:
        """Answer an ask from any thread; False if it is no longer waiting. A blank answer skips it."""
        text = text.strip() if isinstance(text, str) else ""
        if not text:
            return self._settle(ask_id, "declined", "")
        return self._settle(ask_id, "answered", text)

    def decline(self, ask_id: str, reason: str = "") -> bool:
        """Skip an ask: the model decides by itself. The reason goes to the log, not to the model."""
        return self._settle(ask_id, "declined", reason.strip() if isinstance(reason, str) else "")

    def _settle(self, ask_id: str, state: str, text: str) -> bool:
        with self._lock:
            waiting = self._waiting.pop(ask_id, None)
        if waiting is None:
            return False
        return _call_soon(waiting.loop, _resolve, waiting.future, (state, text))

    # -- the person speaking up ----------------------------------------------------------
    def send(self, text: str) -> Mail | None:
        """The person says something unasked (any thread). Never interrupts; also amends the brief."""
        text = text.strip() if isinstance(text, str) else ""
        if not text:
            return None
        # into the brief first: the inbox may hand the mail over the moment it is queued, and
        # its reply says whether the words are in the brief
        amended = str(self.amend_path) if self.amend(text) else ""
        with self._lock:
            mail = Mail(id=f"m{next(self._mail_ids)}", text=text)
            self._amended[mail.id] = amended
            self.mail.append(mail)
        self._emit(self._mail_event(mail, "queued"), threadsafe=True)
        return mail

    def amend(self, text: str, *, label: str = "运行中补充") -> bool:
        """Append a labelled section to ``amend_path``; True only if it was really written.

        Each step is a fresh session that reads only frozen files, so what the person said
        mid-run survives a step boundary only if it lands on disk.
        """
        if self.amend_path is None or not isinstance(text, str) or not text.strip():
            return False
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        section = f"## {label} · {stamp}\n\n{text.strip()}\n"
        return self._append(self.amend_path, section)

    def pending_mail(self) -> list[Mail]:
        with self._lock:
            return [m for m in self.mail if not m.taken]

    def _take_mail(self) -> str:
        with self._lock:
            fresh = [m for m in self.mail if not m.taken]
            for m in fresh:
                m.taken = True
        if not fresh:
            return INBOX_EMPTY
        for m in fresh:
            self._emit(self._mail_event(m, "delivered"))
        with self._lock:
            where = {m.id: self._amended.get(m.id, "") for m in fresh}
        lines = [f"对方在运行中补充了 {len(fresh)} 条:"]
        for i, m in enumerate(fresh, 1):
            path = where[m.id]
            note = INBOX_RECORDED.format(path=path) if path else INBOX_NOT_RECORDED
            lines.append(f"{i}. {m.text}\n   {note}")
        return "\n".join(lines)

    def _mail_event(self, mail: Mail, state: MailState) -> MailNote:
        with self._lock:
            amended = self._amended.get(mail.id, "")
        return MailNote(text=mail.text, state=state, id=mail.id, amended=amended, raw=mail)

    # -- records -----------------------------------------------------------------------
    def transcript(self) -> str:
        """The Q&A so far as markdown."""
        with self._lock:
            asks = list(self.asks)
        entries = [self._log_entry(a) for a in asks]
        return "\n".join([LOG_TITLE, "", *entries]).rstrip() + "\n"

    def _log_entry(self, ask: Ask) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ask.asked_at))
        lines = [f"## {ask.id} · {ask.state} · {when}", "", f"- 问:{ask.question or '(空)'}"]
        if ask.options:
            lines.append(f"- 选项:{' / '.join(ask.options)}")
        if ask.state == "answered":
            lines.append(f"- 答:{ask.answer}")
        else:
            note = f" {ask.answer}" if ask.answer else ""
            lines.append(f"- 答:{_LOG_STATE.get(ask.state, ask.state)}{note}")
        if ask.state in ("answered", "timeout", "declined"):
            lines.append(f"- 等了 {ask.waited_s}s")
        return "\n".join(lines) + "\n"

    def _append(self, path: Path | None, text: str, *, header: str = "") -> bool:
        if path is None:
            return False
        try:
            with self._file_lock:
                append_text(path, text, header=header)  # a failed append leaves no half entry
        except OSError:
            # Losing a log line must never stop the run (a full disk stops it at the next write
            # of the run's own books, with its line).
            return False
        return True

    # -- events ------------------------------------------------------------------------
    def _remember_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        self._loop = loop
        return loop

    def _emit(self, event: Event, *, threadsafe: bool = False) -> None:
        if threadsafe:
            loop = self._loop
            # Other threads hand the event to the loop so on_event always runs there.
            on_other_thread = loop is not None and loop.is_running() and _running_loop() is not loop
            if on_other_thread and loop is not None and _call_soon(loop, self._deliver, event):
                return
        self._deliver(event)

    def _deliver(self, event: Event) -> None:
        sink = self.on_event
        if sink is None:
            return
        try:
            sink(redact_value(event))
        except Exception as exc:  # a broken UI must not take hours of work down with it
            self.ui_errors.append(f"{type(exc).__name__}: {exc}")


def _clean_options(options: object) -> list[str]:
    if options is None:
        return []
    if isinstance(options, str):
        options = [options]
    if not isinstance(options, Iterable):
        return []
    try:
        items = list(options)
    except TypeError:
        return []
    return [str(o).strip() for o in items if o is not None and str(o).strip()]


def _resolve(future: asyncio.Future[_T], value: _T) -> None:
    if not future.done():
        future.set_result(value)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[*_Ts], object], *args: *_Ts) -> bool:
    """Run ``fn`` on ``loop`` from any thread; directly when already on it. False if the loop is gone."""
    if _running_loop() is loop:
        fn(*args)
        return True
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # loop closed: nobody is waiting any more
        return False
    return True


# -- reading the log back ------------------------------------------------------------------------

_LOG_HEADER = re.compile(
    r"^## (?P<id>\S+) · (?P<state>\w+) · (?P<when>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[ \t]*$", re.M
)
_LOG_FIELD = re.compile(r"^- (?P<name>问|选项|答):", re.M)
_LOG_WAITED = re.compile(r"\n- 等了 (?P<s>\d+(?:\.\d+)?)s\s*$")


def read_log(path: str | Path) -> list[Ask]:
    """The settled asks a Q&A log (问答记录.md) holds, in order; [] when there is none.

    The inverse of what ``HumanChannel`` appends: ``asked_at`` has the log's one-second
    precision (local time), ``waited_s`` what the log says. Entries it cannot read are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    heads = list(_LOG_HEADER.finditer(text))
    asks: list[Ask] = []
    for i, head in enumerate(heads):
        body = text[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip("\n")
        try:
            state = ask_state(head["state"])
            asked_at = time.mktime(time.strptime(head["when"], "%Y-%m-%d %H:%M:%S"))
        except ValueError:
            continue
        waited = _LOG_WAITED.search(body)
        if waited is not None:
            body = body[: waited.start()]
        fields: dict[str, str] = {}
        marks = list(_LOG_FIELD.finditer(body))
        for j, mark in enumerate(marks):
            end = marks[j + 1].start() if j + 1 < len(marks) else len(body)
            fields[mark["name"]] = body[mark.end() : end].rstrip("\n")
        answer = fields.get("答", "")
        if state != "answered":
            label = _LOG_STATE.get(state, state)
            answer = answer[len(label) :].strip() if answer.startswith(label) else answer
        question = fields.get("问", "")
        ask = Ask(
            id=head["id"],
            question="" if question == "(空)" else question,
            options=[o for o in fields.get("选项", "").split(" / ") if o],
            asked_at=asked_at,
            state=state,
            answer=answer,
        )
        ask._settled_at = asked_at + float(waited["s"]) if waited is not None else asked_at
        asks.append(ask)
    return asks
