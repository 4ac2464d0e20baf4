"""Words a person says into a step in flight, and whether they reached the model.

`Runtime.interrupt` hands back a `concurrent.futures.Future` per message: it resolves once the
resumed turn that carries the words is answered by the model, and fails with `Undelivered` when
they never got there (the Claude Code CLI refused the prompt, the step ended or was stopped
first). A front end answers the person only then: an accepted Say that never reached the model
is the one thing it must not report.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future


class Undelivered(Exception):
    """Words that did not reach the model. `reason` is one line in English (like the manifest's
    errors); `step_over` means the step had ended before it could take them, so they can still
    go to the inbox."""

    def __init__(self, reason: str, *, step_over: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.step_over = step_over


STEP_OVER = "the step had ended before it could take the words"
STOPPED = "the step was stopped before the words reached the model"


class Deliveries:
    """The words said and not yet delivered, and the ones riding on the turn in flight (any
    thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._said: list[tuple[str, Future[None]]] = []
        self._riding: list[Future[None]] = []

    def say(self, words: str) -> Future[None]:
        future: Future[None] = Future()
        with self._lock:
            self._said.append((words, future))
        return future

    def take(self) -> str:
        """The words said so far, joined, for the resumed turn; they ride on it from now on."""
        with self._lock:
            said, self._said = self._said, []
            self._riding += [f for _, f in said]
        return "\n".join(w for w, _ in said if w.strip())

    def delivered(self) -> None:
        """The model answered the turn that carried the words."""
        with self._lock:
            riding, self._riding = self._riding, []
        for future in riding:
            _settle(future, None)

    def refused(self, reason: str) -> None:
        """The turn that carried the words ended without the model answering it."""
        with self._lock:
            riding, self._riding = self._riding, []
        for future in riding:
            _settle(future, Undelivered(reason))

    def drop(self, reason: str, *, step_over: bool) -> None:
        """The step is over: every word not delivered is settled with `reason`."""
        with self._lock:
            said, self._said = self._said, []
            riding, self._riding = self._riding, []
        for _, future in said:
            _settle(future, Undelivered(reason, step_over=step_over))
        for future in riding:
            _settle(future, Undelivered(reason))

    @property
    def riding(self) -> bool:
        with self._lock:
            return bool(self._riding)


def _settle(future: Future[None], error: Undelivered | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


__all__ = ["STEP_OVER", "STOPPED", "Deliveries", "Undelivered"]
