"""The resume banner (flower/banner): the one line the seeds require at start-up, e.g.
`<- 在 ~/proj 接上上次  需求已确认 · 目标 7 条 · 干活上下文 71.4K · 第 3 次唤醒`. Sent for each
folder that can be continued once the client is initialized, and whenever a run wakes."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from . import protocol as p

if TYPE_CHECKING:
    from .server import FlowerServer, Folder

log = logging.getLogger(__name__)


def announce(server: FlowerServer, folder: Folder, text: str) -> None:
    server.send(p.BANNER, p.BannerParams(folder=folder.uri, text=text))


async def announce_all(server: FlowerServer) -> None:
    for folder in server.folders():
        try:
            text = await asyncio.to_thread(server.engine.banner, folder.path, folder.run_dir)
        except Exception:
            log.warning("no banner for %s", folder.path, exc_info=True)
            continue
        if text:
            announce(server, folder, text)


def register(server: FlowerServer) -> None:
    """Nothing to register: the server calls announce_all on initialized, runs call announce."""
