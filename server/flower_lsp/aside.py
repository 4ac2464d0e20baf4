"""Side questions from the editor (flower.aside): the oracle answers a question about a folder's
run, shown that run's recent events; the answer is the command's result, so the client shows it
where the person asked. The run is neither interrupted nor delayed, and its books never see it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from flower.base.i18n import _
from flower.core.aside import EventWindow
from flower.core.display import first_line

from . import protocol as p
from . import wire
from .common import invalid_params, parse_args
from .host import Feature, FlowerServer

if TYPE_CHECKING:
    from flower.core.events import Event

    from .run import Run


class Asides(Feature):
    """The last events of each folder's run (kept after it ends, until the next one starts) and
    the command that asks the oracle about them."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self.windows: dict[str, EventWindow] = {}

    def register(self) -> None:
        @self.server.command(p.ASIDE)
        async def flower_aside(ls: FlowerServer, *args: object) -> object:
            return await self._aside_command(args)

    async def on_run_start(self, run: Run) -> None:
        self.windows[run.folder.uri] = EventWindow()

    def on_event(self, run: Run, event: Event) -> None:
        self.windows.setdefault(run.folder.uri, EventWindow()).add(event)

    async def _aside_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.AsideArgs, p.ASIDE, args)
        question = a.question.strip()
        if not question:
            raise invalid_params(wire.ProtocolError(f"{p.ASIDE}: 'question' must not be empty"))
        folder = self.server.folder_arg(a.folder)
        window = self.windows.get(folder.uri)
        answer = await self.server.engine.aside(
            question, self.server.settings_for(folder), recent=window.lines() if window else []
        )
        client = self.server.client
        if not answer.ok:
            failed = _("旁路问答失败:{why}").format(why=first_line(answer.error, 200))
            if not client.can.flower.results:
                client.show(failed, types.MessageType.Warning)
            return wire.to_json(p.AsideResult(False, failed))
        line = _("旁路(${cost:.4f},没有打扰正在跑的运行):{answer}").format(
            cost=answer.cost_usd, answer=first_line(answer.text, 200)
        )
        if not client.can.flower.results:
            # a client that shows no results: the answer where it shows messages, whole in the log
            client.show(line)
            client.log(_("# 旁路") + f"\n{answer.text}")
        return wire.to_json(p.AsideResult(True, line, answer=answer.text, cost_usd=answer.cost_usd))
