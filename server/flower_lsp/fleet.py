"""The fleet in the editor: flower/fleet/runs, flower/fleet/show, flower.fleetAnswer,
flower.fleetCancel, and flower/fleetUpdate to a client that declares `fleet`.

The fleet lives in the database of the folder's shared store (its `store` option, else
$FLOWER_STORE), and `flower.fleet.Fleet` is the whole API used: the same calls as `flower fleet`.
Its database calls are blocking psycopg, so each one runs in a thread; what it says goes out as
the protocol's payloads, built in one place (`run_of`, `detail_of`), with the store's password
masked by the engine (`Fleet.where`, its errors). Nothing a person can cause (no store, no such
run, a database that does not answer) escapes a handler: it is the result's `message`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from flower.base.i18n import N_, _
from flower.core.shared import store_setting
from flower.stores.urls import is_store_url

from . import protocol as p
from . import wire
from .common import Folder, parse_args, parse_params
from .host import Feature, FlowerServer

if TYPE_CHECKING:
    from flower.fleet import Fleet, RunDetail, RunSummary

log = logging.getLogger(__name__)

T = TypeVar("T")

NO_STORE = N_(
    "这个文件夹没配共享库:队列在 PostgreSQL 库里,设置 flower.store(postgresql://…)或环境变量 FLOWER_STORE"
)
NOT_INSTALLED = N_("这个 flower 没装队列的部分(flower[fleet]):{error}")
ANSWERED = N_("回答了 run {run} 的提问「{question}」;握着它的 worker 会读到")
CANCELLED = N_("run {run} 已取消")

# how often the fleets a client shows are looked at for changes (flower/fleetUpdate): a run's
# state changes on other machines, and nothing tells this server but the database
POLL_S = 3.0


class Unavailable(Exception):
    """Why a folder has no fleet to reach (no store, the fleet not installed, the database
    unreachable): `configured` and a line for the person."""

    def __init__(self, configured: bool, where: str, message: str) -> None:
        super().__init__(message)
        self.configured, self.where, self.message = configured, where, message


class Fleets(Feature):
    """The fleet requests and commands, and the watch behind flower/fleetUpdate."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self._opened: dict[str, Fleet] = {}  # store URL -> its fleet, its tables ensured once
        self._watched: dict[str, p.FleetRunsResult] = {}  # folder URI -> the runs last sent
        self._watch: asyncio.Task[None] | None = None

    def register(self) -> None:
        @self.server.feature(p.FLEET_RUNS)
        async def flower_fleet_runs(ls: FlowerServer, params: object) -> object:
            args = parse_params(p.FleetParams, params, p.FLEET_RUNS)
            folder = self.server.folder_arg(args.folder)
            result = await self.runs_of(folder)
            if self.server.client.can.flower.fleet:
                self._follow(folder, result)
            return wire.to_json(result)

        @self.server.feature(p.FLEET_SHOW)
        async def flower_fleet_show(ls: FlowerServer, params: object) -> object:
            args = parse_params(p.FleetShowParams, params, p.FLEET_SHOW)
            return wire.to_json(await self.show(self.server.folder_arg(args.folder), args.run))

        @self.server.command(p.FLEET_ANSWER)
        async def flower_fleet_answer(ls: FlowerServer, *args: object) -> object:
            a = parse_args(p.FleetAnswerArgs, p.FLEET_ANSWER, args)
            result = await self.act(self.server.folder_arg(a.folder), lambda fleet: _answer(fleet, a))
            return self.server.client.reply(result)

        @self.server.command(p.FLEET_CANCEL)
        async def flower_fleet_cancel(ls: FlowerServer, *args: object) -> object:
            a = parse_args(p.FleetCancelArgs, p.FLEET_CANCEL, args)
            result = await self.act(self.server.folder_arg(a.folder), lambda fleet: _cancel(fleet, a))
            return self.server.client.reply(result)

    # -- the requests and commands ---------------------------------------------------------------
    async def runs_of(self, folder: Folder) -> p.FleetRunsResult:
        try:
            fleet, runs = await self._call(folder, lambda fleet: fleet.runs())
        except Unavailable as why:
            return p.FleetRunsResult(why.configured, why.where, why.message, [])
        return p.FleetRunsResult(True, fleet.where, "", [run_of(r) for r in runs])

    async def show(self, folder: Folder, run_id: str) -> p.FleetShowResult:
        try:
            fleet, detail = await self._call(folder, lambda fleet: fleet.show(run_id))
        except Unavailable as why:
            return p.FleetShowResult(why.configured, why.where, why.message, None, [], [], [])
        return detail_of(detail, fleet.where)

    async def act(self, folder: Folder, action: Callable[[Fleet], str]) -> p.CommandResult:
        """A command on the folder's fleet: its line for the person, or why it was not done; the
        fleets followed are looked at again at once, so a view shows what the command changed."""
        try:
            message = (await self._call(folder, action))[1]
        except Unavailable as why:
            return p.CommandResult(False, why.message)
        await self._look()
        return p.CommandResult(True, message)

    async def _call(self, folder: Folder, call: Callable[[Fleet], T]) -> tuple[Fleet, T]:
        """`call` on the folder's fleet, in a thread (blocking psycopg); a FleetError is
        Unavailable with its words."""
        fleet = await self._fleet(folder)
        from flower.fleet import FleetError
        from flower.fleet.notes import DB_UNREACHABLE

        try:
            return fleet, await asyncio.to_thread(call, fleet)
        except FleetError as exc:
            if exc.note.msgid == DB_UNREACHABLE:
                # opened again next time: a database restored or recreated needs its tables back
                self._opened = {url: f for url, f in self._opened.items() if f is not fleet}
            raise Unavailable(True, fleet.where, exc.note.text()) from None

    async def _fleet(self, folder: Folder) -> Fleet:
        """The folder's fleet, opened (its tables made) once per store; Unavailable says why not."""
        url = store_setting(self.server.options_for(folder.uri).store)
        if url is None or not is_store_url(url):
            raise Unavailable(False, "", _(NO_STORE))
        fleet = self._opened.get(url)
        if fleet is not None:
            return fleet
        try:
            from flower.fleet import Fleet, FleetError
        except ImportError as exc:  # psycopg or procrastinate missing: `pip install flower[fleet]`
            raise Unavailable(False, "", _(NOT_INSTALLED).format(error=exc)) from None
        from flower.stores.urls import redact_url

        try:
            fleet = await asyncio.to_thread(Fleet, url)
        except FleetError as exc:  # unreachable, a schema newer than this flower
            raise Unavailable(True, redact_url(url), exc.note.text()) from None
        except ValueError as exc:  # a malformed URL (StoreURLError: its password masked)
            raise Unavailable(True, redact_url(url), str(exc)) from None
        self._opened[url] = fleet
        return fleet

    # -- flower/fleetUpdate ----------------------------------------------------------------------
    def _follow(self, folder: Folder, result: p.FleetRunsResult) -> None:
        self._watched[folder.uri] = result
        if self._watch is None:
            self._watch = self.server.spawn(self._watching())

    async def _watching(self) -> None:
        while True:
            # a poll interval, not a wait for something: the database has no word for a change
            await asyncio.sleep(POLL_S)
            try:
                await self._look()
            except Exception:  # a fault here must not end the updates for good
                log.exception("could not look at the fleets for changes")

    async def _look(self) -> None:
        """Send flower/fleetUpdate for every followed folder whose runs differ from those sent."""
        folders = {f.uri: f for f in self.server.folders()}
        for uri, sent in list(self._watched.items()):
            folder = folders.get(uri)
            if folder is None:  # the folder was closed
                self._watched.pop(uri, None)
                continue
            now = await self.runs_of(folder)
            if now != sent and not self.server.client.shut_down:
                self._watched[uri] = now
                self.server.client.send(p.FLEET_UPDATE, p.FleetUpdateParams(uri, now))

    async def on_shutdown(self) -> None:
        if self._watch is not None:
            self._watch.cancel()


def _answer(fleet: Fleet, a: p.FleetAnswerArgs) -> str:
    question = fleet.answer(a.run, a.text)
    return _(ANSWERED).format(run=a.run, question=question)


def _cancel(fleet: Fleet, a: p.FleetCancelArgs) -> str:
    fleet.cancel(a.run)
    return _(CANCELLED).format(run=a.run)


# -- the engine's values as the protocol's payloads: the one place they are mapped --------------


def run_of(run: RunSummary) -> p.FleetRun:
    outcome = run.outcome
    return p.FleetRun(
        id=run.id,
        state=run.state,
        state_text=run.state_text(),
        repository=run.repository,
        ref=run.ref,
        request=run.request,
        branch=run.branch,
        worker=run.worker,
        created_at=run.created_at,
        updated_at=run.updated_at,
        note=run.note.text() if run.note is not None else "",
        question=run.question,
        outcome=p.FleetOutcome(
            outcome.branch, outcome.commit, outcome.pushed, outcome.patch, outcome.host, outcome.goal_met
        )
        if outcome is not None
        else None,
    )


def detail_of(detail: RunDetail, where: str) -> p.FleetShowResult:
    return p.FleetShowResult(
        configured=True,
        where=where,
        message="",
        run=run_of(detail.summary),
        events=[p.FleetEvent(e.at, e.worker, e.text()) for e in detail.events],
        executions=[
            p.FleetExecution(x.worker, x.host, x.pid, x.started_at, x.ended_at, x.reason)
            for x in detail.executions
        ],
        questions=[
            p.FleetQuestion(q.id, q.question, list(q.options), q.asked_at, q.state, q.answer)
            for q in detail.questions
        ],
    )
