"""Questions: every HumanChannel ask goes to the person the way the client can take it.

- A client that declares `ask` gets a flower/ask request. It may hold the request open until the
  person answers (VS Code), or reply {} at once and answer later with flower.answer (Neovim).
- Any other client that can show message requests gets window/showMessageRequest: the options
  as actions plus SKIP, and a message that says how to answer in one's own words (the command
  flower.answer, which holds no request open). Closing the prompt answers nothing: the question
  waits for flower.answer until the channel's timeout.
- A client that can show neither gets its runs started with timeout_s = 0 (Runs asks
  `can_show`): the engine settles every ask at once as unanswered, and the log says so.

The channel is read in pull mode (`next_ask`). An answer goes to `channel.answer`, a dismissal
to `channel.decline`; a client error, a malformed reply or no reply at all leaves the ask to the
channel's own timeout. A question no transport could put in front of the person is declined at
once (the agent decides by itself) and the log says so. When an ask ends some other way
(timeout, flower.answer, a code action), the client's request is cancelled with $/cancelRequest
so its prompt can close.

The server also asks questions of its own (what a new run should do): they wait here, in
`Questions`, and take their answer through the same paths, flower.answer included.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound

from flower.base.i18n import N_, _
from flower.base.secrets import redact, redact_value
from flower.core.events import Event, Question

from . import protocol as p
from . import wire
from .host import Feature, FlowerServer

if TYPE_CHECKING:
    from flower.core.human import Ask

    from .run import Run, RunEnded

log = logging.getLogger(__name__)

# what settles a wait for an answer early (a question withdrawn, answered elsewhere); its result
# is never read here
S = TypeVar("S")

DISMISSED = "dismissed in the editor"
UNSHOWN = "no editor could show it"
SKIP = N_("跳过(让它自己判断)")
CANNOT_ASK = N_(
    "flower:这个编辑器显示不了提问(它既没声明 flower/ask,也没声明 window/showMessageRequest):"
    "这次运行的每个提问都立刻按无人应答处理,由它自己判断"
)


def params_of(run: Run, ask: Ask) -> p.AskParams:
    timeout = run.channel.timeout_s
    return p.AskParams(
        folder=run.folder.uri,
        id=ask.id,
        question=ask.question,
        options=list(ask.options),
        free_text=True,  # HumanChannel always accepts an answer of one's own
        timeout_s=None if timeout is None else float(timeout),
    )


def prompt(params: p.AskParams, where: str) -> str:
    """A question as a message request says it, with how to answer it in free text."""
    argument = json.dumps({"id": params.id, "text": "..."}, ensure_ascii=False)
    how = (
        _("选一个答案,或者用命令 {command} 和参数 {argument} 自己写答案。")
        if params.options
        else _("用命令 {command} 和参数 {argument} 自己写答案。")
    )
    lines = [
        _("Flower 提问({id},{where}):{question}").format(id=params.id, where=where, question=params.question),
        how.format(command=p.ANSWER, argument=argument),
    ]
    if params.timeout_s is not None and params.timeout_s > 0:
        lines.append(_("{seconds:g} 秒内没人回答,它就自己判断。").format(seconds=params.timeout_s))
    return "\n".join(lines)


class Unshown(Exception):
    """No way to put the question in front of the person worked."""


class Desk:
    """Which asks of one run are still open on the client, so they can be withdrawn."""

    def __init__(self) -> None:
        self.settled: dict[str, asyncio.Future[None]] = {}

    def open(self, ask_id: str) -> asyncio.Future[None]:
        return self.settled.setdefault(ask_id, asyncio.get_running_loop().create_future())

    def close(self, ask_id: str) -> None:
        future = self.settled.pop(ask_id, None)
        if future is not None and not future.done():
            future.set_result(None)


@dataclass
class OwnQuestion:
    """A question of the server's own, waiting for its answer (None: replaced or skipped)."""

    params: p.AskParams
    answer: asyncio.Future[str | None]


class Questions(Feature):
    """Serves each run's questions to the client while the run lasts, and the server's own."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self._serving: dict[Run, tuple[Desk, asyncio.Task[None]]] = {}
        self._own: dict[str, OwnQuestion] = {}  # id -> question, oldest first

    @property
    def can_show(self) -> bool:
        """Whether this client can be shown a question at all."""
        return self.server.client.can.can_ask

    async def on_run_start(self, run: Run) -> None:
        if not self.can_show:
            self.server.client.log(_(CANNOT_ASK), types.MessageType.Warning)
        desk = Desk()
        self._serving[run] = (desk, asyncio.ensure_future(self._serve(run, desk)))

    def on_event(self, run: Run, event: Event) -> None:
        if isinstance(event, Question) and event.state != "asked" and run in self._serving:
            self._serving[run][0].close(event.id)  # settled in the engine: withdraw it here

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        serving = self._serving.pop(run, None)
        if serving is not None:
            serving[1].cancel()

    async def _serve(self, run: Run, desk: Desk) -> None:
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                ask = await run.channel.next_ask()
                if ask is None:
                    continue
                task = asyncio.ensure_future(self._handle(run, desk, ask))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            for task in tasks:
                task.cancel()

    async def _handle(self, run: Run, desk: Desk, ask: Ask) -> None:
        settled = desk.open(ask.id)
        try:
            reply = await self.ask(params_of(run, ask), settled=settled)
        except Unshown as exc:
            self.server.client.log(
                _("flower:提问 {id} 显示不出来({error}):它会自己判断").format(id=ask.id, error=exc),
                types.MessageType.Warning,
            )
            run.channel.decline(ask.id, UNSHOWN)
            return
        finally:
            desk.close(ask.id)
        if reply is None:
            return
        if reply.dismissed:
            run.channel.decline(ask.id, DISMISSED)
        elif reply.answer is not None:
            run.channel.answer(ask.id, reply.answer)  # a blank answer is a skip, as the channel defines

    # -- putting a question in front of the person -------------------------------------------------
    async def ask(
        self, params: p.AskParams, *, settled: asyncio.Future[S] | None = None
    ) -> p.AskResult | None:
        """Show the question the way the client can take it and wait for the reply, the ask's
        timeout, or `settled`. None = no answer (yet); raises Unshown when nothing could show it."""
        can = self.server.client.can
        if can.flower.ask:
            try:
                return await self._by_request(params, settled)
            except JsonRpcMethodNotFound:
                # declared, but the client has no handler after all
                log.info("the client has no flower/ask handler", exc_info=True)
        if can.show_message_request:
            return await self._by_message(params, settled)
        raise Unshown("the editor declares no way to show a question")

    async def _by_request(self, params: p.AskParams, settled: asyncio.Future[S] | None) -> p.AskResult | None:
        try:
            # a question quotes the agent: no credential leaves with it
            payload = redact_value(wire.to_json(params))
            raw = await self._request(p.ASK, payload, f"flower-ask-{params.id}", params, settled)
        except NoReply:
            return None
        except JsonRpcMethodNotFound:
            raise
        except Exception as exc:
            log.info("the client answered flower/ask %s with an error: %s", params.id, exc)
            return None
        try:
            return wire.from_json(p.AskResult, raw, "flower/ask result")
        except wire.ProtocolError as exc:
            self.server.client.log(
                _("flower:{id} 的回答格式不对,不理它:{error}").format(id=params.id, error=exc),
                types.MessageType.Warning,
            )
            return None

    async def _by_message(self, params: p.AskParams, settled: asyncio.Future[S] | None) -> p.AskResult | None:
        try:
            where = self.server.folder(params.folder).name
        except wire.ProtocolError:
            where = params.folder
        # a question quotes the agent: no credential leaves with it (the titles map back to the options)
        shown = {redact(title): title for title in [*params.options, _(SKIP)]}
        request = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=redact(prompt(params, where)),
            actions=[types.MessageActionItem(title=title) for title in shown],
        )
        try:
            chosen = await self._request(
                types.WINDOW_SHOW_MESSAGE_REQUEST, request, f"flower-message-{params.id}", params, settled
            )
        except NoReply:
            return None
        except Exception as exc:
            raise Unshown(f"window/showMessageRequest failed: {exc}") from exc
        title = shown.get(chosen.title, chosen.title) if isinstance(chosen, types.MessageActionItem) else None
        if title is None:
            # closed without a choice: the question waits for an answer in words
            self.server.client.log(
                _("flower:{id} 还在等回答:用 {command} 回答它").format(id=params.id, command=p.ANSWER)
            )
            return None
        if title in params.options:
            return p.AskResult(answer=title)
        if title == _(SKIP):
            return p.AskResult(dismissed=True)
        self.server.client.log(
            _("flower:{id} 收到一个不认识的选项,不理它:{title!r}").format(id=params.id, title=title)
        )
        return None

    async def _request(
        self,
        method: str,
        params: object,
        prefix: str,
        ask: p.AskParams,
        settled: asyncio.Future[S] | None,
    ) -> object:
        """Send a request and wait for its result, the ask's timeout or `settled`; a request the
        wait outlives is withdrawn and NoReply raised. The client's error is raised as it came."""
        protocol = self.server.protocol
        msg_id = f"{prefix}-{uuid.uuid4().hex[:8]}"
        try:
            request: asyncio.Future[object] = protocol.send_request_async(method, params, msg_id=msg_id)
        except Exception as exc:
            log.info("could not send %s", method, exc_info=True)
            raise NoReply from exc
        waiters: set[asyncio.Future[object] | asyncio.Future[S]] = {request}
        if settled is not None:
            waiters.add(settled)
        timeout = ask.timeout_s if ask.timeout_s is not None and ask.timeout_s > 0 else None
        try:
            done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._withdraw(msg_id, request)
            raise
        if request not in done:
            self._withdraw(msg_id, request)  # the engine is not waiting any more
            raise NoReply
        return request.result()

    def _withdraw(self, msg_id: str, request: asyncio.Future[object]) -> None:
        # forget the id first: a late reply must find no future (answering a cancelled one raises)
        protocol = self.server.protocol
        protocol._request_futures.pop(msg_id, None)
        request.cancel()
        if not protocol._shutdown:
            try:
                protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            except Exception:
                log.debug("could not cancel %s", msg_id, exc_info=True)

    # -- the server's own questions ----------------------------------------------------------------
    async def ask_own(self, params: p.AskParams) -> str | None:
        """A question of the server's own: the answer from the prompt or from flower.answer,
        whichever comes first; None when skipped, unanswered in time, or replaced by a newer
        question of the same folder."""
        for older in [q for q in self._own.values() if q.params.folder == params.folder]:
            _settle(older.answer, None)
        question = OwnQuestion(params, asyncio.get_running_loop().create_future())
        self._own[params.id] = question
        try:
            try:
                reply = await self.ask(params, settled=question.answer)
            except Unshown as exc:
                self.server.client.log(
                    _("flower:没能提问 {question}({error})").format(question=params.question, error=exc),
                    types.MessageType.Warning,
                )
                return None
            if not question.answer.done():
                if reply is not None and (reply.dismissed or reply.answer is not None):
                    return None if reply.dismissed else reply.answer
                timeout = params.timeout_s if params.timeout_s is not None and params.timeout_s > 0 else None
                try:
                    async with asyncio.timeout(timeout):
                        await asyncio.shield(question.answer)
                except TimeoutError:
                    return None
            return question.answer.result()
        finally:
            self._own.pop(params.id, None)

    def own_waiting(self, folder_uri: str) -> list[p.AskParams]:
        """The server's own questions waiting in a folder, oldest first."""
        return [q.params for q in self._own.values() if q.params.folder == folder_uri]

    def answer_own(self, folder_uri: str, ask_id: str, text: str) -> bool:
        question = self._own.get(ask_id)
        if question is None or question.params.folder != folder_uri or question.answer.done():
            return False
        question.answer.set_result(text)
        return True


class NoReply(Exception):
    """The request ended without a result: withdrawn, or it could not be sent."""


def _settle(future: asyncio.Future[str | None], value: str | None) -> None:
    if not future.done():
        future.set_result(value)
