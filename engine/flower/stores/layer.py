"""A store layer: a ``SessionStore`` that wraps another one and passes everything through.

The resume-time layers (``trim.py``, ``prune.py``) are built on this: they change only what
``load()`` hands back and keep their decisions in the wrapped store's ledger, so they work over
any backend (SQLite, PostgreSQL, or any other ``SessionStore``). A layer owns what it wraps:
closing the layer closes the store under it.

Besides the SDK's protocol, flower's runtime asks a store a few synchronous questions (no event
loop needed: recovery and the banner run before one exists); ``FlowerStore`` names them, and a
layer forwards them to the store it wraps.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from .ledger import DecisionLedger, ledger_of

__all__ = ["FlowerStore", "StoreLayer", "open_inner"]

_T = TypeVar("_T")


@runtime_checkable
class FlowerStore(Protocol):
    """The synchronous helpers flower's runtime uses on top of the SDK's protocol."""

    def has_session(self, project_key: str, session_id: str) -> bool: ...

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int: ...

    def projects(self) -> list[str]: ...

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None: ...

    def uuids(self, key: SessionKey) -> set[str] | None: ...

    def close(self) -> None: ...


def open_inner(path_or_store: str | os.PathLike[str] | SessionStore) -> tuple[SessionStore, bool]:
    """(the store to wrap, whether it was opened here): a path opens a ``SqliteSessionStore``."""
    if isinstance(path_or_store, (str, os.PathLike)):
        from .sqlite import SqliteSessionStore

        return SqliteSessionStore(Path(path_or_store)), True
    return path_or_store, False


class StoreLayer(SessionStore):
    """Passes every call to ``inner``; subclasses change what they must."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.ledger: DecisionLedger = ledger_of(inner)
        # The layer's own work (deciding, spilling, ledger calls) runs off the event loop, one
        # call at a time, in the order it was asked for.
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    async def _offload(self, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flower-layer")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def _helpers(self) -> FlowerStore:
        inner = self.inner
        if not isinstance(inner, FlowerStore):
            raise TypeError(
                f"{type(inner).__name__} does not offer flower's store helpers "
                "(has_session, last_context, projects, add, uuids)"
            )
        return inner

    # -- SessionStore protocol -----------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self.inner.append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self.inner.load(key)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await self.inner.list_sessions(project_key)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await self.inner.list_session_summaries(project_key)

    async def delete(self, key: SessionKey) -> None:
        await self.inner.delete(key)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await self.inner.list_subkeys(key)

    # -- flower's helpers ----------------------------------------------------------------

    @property
    def fault(self) -> OSError | None:
        """The first write the store underneath refused for want of disk (None: none, or a store
        that does not say)."""
        fault = getattr(self.inner, "fault", None)
        return fault if isinstance(fault, OSError) else None

    def decision_ledger(self) -> DecisionLedger:
        """The ledger of the store underneath (a layer over a layer shares it)."""
        return self.ledger

    def has_session(self, project_key: str, session_id: str) -> bool:
        return self._helpers().has_session(project_key, session_id)

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        return self._helpers().last_context(project_key, session_id, scan=scan)

    def projects(self) -> list[str]:
        return self._helpers().projects()

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        self._helpers().add(key, entries)

    def uuids(self, key: SessionKey) -> set[str] | None:
        return self._helpers().uuids(key)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True)  # queued work finishes before the store goes
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
