"""The decision ledger: what the resume-time layers decided about a transcript, and when it was
last written to.

A trim, an expiry or a dropped denial changes the prompt a session is resumed with; made once,
it must hold at every later load, in this process or another one (docs/context-economy.md).
The layers keep those decisions, and each transcript's last activity, through this small
interface. A store that can keep them next to its transcripts offers a ledger of its own
(``decision_ledger()``): SQLite keeps them in tables of ``sessions.db`` (``decisions``),
PostgreSQL in tables of the store's schema. Any other store gets a ``MemoryLedger``: the same
rules, held for the life of the process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey

__all__ = ["DecisionLedger", "MemoryLedger", "items_of", "ledger_of", "where"]


@runtime_checkable
class DecisionLedger(Protocol):
    """Every call is atomic on its own; a decision already on record is never replaced."""

    def touch(self, key: SessionKey, at: float) -> None:
        """The transcript received entries at ``at`` (the last activity never moves back)."""

    def last_activity(self, key: SessionKey) -> tuple[float | None, int]:
        """(time of the last append or None, warm loads in a row since the last boundary)."""

    def count_warm_load(self, key: SessionKey, *, boundary: bool) -> None:
        """One more load that decided nothing while the cache was warm, or back to 0."""

    def decided(self, key: SessionKey) -> dict[str, dict[str, str]]:
        """kind -> {tool_use_id: detail} for one transcript."""

    def record(self, key: SessionKey, kind: str, items: Mapping[str, str] | Iterable[str], at: float) -> None:
        """Add decisions; one already made (by this or another process) is kept as it was."""

    def forget(self, key: SessionKey) -> None:
        """Drop what is known about a transcript; a main transcript takes its subagents along."""


def where(key: SessionKey) -> tuple[str, str, str]:
    """(project_key, session_id, subpath) with the main transcript's subpath as ''."""
    sub = key.get("subpath")
    return key["project_key"], key["session_id"], sub if isinstance(sub, str) else ""


def items_of(items: Mapping[str, str] | Iterable[str]) -> list[tuple[str, str]]:
    """(ref, detail) pairs from a mapping or from bare refs (detail '')."""
    return list(items.items()) if isinstance(items, Mapping) else [(ref, "") for ref in items]


class MemoryLedger:
    """A ledger held in this process: for stores that cannot keep one of their own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._activity: dict[tuple[str, str, str], tuple[float, int]] = {}
        self._decisions: dict[tuple[str, str, str], dict[str, dict[str, str]]] = {}

    def touch(self, key: SessionKey, at: float) -> None:
        with self._lock:
            last, warm = self._activity.get(where(key), (at, 0))
            self._activity[where(key)] = (max(last, at), warm)

    def last_activity(self, key: SessionKey) -> tuple[float | None, int]:
        with self._lock:
            found = self._activity.get(where(key))
        return (None, 0) if found is None else found

    def count_warm_load(self, key: SessionKey, *, boundary: bool) -> None:
        with self._lock:
            found = self._activity.get(where(key))
            if found is not None:
                self._activity[where(key)] = (found[0], 0 if boundary else found[1] + 1)

    def decided(self, key: SessionKey) -> dict[str, dict[str, str]]:
        with self._lock:
            return {kind: dict(refs) for kind, refs in self._decisions.get(where(key), {}).items()}

    def record(self, key: SessionKey, kind: str, items: Mapping[str, str] | Iterable[str], at: float) -> None:
        with self._lock:
            refs = self._decisions.setdefault(where(key), {}).setdefault(kind, {})
            for ref, detail in items_of(items):
                refs.setdefault(ref, detail)

    def forget(self, key: SessionKey) -> None:
        pk, sid, sub = where(key)
        with self._lock:
            for table in (self._activity, self._decisions):
                for k in [k for k in table if k[:2] == (pk, sid) and (not sub or k[2] == sub)]:
                    del table[k]


def ledger_of(store: object) -> DecisionLedger:
    """The store's own ledger when it keeps one, else a fresh in-process one."""
    make = getattr(store, "decision_ledger", None)
    if callable(make):
        ledger = make()
        if isinstance(ledger, DecisionLedger):
            return ledger
    return MemoryLedger()
