"""A run's claim on one flow of a shared store: a lease row that a heartbeat keeps alive.

A session advisory lock dies with its connection, and a database restart ends every
connection: the claim would be gone while the run goes on. A lease is a row instead
(``flows``: who holds it, a holder id of its own, an expiry on the database's clock):

- taken with one statement (``INSERT ... ON CONFLICT ... WHERE`` the row is expired or already
  ours), so two machines never both succeed;
- renewed by a heartbeat on a connection and a thread of its own, every ``lease / 6`` seconds
  (5 at most);
  after any reconnect the renewal is the re-take: it succeeds only if the row still names this
  holder, and a row taken over by someone else stops the run (``on_lost``), never lets it go on;
- a holder that dies stops renewing, and its lease expires within ``FLOWER_LEASE_S`` seconds
  (60 by default): then another machine may take the flow over. On the machine it died on
  (same host, same process namespace, its pid gone) the lease is taken over at once;
- a holder that cannot reach the database waits ``FLOWER_STORE_OUTAGE_S`` seconds at most
  (capped at half the lease) and then stops its run by itself, before its lease can expire
  and be taken: the run is fenced, two machines never work on it at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..base.i18n import N_, _
from ..base.loose import mapping
from .pgerrors import one_line

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = [
    "LEASE_VAR",
    "OUTAGE_VAR",
    "FlowLease",
    "Outage",
    "lease_seconds",
    "outage_of",
    "outage_seconds",
    "reason_of",
]

log = logging.getLogger("flower.store")

LEASE_VAR = "FLOWER_LEASE_S"
OUTAGE_VAR = "FLOWER_STORE_OUTAGE_S"
DEFAULT_LEASE_S = 60.0
DEFAULT_OUTAGE_S = 30.0
_MIN_LEASE_S = 3.0
_MAX_BEAT_S = 5.0  # a long lease still notices a lost one soon

DOWN = N_("! 会话库 {where} 断了:{reason};最多等 {bound:.0f} 秒({var}),连回来就接着做")
BACK = N_(". 会话库 {where} 又连上了,接着做")
GAVE_UP = N_(
    "会话库 {where} 连不上超过 {bound:.0f} 秒({reason}):这个 run 停下了,免得别的机器接手后两边一起做。"
    "库恢复后再跑一次 flower,会接着上次"
)
TAKEN = N_(
    "流程「{flow}」在会话库里已经被 {host} 上的另一个 flower 接手了({who}):这个 run 停下了,不再往库里写。"
    "等那边做完再跑一次 flower"
)


def _seconds(var: str, default: float) -> float:
    try:
        value = float(os.environ.get(var, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


def lease_seconds() -> float:
    """How long a lease lives without a renewal (``FLOWER_LEASE_S``): a dead holder's bound."""
    return max(_MIN_LEASE_S, _seconds(LEASE_VAR, DEFAULT_LEASE_S))


def outage_seconds(lease: float | None = None) -> float:
    """How long a run waits for its store (``FLOWER_STORE_OUTAGE_S``), at most half its lease: a
    run that gives up must stop before its lease can expire."""
    lease = lease_seconds() if lease is None else lease
    return min(_seconds(OUTAGE_VAR, DEFAULT_OUTAGE_S), lease / 2)


def reason_of(exc: BaseException, url: str | None = None) -> str:
    """The driver's reason, on one line, with the URL's secrets masked (a store's own error
    carries it as ``reason``: its message already names the store)."""
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) and reason else one_line(exc, url)


class Outage:
    """One store's outage, said once when it begins and once when it ends (the store's writes and
    the heartbeat share it: one line each, however many of them notice)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._since: float | None = None
        self._lock = threading.Lock()

    @property
    def bound(self) -> float:
        return outage_seconds()

    @property
    def active(self) -> bool:
        """The store is known to be away (the last try failed)."""
        with self._lock:
            return self._since is not None

    def down(self, reason: str) -> float:
        """Seconds since the outage began (0 when it begins now, said then)."""
        now = time.monotonic()
        with self._lock:
            if self._since is None:
                self._since = now
                log.warning(_(DOWN).format(where=self.where, reason=reason, bound=self.bound, var=OUTAGE_VAR))
            return now - self._since

    def up(self) -> None:
        with self._lock:
            was, self._since = self._since, None
        if was is not None:
            log.warning(_(BACK).format(where=self.where))

    def gave_up(self, reason: str) -> str:
        return _(GAVE_UP).format(where=self.where, bound=self.bound, reason=reason)


_OUTAGES: dict[str, Outage] = {}
_OUTAGES_LOCK = threading.Lock()


def outage_of(where: str) -> Outage:
    with _OUTAGES_LOCK:
        return _OUTAGES.setdefault(where, Outage(where))


_TAKE = """
INSERT INTO {t} (workspace, flow, holder, holder_id, expires_at)
VALUES (%s, %s, %s, %s, clock_timestamp() + make_interval(secs => %s))
ON CONFLICT (workspace, flow) DO UPDATE
SET holder = excluded.holder, holder_id = excluded.holder_id, expires_at = excluded.expires_at
WHERE {t}.holder_id = excluded.holder_id OR {t}.expires_at IS NULL OR {t}.expires_at < clock_timestamp()
RETURNING holder_id
"""
_RENEW = (
    "UPDATE {t} SET expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE workspace = %s AND flow = %s AND holder_id = %s RETURNING 1"
)
_HOLDER = "SELECT holder FROM {t} WHERE workspace = %s AND flow = %s"
_HOLDER_ID = "SELECT holder, holder_id FROM {t} WHERE workspace = %s AND flow = %s"
# a holder that died on this very machine: its lease is taken at once, and only if it is still its
_TAKE_FROM_DEAD = (
    "UPDATE {t} SET holder = %s, holder_id = %s, expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE workspace = %s AND flow = %s AND holder_id = %s RETURNING 1"
)
_RELEASE = "DELETE FROM {t} WHERE workspace = %s AND flow = %s AND holder_id = %s"


def _pid_namespace() -> str:
    """This machine and its process namespace: where a pid means one process (containers of one
    host name do not share one)."""
    import socket

    try:
        ns = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        ns = ""
    return f"{socket.gethostname()}/{ns}"


def _died_here(holder: dict[str, object]) -> bool:
    """Whether the holder ran where this process runs and its process is gone (killed, crashed):
    nobody needs to wait for its lease to expire."""
    pid = holder.get("pid")
    if (
        not isinstance(pid, int)
        or pid <= 0
        or holder.get("pidns") != _pid_namespace()
        or not holder.get("pidns")
    ):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, another user's
    return False


class FlowLease:
    """One flow of one workspace, held in ``table`` while this process works on it.

    ``connect`` opens a connection of the lease's own (autocommit); ``on_lost`` is told, once,
    from the heartbeat's thread, the line that stopped the run.
    """

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[TupleRow]],
        table: str,
        workspace: str,
        flow: str,
        note: dict[str, object],
        *,
        where: str,
        url: str | None = None,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        self._connect = connect
        self._t = table
        self.workspace, self.flow, self.note = workspace, flow, note
        self.where, self._url = where, url
        self.on_lost = on_lost
        self.holder_id = uuid.uuid4().hex
        self.ttl = lease_seconds()
        self.beat = min(self.ttl / 6, _MAX_BEAT_S)
        self.lost: str | None = None
        self._conn: psycopg.Connection[TupleRow] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- taking and letting go -------------------------------------------------------------

    def take(self) -> dict[str, object] | None:
        """Take the lease and start the heartbeat: None, or what its live holder wrote."""
        from psycopg.types.json import Jsonb

        conn = self._connect()
        note = {**self.note, "pidns": _pid_namespace()}
        try:
            row = conn.execute(
                _TAKE.format(t=self._t),
                (self.workspace, self.flow, Jsonb(note), self.holder_id, self.ttl),
            ).fetchone()
            if row is None:
                found = conn.execute(_HOLDER_ID.format(t=self._t), (self.workspace, self.flow)).fetchone()
                theirs = mapping(found[0]) if found is not None else {}
                taken_over = (
                    found is not None
                    and _died_here(theirs)
                    and conn.execute(
                        _TAKE_FROM_DEAD.format(t=self._t),
                        (Jsonb(note), self.holder_id, self.ttl, self.workspace, self.flow, found[1]),
                    ).fetchone()
                    is not None
                )
                if not taken_over:
                    conn.close()
                    return theirs
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._thread = threading.Thread(target=self._heartbeat, name="flower-lease", daemon=True)
        self._thread.start()
        return None

    def release(self) -> None:
        """Stop the heartbeat and delete the row if it is still ours (a lost lease is left alone)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.ttl)
        try:
            if self.lost is None:
                conn = self._conn if self._conn is not None and not self._conn.closed else self._connect()
                self._conn = conn
                conn.execute(_RELEASE.format(t=self._t), (self.workspace, self.flow, self.holder_id))
        except Exception:
            pass  # unrenewed, the lease expires by itself within its bound
        finally:
            self._close()

    # -- the heartbeat -----------------------------------------------------------------------

    def _heartbeat(self) -> None:
        import psycopg

        outage = outage_of(self.where)
        last_ok = time.monotonic()
        failing_since: float | None = None
        while not self._stop.wait(self.beat if failing_since is None else min(1.0, self.beat)):
            try:
                held = self._renew()
            except (psycopg.Error, RuntimeError, OSError) as exc:  # the store's own error is a RuntimeError
                self._close()
                reason = reason_of(exc, self._url)
                now = time.monotonic()
                failing_since = failing_since if failing_since is not None else now
                outage.down(reason)
                # the lease may not outlive the wait: stop before anyone else could take it
                if now - failing_since > outage.bound or now - last_ok > self.ttl * 0.8:
                    self._lose(outage.gave_up(reason))
                    return
                continue
            if not held:
                self._lose(self._taken())
                return
            last_ok, failing_since = time.monotonic(), None
            outage.up()

    def _renew(self) -> bool:
        conn = self._conn
        if conn is None or conn.closed:
            conn = self._conn = self._connect()
        row = conn.execute(
            _RENEW.format(t=self._t), (self.ttl, self.workspace, self.flow, self.holder_id)
        ).fetchone()
        return row is not None

    def _taken(self) -> str:
        found: dict[str, object] = {}
        try:
            conn = self._conn  # None: the heartbeat closed it, nobody to ask
            if conn is not None:
                row = conn.execute(_HOLDER.format(t=self._t), (self.workspace, self.flow)).fetchone()
                found = mapping(row[0]) if row is not None else {}
        except Exception:
            pass  # who took it is a courtesy; that it is gone is what counts
        who = f"{found.get('who') or '?'}, pid {found.get('pid') or '?'}"
        return _(TAKEN).format(flow=self.flow, host=found.get("host") or _("另一台机器"), who=who)

    def _lose(self, line: str) -> None:
        self.lost = line
        self._close()
        if self.on_lost is not None:
            try:
                self.on_lost(line)
            except Exception:
                log.exception("flower: telling the run its lease was lost")

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
