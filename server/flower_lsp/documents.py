"""The run's documents: how their URIs are built (one way only: diagnostics are keyed by the exact
string) and flower.openDocument, which opens 需求.md, 目标.md or the latest handoff document with
window/showDocument, or, to a client that cannot show documents, says where the document is."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from flower.base.i18n import _

from . import protocol as p
from .common import Folder, parse_args
from .host import Feature, FlowerServer
from .runs import Runs

log = logging.getLogger(__name__)

HANDOFF_GLOB = "交接-*.md"


def uri_of(path: str | Path) -> str:
    """The one way this server turns a path into a URI (目标.md -> .../%E7%9B%AE%E6%A0%87.md)."""
    return Path(path).expanduser().resolve().as_uri()


def same_document(uri: str, path: str | Path) -> bool:
    """Whether a client's URI names `path`, whatever percent-encoding the client chose."""
    if uri == uri_of(path):
        return True
    fs = to_fs_path(uri)
    if not fs:
        return False
    return Path(fs).resolve() == Path(path).expanduser().resolve()


def latest_handoff(notes: Path, remembered: str | None) -> Path | None:
    if remembered and Path(remembered).is_file():
        return Path(remembered)
    try:
        found = [f for f in notes.glob(HANDOFF_GLOB) if f.is_file()]
    except OSError:
        return None
    return max(found, key=lambda f: f.stat().st_mtime) if found else None


class Documents(Feature):
    """flower.openDocument: the run's documents, opened in the editor."""

    def register(self) -> None:
        @self.server.command(p.OPEN_DOCUMENT)
        async def flower_open_document(ls: FlowerServer, *args: object) -> object:
            return await self._open_command(args)

    async def locate(self, folder: Folder, which: p.DocumentName) -> Path | None:
        wake = await asyncio.to_thread(self.server.engine.wake_state, self.server.settings_for(folder))
        if which == "brief":
            return wake["brief"]
        if which == "goal":
            return wake["goal"]
        remembered = self.server.get(Runs).memory_of(folder).handoff
        return latest_handoff(wake["brief"].parent, remembered)

    async def open(self, folder: Folder, which: p.DocumentName) -> p.CommandResult:
        label = {"brief": "需求.md", "goal": "目标.md", "handoff": _("交接书")}[which]
        try:
            path = await self.locate(folder, which)
        except Exception as exc:
            return p.CommandResult(
                False,
                _("在 {folder} 里找不到 {label}:{error}").format(label=label, folder=folder.name, error=exc),
            )
        if path is None or not path.is_file():
            return p.CommandResult(
                False, _("{folder} 里还没有 {label}。").format(label=label, folder=folder.name)
            )
        uri = uri_of(path)
        if not self.server.client.can.show_document:
            message = _("这个编辑器不能替服务器打开文档:{label} 在 {path}").format(label=label, path=path)
            self.server.client.log(f"flower: {message}", types.MessageType.Info)
            return p.CommandResult(False, message, uri=uri)
        try:
            async with asyncio.timeout(30):
                shown = await self.server.window_show_document_async(
                    types.ShowDocumentParams(uri=uri, take_focus=True)
                )
        except Exception as exc:
            log.info("showDocument failed", exc_info=True)
            return p.CommandResult(
                False, _("编辑器打不开 {path}:{error}").format(path=path, error=exc), uri=uri
            )
        ok = shown.success
        done = _("打开了 {path}。") if ok else _("编辑器没有打开 {path}。")
        return p.CommandResult(ok, done.format(path=path), uri=uri)

    async def _open_command(self, args: tuple[object, ...]) -> object:
        a = parse_args(p.OpenDocumentArgs, p.OPEN_DOCUMENT, args)
        return self.server.client.reply(await self.open(self.server.folder_arg(a.folder), a.which))
