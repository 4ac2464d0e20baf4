"""What every part of the server shares, and nothing else: the workspace folders, protocol errors
as JSON-RPC errors, and the one guarded way to reach the client from any thread, with what the
client said it can take."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVarTuple

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flower.base.secrets import redact, redact_value

from . import protocol as p
from . import wire
from .negotiation import Negotiated
from .protocol import Payload

Args = TypeVarTuple("Args")

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


def workspace_folders(lsp: LanguageServer, run_dir: Callable[[str], str]) -> list[Folder]:
    """The client's folders (or its root), each with its run directory (`run_dir(folder_uri)`);
    none before initialize."""
    try:
        workspace = lsp.workspace
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
        runs = Path(run_dir(uri)).expanduser()
        out.append(Folder(uri, path, runs if runs.is_absolute() else path / runs))
    return out


def find_folder(folders: list[Folder], ref: str | None) -> Folder:
    """The folder a request names (URI or path), by default the first; ProtocolError if unknown."""
    if not folders:
        raise wire.ProtocolError("no workspace folder is open")
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
    raise wire.ProtocolError(f"unknown workspace folder {ref!r} (open: {', '.join(f.uri for f in folders)})")


def options_of(options: p.InitOptions, folder_uri: str) -> p.InitOptions:
    """The options that hold in one folder: its own entry under `folders` (named by the same URI,
    or a URI of the same path), else the top-level ones."""
    own = options.folders.get(folder_uri)
    if own is not None:
        return own
    wanted = _path_of(folder_uri)
    for uri, own in options.folders.items():
        if wanted is not None and _path_of(uri) == wanted:
            return own
    return options


def _path_of(uri: str) -> Path | None:
    fs = to_fs_path(uri) if "://" in uri else None
    return Path(fs).expanduser().resolve() if fs else None


def invalid_params(exc: wire.ProtocolError) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=str(exc))


def parse_args(cls: type[Payload], command: str, args: tuple[object, ...]) -> Payload:
    """A command's argument as `cls`; a mismatch is the client's error (InvalidParams)."""
    try:
        return wire.command_args(cls, command, args)
    except wire.ProtocolError as exc:
        raise invalid_params(exc) from exc


def parse_params(cls: type[Payload], value: object, method: str) -> Payload:
    """A request's params as `cls`; a mismatch is the client's error (InvalidParams)."""
    try:
        return wire.from_json(cls, value, method)
    except wire.ProtocolError as exc:
        raise invalid_params(exc) from exc


class Client:
    """The client as every part reaches it: on the server's loop (the engine calls back from
    other threads), never after shutdown, and never raising: the client may be gone, the work
    must go on."""

    def __init__(self, lsp: LanguageServer) -> None:
        self.lsp = lsp
        self.loop: asyncio.AbstractEventLoop | None = None  # set on initialize
        self.can = Negotiated()  # what the client declared, set on initialize

    def call_soon(self, fn: Callable[[*Args], object], *args: *Args) -> None:
        """Run fn on the server's loop: at once when already there, else handed over."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            if _running_loop() is loop:
                fn(*args)
            else:
                loop.call_soon_threadsafe(fn, *args)
        except Exception:
            log.exception("callback on the server's loop failed")

    def guarded(self, what: str, fn: Callable[[*Args], object], *args: *Args) -> None:
        """The one guarded send: fn(*args) on the loop, skipped after shutdown, failures logged."""
        self.call_soon(self._guarded, what, fn, *args)

    def _guarded(self, what: str, fn: Callable[[*Args], object], *args: *Args) -> None:
        if self.shut_down:
            return
        try:
            fn(*args)
        except Exception:
            log.debug("could not %s", what, exc_info=True)

    @property
    def shut_down(self) -> bool:
        return bool(self.lsp.protocol._shutdown)

    # Everything below leaves the server through these three: no credential goes with it.

    def send(self, method: str, params: object) -> None:
        """A notification (a payload dataclass or an lsprotocol object)."""
        self.guarded(f"notify {method}", self.lsp.protocol.notify, method, redact_value(wire.to_json(params)))

    def log(self, text: str, kind: types.MessageType = types.MessageType.Log) -> None:
        message = types.LogMessageParams(kind, redact(text))
        self.guarded("log to the client", self.lsp.window_log_message, message)

    def show(self, text: str, kind: types.MessageType = types.MessageType.Info) -> None:
        message = types.ShowMessageParams(kind, redact(text))
        self.guarded("show a message", self.lsp.window_show_message, message)

    def reply(self, result: p.CommandResult) -> object:
        """A command's result for the wire. A client that does not show results itself is shown a
        refusal here, unless the server has shown it already (`Reported`)."""
        if not result.ok and not self.can.flower.results and not isinstance(result, Reported):
            self.show(f"flower: {result.message}", types.MessageType.Warning)
        return wire.to_json(result)


class Reported(p.CommandResult):
    """A command result the server has already put in front of the person (window/showMessage)."""


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
