"""PostgreSQL-backed implementation of the SDK's ``SessionStore`` protocol.

One schema of one database (``flower`` unless told otherwise) holds what ``sessions.db`` holds
for a local run: every transcript the SDK mirrors (main and subagent ones, keyed by
``subpath``), the per-session summary sidecar, and the resume-time layers' decision ledger.
Several processes on several machines may share it:

- appends are idempotent on ``uuid`` (a unique index; a replayed batch changes nothing, not
  even the modification time), and two writers of one transcript take turns on its row;
- modification times come from one clock row in the database, stamped inside the append's
  transaction: strictly increasing across every process and machine, and never behind the
  database server's own wall clock (``clock_timestamp()``), whatever the clients' clocks say;
- deleting a main transcript takes its subagent transcripts, its summary and its decisions.

psycopg 3 and its connection pool do the talking. The protocol's coroutines run one at a time,
in call order, on a worker thread of the store; the synchronous helpers (``has_session``,
``last_context``, ``add``, ...) borrow a pooled connection from whichever thread calls them.
Credentials in the URL never appear in an error: every message shows the URL redacted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, TypeVar

from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from ..base.loose import mapping
from .lease import outage_of, reason_of
from .ledger import items_of, where
from .pgerrors import explain
from .rows import dump, entry_tokens, uuid_of
from .rows import subpath as _subpath
from .urls import check_store_url, redact_url

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresLedger", "PostgresRunBook", "PostgresSessionStore", "PostgresStoreError", "read_lineage"]

_T = TypeVar("_T")

# 2: the flows' claims are leases (a holder id and an expiry), no longer advisory locks
SCHEMA_VERSION = 2
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Serialises creating the schema: CREATE ... IF NOT EXISTS races with itself across sessions.
_DDL_LOCK = 0x666C6F776572  # "flower"
_CONNECT_TIMEOUT_S = 15
# how long a statement waits for a pooled connection: an outage is waited through by retrying
_CHECKOUT_TIMEOUT_S = 5.0
_AWAY_CHECKOUT_S = 1.0
# the pool logs every failed reconnect ("error connecting in ..."), bare on a terminal; flower says
# an outage itself, once, with the driver's reason (lease.Outage)
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
# one transcript (main or subagent), and one session (main and its subagents)
_KEY_IS = "project_key = %s AND session_id = %s AND subpath = %s"
_SESSION_IS = "project_key = %s AND session_id = %s"

_DDL = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.version (
    id      integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.transcripts (
    id          bigserial PRIMARY KEY,
    project_key text   NOT NULL,
    session_id  text   NOT NULL,
    subpath     text   NOT NULL DEFAULT '',
    mtime       bigint NOT NULL,
    UNIQUE (project_key, session_id, subpath)
);
CREATE TABLE IF NOT EXISTS {s}.entries (
    seq        bigserial PRIMARY KEY,
    transcript bigint NOT NULL REFERENCES {s}.transcripts (id) ON DELETE CASCADE,
    uuid       text,
    payload    json   NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_transcript ON {s}.entries (transcript, seq);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid ON {s}.entries (transcript, uuid) WHERE uuid IS NOT NULL;
CREATE TABLE IF NOT EXISTS {s}.summaries (
    project_key text   NOT NULL,
    session_id  text   NOT NULL,
    mtime       bigint NOT NULL,
    data        json   NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS {s}.clock (
    id   integer PRIMARY KEY CHECK (id = 1),
    last bigint  NOT NULL
);
INSERT INTO {s}.clock (id, last) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS {s}.decisions (
    project_key text NOT NULL,
    session_id  text NOT NULL,
    subpath     text NOT NULL DEFAULT '',
    kind        text NOT NULL,
    ref         text NOT NULL,
    detail      text NOT NULL DEFAULT '',
    decided_at  double precision NOT NULL,
    PRIMARY KEY (project_key, session_id, subpath, kind, ref)
);
CREATE TABLE IF NOT EXISTS {s}.activity (
    project_key text NOT NULL,
    session_id  text NOT NULL,
    subpath     text NOT NULL DEFAULT '',
    last_append double precision NOT NULL,
    warm_loads  integer NOT NULL DEFAULT 0,
    PRIMARY KEY (project_key, session_id, subpath)
);
CREATE TABLE IF NOT EXISTS {s}.lineages (
    workspace text   PRIMARY KEY,
    data      jsonb  NOT NULL,
    updated   bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.flows (
    workspace text  NOT NULL,
    flow      text  NOT NULL,
    holder    jsonb NOT NULL,
    PRIMARY KEY (workspace, flow)
);
ALTER TABLE {s}.flows ADD COLUMN IF NOT EXISTS holder_id text;
ALTER TABLE {s}.flows ADD COLUMN IF NOT EXISTS expires_at timestamptz;
CREATE TABLE IF NOT EXISTS {s}.manifest (
    workspace  text    NOT NULL,
    run        text    NOT NULL,
    position   integer NOT NULL,
    started_at double precision NOT NULL,
    row_data   json    NOT NULL,
    PRIMARY KEY (workspace, run, position)
);
"""


class PostgresStoreError(RuntimeError):
    """A database error, said with the store's URL redacted (never its password).

    ``transient``: the connection failed (the server stopped, restarted, out of reach), not the
    statement; ``reason`` is the driver's own words, on one line."""

    def __init__(self, text: str, *, transient: bool = False, reason: str = "") -> None:
        super().__init__(text)
        self.transient = transient
        self.reason = reason or text


def ensure_schema(conn: psycopg.Connection[TupleRow], schema: str, where: str) -> None:
    """Create the store's tables in ``schema`` unless they are there (one creator at a time)."""
    quoted = f'"{schema}"'
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        found = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'version'",
            (schema,),
        ).fetchone()
        if found is not None:
            row = conn.execute(f"SELECT version FROM {quoted}.version WHERE id = 1").fetchone()
            version = int(row[0]) if row is not None else 0
            if version > SCHEMA_VERSION:
                raise PostgresStoreError(
                    f"session store {where}: schema version {version} is newer than this "
                    f"flower supports ({SCHEMA_VERSION}); upgrade flower or use another schema"
                )
            if version == SCHEMA_VERSION:
                return
        for statement in _DDL.format(s=quoted).split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            f"INSERT INTO {quoted}.version (id, version) VALUES (1, %s) "
            "ON CONFLICT (id) DO UPDATE SET version = excluded.version",
            (SCHEMA_VERSION,),
        )


class PostgresSessionStore(SessionStore):
    """Persist SDK session transcripts in a PostgreSQL schema shared by processes and machines.

    ``url`` is a libpq URL (``postgresql://user:password@host:port/database``, with
    ``?host=/socket/dir`` for a Unix socket); ``schema`` keeps separate stores apart in one
    database. The connection is tried at once: a store that cannot be reached fails here, with
    the reason, not at the first resume.
    """

    def __init__(self, url: str, *, schema: str = "flower", pool_size: int = 4) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise ImportError(
                f"PostgresSessionStore needs psycopg 3 and psycopg_pool ({exc.name} is missing): "
                "pip install 'flower-agents[postgres]'"
            ) from None

        if not _SCHEMA_NAME.match(schema):
            raise ValueError(
                f"schema {schema!r} is not a plain lower-case SQL name (letters, digits, _; at most 63)"
            )
        self._url = check_store_url(url)
        self.schema = schema
        self.where = f"{redact_url(url)} (schema {schema})"
        self._s = self.quoted = f'"{schema}"'  # validated above: quoting is all it needs
        self._closed = self._closing = False
        self._ledger: PostgresLedger | None = None
        self._lock = threading.Lock()
        try:
            with psycopg.connect(self._url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S) as conn:
                self._init_schema(conn)
        except psycopg.Error as exc:
            raise self._error("cannot open the store", exc) from None
        self._pool: ConnectionPool[psycopg.Connection[TupleRow]] = ConnectionPool(
            self._url,
            min_size=1,
            max_size=max(2, pool_size),
            kwargs={"autocommit": True},
            check=ConnectionPool.check_connection,
            open=False,
            name="flower-store",
        )
        try:
            self._pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        except Exception as exc:
            self._pool.close()
            raise self._error("cannot open a connection pool", exc) from None
        # One worker keeps the protocol's coroutines off the event loop and in call order.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flower-postgres")

    # -- plumbing ------------------------------------------------------------------------

    def _error(self, what: str, exc: BaseException, *, transient: bool = False) -> PostgresStoreError:
        text = explain(exc, self._url)
        return PostgresStoreError(
            f"session store {self.where}: {what}: {text}",
            transient=transient,
            reason=reason_of(exc, self._url),
        )

    def _patient(self, fn: Callable[[], _T]) -> _T:
        """``fn``, again and again while the store is out of reach, for ``FLOWER_STORE_OUTAGE_S``
        at most (said once, with the driver's reason): a restart or a short outage loses nothing.
        ``fn`` must be safe to repeat (an append is idempotent on its uuids)."""
        outage = outage_of(self.where)
        delay = 0.2
        while True:
            try:
                out = fn()
            except PostgresStoreError as exc:
                if not exc.transient or self._closing:
                    raise
                if outage.down(exc.reason) >= outage.bound:
                    raise PostgresStoreError(outage.gave_up(exc.reason)) from None
                time.sleep(delay)  # a backoff, not a synchronisation: the server comes back when it does
                delay = min(delay * 2, 2.0)
                continue
            outage.up()
            return out

    def _init_schema(self, conn: psycopg.Connection[TupleRow]) -> None:
        ensure_schema(conn, self.schema, self.where)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[TupleRow]]:
        """A pooled connection (autocommit; use ``conn.transaction()``), errors redacted."""
        import psycopg

        if self._closed:
            raise RuntimeError(f"session store {self.where} is closed")
        try:
            # while the store is known to be away, one quick try each time: a write waiting out
            # the outage must not spend its bound waiting for the pool
            away = outage_of(self.where).active
            with self._pool.connection(timeout=_AWAY_CHECKOUT_S if away else _CHECKOUT_TIMEOUT_S) as conn:
                yield conn
        except psycopg.Error as exc:
            broken = isinstance(exc, psycopg.OperationalError)
            raise self._error(type(exc).__name__, exc, transient=broken) from None
        except Exception as exc:
            if type(exc).__module__.startswith("psycopg_pool"):
                raise self._error("no connection", exc, transient=True) from None
            raise

    def table(self, name: str) -> str:
        """``"<schema>".<name>``: for the run records kept in the same schema."""
        return f"{self._s}.{name}"

    async def _async(self, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise RuntimeError(f"session store {self.where} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def _transcript(self, conn: psycopg.Connection[TupleRow], key: SessionKey) -> int | None:
        row = conn.execute(
            f"SELECT id FROM {self._s}.transcripts WHERE {_KEY_IS}",
            (key["project_key"], key["session_id"], _subpath(key)),
        ).fetchone()
        return None if row is None else int(row[0])

    # -- SessionStore protocol -----------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        # Serialise on the caller's side so later mutation of its dicts cannot leak in.
        rows = [(uuid_of(e), dump(e)) for e in entries]
        await self._async(lambda: self._patient(lambda: self._append(key, rows)))

    def _append(self, key: SessionKey, rows: list[tuple[str | None, str]]) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], _subpath(key)
        seen: set[str] = set()
        batch: list[tuple[str | None, str]] = []
        for uid, payload in rows:
            if uid is not None:
                if uid in seen:
                    continue  # a later duplicate inside this batch
                seen.add(uid)
            batch.append((uid, payload))
        s = self._s
        with self.connection() as conn, conn.transaction():
            conn.execute(
                f"INSERT INTO {s}.transcripts (project_key, session_id, subpath, mtime) "
                "VALUES (%s, %s, %s, 0) ON CONFLICT (project_key, session_id, subpath) DO NOTHING",
                (pk, sid, sub),
            )
            # Writers of one transcript take turns from here to the commit: dedup, order and the
            # summary fold all see the other's rows.
            row = conn.execute(
                f"SELECT id FROM {s}.transcripts WHERE {_KEY_IS} FOR UPDATE",
                (pk, sid, sub),
            ).fetchone()
            if row is None:
                raise PostgresStoreError(f"session store {self.where}: transcript row vanished")
            tid = int(row[0])
            inserted = conn.execute(
                f"INSERT INTO {s}.entries (transcript, uuid, payload) "
                "SELECT %s, u, p::json FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t (u, p, n) "
                "ORDER BY n ON CONFLICT (transcript, uuid) WHERE uuid IS NOT NULL DO NOTHING RETURNING uuid",
                (tid, [u for u, _ in batch], [p for _, p in batch]),
            ).fetchall()
            stored = {r[0] for r in inserted if r[0] is not None}
            fresh = [p for u, p in batch if u is None or u in stored]
            if not fresh:
                return  # a replayed batch changes nothing, so mtime must not move
            # The clock row is the last lock taken (and held briefly): one order for everyone.
            stamp = conn.execute(
                f"UPDATE {s}.clock SET last = GREATEST(last + 1, "
                "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint) WHERE id = 1 RETURNING last"
            ).fetchone()
            if stamp is None:
                raise PostgresStoreError(f"session store {self.where}: the clock row is missing")
            mtime = int(stamp[0])
            conn.execute(f"UPDATE {s}.transcripts SET mtime = %s WHERE id = %s", (mtime, tid))
            if sub:
                return  # subagent transcripts never feed the main summary
            found = conn.execute(
                f"SELECT mtime, data FROM {s}.summaries WHERE {_SESSION_IS}",
                (pk, sid),
            ).fetchone()
            prev: SessionSummaryEntry | None = None
            if found is not None:
                prev = {"session_id": sid, "mtime": int(found[0]), "data": found[1]}
            folded = fold_session_summary(
                prev, {"project_key": pk, "session_id": sid}, [json.loads(p) for p in fresh]
            )
            # Same stamp as the transcript's mtime: the SDK treats summary.mtime < list mtime as stale.
            conn.execute(
                f"INSERT INTO {s}.summaries (project_key, session_id, mtime, data) "
                "VALUES (%s, %s, %s, %s::json) ON CONFLICT (project_key, session_id) "
                "DO UPDATE SET mtime = excluded.mtime, data = excluded.data",
                (pk, sid, mtime, dump(folded["data"])),
            )

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self._async(lambda: self._patient(lambda: self._load(key)))

    def _load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        with self.connection() as conn:
            rows = conn.execute(
                f"SELECT e.payload FROM {self._s}.entries e "
                f"JOIN {self._s}.transcripts t ON t.id = e.transcript "
                "WHERE t.project_key = %s AND t.session_id = %s AND t.subpath = %s ORDER BY e.seq",
                (key["project_key"], key["session_id"], _subpath(key)),
            ).fetchall()
        if not rows:
            return None
        return [r[0] for r in rows]

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        def run() -> list[SessionStoreListEntry]:
            with self.connection() as conn:
                rows = conn.execute(
                    f"SELECT session_id, mtime FROM {self._s}.transcripts WHERE project_key = %s "
                    "AND subpath = '' AND mtime > 0 ORDER BY mtime DESC",
                    (project_key,),
                ).fetchall()
            return [{"session_id": r[0], "mtime": int(r[1])} for r in rows]

        return await self._async(run)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        def run() -> list[SessionSummaryEntry]:
            with self.connection() as conn:
                rows = conn.execute(
                    f"SELECT session_id, mtime, data FROM {self._s}.summaries WHERE project_key = %s "
                    "ORDER BY mtime DESC",
                    (project_key,),
                ).fetchall()
            return [{"session_id": r[0], "mtime": int(r[1]), "data": r[2]} for r in rows]

        return await self._async(run)

    async def delete(self, key: SessionKey) -> None:
        await self._async(lambda: self._delete(key))

    def _delete(self, key: SessionKey) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], _subpath(key)
        s = self._s
        with self.connection() as conn, conn.transaction():
            if sub:
                conn.execute(f"DELETE FROM {s}.transcripts WHERE {_KEY_IS}", (pk, sid, sub))
            else:
                # Main transcript: its subagent transcripts go with it, nothing is left orphaned.
                conn.execute(f"DELETE FROM {s}.transcripts WHERE {_SESSION_IS}", (pk, sid))
                conn.execute(f"DELETE FROM {s}.summaries WHERE {_SESSION_IS}", (pk, sid))

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        def run() -> list[str]:
            with self.connection() as conn:
                rows = conn.execute(
                    f"SELECT subpath FROM {self._s}.transcripts WHERE project_key = %s AND session_id = %s "
                    "AND subpath != '' ORDER BY subpath",
                    (key["project_key"], key["session_id"]),
                ).fetchall()
            return [r[0] for r in rows]

        return await self._async(run)

    def close(self) -> None:
        if self._closed:
            return
        self._closing = True  # a call waiting through an outage gives up instead of holding this
        self._executor.shutdown(wait=True)  # queued calls finish before the pool goes
        self._closed = True
        self._pool.close()

    # -- synchronous helpers (no event loop needed) --------------------------------------

    def run_book(self) -> PostgresRunBook:
        """Lineages and manifests of the runs this store's sessions belong to, by workspace."""
        return PostgresRunBook(
            self.connection,
            self.quoted,
            dedicated=lambda: _dedicated(self._url),
            where=self.where,
            url=self._url,
        )

    def decision_ledger(self) -> PostgresLedger:
        """The resume-time layers' ledger, in tables of this store's schema."""
        with self._lock:
            if self._ledger is None:
                self._ledger = PostgresLedger(self)
            return self._ledger

    def projects(self) -> list[str]:
        with self.connection() as conn:
            rows = conn.execute(
                f"SELECT DISTINCT project_key FROM {self._s}.transcripts ORDER BY project_key"
            ).fetchall()
        return [r[0] for r in rows]

    def add(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """``append`` without an event loop (recovery and catch-up run before one exists)."""
        if entries:
            rows = [(uuid_of(e), dump(e)) for e in entries]
            self._patient(lambda: self._append(key, rows))

    def uuids(self, key: SessionKey) -> set[str] | None:
        """The entry uuids stored under ``key``; None when the key is not in the store at all."""
        with self.connection() as conn:
            tid = self._transcript(conn, key)
            if tid is None:
                return None
            rows = conn.execute(
                f"SELECT uuid FROM {self._s}.entries WHERE transcript = %s AND uuid IS NOT NULL", (tid,)
            ).fetchall()
        return {r[0] for r in rows}

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Whether a main transcript exists; touches one row, no payload."""
        with self.connection() as conn:
            row = conn.execute(
                f"SELECT 1 FROM {self._s}.transcripts WHERE project_key = %s AND session_id = %s "
                "AND subpath = '' AND mtime > 0 LIMIT 1",
                (project_key, session_id),
            ).fetchone()
        return row is not None

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        """Context size the model saw on the session's last turn, in tokens (as SQLite's)."""
        if scan <= 0:
            return 0
        with self.connection() as conn:
            tid = self._transcript(conn, {"project_key": project_key, "session_id": session_id})
            if tid is None:
                return 0
            rows = conn.execute(
                f"SELECT payload FROM {self._s}.entries WHERE transcript = %s ORDER BY seq DESC LIMIT %s",
                (tid, scan),
            ).fetchall()
        for (entry,) in rows:
            tokens = entry_tokens(entry) if isinstance(entry, dict) else 0
            # Synthetic error messages carry all-zero usage; keep looking.
            if tokens > 0:
                return tokens
        return 0


class PostgresLedger:
    """The decision ledger in a ``PostgresSessionStore``'s schema; one statement per call."""

    def __init__(self, store: PostgresSessionStore) -> None:
        self._store = store

    def _run(self, sql: str, params: tuple[object, ...]) -> list[TupleRow]:
        with self._store.connection() as conn:
            cur = conn.execute(sql.format(s=self._store.quoted), params)
            return cur.fetchall() if cur.description is not None else []

    def touch(self, key: SessionKey, at: float) -> None:
        self._run(
            "INSERT INTO {s}.activity (project_key, session_id, subpath, last_append) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (project_key, session_id, subpath) DO UPDATE "
            "SET last_append = GREATEST({s}.activity.last_append, excluded.last_append)",
            (*where(key), at),
        )

    def last_activity(self, key: SessionKey) -> tuple[float | None, int]:
        rows = self._run(
            "SELECT last_append, warm_loads FROM {s}.activity WHERE " + _KEY_IS,
            where(key),
        )
        return (None, 0) if not rows else (float(rows[0][0]), int(rows[0][1]))

    def count_warm_load(self, key: SessionKey, *, boundary: bool) -> None:
        self._run(
            "UPDATE {s}.activity SET warm_loads = CASE WHEN %s THEN 0 ELSE warm_loads + 1 END "
            "WHERE " + _KEY_IS,
            (boundary, *where(key)),
        )

    def decided(self, key: SessionKey) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        rows = self._run(
            "SELECT kind, ref, detail FROM {s}.decisions WHERE " + _KEY_IS,
            where(key),
        )
        for kind, ref, detail in rows:
            out.setdefault(str(kind), {})[str(ref)] = str(detail)
        return out

    def record(self, key: SessionKey, kind: str, items: Mapping[str, str] | Iterable[str], at: float) -> None:
        pairs = items_of(items)
        if not pairs:
            return
        self._run(
            "INSERT INTO {s}.decisions (project_key, session_id, subpath, kind, ref, detail, decided_at) "
            "SELECT %s, %s, %s, %s, r, d, %s FROM unnest(%s::text[], %s::text[]) AS t (r, d) "
            "ON CONFLICT DO NOTHING",
            (*where(key), kind, at, [r for r, _ in pairs], [d for _, d in pairs]),
        )

    def forget(self, key: SessionKey) -> None:
        pk, sid, sub = where(key)
        with self._store.connection() as conn, conn.transaction():
            for table in ("decisions", "activity"):
                name = self._store.table(table)
                if sub:
                    conn.execute(f"DELETE FROM {name} WHERE {_KEY_IS}", (pk, sid, sub))
                else:
                    conn.execute(f"DELETE FROM {name} WHERE {_SESSION_IS}", (pk, sid))


class PostgresRunBook:
    """A run's lineage and manifest rows, kept by workspace identity in the store's schema.

    The local ``lineage.json`` and ``manifest.json`` stay where they are; with a shared store
    these rows are written beside them, so that another checkout of the same work (another
    machine) finds which session each step continues.
    """

    def __init__(
        self,
        connect: Callable[[], AbstractContextManager[psycopg.Connection[TupleRow]]],
        quoted_schema: str,
        *,
        dedicated: Callable[[], psycopg.Connection[TupleRow]] | None = None,
        where: str = "",
        url: str | None = None,
    ) -> None:
        self._connect = connect
        self._s = quoted_schema
        self._dedicated = dedicated
        self.where = where  # the store as it may be shown (its password masked)
        self._url = url  # only to mask its secrets in a driver's message

    @classmethod
    def direct(cls, url: str, *, schema: str = "flower") -> PostgresRunBook:
        """A book that opens a connection of its own for each call (no store, no pool)."""
        import psycopg

        if not _SCHEMA_NAME.match(schema):
            raise ValueError(f"schema {schema!r} is not a plain lower-case SQL name")
        checked = check_store_url(url)
        where = f"{redact_url(checked)} (schema {schema})"
        made: list[bool] = []  # the schema is made (or found) by the first connection

        @contextmanager
        def connect() -> Iterator[psycopg.Connection[TupleRow]]:
            try:
                with psycopg.connect(checked, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S) as conn:
                    if not made:
                        ensure_schema(conn, schema, where)
                        made.append(True)
                    yield conn
            except psycopg.Error as exc:
                raise PostgresStoreError(
                    f"run book {where}: {explain(exc, checked)}",
                    transient=isinstance(exc, psycopg.OperationalError),
                    reason=reason_of(exc, checked),
                ) from None

        def dedicated() -> psycopg.Connection[TupleRow]:
            with connect():
                pass  # the schema exists before the flow lock's table is used
            return _dedicated(checked)

        return cls(connect, f'"{schema}"', dedicated=dedicated, where=where, url=checked)

    def lineage(self, workspace: str) -> dict[str, object] | None:
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT data FROM {self._s}.lineages WHERE workspace = %s", (workspace,)
            ).fetchone()
        return mapping(row[0]) if row is not None and isinstance(row[0], dict) else None

    def update_lineage(
        self, workspace: str, change: Callable[[dict[str, object] | None], dict[str, object]]
    ) -> dict[str, object]:
        """Read the workspace's lineage under a row lock, let ``change`` merge into it, write it."""
        from psycopg.types.json import Jsonb

        s = self._s
        with self._connect() as conn, conn.transaction():
            conn.execute(
                f"INSERT INTO {s}.lineages (workspace, data, updated) VALUES (%s, 'null'::jsonb, 0) "
                "ON CONFLICT (workspace) DO NOTHING",
                (workspace,),
            )
            row = conn.execute(
                f"SELECT data FROM {s}.lineages WHERE workspace = %s FOR UPDATE", (workspace,)
            ).fetchone()
            new = change(mapping(row[0]) if row is not None and isinstance(row[0], dict) else None)
            conn.execute(
                f"UPDATE {s}.lineages SET data = %s, "
                "updated = (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint WHERE workspace = %s",
                (Jsonb(new), workspace),
            )
        return new

    def put_manifest(self, workspace: str, run: str, rows: list[dict[str, object]]) -> None:
        """This process's rows (``run``), replacing what it wrote before; others' rows stay."""
        s = self._s
        with self._connect() as conn, conn.transaction():
            conn.execute(f"DELETE FROM {s}.manifest WHERE workspace = %s AND run = %s", (workspace, run))
            for position, row in enumerate(rows):
                started = row.get("started_at")
                conn.execute(
                    f"INSERT INTO {s}.manifest (workspace, run, position, started_at, row_data) "
                    "VALUES (%s, %s, %s, %s, %s::json)",
                    (
                        workspace,
                        run,
                        position,
                        float(started) if isinstance(started, (int, float)) else 0.0,
                        dump(row),
                    ),
                )

    def claim_flow(
        self,
        workspace: str,
        flow: str,
        holder: dict[str, object],
        *,
        on_lost: Callable[[str], None] | None = None,
    ) -> tuple[Callable[[], None] | None, dict[str, object] | None]:
        """Claim one flow of the workspace while this process works on it: (release, None), or
        (None, what its holder wrote) when another process holds it.

        A lease (``lease.py``) renewed by a heartbeat: it survives the database restarting, a
        process killed with SIGKILL frees it within ``FLOWER_LEASE_S``, and ``on_lost`` is told
        the line that stops the run when it cannot be kept (taken over, or the store gone too long).
        """
        from .lease import FlowLease

        if self._dedicated is None:
            raise PostgresStoreError("this run book cannot hold a flow")
        import psycopg

        lease = FlowLease(
            self._dedicated,
            f"{self._s}.flows",
            workspace,
            flow,
            holder,
            where=self.where,
            url=self._url,
            on_lost=on_lost,
        )
        try:
            other = lease.take()
        except psycopg.Error as exc:
            text = explain(exc, self._url)
            raise PostgresStoreError(f"run book: cannot claim the flow {flow!r}: {text}") from None
        if other is not None:
            return None, other
        return lease.release, None

    def manifest(self, workspace: str) -> list[dict[str, object]]:
        """Every run's rows for the workspace, oldest run first."""
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT row_data FROM {self._s}.manifest WHERE workspace = %s "
                "ORDER BY min(started_at) OVER (PARTITION BY run), run, position",
                (workspace,),
            ).fetchall()
        return [mapping(r[0]) for r in rows if isinstance(r[0], dict)]


def _dedicated(url: str) -> psycopg.Connection[TupleRow]:
    """A connection of its own (not pooled), kept alive across hours of idleness."""
    import psycopg

    try:
        return psycopg.connect(
            url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S, keepalives=1, keepalives_idle=60
        )
    except psycopg.Error as exc:
        raise PostgresStoreError(
            f"session store {redact_url(url)}: {explain(exc, url)}",
            transient=isinstance(exc, psycopg.OperationalError),
            reason=reason_of(exc, url),
        ) from None


def read_lineage(url: str, workspace: str, *, schema: str = "flower") -> dict[str, object] | None:
    """The workspace's lineage in a store, read without creating anything; None if there is none
    (no schema yet, no row) or the store cannot be reached (a read-only probe never fails)."""
    import psycopg

    if not _SCHEMA_NAME.match(schema):
        return None
    try:
        with psycopg.connect(
            check_store_url(url), autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S
        ) as conn:
            found = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".lineages',)).fetchone()
            if found is None or found[0] is None:
                return None

            @contextmanager
            def same() -> Iterator[psycopg.Connection[TupleRow]]:
                yield conn

            return PostgresRunBook(same, f'"{schema}"').lineage(workspace)
    except (psycopg.Error, ValueError):
        return None
