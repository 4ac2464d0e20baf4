"""The language server under test, driven by pytest-lsp's client over stdio.

`lsp_server` starts `python -m flower_lsp` as a real subprocess. With `script=` it runs the
scripted stand-in engine (tests/server/fake_engine.py, no CLI); with `sim=` it runs the real
engine and the real CLI against flower.sim, the sim's isolated environment as the server's
environment. Every notification the server sends is recorded on the returned Session, and
`until()` polls for a condition, so no waiter ever has to be registered before the trigger.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from clients import vscode_capabilities
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features
from server_process import SERVER, fake_env, server_env

from flower.sim.env import isolated_env

TIMEOUT = 20.0


class Session:
    """One client connected to one server process, plus everything the server told it."""

    def __init__(self, client: LanguageClient, workspace: Path, run_dir: Path) -> None:
        self.client = client
        self.workspace = workspace
        self.run_dir = run_dir
        self.folder = workspace.as_uri()
        self.banners: list[dict[str, Any]] = []
        self.contexts: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.asks: list[dict[str, Any]] = []
        self.offers: list[types.ShowMessageRequestParams] = []
        self.published: list[tuple[str, list[types.Diagnostic]]] = []  # every publishDiagnostics, in order
        # how the client answers flower/ask and window/showMessageRequest; tests replace these
        self.answer_ask: Callable[[dict[str, Any]], Awaitable[Any]] = _never
        self.answer_offer: Callable[[types.ShowMessageRequestParams], Any] = lambda params: None

    # -- talking to the server -------------------------------------------------------------------
    async def command(self, name: str, *args: Any, timeout: float = TIMEOUT) -> Any:  # noqa: ASYNC109 (a test's own deadline, as in wait_for)
        params = types.ExecuteCommandParams(command=name, arguments=list(args) if args else None)
        return await asyncio.wait_for(self.client.workspace_execute_command_async(params), timeout)

    async def request(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:  # noqa: ASYNC109 (a test's own deadline, as in wait_for)
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), timeout)

    def record_all(self) -> list[Any]:
        """Every message the server sends from now on, as it arrives (notifications, log and show
        messages, requests, responses)."""
        sent: list[Any] = []
        handle = self.client.protocol.handle_message

        def record(message: Any) -> None:
            sent.append(message)
            handle(message)

        self.client.protocol.handle_message = record  # type: ignore[method-assign]  # a tap on one instance
        return sent

    async def state(self) -> dict[str, Any]:
        return await self.request("flower/state", {})

    async def until(self, predicate: Callable[[], Any], timeout: float = TIMEOUT, what: str = "") -> Any:  # noqa: ASYNC109 (a test's own deadline, as in wait_for)
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what or predicate}")
            await asyncio.sleep(0.02)

    # -- what the server said ----------------------------------------------------------------------
    def events_of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]

    def run_phase(self) -> str | None:
        runs = self.events_of("run")
        return runs[-1]["payload"]["phase"] if runs else None

    def diagnostics(self, path: Path) -> list[types.Diagnostic]:
        """The diagnostics now shown on `path` (keyed by Path.as_uri(), as the server builds them)."""
        return list(self.client.diagnostics.get(path.as_uri(), []))

    def history(self, path: Path) -> list[list[types.Diagnostic]]:
        return [diags for uri, diags in self.published if uri == path.as_uri()]

    def progress(self) -> list[Any]:
        return [value for values in self.client.progress_reports.values() for value in values]


async def _never(params: dict[str, Any]) -> Any:
    await asyncio.Event().wait()


def _client(session_box: list[Session]) -> LanguageClient:
    client = LanguageClient(converter_factory=get_converter)  # custom payloads stay dicts
    features = dict(DEFAULT_CLIENT_FEATURES)
    keep_latest = features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    def on_diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        keep_latest(client, params)
        session_box[0].published.append((params.uri, list(params.diagnostics)))

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_diagnostics
    register_lsp_features(client, features)

    # lsprotocol reads any item with a "command" key as a Command, but a CodeAction carries a
    # Command object there; a real client tells them apart by the type, as LSP says
    converter = client.protocol._converter

    def command_or_action(obj: Any, _: Any) -> Any:
        is_command = isinstance(obj.get("command"), str)
        return converter.structure(obj, types.Command if is_command else types.CodeAction)

    converter.register_structure_hook(types.Command | types.CodeAction, command_or_action)

    def record(attr: str) -> Callable[[Any], None]:
        def handler(params: Any) -> None:
            getattr(session_box[0], attr).append(params)

        return handler

    client.feature("flower/banner")(record("banners"))
    client.feature("flower/context")(record("contexts"))
    client.feature("flower/event")(record("events"))

    # registered before initialize: otherwise the server's requests get MethodNotFound
    @client.feature("flower/ask")
    async def on_ask(params: Any) -> Any:
        session_box[0].asks.append(params)
        return await session_box[0].answer_ask(params)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def on_offer(params: types.ShowMessageRequestParams) -> Any:
        session_box[0].offers.append(params)
        reply = session_box[0].answer_offer(params)
        return await reply if inspect.isawaitable(reply) else reply

    return client


@asynccontextmanager
async def open_session(
    workspace: Path,
    env: dict[str, str],
    *,
    options: dict[str, Any] | None = None,
    capabilities: types.ClientCapabilities | None = None,
    initialize: bool = True,
    locale: str | None = "en",
) -> AsyncIterator[Session]:
    """A client on `workspace`; `locale` is the editor's display language it sends (the suite's
    editor speaks English; docs/i18n.md)."""
    box: list[Session] = []
    config = ClientServerConfig(server_command=SERVER, client_factory=lambda: _client(box), server_env=env)
    client = await config.start()
    assert isinstance(client, LanguageClient)  # what client_factory makes
    session = Session(client, workspace, workspace / "runs")
    box.append(session)
    try:
        if initialize:
            await asyncio.wait_for(
                client.initialize_session(
                    types.InitializeParams(
                        capabilities=capabilities or vscode_capabilities(),
                        root_uri=workspace.as_uri(),
                        workspace_folders=[
                            types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)
                        ],
                        initialization_options=options,
                        locale=locale,
                    )
                ),
                TIMEOUT,
            )
        yield session
    finally:
        try:
            if initialize and client._server is not None and client._server.returncode is None:
                await asyncio.wait_for(client.shutdown_session(), 60)
        finally:
            await client.stop()


@pytest.fixture
def script(tmp_path: Path) -> Callable[[list[dict[str, Any]]], Path]:
    """Write the fake engine's script; call again to change what the next run does."""
    path = tmp_path / "fake-script.json"

    def write(actions: list[dict[str, Any]]) -> Path:
        path.write_text(json.dumps(actions, ensure_ascii=False), encoding="utf-8")
        return path

    write([])
    return write


@pytest.fixture
def fake_lsp(workspace: Path, script: Callable[..., Path], tmp_path: Path):
    """`async with fake_lsp(options=...) as s:` a server running the scripted engine."""

    def start(**kw: Any) -> Any:
        return open_session(workspace, fake_env(tmp_path / "fake-script.json"), **kw)

    return start


@pytest.fixture
def sim_lsp(workspace: Path, claude_root: Path):
    """`async with sim_lsp(sim, options=...) as s:` a server running the real engine against the sim;
    `env={...}` sets more of the server's environment, over the sim's."""

    def start(sim: Any, *, env: dict[str, str] | None = None, **kw: Any) -> Any:
        return open_session(
            workspace, server_env(**{**isolated_env(sim.base_url, claude_root), **(env or {})}), **kw
        )

    return start


@pytest.fixture
def english() -> Any:
    """This process speaks English, as the server does for the suite's English-speaking client."""
    from flower.base.i18n import set_language

    set_language("en")
    yield
    set_language("zh")
