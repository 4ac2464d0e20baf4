"""A work-done progress bar per run: the step, its index and the judged round; cancelling it
stops the run. For a client that does not declare the meter (`context`), the message also
carries the last context reading."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from flower.base.i18n import _
from flower.core.events import ContextUpdate, Event, StepFinished, StepStarted, VerdictGiven

from .context import meter_text
from .host import Feature, FlowerServer
from .runs import Runs

if TYPE_CHECKING:
    from .run import Run, RunEnded

log = logging.getLogger(__name__)


class Progress(Feature):
    def __init__(self, server: FlowerServer) -> None:
        super().__init__(server)
        self.tokens: dict[Run, str] = {}
        # token -> its run, from before the bar is created: the client may show the bar, and so
        # its Cancel, as soon as it is asked to create it, before the server hears the answer
        self.runs: dict[str, Run] = {}

    def register(self) -> None:
        @self.server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
        def cancelled(ls: FlowerServer, params: types.WorkDoneProgressCancelParams) -> None:
            run = self.runs.get(str(params.token))
            if run is not None:
                self._cancelled_by_client(run)

    async def on_run_start(self, run: Run) -> None:
        if not self.server.client.can.work_done_progress:
            return
        token = f"flower-run-{uuid.uuid4().hex}"
        progress = self.server.work_done_progress
        self.runs[token] = run
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancellation (a stop)
            # that lands as the client's answer does, and the run would go on
            async with asyncio.timeout(10):
                await progress.create_async(token)
            progress.begin(
                token,
                types.WorkDoneProgressBegin(
                    title=_("Flower · {folder}").format(folder=run.folder.name),
                    message=_("正在开始"),
                    cancellable=True,
                    percentage=0,
                ),
            )
        except Exception:
            log.info("the client refused a progress bar", exc_info=True)
            self.runs.pop(token, None)  # no bar to end
            return
        self.tokens[run] = token

    def on_event(self, run: Run, event: Event) -> None:
        # what moves the bar: a step begins or ends, a round is judged (and, without the meter, a reading)
        if isinstance(event, (StepStarted, StepFinished, VerdictGiven)) or (
            isinstance(event, ContextUpdate) and not self.server.client.can.flower.context
        ):
            self.report(run)

    def on_run_end(self, run: Run, ended: RunEnded) -> None:
        self.tokens.pop(run, None)
        # every bar asked for this run, begun or not: a stop while the bar was being created
        # leaves one the client already shows
        for token in [t for t, r in self.runs.items() if r is run]:
            del self.runs[token]
            self.server.work_done_progress.tokens.pop(token, None)
            if self.server.client.shut_down:
                continue
            try:
                self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=ended.text))
            except Exception:
                log.debug("progress end failed", exc_info=True)

    def report(self, run: Run) -> None:
        token = self.tokens.get(run)
        if token is None:
            return
        live = run.live
        message = f"{live.step} {live.index}/{live.total}" if live.total else (live.step or _("在跑"))
        if live.round > 1:
            message += _(" · 第 {n} 轮").format(n=live.round)
        reading = "" if self.server.client.can.flower.context else meter_text(live)
        if reading:
            message += f" · {reading}"
        percentage = int((live.index - 1) * 100 / live.total) if live.total and live.index else None
        value = types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True)
        self.server.client.guarded("report progress", self._report, run, value)

    def _report(self, run: Run, value: types.WorkDoneProgressReport) -> None:
        token = self.tokens.get(run)
        if token is not None:
            self.server.work_done_progress.report(token, value)

    def _cancelled_by_client(self, run: Run) -> None:
        if run.task is not None and not run.task.done():
            self.server.spawn(self._stop(run))

    async def _stop(self, run: Run) -> None:
        await self.server.get(Runs).stop_run(run, why="cancelled from the progress bar")
