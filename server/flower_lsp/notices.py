"""Notices as window/showMessage: the editor pops them up whether or not the Flower view is open.

Which events are notices is the engine's decision (flower.core.notices), the same one the
terminal and `--notify` follow; this part only shows them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from flower.core.events import Event
from flower.core.notices import NoticeKind, Notices

from .host import Feature

if TYPE_CHECKING:
    from flower.core.notices import Notice

    from .host import FlowerServer
    from .run import Run, RunEnded

_TYPES = {
    NoticeKind.ASKED: types.MessageType.Info,
    NoticeKind.FINISHED: types.MessageType.Info,
    NoticeKind.LIMIT_WAIT: types.MessageType.Warning,
    NoticeKind.STOPPED: types.MessageType.Warning,
    NoticeKind.BUDGET: types.MessageType.Warning,
}


class NoticeMessages(Feature):
    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self._runs: dict[Run, Notices] = {}

    async def on_run_start(self, run: Run) -> None:
        self._runs[run] = Notices(str(run.folder.path))

    def on_event(self, run: Run, event: Event) -> None:
        notices = self._runs.get(run)
        notice = notices.of(event) if notices is not None else None
        if notice is None:
            return
        can = self.server.client.can
        if notice.kind is NoticeKind.ASKED and not can.flower.ask and can.show_message_request:
            return  # the question itself pops up as window/showMessageRequest: once is enough
        self._show(notice)

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        notices = self._runs.pop(run, None)
        if notices is None or run.stop_reason:
            return  # stopped from the editor: the person who did it is there
        notice = notices.ended(ended.phase == "finished", ended.text, budget=ended.phase == "budget")
        self._show(notice)

    def _show(self, notice: Notice) -> None:
        self.server.client.show(notice.line(), _TYPES[notice.kind])
