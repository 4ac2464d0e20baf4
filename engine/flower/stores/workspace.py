"""A workspace's sessions in a shared store: keyed by what the work is, not where it sits.

The SDK keys every transcript by a ``project_key`` derived from the workspace's absolute path.
On a shared store that key would tie a session to one machine's folder: a checkout of the same
repository at another path (another machine, another clone) derives another key, and the
session mirrored under the first is not found under the second. This layer sits directly on a
shared backend and rewrites the key on the way in: every key of this workspace's path
(``local_keys``) becomes ``shared_key`` (from the workspace's identity: repository, branch and
subfolder, ``core/identity.py``). The SDK and the CLI never see the difference; two checkouts of
the same work meet under one key, a different work never does.

A session continued in another folder also carries the old folder's absolute paths: the CLI
writes ``cwd``, and the model's own tool calls name files by absolute path (Read, Write and Edit
take nothing else). So the layer notes, in the store's ledger, every workspace root that wrote
to a session, and on ``load()`` replaces the other roots by this one in the copy it hands back
(a whole path component only: ``/a/proj`` never matches inside ``/a/proj2``). The stored rows
are never changed; back in the first folder, the same rule maps them home again.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from ..base.loose import mapping
from .layer import StoreLayer
from .ledger import DecisionLedger
from .transcript import is_stored

__all__ = ["ROOT", "WorkspaceStore", "relocate"]

# the ledger kind under which the workspace roots that wrote a session are noted
ROOT = "workspace-root"


def relocate(value: object, pattern: re.Pattern[str], root: str) -> object:
    """``value`` (JSON) with every match of ``pattern`` in its strings replaced by ``root``."""
    if isinstance(value, str):
        return pattern.sub(root, value) if pattern.search(value) else value
    if isinstance(value, list):
        return [relocate(v, pattern, root) for v in value]
    if isinstance(value, dict):
        return {k: relocate(v, pattern, root) for k, v in value.items()}
    return value


def _roots_pattern(roots: Iterable[str]) -> re.Pattern[str]:
    # longest first, so that a root nested in another is never cut short; a whole component only
    ordered = sorted(set(roots), key=len, reverse=True)
    return re.compile("(?:" + "|".join(re.escape(r) for r in ordered) + r")(?![\w.\-])")


class _KeyedLedger:
    """The wrapped store's ledger, seen through this workspace's keys."""

    def __init__(self, inner: DecisionLedger, store: WorkspaceStore) -> None:
        self._inner = inner
        self._store = store

    def touch(self, key: SessionKey, at: float) -> None:
        self._inner.touch(self._store.shared(key), at)

    def last_activity(self, key: SessionKey) -> tuple[float | None, int]:
        return self._inner.last_activity(self._store.shared(key))

    def count_warm_load(self, key: SessionKey, *, boundary: bool) -> None:
        self._inner.count_warm_load(self._store.shared(key), boundary=boundary)

    def decided(self, key: SessionKey) -> dict[str, dict[str, str]]:
        return self._inner.decided(self._store.shared(key))

    def record(self, key: SessionKey, kind: str, items: Mapping[str, str] | Iterable[str], at: float) -> None:
        self._inner.record(self._store.shared(key), kind, items, at)

    def forget(self, key: SessionKey) -> None:
        self._inner.forget(self._store.shared(key))


class WorkspaceStore(StoreLayer):
    """``inner`` with this workspace's path-derived keys replaced by ``shared_key``."""

    def __init__(
        self,
        inner: SessionStore,
        *,
        workspace: str | Path,
        shared_key: str,
        local_keys: Iterable[str],
    ) -> None:
        """``local_keys``: the keys the SDK and flower derive from this workspace's path (the first
        is how the shared key shows in ``projects()``)."""
        super().__init__(inner)
        self.workspace = Path(workspace).expanduser().resolve()
        self.shared_key = shared_key
        keys = list(dict.fromkeys(local_keys))
        if not keys:
            raise ValueError("WorkspaceStore needs the project keys this workspace's path derives")
        self.local_keys = frozenset(keys)
        self._own = keys[0]  # how the shared key shows in projects()
        self._root = str(self.workspace)
        self._roots_lock = threading.Lock()
        self._noted: set[str] = set()  # sessions whose root this process has noted already
        self._keyed = _KeyedLedger(self.ledger, self)

    # -- keys ----------------------------------------------------------------------------

    def shared(self, key: SessionKey) -> SessionKey:
        if key["project_key"] in self.local_keys:
            moved = key.copy()
            moved["project_key"] = self.shared_key
            return moved
        return key

    def _shared_session(self, key: SessionListSubkeysKey) -> SessionListSubkeysKey:
        if key["project_key"] in self.local_keys:
            moved = key.copy()
            moved["project_key"] = self.shared_key
            return moved
        return key

    def _project(self, project_key: str) -> str:
        return self.shared_key if project_key in self.local_keys else project_key

    def _main(self, key: SessionKey) -> SessionKey:
        shared = self.shared(key)
        return {"project_key": shared["project_key"], "session_id": shared["session_id"]}

    def _note_root(self, key: SessionKey) -> None:
        """Remember that this workspace's root wrote to the session (once per process)."""
        if key["project_key"] not in self.local_keys:
            return
        session = key["session_id"]
        with self._roots_lock:
            if session in self._noted:
                return
            self._noted.add(session)
        self.ledger.record(self._main(key), ROOT, [self._root], time.time())

    def _relocated(self, key: SessionKey, entries: list[SessionStoreEntry]) -> list[SessionStoreEntry]:
        if key["project_key"] not in self.local_keys:
            return entries
        roots = [r for r in self.ledger.decided(self._main(key)).get(ROOT, {}) if r != self._root]
        if not roots:
            return entries
        pattern = _roots_pattern(roots)
        return [self._relocated_entry(e, pattern) for e in entries]

    def _relocated_entry(self, entry: SessionStoreEntry, pattern: re.Pattern[str]) -> SessionStoreEntry:
        """The entry with the other roots replaced; relocating changes only strings inside it,
        so its keys and their kinds stay those the SDK typed (the check says so)."""
        moved = mapping(relocate(entry, pattern, self._root))
        return moved if is_stored(moved) else entry

    # -- SessionStore protocol -----------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self.inner.append(self.shared(key), entries)
        if entries:
            await self._offload(lambda: self._note_root(key))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        entries = await self.inner.load(self.shared(key))
        if entries is None:
            return None
        return await self._offload(lambda: self._relocated(key, entries))

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await self.inner.list_sessions(self._project(project_key))

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await self.inner.list_session_summaries(self._project(project_key))

    async def delete(self, key: SessionKey) -> None:
        await self.inner.delete(self.shared(key))

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await self.inner.list_subkeys(self._shared_session(key))

    # -- flower's helpers ----------------------------------------------------------------

    def decision_ledger(self) -> DecisionLedger:
        return self._keyed

    def has_session(self, project_key: str, session_id: str) -> bool:
        return self._helpers().has_session(self._project(project_key), session_id)

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        return self._helpers().last_context(self._project(project_key), session_id, scan=scan)

    def projects(self) -> list[str]:
        # the shared key stands for this workspace: it shows as the workspace's own key
        return sorted({self._own if p == self.shared_key else p for p in self._helpers().projects()})

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        self._helpers().add(self.shared(key), entries)
        if entries:
            self._note_root(key)

    def uuids(self, key: SessionKey) -> set[str] | None:
        return self._helpers().uuids(self.shared(key))
