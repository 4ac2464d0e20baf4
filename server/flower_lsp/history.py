"""The history of a folder's work (flower/history) and its live changes (flower/historyUpdate).

The story is read from disk by the engine (flower.workflow.history): the slow part, reading the
files, runs off the loop; arranging it with what the run in progress has shown (its turns, its
questions, the step in flight) runs on the loop, so what is sent always agrees with every turn
sent before it. A client that declares `experimental.flower.history` gets each main-thread turn
as it comes (append it) and the whole history whenever a step, round, verdict, question or
handoff moves (replace yours); any client can ask flower/history at any time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import TYPE_CHECKING

from flower.core.agent import HandoffPolicy
from flower.core.events import (
    ContextUpdate,
    Event,
    HandoffDone,
    HandoffWriting,
    Question,
    Retry,
    StepFinished,
    StepStarted,
    VerdictGiven,
)
from flower.core.goal import check_states, locate_check

# The engine's history loads with the server (about 20 ms, no SDK), not on the first request:
# then it would race the thread that warms the engine up, and two threads importing the
# workflow package at once can deadlock in the import system.
from flower.workflow.history import (
    HandoffRecord,
    History,
    LiveRun,
    QuestionRecord,
    Turn,
    assemble,
    extend,
    read_disk,
)

from . import protocol as p
from . import wire
from .common import Folder, parse_params
from .documents import uri_of
from .host import Feature, FlowerServer

if TYPE_CHECKING:
    from .run import Run, RunEnded

log = logging.getLogger(__name__)

# how long a burst of events (a verdict, the step's end, the next round's start) is gathered
# into one rebuild
SETTLE_S = 0.05
# what moves the history's structure (a turn only adds a point)
STRUCTURE = (StepStarted, StepFinished, VerdictGiven, Question, HandoffWriting, HandoffDone, Retry)


class RunHistory(Feature):
    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self.live: dict[str, LiveRun] = {}  # folder URI -> what its run in progress has shown
        self.latest: dict[str, History] = {}  # folder URI -> the history last sent (or answered)
        self.revision: dict[str, int] = {}
        self._rebuilding: set[str] = set()
        self._again: set[str] = set()

    def register(self) -> None:
        @self.server.feature(p.HISTORY)
        async def flower_history(ls: FlowerServer, params: object) -> object:
            args = parse_params(p.HistoryParams, params, p.HISTORY)
            return await self.history_of(self.server.folder_arg(args.folder))

    # -- the request ---------------------------------------------------------------------------
    async def history_of(self, folder: Folder) -> dict[str, object]:
        """The flower/history answer for a folder (a p.HistoryResult as JSON)."""
        history = await self._build(folder)
        if folder.uri in self.live:
            self.latest[folder.uri] = history  # the turns that follow extend this one
        return payload(history, folder.uri, self.revision.get(folder.uri, 0))

    async def _build(self, folder: Folder) -> History:
        disk = await asyncio.to_thread(read_disk, folder.path, run_dir=folder.run_dir)
        # arranged on the loop: the live part is what it is now, with no turn in between
        return assemble(disk, policy=self._policy(), live=self.live.get(folder.uri))

    def _policy(self) -> HandoffPolicy:
        window = self.server.options.window
        return HandoffPolicy(window=window) if window else HandoffPolicy()

    # -- a run's changes -------------------------------------------------------------------------
    async def on_run_start(self, run: Run) -> None:
        run_id = getattr(run.runtime, "run_id", None)
        self.live[run.folder.uri] = LiveRun(
            run=run_id if isinstance(run_id, str) else None, started_at=time.time()
        )
        self._changed(run.folder)

    def on_event(self, run: Run, event: Event) -> None:
        live = self.live.get(run.folder.uri)
        if live is None:
            return
        if isinstance(event, ContextUpdate):
            self._turn(run.folder, live, event)
            return
        if isinstance(event, StepStarted):
            live.step, live.step_started_at, live.cost_usd = event.text, time.time(), 0.0
        elif isinstance(event, Question):
            _keep_question(live, event)
        elif isinstance(event, HandoffDone) and event.retired:
            live.handoffs.append(
                HandoffRecord(event.step, event.retired, None, 0, time.time(), 0, event.path, event.degraded)
            )
        if isinstance(event, STRUCTURE):
            self._changed(run.folder)

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        if self.live.pop(run.folder.uri, None) is not None:
            self._changed(run.folder)  # the last word: the run as the disk now tells it

    def _turn(self, folder: Folder, live: LiveRun, event: ContextUpdate) -> None:
        if event.step and event.step != live.step:
            live.step, live.step_started_at = event.step, time.time()
        live.cost_usd = event.cost_usd
        live.window, live.at, live.warn_at = event.window, event.at, event.warn_at
        last = live.turns[-1] if live.turns else None
        if last is not None and (last.session_id, last.used, last.step) == (
            event.session_id,
            event.used,
            event.step,
        ):
            return  # the same turn's next content block
        seen = Turn(time.time(), event.used, event.session_id or "", event.step)
        live.turns.append(seen)
        history = self.latest.get(folder.uri)
        if history is None:
            return  # the first history is still being read: it will hold this turn
        turn = extend(history, seen)
        self._send(folder, update(folder.uri, self._next(folder), turn))

    def _changed(self, folder: Folder) -> None:
        """Rebuild the history soon and send it whole; one rebuild at a time per folder."""
        if folder.uri in self._rebuilding:
            self._again.add(folder.uri)
            return
        self._rebuilding.add(folder.uri)
        self.server.spawn(self._rebuild(folder))

    async def _rebuild(self, folder: Folder) -> None:
        try:
            while True:
                self._again.discard(folder.uri)
                await asyncio.sleep(SETTLE_S)
                history = await self._build(folder)
                self.latest[folder.uri] = history
                if folder.uri not in self.live:
                    self.latest.pop(folder.uri)  # nothing will extend it
                revision = self._next(folder)
                self._send(folder, whole(folder.uri, revision, payload(history, folder.uri, revision)))
                if folder.uri not in self._again:
                    return
        except Exception:
            log.exception("could not rebuild the history of %s", folder.path)
        finally:
            self._rebuilding.discard(folder.uri)

    def _next(self, folder: Folder) -> int:
        self.revision[folder.uri] = self.revision.get(folder.uri, 0) + 1
        return self.revision[folder.uri]

    def _send(self, folder: Folder, params: p.HistoryUpdateParams | dict[str, object]) -> None:
        if self.server.client.can.flower.history:  # the client declared experimental.flower.history
            self.server.client.send(p.HISTORY_UPDATE, params)


def _keep_question(live: LiveRun, event: Question) -> None:
    waited = None if event.state == "asked" else round(max(0.0, time.time() - event.asked_at), 1)
    record = QuestionRecord(
        event.id, event.text, list(event.options), event.state, event.answer, event.asked_at, waited
    )
    for i, known in enumerate(live.questions):
        if known.id == record.id and known.asked_at == record.asked_at:
            live.questions[i] = record
            return
    live.questions.append(record)


# -- the wire ------------------------------------------------------------------------------------


def payload(history: History, folder_uri: str, revision: int) -> dict[str, object]:
    """The engine's history as flower/history answers it (a p.HistoryResult as JSON): failed
    checks located in 目标.md, document URIs. Built as JSON directly: checking it against the
    protocol's types (`checked`) costs more than building it, so the tests do that, not every
    update of a long run."""
    data: dict[str, object] = dataclasses.asdict(history)
    checks = [(c.line, c.text) for c in history.checks]
    rounds = [r for w in history.wakes for s in w.steps for r in s.rounds]
    # the JSON copy mirrors the dataclasses: what is added is read from them, placed in the copy
    records = [r for w in _dicts(data["wakes"]) for s in _dicts(w["steps"]) for r in _dicts(s["rounds"])]
    for round_, record in zip(rounds, records, strict=True):
        verdict = record["verdict"]
        if round_.verdict is not None and isinstance(verdict, dict):
            v = round_.verdict
            states = check_states(v.state, v.failed, v.unproven, v.evidence)
            verdict["failed"] = [{"text": f, "line": locate_check(f, checks)} for f in v.failed]
            for evidence, kept, state in zip(_dicts(verdict["evidence"]), v.evidence, states, strict=True):
                evidence["check_line"] = locate_check(kept.check, checks)
                evidence["state"] = state
        for handoff, record_of in zip(_dicts(record["handoffs"]), round_.handoffs, strict=True):
            handoff["uri"] = uri_of(record_of.path) if record_of.path else None
    data.update(
        folder=folder_uri,
        revision=revision,
        brief_uri=uri_of(history.brief),
        goal_uri=uri_of(history.goal),
    )
    return data


def _dicts(value: object) -> list[dict[str, object]]:
    """The objects of a JSON array in `dataclasses.asdict`'s copy (the same dicts, to fill in)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def checked(data: object) -> p.HistoryResult:
    """A flower/history answer read back as the protocol declares it; ProtocolError if it is not."""
    return wire.from_json(p.HistoryResult, data, p.HISTORY)


def update(folder_uri: str, revision: int, turn: Turn) -> p.HistoryUpdateParams:
    """The update that appends one turn."""
    return p.HistoryUpdateParams(folder_uri, revision, turn=p.HistoryTurn(**dataclasses.asdict(turn)))


def whole(folder_uri: str, revision: int, history: dict[str, object]) -> dict[str, object]:
    """The update that carries the history whole (a p.HistoryUpdateParams as JSON)."""
    return {"folder": folder_uri, "revision": revision, "turn": None, "history": history}
