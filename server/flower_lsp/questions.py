"""Questions: every HumanChannel ask becomes a flower/ask request to the client.

The channel is read in pull mode (`next_ask`). An answer goes to `channel.answer`, a dismissal
to `channel.decline`; a client error, a malformed reply or no reply at all leaves the ask to the
channel's own timeout. When the ask ends some other way (timeout, a code action, another
client), the client's request is cancelled with $/cancelRequest so its prompt can close.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from flower.core.events import Event, Question
from flower.core.secrets import redact_value

from . import protocol as p
from .host import Feature, FlowerServer

if TYPE_CHECKING:
    from flower.core.human import Ask

    from .run import Run, RunEnded

log = logging.getLogger(__name__)

DISMISSED = "dismissed in the editor"


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


class Questions(Feature):
    """Serves each run's questions to the client while the run lasts."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self._serving: dict[Run, tuple[Desk, asyncio.Task[None]]] = {}

    async def on_run_start(self, run: Run) -> None:
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
        finally:
            desk.close(ask.id)
        if reply is None:
            return
        if reply.dismissed:
            run.channel.decline(ask.id, DISMISSED)
        elif reply.answer is not None:
            run.channel.answer(ask.id, reply.answer)  # a blank answer is a skip, as the channel defines

    async def ask(
        self, params: p.AskParams, *, settled: asyncio.Future[None] | None = None
    ) -> p.AskResult | None:
        """Send flower/ask and wait for the reply, the ask's timeout, or `settled`; None = no answer."""
        protocol = self.server.protocol
        msg_id = f"flower-ask-{params.id}-{uuid.uuid4().hex[:8]}"
        try:
            request = protocol.send_request_async(p.ASK, redact_value(p.to_json(params)), msg_id=msg_id)
        except Exception:
            log.info("could not send flower/ask", exc_info=True)
            return None
        waiters: set[asyncio.Future[Any]] = {request}
        if settled is not None:
            waiters.add(settled)
        timeout = params.timeout_s if params.timeout_s is not None and params.timeout_s > 0 else None
        try:
            done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._withdraw(msg_id, request)
            raise
        if request not in done:
            self._withdraw(msg_id, request)  # the engine is not waiting any more
            return None
        try:
            raw = request.result()
        except Exception as exc:
            log.info("the client answered flower/ask %s with an error: %s", params.id, exc)
            return None
        try:
            return p.from_json(p.AskResult, raw, "flower/ask result")
        except p.ProtocolError as exc:
            self.server.client.log(
                f"flower: ignoring a malformed answer to {params.id}: {exc}", types.MessageType.Warning
            )
            return None

    def _withdraw(self, msg_id: str, request: asyncio.Future[Any]) -> None:
        # forget the id first: a late reply must find no future (answering a cancelled one raises)
        protocol = self.server.protocol
        protocol._request_futures.pop(msg_id, None)
        request.cancel()
        if not protocol._shutdown:
            try:
                protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            except Exception:
                log.debug("could not cancel flower/ask", exc_info=True)
