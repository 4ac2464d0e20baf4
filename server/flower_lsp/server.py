"""The language server assembled: every feature registered in the order its hooks run, and the
LSP lifecycle (initialize options, initialized, shutdown) routed to them."""

from __future__ import annotations

import asyncio
import logging
import threading

from lsprotocol import types

from flower.base.i18n import _, language_for_client, set_language

from .aside import Asides
from .banner import Banner
from .context import ContextMeter
from .diagnostics import VerdictDiagnostics
from .documents import Documents
from .engine import Engine
from .events import EventLog
from .fleet import Fleets
from .fork import Forks
from .history import RunHistory
from .host import Feature, FlowerServer
from .hover import EvidenceHover
from .negotiation import Negotiated
from .notices import NoticeMessages
from .progress import Progress
from .protocol import EXPERIMENTAL_KEY, InitOptions
from .questions import Questions
from .rewind import Rewinds
from .runs import Runs
from .settings import Settings, read_options
from .state import State
from .wire import ProtocolError

log = logging.getLogger(__name__)

# The order of a run's start hooks; its end hooks run backwards: the progress bar opens first and
# closes last, the log says "started" before the first question and its last line before the bar closes.
FEATURES: tuple[type[Feature], ...] = (
    Progress,
    Banner,
    EventLog,
    NoticeMessages,
    Questions,
    VerdictDiagnostics,
    EvidenceHover,
    ContextMeter,
    State,
    Documents,
    Asides,
    Rewinds,
    Forks,
    RunHistory,
    Fleets,
    Runs,
    Settings,
)


def build_server(engine: Engine | None = None) -> FlowerServer:
    server = FlowerServer(engine)
    for feature in FEATURES:
        server.add(feature(server))

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: FlowerServer, params: types.InitializeParams) -> None:
        # first: every text this server says from here on is in the client's language
        set_language(language_for_client(params.locale))
        ls.client.loop = asyncio.get_running_loop()
        ls.client.can = Negotiated.of(params.capabilities)
        if ls.client.can.ignored:
            unknown = ", ".join(ls.client.can.ignored)
            ls.client.log(f"flower: ignoring capabilities.experimental.{EXPERIMENTAL_KEY} {unknown}")
        try:
            ls.options = read_options(params.initialization_options, "initializationOptions")
        except ProtocolError as exc:
            ls.options = InitOptions()
            ls.client.show(
                _("flower:initializationOptions 不生效({error})").format(error=exc),
                types.MessageType.Warning,
            )

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: FlowerServer, params: types.InitializedParams) -> None:
        # the engine's imports are slow: load them now, off the loop, not on the first command
        threading.Thread(target=_warm, args=(ls,), name="flower-warm", daemon=True).start()
        await ls.initialized()

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: FlowerServer, params: None) -> None:
        await ls.close()

    return server


def _warm(server: FlowerServer) -> None:
    try:
        server.engine.warm()
    except Exception:
        log.warning("could not preload the engine", exc_info=True)
