"""The resume banner (flower/banner): the one line the seeds require at start-up, e.g.
`<- 在 ~/proj 接上上次  需求已确认 · 目标 7 条 · 干活上下文 71.4K · 第 3 次唤醒`. Sent for each
folder that can be continued once the client is initialized, and whenever a run wakes; as
window/showMessage to a client that does not declare the banner."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from . import protocol as p
from .common import Folder
from .host import Feature

if TYPE_CHECKING:
    from flower.core.stops import StopKind
    from flower.workflow.starter import WakeState

    from .run import Run

log = logging.getLogger(__name__)


class Banner(Feature):
    async def on_initialized(self) -> None:
        for folder in self.server.folders():
            settings = self.server.settings_for(folder)
            try:
                text = await asyncio.to_thread(self.server.engine.banner, settings)
                stopped = stop_kind(await asyncio.to_thread(self.server.engine.wake_state, settings))
            except Exception:
                log.warning("no banner for %s", folder.path, exc_info=True)
                continue
            if text:
                self.announce(folder, text, stopped)

    async def on_run_start(self, run: Run) -> None:
        if run.banner:
            self.announce(run.folder, run.banner, run.stopped)

    def announce(self, folder: Folder, text: str, stopped: StopKind | None = None) -> None:
        client = self.server.client
        if client.can.flower.banner:
            client.send(p.BANNER, p.BannerParams(folder=folder.uri, text=text, stopped=stopped))
        else:
            client.show(text)


def stop_kind(wake: WakeState) -> StopKind | None:
    """How the folder's last wake stopped short (stopped: budget / no progress), or None."""
    stop = wake.get("stopped")
    return stop.kind if stop is not None else None
