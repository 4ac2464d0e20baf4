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

from . import protocol as p

if TYPE_CHECKING:
    from flower.core.events import Event

    from .runs import Run
    from .server import FlowerServer

log = logging.getLogger(__name__)

DISMISSED = "dismissed in the editor"


def params_of(run: Run, ask: Any) -> p.AskParams:
    timeout = run.channel.timeout_s
    return p.AskParams(
        folder=run.folder.uri,
        id=ask.id,
        question=ask.question,
        options=list(ask.options),
        free_text=True,  # HumanChannel always accepts an answer of one's own
        timeout_s=None if timeout is None else float(timeout),
    )


async def ask_client(
    server: FlowerServer, params: p.AskParams, *, settled: asyncio.Future[None] | None = None
) -> p.AskResult | None:
    """Send flower/ask and wait for the reply, the ask's timeout, or `settled`; None = no answer."""
    msg_id = f"flower-ask-{params.id}-{uuid.uuid4().hex[:8]}"
    try:
        request = server.protocol.send_request_async(p.ASK, p.to_json(params), msg_id=msg_id)
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
        _withdraw(server, msg_id, request)
        raise
    if request not in done:
        _withdraw(server, msg_id, request)  # the engine is not waiting any more
        return None
    try:
        raw = request.result()
    except Exception as exc:
        log.info("the client answered flower/ask %s with an error: %s", params.id, exc)
        return None
    try:
        return p.from_json(p.AskResult, raw, "flower/ask result")
    except p.ProtocolError as exc:
        server.log_line(
            f"flower: ignoring a malformed answer to {params.id}: {exc}", types.MessageType.Warning
        )
        return None


def _withdraw(server: FlowerServer, msg_id: str, request: asyncio.Future[Any]) -> None:
    # forget the id first: a late reply must find no future (answering a cancelled one raises)
    server.protocol._request_futures.pop(msg_id, None)
    request.cancel()
    if not server.protocol._shutdown:
        try:
            server.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        except Exception:
            log.debug("could not cancel flower/ask", exc_info=True)


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


async def handle(server: FlowerServer, run: Run, desk: Desk, ask: Any) -> None:
    settled = desk.open(ask.id)
    try:
        reply = await ask_client(server, params_of(run, ask), settled=settled)
    finally:
        desk.close(ask.id)
    if reply is None:
        return
    if reply.dismissed:
        run.channel.decline(ask.id, DISMISSED)
    elif reply.answer is not None:
        run.channel.answer(ask.id, reply.answer)  # a blank answer is a skip, as the channel defines


async def serve_questions(server: FlowerServer, run: Run) -> None:
    """Hand every ask of the run's channel to the client until the run ends."""
    desk = Desk()
    run.desk = desk  # type: ignore[attr-defined]
    tasks: set[asyncio.Task[None]] = set()
    try:
        while True:
            ask = await run.channel.next_ask()
            if ask is None:
                continue
            task = asyncio.ensure_future(handle(server, run, desk, ask))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        for task in tasks:
            task.cancel()


def register(server: FlowerServer) -> None:
    def on_event(run: Run, event: Event) -> None:
        data = event.payload
        if event.kind != "ask" or data.get("kind") == "mail" or data.get("state", "asked") == "asked":
            return
        desk = getattr(run, "desk", None)
        if desk is not None:
            desk.close(str(data.get("id")))

    server.event_listeners.append(on_event)
