"""The run's documents: how their URIs are built (one way only: diagnostics are keyed by the exact
string) and flower.openDocument, which opens 需求.md, 目标.md or the latest handoff document with
window/showDocument."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from . import protocol as p

if TYPE_CHECKING:
    from .server import FlowerServer, Folder

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
    return bool(fs) and Path(fs).resolve() == Path(path).expanduser().resolve()


def latest_handoff(notes: Path, remembered: str | None) -> Path | None:
    if remembered and Path(remembered).is_file():
        return Path(remembered)
    try:
        found = [f for f in notes.glob(HANDOFF_GLOB) if f.is_file()]
    except OSError:
        return None
    return max(found, key=lambda f: f.stat().st_mtime) if found else None


async def locate(server: FlowerServer, folder: Folder, which: str) -> Path | None:
    wake: dict[str, Any] = await asyncio.to_thread(server.engine.wake_state, folder.path, folder.run_dir)
    brief = Path(wake["brief"])
    if which == "brief":
        return brief
    if which == "goal":
        return Path(wake["goal"])
    return latest_handoff(brief.parent, server.runs.memory_of(folder).handoff)


async def open_document(server: FlowerServer, folder: Folder, which: str) -> p.CommandResult:
    label = {"brief": "需求.md", "goal": "目标.md", "handoff": "a handoff document"}[which]
    try:
        path = await locate(server, folder, which)
    except Exception as exc:
        return p.CommandResult(False, f"Cannot find {label} in {folder.name}: {exc}")
    if path is None or not path.is_file():
        return p.CommandResult(False, f"There is no {label} in {folder.name} yet.")
    uri = uri_of(path)
    try:
        shown = await asyncio.wait_for(
            server.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True)), 30
        )
    except Exception as exc:
        log.info("showDocument failed", exc_info=True)
        return p.CommandResult(False, f"The editor could not open {path}: {exc}", uri=uri)
    ok = bool(getattr(shown, "success", False))
    return p.CommandResult(ok, f"Opened {path}." if ok else f"The editor did not open {path}.", uri=uri)


def register(server: FlowerServer) -> None:
    from .server import invalid_params

    @server.command(p.OPEN_DOCUMENT)
    async def cmd_open(ls, *args: Any) -> dict[str, Any]:
        try:
            a = p.command_args(p.OpenDocumentArgs, p.OPEN_DOCUMENT, args)
            folder = ls.folder(a.folder)
        except p.ProtocolError as exc:
            raise invalid_params(exc) from exc
        return p.to_json(await open_document(ls, folder, a.which))
