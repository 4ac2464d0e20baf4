"""One writer discipline for every file in a run_dir, and one flow at a time.

Every JSON file flower keeps in a run_dir (lineage.json, manifest.json) changes the same way:
take the run_dir's lock, re-read the file, merge this process's change into what is on disk,
replace the file atomically. A file that does not parse is never overwritten: it is moved aside
to `<name>.corrupt-<timestamp>` first and the caller rebuilds what it can from the other files.

Both locks are flock(2) locks: the kernel drops them when the holder dies, so a process killed
with SIGKILL never blocks the next one.
"""

from __future__ import annotations

import contextvars
import fcntl
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from ..base.files import atomic_write, faults
from ..base.i18n import _

CORRUPT = ".corrupt-"

T = TypeVar("T")


class Damaged(ValueError):
    """A file that exists but cannot be what it claims to be; `reason` says why, for a person."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Repair:
    """A damaged file was moved aside: where it is now, why, and what was rebuilt."""

    path: Path
    backup: Path
    reason: str
    recovered: str = ""

    def line(self) -> str:
        text = _("{name} 坏了({reason}),原件移到 {backup}").format(
            name=self.path.name, reason=self.reason, backup=self.backup
        )
        return text + (_(";{recovered}").format(recovered=self.recovered) if self.recovered else "")


@contextmanager
def run_dir_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run_dir's write lock (an flock on the directory itself: no extra file)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def set_aside(path: Path, *, companions: tuple[str, ...] = ()) -> Path:
    """Move `path` to `<name>.corrupt-<timestamp>` (never over an earlier copy); returns it.

    `companions` are suffixes of files that belong to it (SQLite's `-wal`, `-shm`): they move
    along under the same new name, or the moved copy would be read with the wrong journal.
    """
    base = path.with_name(f"{path.name}{CORRUPT}{stamp()}")
    target, n = base, 1
    with faults(path):
        while True:
            try:
                os.link(path, target)  # fails if the name is taken: an earlier copy is never replaced
                break
            except FileExistsError:
                target = base.with_name(f"{base.name}-{n}")
                n += 1
        os.unlink(path)
        for suffix in companions:
            extra = path.with_name(path.name + suffix)
            if extra.exists():
                os.replace(extra, target.with_name(target.name + suffix))
    return target


def read_json(path: Path) -> object:
    """The parsed file; None if it does not exist; Damaged if it exists but is not JSON.

    Any other OSError (a directory in its place, no permission) is raised as it is.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if not data.strip():
        raise Damaged(_("空文件") if not data else _("只有空白"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Damaged(_("不是 UTF-8 文本,第 {start} 字节起").format(start=exc.start)) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        where = (
            _(",第 {lineno} 行第 {colno} 列").format(lineno=exc.lineno, colno=exc.colno)
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise Damaged(_("不是完整的 JSON:{message}{where}").format(message=message, where=where)) from None


def update_json(
    path: Path,
    change: Callable[[object, Repair | None], T],
    *,
    check: Callable[[object], str | None] = lambda data: None,
    durable: bool = True,
) -> tuple[T, Repair | None]:
    """Re-read `path` under the run_dir lock, let `change(on_disk, repair)` merge into it, write it.

    `on_disk` is None when the file is missing or was damaged; `check` returns why a parsed
    value is unusable (wrong shape), which counts as damage too. A damaged file is moved aside
    before anything is written and `repair` says so (the caller fills in `recovered`).
    Returns (what was written, repair or None). Raises DiskFault when the disk refuses (the old
    file stays whole), other OSErrors as they are; callers decide if that matters.
    """
    with run_dir_lock(path.parent):
        repair: Repair | None = None
        try:
            data = read_json(path)
            problem = check(data) if data is not None else None
        except Damaged as exc:
            problem = exc.reason
        if problem is not None:
            repair = Repair(path, set_aside(path), problem)
            data = None
        new = change(data, repair)
        atomic_write(path, json.dumps(new, ensure_ascii=False, indent=2), durable=durable, parents=False)
        return new, repair


# -- one flow at a time -----------------------------------------------------------------------------

# The flow locks taken in this context: a Workflow.run inside a front end that already claimed
# its flow must not claim it a second time and refuse itself. Other tasks do not inherit it.
_CLAIMED: contextvars.ContextVar[tuple[Claim, ...]] = contextvars.ContextVar("flower_flow_claims", default=())


class Claim(Protocol):
    """An exclusive claim on a flow: this run_dir's lock, or a shared store's (core/shared.py)."""

    @property
    def key(self) -> str:
        """What is claimed: two claims with one key exclude each other."""

    @property
    def held(self) -> bool: ...

    def acquire(self) -> None: ...

    def release(self) -> None: ...


def note_claim(claim: Claim) -> None:
    """Remember in this context that ``claim`` is held (``holding`` then does not take it again)."""
    _CLAIMED.set((*_CLAIMED.get(), claim))


@contextmanager
def holding(claim: Claim) -> Iterator[None]:
    """Hold ``claim`` for the block, unless this context already holds its key (then do nothing)."""
    if any(held.held and held.key == claim.key for held in _CLAIMED.get()):
        yield
        return
    claim.acquire()
    try:
        yield
    finally:
        claim.release()


@dataclass
class Holder:
    """Who holds a flow lock, as its holder wrote it down."""

    pid: int = 0
    who: str = ""
    since: float = 0.0

    def describe(self) -> str:
        since = time.strftime("%m-%d %H:%M:%S", time.localtime(self.since)) if self.since else _("不知何时")
        return _("{who}(pid {pid},从 {since} 开始)").format(
            who=self.who or _("另一个进程"), pid=self.pid or "?", since=since
        )


class FlowBusy(RuntimeError):
    """Another process is working on this flow in this run_dir."""

    def __init__(self, flow: str, run_dir: Path, holder: Holder) -> None:
        self.flow, self.run_dir, self.holder = flow, run_dir, holder
        super().__init__(
            _("这里已经有一个 flower 在跑流程「{flow}」:{describe},run 目录 {run_dir}").format(
                flow=flow, describe=holder.describe(), run_dir=run_dir
            )
        )


def default_who() -> str:
    """A short name for this process: its command line, as a person would recognise it."""
    argv = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    text = " ".join(argv)
    return text if len(text) <= 80 else text[:77] + "..."


class FlowLock:
    """An exclusive claim on one flow of one run_dir, held for as long as the flow runs.

    `<run_dir>/flow-<name>.lock` holds the flock and, for whoever is refused, who holds it.
    """

    def __init__(self, run_dir: str | Path, flow: str, *, who: str | None = None) -> None:
        self.run_dir = Path(run_dir).expanduser().resolve()
        self.flow = flow
        self.who = who or default_who()
        safe = re.sub(r"[^\w.-]+", "_", flow) or "flow"
        self.path = self.run_dir / f"flow-{safe}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    @property
    def key(self) -> str:
        return str(self.path)

    def holder(self) -> Holder:
        """Who holds it now, as far as the file says (best effort: it may be mid-write)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Holder()
        if not isinstance(data, dict):
            return Holder()
        pid, who, since = data.get("pid"), data.get("who"), data.get("since")
        return Holder(
            pid if isinstance(pid, int) else 0,
            who if isinstance(who, str) else "",
            float(since) if isinstance(since, (int, float)) else 0.0,
        )

    def acquire(self, *, wait: bool = False, waiting: Callable[[FlowBusy], None] | None = None) -> None:
        """Claim the flow; FlowBusy if another process has it (unless `wait`, then block).

        `waiting` is told once, before blocking, who is being waited for.
        """
        if self._fd is not None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy = FlowBusy(self.flow, self.run_dir, self.holder())
                if not wait:
                    raise busy from None
                if waiting is not None:
                    waiting(busy)
                fcntl.flock(fd, fcntl.LOCK_EX)
            note = json.dumps({"pid": os.getpid(), "who": self.who, "since": time.time(), "flow": self.flow})
            data = note.encode("utf-8")
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        note_claim(self)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with suppress(OSError):
            os.ftruncate(fd, 0)  # nobody holds it: nobody to name
        os.close(fd)

    def __enter__(self) -> FlowLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextmanager
def claim_flow(run_dir: str | Path, flow: str) -> Iterator[None]:
    """Hold the flow for the block, unless this context already holds it (then do nothing)."""
    with holding(FlowLock(run_dir, flow)):
        yield


__all__ = [
    "Claim",
    "Damaged",
    "FlowBusy",
    "FlowLock",
    "Holder",
    "Repair",
    "claim_flow",
    "holding",
    "note_claim",
    "read_json",
    "run_dir_lock",
    "set_aside",
    "update_json",
]
