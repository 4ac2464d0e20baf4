"""The fleet's books in PostgreSQL: runs, who executed them when, their story, their questions.

One schema (``flower_fleet`` unless told otherwise) holds these tables beside the job engine's
own (procrastinate's ``procrastinate_*``, created in the same schema by ``ensure``). The job
engine decides who runs what; these tables say what a person asks about: a run's state and
latest note, its events, its questions and their answers, and every execution interval
``(run, worker, started, ended)``, so that "never two at once" can be checked from the store.

Every time is the database's clock (``clock_timestamp()``), never a worker's: machines' clocks
disagree, the database's is one. Synchronous psycopg: the commands are short-lived, and the
worker calls these from threads.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, TypeAlias

from ..base.loose import integer, items, mapping, text
from ..stores.urls import check_store_url, redact_text, redact_url
from .model import (
    ACTIVE,
    Execution,
    FleetError,
    Note,
    Outcome,
    RunDetail,
    RunEvent,
    RunQuestion,
    RunRequest,
    RunState,
    RunSummary,
    branch_of,
)
from .notes import DB_UNREACHABLE, SCHEMA_NEWER

if TYPE_CHECKING:
    import psycopg

__all__ = ["FLEET_SCHEMA", "FleetBook", "new_run_id"]

# A row as the database hands it: each column is read through flower.base.loose where it is used
Row: TypeAlias = "tuple[object, ...]"

FLEET_SCHEMA = "flower_fleet"
SCHEMA_VERSION = 1
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_DDL_LOCK = 0x666C6565745F  # "fleet_": one creator of the schema at a time
_CONNECT_TIMEOUT_S = 15

_DDL = """
CREATE TABLE IF NOT EXISTS {s}.fleet_version (
    id      integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.runs (
    id          text PRIMARY KEY,
    job         bigint,
    repository  text  NOT NULL,
    ref         text  NOT NULL,
    request     text  NOT NULL,
    options     jsonb NOT NULL,
    state       text  NOT NULL,
    note        jsonb,
    outcome     jsonb,
    base        text  NOT NULL DEFAULT '',
    worker      text  NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS runs_by_state ON {s}.runs (state, created_at);
CREATE TABLE IF NOT EXISTS {s}.executions (
    id         bigserial PRIMARY KEY,
    run        text NOT NULL REFERENCES {s}.runs (id) ON DELETE CASCADE,
    worker     text NOT NULL,
    host       text NOT NULL,
    pid        integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    alive_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at   timestamptz,
    reason     text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS executions_by_run ON {s}.executions (run, started_at);
CREATE TABLE IF NOT EXISTS {s}.events (
    seq    bigserial PRIMARY KEY,
    run    text NOT NULL REFERENCES {s}.runs (id) ON DELETE CASCADE,
    at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    worker text NOT NULL DEFAULT '',
    line   text NOT NULL DEFAULT '',
    note   jsonb
);
CREATE INDEX IF NOT EXISTS events_by_run ON {s}.events (run, seq);
CREATE TABLE IF NOT EXISTS {s}.questions (
    id          bigserial PRIMARY KEY,
    run         text NOT NULL REFERENCES {s}.runs (id) ON DELETE CASCADE,
    execution   bigint,
    ask         text NOT NULL,
    question    text NOT NULL,
    options     jsonb NOT NULL DEFAULT '[]',
    asked_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    state       text NOT NULL DEFAULT 'waiting',
    answer      text NOT NULL DEFAULT '',
    answered_at timestamptz
);
CREATE INDEX IF NOT EXISTS questions_by_run ON {s}.questions (run, id);
"""

# The job engine notifies its workers of a new job only when one is inserted; a job put back to
# `todo` (a handback, a dead worker's job retried) would wait for their next poll. This trigger
# says it the way the engine says an insert, so a free worker takes it at once.
_REQUEUED_NOTIFY = """
CREATE OR REPLACE FUNCTION {s}.flower_notify_job_requeued() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text := json_build_object('type', 'job_inserted', 'job_id', NEW.id)::text;
BEGIN
    PERFORM pg_notify('procrastinate_queue_v1#' || NEW.queue_name, payload);
    PERFORM pg_notify('procrastinate_any_queue_v1', payload);
    RETURN NEW;
END;
$$;
DROP TRIGGER IF EXISTS flower_job_requeued ON {s}.procrastinate_jobs;
CREATE TRIGGER flower_job_requeued AFTER UPDATE OF status ON {s}.procrastinate_jobs
    FOR EACH ROW WHEN (OLD.status <> 'todo' AND NEW.status = 'todo')
    EXECUTE FUNCTION {s}.flower_notify_job_requeued();
"""

_RUN_COLUMNS = (
    "r.id, r.state, r.repository, r.ref, r.request, r.worker, EXTRACT(EPOCH FROM r.created_at), "
    "EXTRACT(EPOCH FROM r.updated_at), r.note, r.outcome, "
    "(SELECT q.question FROM {s}.questions q WHERE q.run = r.id AND q.state = 'waiting' "
    "ORDER BY q.id DESC LIMIT 1)"
)


def new_run_id() -> str:
    """A run's id: short enough to type, unique enough for every fleet that shares a repository."""
    return secrets.token_hex(5)


def _epoch(value: object) -> float:
    """A time as EXTRACT(EPOCH ...) gives it (a Decimal); 0 for none."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return 0.0
    return float(value)


def _outcome(data: object) -> Outcome | None:
    found = mapping(data)
    branch = found.get("branch")
    if not isinstance(branch, str):
        return None
    return Outcome(
        branch=branch,
        commit=str(found.get("commit") or ""),
        pushed=bool(found.get("pushed")),
        patch=str(found.get("patch") or ""),
        host=str(found.get("host") or ""),
        goal_met=bool(found.get("goal_met")),
    )


def _state(text: object) -> RunState:
    for state in ("queued", "running", "waiting", "finished", "failed", "cancelled"):
        if text == state:
            return state
    return "failed"


def _int(value: object) -> int:
    """An integer column (NOT NULL in the schema); 0 if it is not one."""
    return integer(value) or 0


def _execution(
    worker: object, host: object, pid: object, started: object, ended: object, reason: object
) -> Execution:
    return Execution(text(worker), text(host), _int(pid), _epoch(started), _epoch(ended), text(reason))


class FleetBook:
    """The fleet's tables in one database; every method opens a connection of its own."""

    def __init__(self, url: str, *, schema: str = FLEET_SCHEMA) -> None:
        if not _SCHEMA_NAME.match(schema):
            raise ValueError(f"schema {schema!r} is not a plain lower-case SQL name")
        self.url = check_store_url(url)
        self.schema = schema
        self.where = redact_url(url)
        self._s = f'"{schema}"'

    # -- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def connect(self) -> Iterator[psycopg.Connection[Row]]:
        """A connection (autocommit); a database error is a FleetError saying where, without the
        password."""
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S) as conn:
                yield conn
        except psycopg.Error as exc:
            text = redact_text(str(exc).strip() or type(exc).__name__, self.url)
            raise FleetError(Note(DB_UNREACHABLE, {"where": self.where, "error": text})) from None

    def ensure(self) -> None:
        """Create the fleet's tables and the job engine's, unless they are there (one creator at a
        time across machines)."""
        from procrastinate.schema import SchemaManager

        with self.connect() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._s}")
            found = conn.execute(
                "SELECT to_regclass(%s), to_regclass(%s)",
                (f"{self._s}.fleet_version", f"{self._s}.procrastinate_jobs"),
            ).fetchone()
            if found is not None and found[0] is not None:
                row = conn.execute(f"SELECT version FROM {self._s}.fleet_version WHERE id = 1").fetchone()
                if row is not None and _int(row[0]) > SCHEMA_VERSION:
                    raise FleetError(Note(SCHEMA_NEWER, {"where": self.where, "version": _int(row[0])}))
            for statement in _DDL.format(s=self._s).split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                f"INSERT INTO {self._s}.fleet_version (id, version) VALUES (1, %s) "
                "ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                (SCHEMA_VERSION,),
            )
            if found is None or found[1] is None:
                # the job engine's schema, in ours: its functions find their tables by search_path
                conn.execute(f"SET LOCAL search_path TO {self._s}")
                conn.execute(SchemaManager.get_schema())
            conn.execute(_REQUEUED_NOTIFY.format(s=self._s))

    # -- runs --------------------------------------------------------------------------------

    def add_run(self, run_id: str, request: RunRequest) -> None:
        from psycopg.types.json import Jsonb

        with self.connect() as conn:
            conn.execute(
                f"INSERT INTO {self._s}.runs (id, repository, ref, request, options, state) "
                "VALUES (%s, %s, %s, %s, %s, 'queued')",
                (run_id, request.repository, request.ref, request.request, Jsonb(request.options())),
            )

    def set_job(self, run_id: str, job: int) -> None:
        with self.connect() as conn:
            conn.execute(f"UPDATE {self._s}.runs SET job = %s WHERE id = %s", (job, run_id))

    def drop_run(self, run_id: str) -> None:
        with self.connect() as conn:
            conn.execute(f"DELETE FROM {self._s}.runs WHERE id = %s", (run_id,))

    def job_of(self, run_id: str) -> tuple[int | None, RunState] | None:
        with self.connect() as conn:
            row = conn.execute(f"SELECT job, state FROM {self._s}.runs WHERE id = %s", (run_id,)).fetchone()
        return None if row is None else (integer(row[0]), _state(row[1]))

    def request_of(self, run_id: str) -> tuple[RunRequest, RunState, str] | None:
        """What the run asks for, its state, and the commit it started from ("" before it did)."""
        with self.connect() as conn:
            row = conn.execute(
                f"SELECT repository, ref, request, options, state, base FROM {self._s}.runs WHERE id = %s",
                (run_id,),
            ).fetchone()
        if row is None:
            return None
        request = RunRequest.of(text(row[0]), text(row[1]), text(row[2]), mapping(row[3]))
        return request, _state(row[4]), str(row[5] or "")

    def set_base(self, run_id: str, commit: str) -> None:
        with self.connect() as conn:
            conn.execute(f"UPDATE {self._s}.runs SET base = %s WHERE id = %s AND base = ''", (commit, run_id))

    def set_state(
        self,
        run_id: str,
        state: RunState,
        note: Note | None = None,
        *,
        worker: str | None = None,
        outcome: Outcome | None = None,
        unless: tuple[RunState, ...] = ("cancelled",),
    ) -> bool:
        """Move the run to ``state`` (with the note a person reads), unless it is in one of
        ``unless`` (a cancelled run stays cancelled whatever a worker says after); True if moved."""
        from psycopg.types.json import Jsonb

        sets = ["state = %s", "updated_at = clock_timestamp()"]
        params: list[object] = [state]
        if note is not None:
            sets.append("note = %s")
            params.append(Jsonb(note.as_json()))
        if worker is not None:
            sets.append("worker = %s")
            params.append(worker)
        if outcome is not None:
            sets.append("outcome = %s")
            params.append(Jsonb(outcome.__dict__))
        with self.connect() as conn:
            cur = conn.execute(
                f"UPDATE {self._s}.runs SET {', '.join(sets)} WHERE id = %s AND NOT state = ANY(%s)",
                (*params, run_id, list(unless)),
            )
            return cur.rowcount > 0

    def summaries(self, states: tuple[RunState, ...] | None = None) -> list[RunSummary]:
        where, params = ("WHERE r.state = ANY(%s)", [list(states)]) if states else ("", [])
        with self.connect() as conn:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS.format(s=self._s)} FROM {self._s}.runs r {where} "
                "ORDER BY r.created_at, r.id",
                params,
            ).fetchall()
        return [self._summary(row) for row in rows]

    def summary(self, run_id: str) -> RunSummary | None:
        with self.connect() as conn:
            row = conn.execute(
                f"SELECT {_RUN_COLUMNS.format(s=self._s)} FROM {self._s}.runs r WHERE r.id = %s", (run_id,)
            ).fetchone()
        return None if row is None else self._summary(row)

    def _summary(self, row: Row) -> RunSummary:
        return RunSummary(
            id=text(row[0]),
            state=_state(row[1]),
            repository=text(row[2]),
            ref=text(row[3]),
            request=text(row[4]),
            branch=branch_of(text(row[0])),
            worker=text(row[5]),
            created_at=_epoch(row[6]),
            updated_at=_epoch(row[7]),
            note=Note.of_json(row[8]),
            question=text(row[10]),
            outcome=_outcome(row[9]),
        )

    def detail(self, run_id: str) -> RunDetail | None:
        summary = self.summary(run_id)
        asked = self.request_of(run_id)
        if summary is None or asked is None:
            return None
        with self.connect() as conn:
            events = conn.execute(
                f"SELECT EXTRACT(EPOCH FROM at), worker, line, note FROM {self._s}.events "
                "WHERE run = %s ORDER BY seq",
                (run_id,),
            ).fetchall()
            executions = self._executions(conn, run_id)
            questions = conn.execute(
                f"SELECT id, question, options, EXTRACT(EPOCH FROM asked_at), state, answer "
                f"FROM {self._s}.questions WHERE run = %s ORDER BY id",
                (run_id,),
            ).fetchall()
        return RunDetail(
            summary=summary,
            request=asked[0],
            events=[RunEvent(_epoch(a), text(w), text(line), Note.of_json(n)) for a, w, line, n in events],
            executions=executions,
            questions=[
                RunQuestion(_int(i), text(q), [str(o) for o in items(opts)], _epoch(at), text(s), text(ans))
                for i, q, opts, at, s, ans in questions
            ],
        )

    # -- executions --------------------------------------------------------------------------

    def _executions(self, conn: psycopg.Connection[Row], run_id: str | None) -> list[Execution]:
        where, params = ("WHERE run = %s", [run_id]) if run_id is not None else ("", [])
        rows = conn.execute(
            "SELECT worker, host, pid, EXTRACT(EPOCH FROM started_at), EXTRACT(EPOCH FROM ended_at), "
            "reason, run "
            f"FROM {self._s}.executions {where} ORDER BY started_at, id",
            params,
        ).fetchall()
        return [_execution(w, h, p, s, e, r) for w, h, p, s, e, r, _run in rows]

    def intervals(self) -> dict[str, list[Execution]]:
        """Every run's execution intervals, oldest first (what proves that no run was executed by
        two workers at once)."""
        with self.connect() as conn:
            rows = conn.execute(
                f"SELECT run, worker, host, pid, EXTRACT(EPOCH FROM started_at), "
                f"EXTRACT(EPOCH FROM ended_at), reason FROM {self._s}.executions ORDER BY run, started_at, id"
            ).fetchall()
        out: dict[str, list[Execution]] = {}
        for run, w, h, p, s, e, r in rows:
            out.setdefault(text(run), []).append(_execution(w, h, p, s, e, r))
        return out

    def begin_execution(self, run_id: str, worker: str, pid: int) -> int:
        with self.connect() as conn:
            row = conn.execute(
                f"INSERT INTO {self._s}.executions (run, worker, host, pid) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (run_id, worker, socket.gethostname(), pid),
            ).fetchone()
        assert row is not None
        return _int(row[0])

    def end_execution(self, execution: int, reason: str) -> None:
        with self.connect() as conn:
            conn.execute(
                f"UPDATE {self._s}.executions SET ended_at = clock_timestamp(), "
                "alive_at = clock_timestamp(), reason = %s WHERE id = %s AND ended_at IS NULL",
                (reason, execution),
            )
            # its questions can no longer be read by it: an answer must wait for the next holder
            conn.execute(
                f"UPDATE {self._s}.questions SET state = 'gone' WHERE execution = %s AND state = 'waiting'",
                (execution,),
            )

    def beat(self, worker_id: int, executions: list[int]) -> None:
        """The worker is alive now: its heartbeat in the job engine (the engine's own query) and
        its executions'. On a connection of its own, not the engine's pool: after an outage a pool
        reconnects with a growing backoff, and a heartbeat stuck there would fence a worker whose
        database is back."""
        from procrastinate.sql import queries

        with self.connect() as conn:
            conn.execute(f"SET search_path TO {self._s}")
            conn.execute(queries["update_heartbeat"], {"worker_id": worker_id})
            if executions:
                conn.execute(
                    f"UPDATE {self._s}.executions SET alive_at = clock_timestamp() "
                    "WHERE id = ANY(%s) AND ended_at IS NULL",
                    (executions,),
                )

    def close_lost(self, run_id: str, *, fence_s: float) -> list[str]:
        """End the open executions of a run whose worker stopped heartbeating: at the latest moment
        it could still have been working (its last sign of life plus the time a silent worker
        takes to stop by itself). The workers that lost it."""
        with self.connect() as conn:
            rows = conn.execute(
                f"UPDATE {self._s}.executions SET reason = 'lost', "
                "ended_at = LEAST(clock_timestamp(), alive_at + make_interval(secs => %s)) "
                "WHERE run = %s AND ended_at IS NULL RETURNING worker, id",
                (fence_s, run_id),
            ).fetchall()
            ids = [_int(r[1]) for r in rows]
            if ids:
                conn.execute(
                    f"UPDATE {self._s}.questions SET state = 'gone' "
                    "WHERE execution = ANY(%s) AND state = 'waiting'",
                    (ids,),
                )
        return [str(r[0]) for r in rows]

    # -- events ------------------------------------------------------------------------------

    def add_events(self, run_id: str, worker: str, items: list[tuple[str, Note | None]]) -> None:
        """Lines of the run's story, in order: (a rendered line, or "" with a note)."""
        if not items:
            return
        from psycopg.types.json import Jsonb

        with self.connect() as conn:
            conn.cursor().executemany(
                f"INSERT INTO {self._s}.events (run, worker, line, note) VALUES (%s, %s, %s, %s)",
                [(run_id, worker, line, Jsonb(n.as_json()) if n else None) for line, n in items],
            )

    def note(self, run_id: str, worker: str, note: Note) -> None:
        self.add_events(run_id, worker, [("", note)])

    # -- questions ---------------------------------------------------------------------------

    def ask(self, run_id: str, execution: int, ask: str, question: str, options: list[str]) -> int:
        """A question the run asks now; the run shows as waiting until it is settled."""
        with self.connect() as conn, conn.transaction():
            row = conn.execute(
                f"INSERT INTO {self._s}.questions (run, execution, ask, question, options) "
                "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                (run_id, execution, ask, question, json.dumps(options, ensure_ascii=False)),
            ).fetchone()
            conn.execute(
                f"UPDATE {self._s}.runs SET state = 'waiting', updated_at = clock_timestamp() "
                "WHERE id = %s AND state = 'running'",
                (run_id,),
            )
        assert row is not None
        return _int(row[0])

    def carried_answer(self, run_id: str, question: str) -> str | None:
        """An answer given to the same question while the run moved to another worker (its old
        holder went away before reading it): the run asks again and gets it at once."""
        with self.connect() as conn:
            row = conn.execute(
                f"SELECT id, answer FROM {self._s}.questions WHERE run = %s AND question = %s "
                "AND state = 'answered' AND answer <> '' ORDER BY id DESC LIMIT 1",
                (run_id, question),
            ).fetchone()
            if row is None:
                return None
            conn.execute(f"UPDATE {self._s}.questions SET state = 'delivered' WHERE id = %s", (row[0],))
        return str(row[1])

    def answers(self, execution: int) -> list[tuple[str, str]]:
        """Answers given to this execution's waiting questions: (ask id, answer)."""
        with self.connect() as conn:
            rows = conn.execute(
                f"SELECT ask, answer FROM {self._s}.questions WHERE execution = %s AND state = 'answered'",
                (execution,),
            ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def settle(self, execution: int, ask: str, state: str) -> None:
        """The run read the answer (``delivered``) or went on without one (``settled``)."""
        with self.connect() as conn, conn.transaction():
            found = conn.execute(
                f"UPDATE {self._s}.questions SET state = %s WHERE execution = %s AND ask = %s "
                "AND state IN ('waiting', 'answered') RETURNING run",
                (state, execution, ask),
            ).fetchone()
            if found is not None:
                conn.execute(
                    f"UPDATE {self._s}.runs SET state = 'running', updated_at = clock_timestamp() "
                    f"WHERE id = %s AND state = 'waiting' AND NOT EXISTS (SELECT 1 FROM {self._s}.questions "
                    "WHERE run = %s AND state = 'waiting')",
                    (found[0], found[0]),
                )

    def answer(self, run_id: str, text: str) -> str | None:
        """Answer the run's waiting question (the latest one asked); the question, or None when
        none waits. An answer to a question whose worker went away waits for the next holder."""
        with self.connect() as conn, conn.transaction():
            row = conn.execute(
                f"SELECT id, question FROM {self._s}.questions "
                "WHERE run = %s AND state IN ('waiting', 'gone') "
                "ORDER BY (state = 'waiting') DESC, id DESC LIMIT 1 FOR UPDATE",
                (run_id,),
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                f"UPDATE {self._s}.questions SET state = 'answered', answer = %s, "
                "answered_at = clock_timestamp() WHERE id = %s",
                (text, row[0]),
            )
        return str(row[1])

    def active(self) -> list[RunSummary]:
        return self.summaries(ACTIVE)
