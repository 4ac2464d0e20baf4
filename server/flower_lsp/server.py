"""The language server object: workspace folders, safe messaging to the client, and the
lifecycle (initialize options, initialized, shutdown). Each feature module registers itself."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import __version__
from .protocol import InitOptions, ProtocolError, from_json, to_json
from .transport import SturdyProtocol

if TYPE_CHECKING:
    from flower.core.events import Event

    from .engine import Engine
    from .runs import Run, Runs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Folder:
    """One workspace folder: the URI the client knows it by, and where its run lives."""

    uri: str
    path: Path
    run_dir: Path

    @property
    def name(self) -> str:
        return self.path.name or str(self.path)


class FlowerServer(LanguageServer):
    def __init__(self, engine: Engine | None = None) -> None:
        # get_converter keeps custom payloads as plain dicts (the default renames non-identifier keys)
        super().__init__(
            "flower-lsp", __version__, converter_factory=get_converter, protocol_cls=SturdyProtocol
        )
        from .engine import load_engine
        from .runs import Runs

        self.engine: Engine = engine if engine is not None else load_engine()
        self.options = InitOptions()
        self.runs: Runs = Runs(self)
        # (run, engine event) -> None; features subscribe here, the run calls them in order
        self.event_listeners: list[Callable[[Run, Event], None]] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # -- folders -----------------------------------------------------------------------------
    def folders(self) -> list[Folder]:
        try:
            workspace = self.workspace
        except RuntimeError:  # not initialized yet
            return []
        uris = [f.uri for f in workspace.folders.values()]
        if not uris and workspace.root_uri:
            uris = [workspace.root_uri]
        out = []
        for uri in uris:
            fs = to_fs_path(uri)
            if not fs:
                continue
            path = Path(fs).expanduser().resolve()
            run_dir = Path(self.options.run_dir).expanduser()
            out.append(Folder(uri, path, run_dir if run_dir.is_absolute() else path / run_dir))
        return out

    def folder(self, ref: str | None) -> Folder:
        """The folder a request names (URI or path), by default the first; ProtocolError if unknown."""
        folders = self.folders()
        if not folders:
            raise ProtocolError("no workspace folder is open")
        if ref is None or ref == "":
            return folders[0]
        for f in folders:
            if f.uri == ref:
                return f
        fs = to_fs_path(ref) if "://" in ref else ref
        if fs:
            wanted = Path(fs).expanduser().resolve()
            for f in folders:
                if f.path == wanted:
                    return f
        raise ProtocolError(f"unknown workspace folder {ref!r} (open: {', '.join(f.uri for f in folders)})")

    # -- talking to the client, from anywhere --------------------------------------------------
    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run fn on the server's loop; the engine may call back from other threads."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            if _running_loop() is loop:
                fn(*args)
            else:
                loop.call_soon_threadsafe(fn, *args)
        except Exception:
            log.exception("callback to the client failed")

    def send(self, method: str, params: Any) -> None:
        """A notification that never raises: the client may be gone, the work must go on."""
        self.call_soon(self._send, method, to_json(params))

    def _send(self, method: str, params: Any) -> None:
        if self.protocol._shutdown:
            return
        try:
            self.protocol.notify(method, params)
        except Exception:
            log.debug("could not notify %s", method, exc_info=True)

    def log_line(self, text: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.call_soon(self._log_line, text, kind)

    def _log_line(self, text: str, kind: types.MessageType) -> None:
        if self.protocol._shutdown:
            return
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=text))
        except Exception:
            log.debug("could not log to the client", exc_info=True)

    def show(self, text: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.call_soon(self._show, text, kind)

    def _show(self, text: str, kind: types.MessageType) -> None:
        if self.protocol._shutdown:
            return
        try:
            self.window_show_message(types.ShowMessageParams(type=kind, message=text))
        except Exception:
            log.debug("could not show a message", exc_info=True)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """A background task with a strong reference, cancelled at shutdown."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_log_failure)
        return task

    def dispatch(self, run: Run, event: Event) -> None:
        for listener in list(self.event_listeners):
            try:
                listener(run, event)
            except Exception:
                log.exception("a feature failed on a %s event", event.kind)

    async def close(self) -> None:
        await self.runs.shutdown()
        for task in list(self._background):
            task.cancel()


def invalid_params(exc: ProtocolError) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=str(exc))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())


def _warm(server: FlowerServer) -> None:
    try:
        server.engine.warm()
    except Exception:
        log.warning("could not preload the engine", exc_info=True)


def build_server(engine: Engine | None = None) -> FlowerServer:
    from . import banner, context, diagnostics, documents, events, questions, runs, state

    server = FlowerServer(engine)

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: "FlowerServer", params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        try:
            ls.options = from_json(InitOptions, params.initialization_options, "initializationOptions")
        except ProtocolError as exc:
            ls.options = InitOptions()
            ls.show(f"flower: ignoring initializationOptions ({exc})", types.MessageType.Warning)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: "FlowerServer", params: types.InitializedParams) -> None:
        # the engine's imports are slow: load them now, off the loop, not on the first command
        threading.Thread(target=_warm, args=(ls,), name="flower-warm", daemon=True).start()
        await banner.announce_all(ls)

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: "FlowerServer", params: None) -> None:
        await ls.close()

    for module in (runs, state, banner, context, diagnostics, questions, events, documents):
        module.register(server)
    return server
