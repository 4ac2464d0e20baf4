"""A fleet run's questions wait in the database, and their answers come from it.

This is the fleet's front end of the run's ``HumanChannel`` (the one seam for asking a person,
``core/human.py``), as the terminal and the editor are theirs: every question the run asks is
written to the database (the run shows as waiting), and an answer given there from anywhere
(``flower fleet answer``, on any machine) is read back by polling and handed to the channel,
which hands it to the model. How the channel ends an ask otherwise (its timeout, no answer) is
written back too.

A question whose worker went away before it was answered is asked again by the run on the
worker that takes it over; an answer given meanwhile is kept for it (``carried_answer``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from ..core.events import Event, Question
from .model import FleetError, Note
from .notes import ANSWERED, ASKED, CARRIED
from .records import FleetBook
from .story import Story

if TYPE_CHECKING:
    from ..core.human import HumanChannel

__all__ = ["POLL_S", "Answers"]

POLL_S = 1.0


class Answers:
    def __init__(
        self, book: FleetBook, run_id: str, execution: int, channel: HumanChannel, story: Story
    ) -> None:
        self._book, self._run, self._execution = book, run_id, execution
        self._channel = channel
        self._story = story
        self._asked: list[Question] = []
        self._settled: list[str] = []
        self._task: asyncio.Task[None] | None = None

    def on_event(self, event: Event) -> None:
        """The run's events, on the worker's loop: the questions are taken from there."""
        if not isinstance(event, Question):
            return
        if event.state == "asked":
            self._asked.append(event)
        elif event.state != "answered":  # timed out, declined, over budget: settled without us
            self._settled.append(event.id)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._poll(), name=f"flower-answers-{self._run}")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(FleetError):
            await self._turn()

    async def _poll(self) -> None:
        while True:
            with contextlib.suppress(FleetError):  # the database is away: next turn
                await self._turn()
            await asyncio.sleep(POLL_S)

    async def _turn(self) -> None:
        while self._asked:
            ask = self._asked[0]
            await asyncio.to_thread(
                self._book.ask, self._run, self._execution, ask.id, ask.text, list(ask.options)
            )
            self._asked.pop(0)
            self._story.note(Note(ASKED, {"question": ask.text, "run": self._run}))
            carried = await asyncio.to_thread(self._book.carried_answer, self._run, ask.text)
            if carried is not None and self._channel.answer(ask.id, carried):
                self._story.note(Note(CARRIED, {"answer": carried}))
                await asyncio.to_thread(self._book.settle, self._execution, ask.id, "delivered")
        while self._settled:
            await asyncio.to_thread(self._book.settle, self._execution, self._settled[0], "settled")
            self._settled.pop(0)
        for ask_id, text in await asyncio.to_thread(self._book.answers, self._execution):
            delivered = self._channel.answer(ask_id, text)
            if delivered:
                self._story.note(Note(ANSWERED, {"answer": text}))
            await asyncio.to_thread(
                self._book.settle, self._execution, ask_id, "delivered" if delivered else "settled"
            )
