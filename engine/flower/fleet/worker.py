"""`flower worker`: take runs from the queue, N at a time, on any machine that reaches the database.

The job engine (procrastinate) hands out jobs: one ``doing`` job per run, never two jobs of one
run at once (the run's id is the job's lock). On top of it this worker keeps three promises:

- **A dead worker's runs are taken over within ``takeover_s``.** Every worker heartbeats every
  ``takeover_s / 12`` (the engine's ``update_heartbeat``) and its executions' ``alive_at``. One
  worker of the fleet at a time is the reaper (it holds a session advisory lock: when it dies,
  its connection closes and another worker becomes the reaper): every ``takeover_s / 12`` it asks
  the engine for the jobs of workers silent for ``takeover_s / 2`` (``get_stalled_jobs``),
  closes their executions and retries them (``retry_job``); a free worker fetches them at once (a
  requeue notifies, ``records.py``). Silence to continuing elsewhere: under ``0.6 * takeover_s``
  plus the checkout.
- **A worker that cannot heartbeat stops by itself first.** After ``takeover_s / 3`` without one
  successful heartbeat, it stops its runs (fenced): before anyone may take them over at
  ``takeover_s / 2``. With the flow claim of the shared store (``core/shared.py``) as the second
  lock, a run is never executed by two workers at once.
- **SIGTERM hands the runs back at once.** The worker takes no new run, stops each flow where it
  is, pushes its files to the run's branch and lets the engine queue the run again with no delay:
  a free worker continues the same sessions from the store at once. (A round
  can take hours; a machine being shut down cannot wait for it.)

The database going away is no crash: the engine's worker stops, this one says so in one line,
fences its runs when the outage lasts, and connects again with a growing delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..base.i18n import N_, _
from ..core.display import first_line
from .execute import RunExecution, WorkerSide
from .model import FleetError, Note, branch_of
from .notes import DB_BACK, DB_LOST, FENCED, LOST
from .queue import TASK, HandedBack, engine_error, make_app, retry_strategy
from .records import FLEET_SCHEMA, FleetBook

if TYPE_CHECKING:
    from procrastinate import App
    from procrastinate.job_context import JobContext

__all__ = ["FleetWorker", "WorkerSettings"]


class Engine(Protocol):
    """What this worker uses of procrastinate's Worker (whose methods are not annotated)."""

    @property
    def worker_id(self) -> int | None: ...

    def stop(self) -> None: ...

    def run(self) -> Coroutine[object, object, None]: ...


STARTED = N_(
    ". worker {name} 开工:同时跑 {concurrency} 个 run,心跳停 {takeover:.0f} 秒内有人接手,工作目录 {work}"
)
TOOK = N_("> {name} 接了 run {run}")
LET_GO = N_("< {name} 放下了 run {run}")
STOPPING = N_(". {name} 收到停止信号:不再接新 run,手上的交回队列")
STOPPED = N_(". worker {name} 停了")
TOOK_OVER = N_("~ run {run} 的 worker 没了心跳({workers}):交回队列")

_REAPER_LOCK = 0x666C656574_72  # "fleet" + "r": one reaper for the whole fleet at a time
_HEARTBEAT_OFF = 10.0**7  # the engine's own heartbeat loop: off, this worker heartbeats itself
_MAX_DELAY_S = 30.0


@dataclass(frozen=True)
class WorkerSettings:
    url: str
    work: Path
    name: str = ""
    concurrency: int = 1
    takeover_s: float = 60.0
    schema: str = FLEET_SCHEMA

    @property
    def heartbeat_s(self) -> float:
        return self.takeover_s / 12

    @property
    def stale_s(self) -> float:
        return self.takeover_s / 2

    @property
    def fence_s(self) -> float:
        return self.takeover_s / 3

    @property
    def who(self) -> str:
        return self.name or f"{socket.gethostname()}-{os.getpid()}"


def quiet_libraries() -> None:
    """The job engine and the connection pools log every failed attempt (with tracebacks) while
    the database is away; the worker says it in one line of its own, so theirs stay unsaid. So
    does the session store's outage line (flower.store): the fleet's database is the same one."""
    for name in ("procrastinate", "psycopg", "psycopg.pool", "flower.store"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


class FleetWorker:
    def __init__(self, settings: WorkerSettings, *, say: Callable[[str], None]) -> None:
        self.settings = settings
        self.name = settings.who
        self.say = say
        self.book = FleetBook(settings.url, schema=settings.schema)
        self.side = WorkerSide(
            book=self.book,
            store=settings.url,
            name=self.name,
            work=settings.work.expanduser().resolve(),
            busy_delay_s=settings.stale_s,
        )
        self.running: dict[str, RunExecution] = {}
        self._stopping = False
        self._stopped = asyncio.Event()
        self._engine: Engine | None = None
        self._beat = time.monotonic()
        self._db_lost = False

    # -- life --------------------------------------------------------------------------------

    async def run(self) -> int:
        """Work until SIGTERM or SIGINT (then hand the runs back); the exit code."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.hand_back)
        quiet_libraries()
        self.side.work.mkdir(parents=True, exist_ok=True)
        self.say(
            _(STARTED).format(
                name=self.name,
                concurrency=self.settings.concurrency,
                takeover=self.settings.takeover_s,
                work=self.side.work,
            )
        )
        delay = 1.0
        try:
            while not self._stopping:
                try:
                    await self._session()
                    delay = 1.0
                except Exception as exc:  # the database (or the engine on it) went away
                    if self._stopping:
                        break
                    self._lost(exc, delay)
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(delay):
                            await self._stopped.wait()
                    delay = min(_MAX_DELAY_S, delay * 2)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        self.say(_(STOPPED).format(name=self.name))
        return 0

    def hand_back(self) -> None:
        """Stop taking runs and hand the ones in hand back to the queue (SIGTERM, SIGINT)."""
        if not self._stopping:
            self.say(_(STOPPING).format(name=self.name))
        self._stopping = True
        self._stopped.set()
        if self._engine is not None:
            self._engine.stop()
        for execution in list(self.running.values()):
            execution.stop("handback")

    def _lost(self, exc: BaseException, delay: float) -> None:
        """The database is gone: one line per outage (whoever notices first), however often the
        worker tries again."""
        if self._db_lost:
            return
        self._db_lost = True
        if isinstance(exc, FleetError):  # the driver's reason, already without the password
            error = str(exc.note.fields.get("error") or exc.note.text())
        else:
            error = engine_error(exc, self.settings.url)
        self.say(_(DB_LOST).format(where=self.book.where, error=first_line(error, 200), delay=delay))

    def _back(self) -> None:
        if self._db_lost:
            self._db_lost = False
            self.say(_(DB_BACK).format(where=self.book.where))

    async def _session(self) -> None:
        """One connected stretch: the engine's worker, the heartbeat and the reaper."""
        from procrastinate.worker import Worker

        await asyncio.to_thread(self.book.ensure)
        self._back()
        app = self._app()
        async with app.open_async():
            poll = max(0.5, self.settings.heartbeat_s)
            engine: Engine = Worker(
                app,
                name=self.name,
                concurrency=self.settings.concurrency,
                fetch_job_polling_interval=poll,
                abort_job_polling_interval=poll,
                # the engine's heartbeat loop stops the whole worker at the first failed beat;
                # this worker beats itself and tolerates a blip, fencing its runs if it lasts
                update_heartbeat_interval=_HEARTBEAT_OFF,
                stalled_worker_timeout=self.settings.stale_s,
                install_signal_handlers=False,
                additional_context={"fleet": self},
            )
            self._engine = engine
            if self._stopping:
                engine.stop()
            self._beat = time.monotonic()
            work = asyncio.create_task(engine.run(), name="flower-fleet-engine")
            side = [
                asyncio.create_task(self._heartbeat(engine), name="flower-fleet-heartbeat"),
                asyncio.create_task(self._reaper(app), name="flower-fleet-reaper"),
            ]
            try:
                await work
            finally:
                self._engine = None
                for task in side:
                    task.cancel()
                for task in side:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task

    def _app(self) -> App:
        app = make_app(self.settings.url, self.settings.schema, pool_size=self.settings.concurrency + 4)

        async def run(context: JobContext, run_id: str) -> None:
            await self._job(context, run_id)

        app.task(name=TASK, pass_context=True, retry=retry_strategy())(run)
        return app

    async def _job(self, context: JobContext, run_id: str) -> None:
        if self._stopping:
            raise HandedBack(run_id)  # fetched as the worker stops: back at once
        execution = RunExecution(self.side, run_id, context)
        self.running[run_id] = execution
        self.say(_(TOOK).format(name=self.name, run=run_id))
        try:
            await execution()
        finally:
            self.running.pop(run_id, None)
            self.say(_(LET_GO).format(name=self.name, run=run_id))

    # -- the three promises ------------------------------------------------------------------

    async def _heartbeat(self, engine: Engine) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_s)
            try:
                if engine.worker_id is not None:
                    held = [e.execution for e in self.running.values() if e.execution]
                    # bounded: a database that hangs must not hold the fencing check below
                    async with asyncio.timeout(self.settings.heartbeat_s):
                        await asyncio.to_thread(self.book.beat, engine.worker_id, held)
                    self._beat = time.monotonic()
                    self._back()
            except Exception as exc:
                self._lost(exc, self.settings.heartbeat_s)  # fenced below if it lasts
            if time.monotonic() - self._beat > self.settings.fence_s:
                self._fence()

    def _fence(self) -> None:
        for run_id, execution in list(self.running.items()):
            if execution.stopping is None:
                self.say(Note(FENCED, {"worker": self.name}).text() + f" ({run_id})")
                execution.stop("fenced")

    async def _reaper(self, app: App) -> None:
        """Take over the runs of silent workers, while this worker is the fleet's reaper."""
        import psycopg

        conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        try:
            while True:
                await asyncio.sleep(self.settings.heartbeat_s)
                try:
                    if conn is None or conn.closed:
                        conn = await psycopg.AsyncConnection.connect(
                            self.settings.url, autocommit=True, connect_timeout=15
                        )
                        row = await (
                            await conn.execute("SELECT pg_try_advisory_lock(%s)", (_REAPER_LOCK,))
                        ).fetchone()
                        if row is None or not row[0]:
                            await conn.close()
                            conn = None
                            continue
                    await self._reap(app)
                except Exception:
                    if conn is not None:
                        with contextlib.suppress(Exception):
                            await conn.close()
                    conn = None
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()

    async def _reap(self, app: App) -> None:
        stalled = await app.job_manager.get_stalled_jobs(
            task_name=TASK, seconds_since_heartbeat=self.settings.stale_s
        )
        for job in stalled:
            run_id = str(job.task_kwargs.get("run_id", ""))
            # closed while the job is still `doing`: nobody else can have started it yet
            lost = await asyncio.to_thread(self.book.close_lost, run_id, fence_s=self.settings.fence_s)
            try:
                await app.job_manager.retry_job(job)
            except Exception:
                continue  # it ended meanwhile, or was cancelled
            note = Note(LOST, {"workers": ", ".join(lost) or "?", "branch": branch_of(run_id)})
            await asyncio.to_thread(
                self.book.set_state, run_id, "queued", note, unless=("cancelled", "finished", "failed")
            )
            await asyncio.to_thread(self.book.note, run_id, self.name, note)
            self.say(_(TOOK_OVER).format(run=run_id, workers=", ".join(lost) or "?"))
