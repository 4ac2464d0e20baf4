"""Notices as window/showMessage: the editor pops them up whether or not the Flower view is open;
and to the user's notify command (`flower.notify`, else the server's $FLOWER_NOTIFY), run by the
CLI's own runner (flower.core.notify): no shell, no credential in its environment, bounded.

Which events are notices is the engine's decision (flower.core.notices), the same one the
terminal and `--notify` follow; this part only shows and sends them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from flower.core.events import Event
from flower.core.notices import NoticeKind, Notices
from flower.core.notify import Notifier, notifier_for

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
        self._commands: dict[Run, Notifier] = {}

    async def on_run_start(self, run: Run) -> None:
        self._runs[run] = Notices(str(run.folder.path))
        setting = run.settings.notify if run.settings is not None else None
        notifier = notifier_for(setting, warn=self._warn(run))
        if notifier.argv is not None:
            self._commands[run] = notifier

    def _warn(self, run: Run) -> Callable[[str], None]:
        def warn(line: str) -> None:  # from the command's own thread: the client is thread-safe
            self.server.client.log(f"[{run.folder.name}] {line.strip()}", types.MessageType.Warning)

        return warn

    def on_event(self, run: Run, event: Event) -> None:
        notices = self._runs.get(run)
        notice = notices.of(event) if notices is not None else None
        if notice is None:
            return
        self._send(run, notice)
        can = self.server.client.can
        if notice.kind is NoticeKind.ASKED and not can.flower.ask and can.show_message_request:
            return  # the question itself pops up as window/showMessageRequest: once is enough
        self._show(notice)

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        notices = self._runs.pop(run, None)
        command = self._commands.get(run)
        if notices is None or run.stop_reason:
            self._commands.pop(run, None)
            return  # stopped from the editor: the person who did it is there
        notice = notices.ended(ended.phase == "finished", ended.text, budget=ended.phase == "budget")
        self._send(run, notice)
        self._commands.pop(run, None)
        if command is not None:
            self.server.spawn(asyncio.to_thread(command.close))  # each command bounded in time
        self._show(notice)

    async def on_shutdown(self) -> None:
        for command in list(self._commands.values()):
            await asyncio.to_thread(command.close)

    def _send(self, run: Run, notice: Notice) -> None:
        command = self._commands.get(run)
        if command is not None:
            command.send(notice)

    def _show(self, notice: Notice) -> None:
        self.server.client.show(notice.line(), _TYPES[notice.kind])
