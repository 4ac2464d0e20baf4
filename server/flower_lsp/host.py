"""The server object and what a part of it is.

A `Feature` is one part of the server (runs, the meter, diagnostics, ...): it registers its LSP
handlers in `register()` and follows a run's life through four hooks, all called on the server's
loop. The server holds one instance per feature class; a feature that needs another asks for it
by type (`self.server.get(Runs)`). Hooks run in registration order, the ending ones in reverse
(last started, first ended), and a failing hook is logged without stopping the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, TypeVar

from lsprotocol.converters import get_converter
from pygls.lsp.server import LanguageServer

from . import __version__, wire
from . import protocol as p
from .common import Client, Folder, find_folder, invalid_params, options_of, workspace_folders
from .engine import Engine, load_engine
from .transport import SturdyProtocol

if TYPE_CHECKING:
    from flower.core.events import Event
    from flower.core.run_settings import RunSettings

    from .run import Run, RunEnded

log = logging.getLogger(__name__)

F = TypeVar("F", bound="Feature")


class Feature:
    """One part of the server. Override what the part needs; the defaults do nothing."""

    def __init__(self, server: FlowerServer) -> None:
        self.server = server

    def register(self) -> None:
        """Add this part's LSP handlers and commands (`self.server.feature`, `.command`)."""

    async def on_initialized(self) -> None:
        """The client is ready for notifications."""

    async def on_run_start(self, run: Run) -> None:
        """A run begins; its workflow starts once every feature has returned."""

    def on_event(self, run: Run, event: Event) -> None:
        """One engine event of the run, after the run has tracked it."""

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        """The run is over (finished, stopped or failed); nothing may be deferred any more."""

    async def on_shutdown(self) -> None:
        """The client asked the server to shut down."""


class FlowerServer(LanguageServer):
    def __init__(self, engine: Engine | None = None) -> None:
        # get_converter keeps custom payloads as plain dicts (the default renames non-identifier keys)
        # SturdyProtocol: a malformed frame or message gets an answer, never a deaf server
        super().__init__(
            "flower-lsp", __version__, converter_factory=get_converter, protocol_cls=SturdyProtocol
        )
        self.engine: Engine = engine if engine is not None else load_engine()
        self.options = p.InitOptions()
        self.client = Client(self)
        self._features: dict[type[Feature], Feature] = {}
        self._background: set[asyncio.Task[None]] = set()

    # -- the parts -------------------------------------------------------------------------------
    def add(self, feature: F) -> F:
        if type(feature) in self._features:
            raise ValueError(f"{type(feature).__name__} is registered already")
        self._features[type(feature)] = feature
        feature.register()
        return feature

    def get(self, cls: type[F]) -> F:
        """The registered feature of this class."""
        feature = self._features.get(cls)
        if not isinstance(feature, cls):
            raise LookupError(f"no {cls.__name__} is registered with the server")
        return feature

    @property
    def features(self) -> list[Feature]:
        return list(self._features.values())

    # -- folders -----------------------------------------------------------------------------
    def folders(self) -> list[Folder]:
        return workspace_folders(self, lambda uri: self.options_for(uri).run_dir)

    def options_for(self, folder_uri: str) -> p.InitOptions:
        """The options that hold in one workspace folder (its own, else the top-level ones)."""
        return options_of(self.options, folder_uri)

    def settings_for(self, folder: Folder) -> RunSettings:
        """What a run of `folder` starts with: its options as they are now (a change applies
        to the next run, a run keeps what it started with), typed as `flower go` types its
        arguments."""
        from flower.core.run_settings import RunSettings

        opts = self.options_for(folder.uri)
        return RunSettings(
            workspace=folder.path,
            run_dir=folder.run_dir,
            store=opts.store,
            sandbox=opts.sandbox,
            timeout_s=opts.timeout_s,
            window=opts.window,
            judge_can_run=opts.judge_can_run,
            # 0 is "no ceiling" as a settings UI can only clear a number to 0
            budget_usd=opts.budget_usd if opts.budget_usd and opts.budget_usd > 0 else None,
            round_budget_usd=(
                opts.round_budget_usd if opts.round_budget_usd and opts.round_budget_usd > 0 else None
            ),
            stall_rounds=opts.stall_rounds
            if opts.stall_rounds is not None and opts.stall_rounds >= 0
            else None,
            notify=opts.notify if opts.notify and opts.notify.strip() else None,
        )

    def folder(self, ref: str | None) -> Folder:
        """The folder a request names; ProtocolError if there is none such."""
        return find_folder(self.folders(), ref)

    def folder_arg(self, ref: str | None) -> Folder:
        """The folder a command names; an unknown one is the client's error (InvalidParams)."""
        try:
            return self.folder(ref)
        except wire.ProtocolError as exc:
            raise invalid_params(exc) from exc

    # -- background work ---------------------------------------------------------------------
    def spawn(self, coro: Coroutine[object, object, None]) -> asyncio.Task[None]:
        """A background task with a strong reference, cancelled at shutdown."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_log_failure)
        return task

    # -- the hooks ---------------------------------------------------------------------------
    async def initialized(self) -> None:
        for feature in self.features:
            try:
                await feature.on_initialized()
            except Exception:
                log.exception("%s failed on initialized", type(feature).__name__)

    async def run_started(self, run: Run) -> None:
        for feature in self.features:
            try:
                await feature.on_run_start(run)
            except Exception:
                log.exception("%s failed on a run's start", type(feature).__name__)

    def observe(self, run: Run, event: Event) -> None:
        for feature in self.features:
            try:
                feature.on_event(run, event)
            except Exception:
                log.exception("%s failed on a %s event", type(feature).__name__, type(event).__name__)

    def run_ended(self, run: Run, ended: RunEnded) -> None:
        for feature in reversed(self.features):
            try:
                feature.on_run_end(run, ended)
            except Exception:
                log.exception("%s failed on a run's end", type(feature).__name__)

    async def close(self) -> None:
        for feature in reversed(self.features):
            try:
                await feature.on_shutdown()
            except Exception:
                log.exception("%s failed on shutdown", type(feature).__name__)
        for task in list(self._background):
            task.cancel()


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())
