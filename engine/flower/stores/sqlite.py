"""SQLite-backed implementation of the SDK's ``SessionStore`` protocol.

One file (usually ``runs/sessions.db``) holds every transcript the SDK mirrors:
main transcripts and subagent transcripts (keyed by ``subpath``), plus the
per-session summary sidecar the SDK folds incrementally. Several processes may
share the file, so every write is a short ``BEGIN IMMEDIATE`` transaction in
WAL mode, and the clock that stamps mtimes lives in the database itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from ..base.files import DiskFault, fault_of, vanished
from .decisions import SqliteLedger
from .rows import dump, entry_tokens, store_key, uuid_of
from .rows import subpath as _subpath

__all__ = ["LONGEST_PATH", "SqliteSessionStore", "path_too_long"]

_T = TypeVar("_T")

_SCHEMA_VERSION = 1
# SQLite's unix VFS keeps a database's full path, and that of its "-journal" beside it, in 512
# bytes (MAX_PATHNAME): a longer one cannot be opened at all ("unable to open database file")
LONGEST_PATH = 512 - len("-journal")
_BUSY_TIMEOUT_S = 30.0
# Stays well below SQLite's bound-parameter limit on old builds (999).
_IN_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    id          INTEGER PRIMARY KEY,
    skey        TEXT    NOT NULL,
    project_key TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    subpath     TEXT    NOT NULL DEFAULT '',
    mtime       INTEGER NOT NULL,
    UNIQUE (project_key, session_id, subpath)
);
CREATE TABLE IF NOT EXISTS entries (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id  INTEGER NOT NULL,
    uuid    TEXT,
    payload TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_key ON entries (key_id, seq);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid
    ON entries (key_id, uuid) WHERE uuid IS NOT NULL;
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT    NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS clock (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT OR IGNORE INTO clock (id, last) VALUES (1, 0);
"""


class SqliteSessionStore(SessionStore):
    """Persist SDK session transcripts in one SQLite file shared by processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._last_mtime = 0
        self._closed = False
        self._ledger: SqliteLedger | None = None
        # the last write the disk refused (full, read-only, gone): the Runtime stops the step on
        # it, since the SDK only retries a failed append a few times and then drops the entries
        self.fault: DiskFault | None = None
        self._identity: tuple[int, int] | None = None
        # One worker thread keeps async calls off the event loop (a busy peer
        # process can make SQLite wait) while preserving call order.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flower-sqlite")
        try:
            self._conn = sqlite3.connect(
                str(self.path),
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            self._executor.shutdown(wait=False)
            raise sqlite3.OperationalError(f"session store {self.path}: cannot open database: {exc}") from exc
        try:
            self._init_db()
            st = self.path.stat()
            self._identity = (st.st_dev, st.st_ino)
        except BaseException:
            self._conn.close()
            self._executor.shutdown(wait=False)
            raise

    # ------------------------------------------------------------------
    # connection plumbing
    # ------------------------------------------------------------------

    def _init_db(self) -> None:
        with self._guard():
            conn = self._conn
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            # Reading the schema is what exposes a file that is not a database.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > _SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"schema version {version} is newer than this flower supports ({_SCHEMA_VERSION})"
                )
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            if version == _SCHEMA_VERSION:
                return  # no write lock needed to open an existing store
            with self._write():
                # executescript would COMMIT our transaction, so run one by one.
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Re-raise SQLite errors with the file name so the user knows which DB."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if str(self.path) in text:
                raise
            wrapped = type(exc)(f"session store {self.path}: {text}")
            for attr in ("sqlite_errorcode", "sqlite_errorname"):
                if hasattr(exc, attr):
                    setattr(wrapped, attr, getattr(exc, attr))
            raise wrapped from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A short write transaction; IMMEDIATE takes the writer lock up front
        so read-then-write (dedup, summary fold, clock) cannot interleave with
        another process."""
        conn = self._conn
        try:
            self._check_in_place()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back (e.g. disk full); a second
                # ROLLBACK would hide the real error.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except (OSError, sqlite3.Error) as exc:
            fault = fault_of(exc, self.path)
            if fault is None:
                raise
            self.fault = fault  # the latest: a Runtime tells a new one from one it already saw
            raise fault from exc

    def _check_in_place(self) -> None:
        """A file that was removed or moved away (its folder deleted, unmounted) still takes
        SQLite's writes, into an inode nobody will ever read again: refuse them instead."""
        if self._identity is None:
            return
        try:
            st = self.path.stat()
        except FileNotFoundError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._identity:
            raise vanished(self.path)

    def _call(self, fn: Callable[[], _T]) -> _T:
        with self._lock, self._guard():
            return fn()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"session store {self.path} is closed")

    def _sync(self, fn: Callable[[], _T]) -> _T:
        self._check_open()
        return self._call(fn)

    async def _async(self, fn: Callable[[], _T]) -> _T:
        self._check_open()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, fn)

    def _key_id(self, key: SessionKey) -> int | None:
        row = self._conn.execute(
            "SELECT id FROM meta WHERE project_key = ? AND session_id = ? AND subpath = ?",
            (key["project_key"], key["session_id"], _subpath(key)),
        ).fetchone()
        return None if row is None else int(row[0])

    def _next_mtime(self) -> int:
        """Next storage write time in epoch ms, strictly greater than any stamp
        ever issued on this file, by any process.

        The last stamp lives in the ``clock`` table; call inside a write
        transaction so the read-increment-write is atomic across processes.
        """
        with self._lock:
            row = self._conn.execute("SELECT last FROM clock WHERE id = 1").fetchone()
            stored = int(row[0]) if row is not None else 0
            now_ms = time.time_ns() // 1_000_000
            mtime = max(now_ms, stored + 1, self._last_mtime + 1)
            self._conn.execute(
                "INSERT INTO clock (id, last) VALUES (1, ?) "
                "ON CONFLICT (id) DO UPDATE SET last = excluded.last",
                (mtime,),
            )
            self._last_mtime = mtime
            return mtime

    # ------------------------------------------------------------------
    # SessionStore protocol
    # ------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        # Serialize on the caller's side so later mutation of its dicts cannot
        # leak into what is stored; what a tool printed is stored without its credentials (dump).
        rows = [(uuid_of(e), dump(e)) for e in entries]
        await self._async(lambda: self._append(key, rows))

    def _append(self, key: SessionKey, rows: list[tuple[str | None, str]]) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], _subpath(key)
        with self._write() as conn:
            key_id = self._key_id(key)
            stored: set[str] = set()
            if key_id is not None:
                uuids = [u for u, _ in rows if u is not None]
                for i in range(0, len(uuids), _IN_CHUNK):
                    chunk = uuids[i : i + _IN_CHUNK]
                    marks = ",".join("?" * len(chunk))
                    stored.update(
                        r[0]
                        for r in conn.execute(
                            f"SELECT uuid FROM entries WHERE key_id = ? AND uuid IN ({marks})",
                            (key_id, *chunk),
                        )
                    )
            fresh_rows: list[tuple[str | None, str]] = []
            for uid, payload in rows:
                if uid is not None:
                    if uid in stored:
                        continue
                    stored.add(uid)  # later duplicates inside this batch
                fresh_rows.append((uid, payload))
            if not fresh_rows:
                # A replayed batch changes nothing, so mtime must not move.
                return

            mtime = self._next_mtime()
            if key_id is None:
                cur = conn.execute(
                    "INSERT INTO meta (skey, project_key, session_id, subpath, mtime) VALUES (?, ?, ?, ?, ?)",
                    (store_key(key), pk, sid, sub, mtime),
                )
                key_id = cur.lastrowid
                if key_id is None:  # sqlite3 sets it after every INSERT of a row
                    raise sqlite3.DatabaseError("INSERT INTO meta returned no row id")
            else:
                conn.execute("UPDATE meta SET mtime = ? WHERE id = ?", (mtime, key_id))
            conn.executemany(
                "INSERT INTO entries (key_id, uuid, payload) VALUES (?, ?, ?)",
                [(key_id, uid, payload) for uid, payload in fresh_rows],
            )

            if sub:
                return  # subagent transcripts never feed the main summary
            row = conn.execute(
                "SELECT mtime, data FROM summaries WHERE project_key = ? AND session_id = ?",
                (pk, sid),
            ).fetchone()
            prev: SessionSummaryEntry | None = None
            if row is not None:
                prev = {
                    "session_id": sid,
                    "mtime": int(row[0]),
                    "data": json.loads(row[1]),
                }
            fresh_entries = [json.loads(payload) for _, payload in fresh_rows]
            folded = fold_session_summary(prev, {"project_key": pk, "session_id": sid}, fresh_entries)
            # Same stamp as meta.mtime: the SDK treats summary.mtime < list mtime as stale.
            conn.execute(
                "INSERT INTO summaries (project_key, session_id, mtime, data) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (project_key, session_id) DO UPDATE "
                "SET mtime = excluded.mtime, data = excluded.data",
                (pk, sid, mtime, dump(folded["data"])),
            )

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self._async(lambda: self._load(key))

    def _load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        key_id = self._key_id(key)
        if key_id is None:
            return None
        rows = self._conn.execute(
            "SELECT payload FROM entries WHERE key_id = ? ORDER BY seq", (key_id,)
        ).fetchall()
        if not rows:
            return None
        return [json.loads(r[0]) for r in rows]

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        def run() -> list[SessionStoreListEntry]:
            rows = self._conn.execute(
                "SELECT session_id, mtime FROM meta WHERE project_key = ? AND subpath = '' "
                "ORDER BY mtime DESC",
                (project_key,),
            ).fetchall()
            return [{"session_id": r[0], "mtime": int(r[1])} for r in rows]

        return await self._async(run)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        def run() -> list[SessionSummaryEntry]:
            rows = self._conn.execute(
                "SELECT session_id, mtime, data FROM summaries WHERE project_key = ? ORDER BY mtime DESC",
                (project_key,),
            ).fetchall()
            return [{"session_id": r[0], "mtime": int(r[1]), "data": json.loads(r[2])} for r in rows]

        return await self._async(run)

    async def delete(self, key: SessionKey) -> None:
        await self._async(lambda: self._delete(key))

    def _delete(self, key: SessionKey) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], _subpath(key)
        with self._write() as conn:
            if sub:
                ids = conn.execute(
                    "SELECT id FROM meta WHERE project_key = ? AND session_id = ? AND subpath = ?",
                    (pk, sid, sub),
                ).fetchall()
            else:
                # Main transcript: take its subagent transcripts with it so
                # nothing is left orphaned.
                ids = conn.execute(
                    "SELECT id FROM meta WHERE project_key = ? AND session_id = ?", (pk, sid)
                ).fetchall()
                conn.execute("DELETE FROM summaries WHERE project_key = ? AND session_id = ?", (pk, sid))
            for (key_id,) in ids:
                conn.execute("DELETE FROM entries WHERE key_id = ?", (key_id,))
                conn.execute("DELETE FROM meta WHERE id = ?", (key_id,))

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        def run() -> list[str]:
            rows = self._conn.execute(
                "SELECT subpath FROM meta WHERE project_key = ? AND session_id = ? "
                "AND subpath != '' ORDER BY subpath",
                (key["project_key"], key["session_id"]),
            ).fetchall()
            return [r[0] for r in rows]

        return await self._async(run)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Let queued async calls finish before the connection goes away.
        self._executor.shutdown(wait=True)
        with self._lock:
            self._conn.close()

    # ------------------------------------------------------------------
    # synchronous helpers (no event loop needed)
    # ------------------------------------------------------------------

    def decision_ledger(self) -> SqliteLedger:
        """The resume-time layers' ledger, in tables of this same file (made on first use)."""
        with self._lock:
            if self._ledger is None:
                self._ledger = SqliteLedger(_LedgerFile(self))
            return self._ledger

    def projects(self) -> list[str]:
        """Project keys that really exist in this file; check here before
        querying instead of guessing the key from a cwd."""

        def run() -> list[str]:
            rows = self._conn.execute("SELECT DISTINCT project_key FROM meta ORDER BY project_key").fetchall()
            return [r[0] for r in rows]

        return self._sync(run)

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """``append`` without an event loop (recovery and catch-up run before one exists)."""
        if not entries:
            return
        rows = [(uuid_of(e), dump(e)) for e in entries]
        self._sync(lambda: self._append(key, rows))

    def uuids(self, key: SessionKey) -> set[str] | None:
        """The entry uuids stored under ``key``; None when the key is not in the store at all."""

        def run() -> set[str] | None:
            key_id = self._key_id(key)
            if key_id is None:
                return None
            rows = self._conn.execute(
                "SELECT uuid FROM entries WHERE key_id = ? AND uuid IS NOT NULL", (key_id,)
            ).fetchall()
            return {r[0] for r in rows}

        return self._sync(run)

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Whether a main transcript exists; touches one meta row, no payload."""

        def run() -> bool:
            row = self._conn.execute(
                "SELECT 1 FROM meta WHERE project_key = ? AND session_id = ? AND subpath = '' LIMIT 1",
                (project_key, session_id),
            ).fetchone()
            return row is not None

        return self._sync(run)

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        """Context size the model saw on the session's last turn, in tokens.

        Walks only the last ``scan`` entries backwards. Counts input, cache
        read and cache creation: ``input_tokens`` alone badly undercounts once
        prompt caching kicks in. Returns ``0`` when nothing is found.
        """
        if scan <= 0:
            return 0

        def run() -> int:
            key_id = self._key_id({"project_key": project_key, "session_id": session_id})
            if key_id is None:
                return 0
            rows = self._conn.execute(
                "SELECT payload FROM entries WHERE key_id = ? ORDER BY seq DESC LIMIT ?",
                (key_id, scan),
            )
            for (payload,) in rows:
                try:
                    entry = json.loads(payload)
                except ValueError:
                    continue
                if not isinstance(entry, dict):
                    continue
                tokens = entry_tokens(entry)
                # Synthetic error messages carry all-zero usage; they say
                # nothing about what the model saw, so keep looking.
                if tokens > 0:
                    return tokens
            return 0

        return self._sync(run)


def path_too_long(db: str | Path) -> int | None:
    """The length in bytes of `db`'s absolute path when SQLite could not open a database there."""
    size = len(os.fsencode(Path(db).absolute()))
    return size if size > LONGEST_PATH else None


class _LedgerFile:
    """The store's file as the decision ledger sees it (``decisions.LedgerFile``): its calls run
    on the store's connection, under its lock, writes in the store's own transactions."""

    def __init__(self, store: SqliteSessionStore) -> None:
        self._store = store

    def read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        store = self._store
        return store._sync(lambda: fn(store._conn))

    def write(self, fn: Callable[[sqlite3.Connection], object]) -> None:
        store = self._store

        def run() -> None:
            with store._write() as conn:
                fn(conn)

        store._sync(run)
