"""The clients the server is tested with, as their initialize capabilities say who they are."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from lsprotocol import types
from pytest_lsp import client_capabilities

from flower_lsp import protocol as p

# what the VS Code extension declares (src/server.ts): every flower extension but `offer`, which it
# leaves to the server's own message request; the other clients' case is in test_fallbacks.py
VSCODE_EXTENSIONS = dict.fromkeys(("ask", "banner", "context", "event", "results", "history", "fleet"), True)


def vscode_capabilities() -> types.ClientCapabilities:
    """VS Code's capabilities as the extension sends them: flower's extensions under experimental."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {p.EXPERIMENTAL_KEY: dict(VSCODE_EXTENSIONS)}
    return capabilities


class HeldOpen:
    """A prompt the person leaves open: it answers nothing, and notes when it is shown and when the
    server withdraws it ($/cancelRequest). Use as a session's answer_ask or answer_offer."""

    def __init__(self) -> None:
        self.shown = asyncio.Event()
        self.withdrawn = asyncio.Event()

    def __call__(self, params: Any) -> Awaitable[Any]:
        return self._wait()

    async def _wait(self) -> Any:
        self.shown.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.withdrawn.set()
            raise
