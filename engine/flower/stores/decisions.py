"""The SQLite decision ledger: resume-time decisions kept next to the transcripts in sessions.db.

A trim, an expiry or a dropped denial changes the prompt the model is resumed with. Made
once, such a decision must hold at every later load, or the prompt would change again and
the API's prompt cache would have to be written again from that point on. The transcript
rows themselves are never rewritten, so the decisions live in tables of their own:

- ``flower_decisions``: one row per decision (kind, the tool_use_id it is about, and the
  text it was decided with, e.g. an expiry note with the age it had then);
- ``flower_activity``: when each transcript last received entries, on the store's clock
  (the API's cache lives a few minutes from the last request, which is about then), and
  how many loads in a row found the cache warm and decided nothing.

Every function takes the store's connection and runs inside the store's own lock; writes
run inside the caller's write transaction. ``SqliteLedger`` is the ``DecisionLedger``
(``ledger.py``) a ``SqliteSessionStore`` hands the layers: the same functions, each call one
short transaction on the store's connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol, TypeVar

from claude_agent_sdk.types import SessionKey

from .ledger import items_of
from .ledger import where as _where

__all__ = [
    "SCHEMA",
    "LedgerFile",
    "SqliteLedger",
    "count_warm_load",
    "decided",
    "forget",
    "last_activity",
    "record",
    "touch",
]

_T = TypeVar("_T")

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS flower_decisions (
        project_key TEXT NOT NULL,
        session_id  TEXT NOT NULL,
        subpath     TEXT NOT NULL DEFAULT '',
        kind        TEXT NOT NULL,
        ref         TEXT NOT NULL,
        detail      TEXT NOT NULL DEFAULT '',
        decided_at  REAL NOT NULL,
        PRIMARY KEY (project_key, session_id, subpath, kind, ref)
    )""",
    """CREATE TABLE IF NOT EXISTS flower_activity (
        project_key TEXT NOT NULL,
        session_id  TEXT NOT NULL,
        subpath     TEXT NOT NULL DEFAULT '',
        last_append REAL NOT NULL,
        warm_loads  INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (project_key, session_id, subpath)
    )""",
)


def touch(conn: sqlite3.Connection, key: SessionKey, at: float) -> None:
    conn.execute(
        "INSERT INTO flower_activity (project_key, session_id, subpath, last_append) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (project_key, session_id, subpath) DO UPDATE "
        "SET last_append = max(last_append, excluded.last_append)",
        (*_where(key), at),
    )


def last_activity(conn: sqlite3.Connection, key: SessionKey) -> tuple[float | None, int]:
    """(time of the last append, warm loads in a row since the last boundary)."""
    row = conn.execute(
        "SELECT last_append, warm_loads FROM flower_activity "
        "WHERE project_key = ? AND session_id = ? AND subpath = ?",
        _where(key),
    ).fetchone()
    return (None, 0) if row is None else (float(row[0]), int(row[1]))


def count_warm_load(conn: sqlite3.Connection, key: SessionKey, *, boundary: bool) -> None:
    """One more load that decided nothing while the cache was warm, or back to 0."""
    conn.execute(
        "UPDATE flower_activity SET warm_loads = CASE WHEN ? THEN 0 ELSE warm_loads + 1 END "
        "WHERE project_key = ? AND session_id = ? AND subpath = ?",
        (boundary, *_where(key)),
    )


def decided(conn: sqlite3.Connection, key: SessionKey) -> dict[str, dict[str, str]]:
    """kind -> {tool_use_id: detail} for one transcript."""
    out: dict[str, dict[str, str]] = {}
    rows = conn.execute(
        "SELECT kind, ref, detail FROM flower_decisions "
        "WHERE project_key = ? AND session_id = ? AND subpath = ?",
        _where(key),
    )
    for kind, ref, detail in rows:
        out.setdefault(str(kind), {})[str(ref)] = str(detail)
    return out


def record(
    conn: sqlite3.Connection, key: SessionKey, kind: str, items: Mapping[str, str] | Iterable[str], at: float
) -> None:
    """Add decisions; one already made (by this or another process) is kept as it was."""
    conn.executemany(
        "INSERT OR IGNORE INTO flower_decisions "
        "(project_key, session_id, subpath, kind, ref, detail, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(*_where(key), kind, ref, detail, at) for ref, detail in items_of(items)],
    )


def forget(conn: sqlite3.Connection, key: SessionKey) -> None:
    """Drop what is known about a transcript; a main transcript takes its subagents along."""
    pk, sid, sub = _where(key)
    for table in ("flower_decisions", "flower_activity"):
        if sub:
            conn.execute(
                f"DELETE FROM {table} WHERE project_key = ? AND session_id = ? AND subpath = ?",
                (pk, sid, sub),
            )
        else:
            conn.execute(f"DELETE FROM {table} WHERE project_key = ? AND session_id = ?", (pk, sid))


class LedgerFile(Protocol):
    """What the ledger needs of the database file it lives in: a call on its connection under
    its lock, and a call inside one short write transaction (``SqliteSessionStore`` lends both)."""

    def read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T: ...

    def write(self, fn: Callable[[sqlite3.Connection], object]) -> None: ...


class SqliteLedger:
    """The ledger inside one ``SqliteSessionStore``'s file, on its connection and lock."""

    def __init__(self, file: LedgerFile) -> None:
        self._file = file
        self._write(lambda conn: [conn.execute(statement) for statement in SCHEMA])

    def _read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        return self._file.read(fn)

    def _write(self, fn: Callable[[sqlite3.Connection], object]) -> None:
        self._file.write(fn)

    def touch(self, key: SessionKey, at: float) -> None:
        self._write(lambda conn: touch(conn, key, at))

    def last_activity(self, key: SessionKey) -> tuple[float | None, int]:
        return self._read(lambda conn: last_activity(conn, key))

    def count_warm_load(self, key: SessionKey, *, boundary: bool) -> None:
        self._write(lambda conn: count_warm_load(conn, key, boundary=boundary))

    def decided(self, key: SessionKey) -> dict[str, dict[str, str]]:
        return self._read(lambda conn: decided(conn, key))

    def record(self, key: SessionKey, kind: str, items: Mapping[str, str] | Iterable[str], at: float) -> None:
        pairs = items_of(items)
        if pairs:
            self._write(lambda conn: record(conn, key, kind, dict(pairs), at))

    def forget(self, key: SessionKey) -> None:
        self._write(lambda conn: forget(conn, key))
