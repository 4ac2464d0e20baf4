"""A run's story in the database: the lines a terminal would have shown, and the fleet's notes.

Events come on the worker's loop, many a second; the database is written by a thread of its own
in batches, so a slow or absent database never slows the flow down. What cannot be written yet
stays queued and goes with the next batch (up to ``LIMIT`` lines: past that the oldest go).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque

from ..base.secrets import redact
from .model import FleetError, Note
from .records import FleetBook

__all__ = ["Story"]

LIMIT = 20_000
_EVERY_S = 0.3


class Story:
    def __init__(self, book: FleetBook, run_id: str, worker: str) -> None:
        self._book, self._run, self._worker = book, run_id, worker
        self._items: deque[tuple[str, Note | None]] = deque(maxlen=LIMIT)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=f"flower-story-{run_id}", daemon=True)
        self._thread.start()

    def line(self, text: str) -> None:
        """A line of the flow, as the terminal shows it (in this worker's language)."""
        with self._lock:
            self._items.append((redact(text), None))

    def note(self, note: Note) -> None:
        """Something the fleet did, put into words by whoever reads it."""
        with self._lock:
            self._items.append(("", note))
        self._wake.set()

    def _loop(self) -> None:
        while not self._closed:
            self._wake.wait(_EVERY_S)
            self._wake.clear()
            self._write()

    def _write(self) -> bool:
        """Write what is queued; False when the database refused (it stays queued)."""
        with self._write_lock:
            with self._lock:
                batch = list(self._items)
            if not batch:
                return True
            try:
                self._book.add_events(self._run, self._worker, batch)
            except FleetError:
                return False
            with self._lock:
                for _ in batch:
                    self._items.popleft()
            return True

    async def flush(self) -> None:
        await asyncio.to_thread(self._write)

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        await asyncio.to_thread(self._thread.join, 10)
        await self.flush()
