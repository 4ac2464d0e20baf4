"""A run kept in a shared store: which store, which work, and the books kept there.

A plain local run keeps everything in its run_dir (``sessions.db``, ``lineage.json``,
``manifest.json``). With a shared store (``Runtime(store="postgresql://...")``, ``flower
--store``, ``$FLOWER_STORE``, the editor's ``flower.store``) the transcripts live in the
database, keyed by the workspace's identity (``identity.py``) instead of its path, and the
lineage and the manifest are written to the database too, beside the files. Another checkout
of the same work, on another machine, with the same store URL, then continues the same
sessions; the files stay the source only for a plain local run.
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..base.files import DiskFault
from ..base.i18n import _
from .identity import WorkspaceIdentity, identify
from .manifest import ManifestRow, rows_of
from .rundir import FlowBusy, Holder, default_who, holding, note_claim

__all__ = [
    "STORE_VAR",
    "ClaimLost",
    "ReadOnlyBook",
    "RunBook",
    "SharedFlowBusy",
    "SharedFlowLock",
    "SharedRun",
    "claim_lost",
    "holding_shared",
    "shared_key",
    "shared_run",
    "store_setting",
    "watch_claim",
]

STORE_VAR = "FLOWER_STORE"


class RunBook(Protocol):
    """Where a shared store keeps runs' lineages and manifest rows, by workspace identity.

    A store holds each row as the JSON `ManifestRow.as_json` gives (and hands it back as that
    JSON): the stores lie below the runtime, so `SharedRun.put_rows` and `SharedRun.rows` are
    where rows become JSON and JSON rows again."""

    def lineage(self, workspace: str) -> dict[str, object] | None: ...

    def update_lineage(
        self, workspace: str, change: Callable[[dict[str, object] | None], dict[str, object]]
    ) -> dict[str, object]: ...

    def put_manifest(self, workspace: str, run: str, rows: list[dict[str, object]]) -> None: ...

    def manifest(self, workspace: str) -> list[dict[str, object]]: ...


@dataclass
class SharedRun:
    """The identity that names this run's work in the store, and the book that keeps it."""

    identity: WorkspaceIdentity
    book: RunBook
    where: str  # the store, as it may be shown: its URL with the password masked

    @classmethod
    def of(cls, workspace: str | Path, book: RunBook, where: str) -> SharedRun:
        return cls(identify(workspace), book, where)

    def put_rows(self, run: str, rows: list[ManifestRow]) -> None:
        """This process's rows (``run``) in the store, replacing what it wrote before."""
        self.book.put_manifest(self.identity.key, run, [row.as_json() for row in rows])

    def rows(self) -> list[ManifestRow]:
        """Every run's rows the store keeps for this work, oldest run first."""
        return rows_of(self.book.manifest(self.identity.key))


class ReadOnlyBook:
    """A book that only reads a lineage (the wake probe writes nothing, not even a schema)."""

    def __init__(self, url: str) -> None:
        self._url = url

    def lineage(self, workspace: str) -> dict[str, object] | None:
        from ..stores.postgres import read_lineage

        return read_lineage(self._url, workspace)

    def update_lineage(
        self, workspace: str, change: Callable[[dict[str, object] | None], dict[str, object]]
    ) -> dict[str, object]:
        raise PermissionError("a read-only probe writes nothing")

    def put_manifest(self, workspace: str, run: str, rows: list[dict[str, object]]) -> None:
        raise PermissionError("a read-only probe writes nothing")

    def manifest(self, workspace: str) -> list[dict[str, object]]:
        return []


def store_setting(store: str | None = None) -> str | None:
    """The store asked for: ``store`` if given, else ``$FLOWER_STORE``; None (or empty) means the
    run_dir's own sessions.db."""
    chosen = store if store is not None else os.environ.get(STORE_VAR, "")
    return chosen.strip() or None


def shared_key(identity: WorkspaceIdentity) -> str:
    """The project key a workspace's transcripts are kept under in a shared store."""
    return f"workspace:{identity.key}"


def shared_run(store: str | None, workspace: str | Path, *, read_only: bool = False) -> SharedRun | None:
    """The shared books of ``workspace`` in the store asked for (``store_setting``), or None for
    a local run. For a caller without a store of its own (the wake probe, ``--new``'s archive):
    each call opens its own connection."""
    url = store_setting(store)
    if url is None:
        return None
    from ..stores.postgres import PostgresRunBook
    from ..stores.urls import check_store_url, redact_url

    check_store_url(url)
    book: RunBook = ReadOnlyBook(url) if read_only else PostgresRunBook.direct(url)
    return SharedRun.of(workspace, book, redact_url(url))


class SharedFlowBusy(FlowBusy):
    """Another process, on this machine or another, works on this flow of the same work."""

    def __init__(self, flow: str, run_dir: Path, holder: Holder, *, host: str, where: str) -> None:
        super().__init__(flow, run_dir, holder)
        self.host, self.where = host, where
        self.args = (
            _("这份工作已经有一个 flower 在 {host} 上跑流程「{flow}」:{describe},会话库 {where}").format(
                host=host or _("另一台机器"), flow=flow, describe=holder.describe(), where=where
            ),
        )


class ClaimLost(DiskFault):
    """The run's claim on its flow could not be kept (taken over, or the store gone too long):
    the run stops as a refused write stops it, since nothing more it writes could be kept."""

    def __init__(self, text: str, run_dir: Path) -> None:
        super().__init__(errno.ENOLCK, run_dir, text)

    def line(self) -> str:
        return self.detail

    def __reduce__(self) -> tuple[object, ...]:
        return (ClaimLost, (self.detail, self.folder))


# the claims lost in this process, by workspace key, and who to tell (a Runtime: its step)
_LOST: dict[str, ClaimLost] = {}
_WATCHERS: dict[str, list[weakref.WeakMethod[Callable[[], None]]]] = {}
_CLAIMS_LOCK = threading.Lock()


def claim_lost(workspace_key: str) -> ClaimLost | None:
    """Why this process may no longer work on the workspace's flow; None while its claim holds."""
    with _CLAIMS_LOCK:
        return _LOST.get(workspace_key)


def watch_claim(workspace_key: str, stop: Callable[[], None]) -> None:
    """Have ``stop`` (a bound method, held weakly) called the moment the workspace's claim is lost."""
    with _CLAIMS_LOCK:
        _WATCHERS.setdefault(workspace_key, []).append(weakref.WeakMethod(stop))


def _lose(workspace_key: str, fault: ClaimLost) -> None:
    with _CLAIMS_LOCK:
        _LOST.setdefault(workspace_key, fault)
        refs = list(_WATCHERS.get(workspace_key, []))
        _WATCHERS[workspace_key] = [r for r in refs if r() is not None]
    for ref in refs:
        stop = ref()
        if stop is not None:
            with contextlib.suppress(Exception):
                stop()


class SharedFlowLock:
    """A claim on one flow of the work across every machine that shares the store.

    Taken beside the run_dir's own lock: two checkouts of the same work never run one flow (and
    so resume one session) at once. A book that cannot hold flows (a caller's own) claims nothing.
    """

    def __init__(self, shared: SharedRun, flow: str, *, run_dir: str | Path, who: str | None = None) -> None:
        self.shared = shared
        self.flow = flow
        self.run_dir = Path(run_dir)
        self.who = who or default_who()
        self._release: Callable[[], None] | None = None

    @property
    def key(self) -> str:
        return f"shared:{self.shared.identity.key}\n{self.flow}"

    @property
    def held(self) -> bool:
        return self._release is not None

    def acquire(self) -> None:
        if self._release is not None:
            return
        claim = getattr(self.shared.book, "claim_flow", None)
        release: Callable[[], None] | None = None
        if callable(claim):
            note = {"pid": os.getpid(), "who": self.who, "host": socket.gethostname(), "since": time.time()}
            extra: dict[str, object] = {}
            if "on_lost" in inspect.signature(claim).parameters:
                extra["on_lost"] = self._lost
            release, other = claim(self.shared.identity.key, self.flow, note, **extra)
            if release is None:
                found = other or {}
                holder = Holder(
                    int(found.get("pid") or 0), str(found.get("who") or ""), float(found.get("since") or 0.0)
                )
                raise SharedFlowBusy(
                    self.flow,
                    self.run_dir,
                    holder,
                    host=str(found.get("host") or ""),
                    where=self.shared.where,
                )
        with _CLAIMS_LOCK:
            _LOST.pop(self.shared.identity.key, None)  # held again: an earlier loss is over
        self._release = release or (lambda: None)
        note_claim(self)

    def _lost(self, line: str) -> None:
        """Told by the lease's heartbeat: stop the run working on this flow (its last line says why)."""
        _lose(self.shared.identity.key, ClaimLost(line, self.run_dir))

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            with contextlib.suppress(Exception):
                release()


@contextmanager
def holding_shared(runtime: object, flow: str) -> Iterator[None]:
    """Hold ``flow`` across the machines sharing the runtime's store, if it has one."""
    shared = getattr(runtime, "shared", None)
    if not isinstance(shared, SharedRun):
        yield
        return
    with holding(SharedFlowLock(shared, flow, run_dir=getattr(runtime, "run_dir", "."))):
        yield
