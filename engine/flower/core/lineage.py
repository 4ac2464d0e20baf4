"""Lineage: which step used which session, kept on disk across processes.

Continuity is a bonus, never a precondition: what does not fit (no file, another workspace)
silently means "start fresh", and a failed write never fails the run. A damaged file is not
"does not fit": it is moved aside, the step -> session map is rebuilt from the manifest, and
`repair` says so. Every write re-reads the file under the run_dir lock and merges into it, so
processes sharing a run_dir never lose each other's entries or wake-ups.

With a shared store (`shared`), the lineage is also kept in the store, under the workspace's
identity, and the store's copy is the one that counts (another machine may have gone on since
this folder's file was written); the file counts only while the store has none (a run begun
before the store). Every write goes to the store first (under its row lock, merged into what
is there) and the file then mirrors the result. A store that cannot be
reached leaves the file working alone: continuity is a bonus there too.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ..base.files import DiskFault, fault_of
from ..base.files import move as move_file
from ..base.i18n import _
from ..base.loose import integer, items, mapping
from .recovery import read_rows, sessions_by_step, wakes_in
from .rundir import Damaged, Repair, read_json, run_dir_lock, update_json

if TYPE_CHECKING:
    from .shared import SharedRun

FILENAME = "lineage.json"


class _Books(TypedDict):
    """A lineage as a change sees it: every key there, the rewind books empty while there are
    none (`_pruned` leaves those out of what is written)."""

    workspace: str
    woke: int
    steps: dict[str, str]
    points: dict[str, dict[str, object]]
    rewinds: list[dict[str, object]]


@dataclass
class Lineage:
    path: Path
    workspace: Path
    steps: dict[str, str] = field(default_factory=dict)
    woke: int = 0
    # step -> where its session continues from after a rewind: {session, at, round, remark}; used
    # once, by the next run of the step, and only while `steps` still names that session
    points: dict[str, dict[str, object]] = field(default_factory=dict)
    # every rewind and fork of this run, oldest first (core/rewind.py)
    rewinds: list[dict[str, object]] = field(default_factory=list)
    # why the file on disk is unusable (steps and woke are then what the manifest says), or None
    damage: str | None = field(default=None, compare=False)
    # the repair this object made: where the damaged file went and what was rebuilt
    repair: Repair | None = field(default=None, compare=False)
    # the shared store that keeps this lineage too (None: the file alone)
    shared: SharedRun | None = field(default=None, compare=False, repr=False)
    # the last write the disk refused (full, read-only, gone): never raised (continuity is a
    # bonus), but kept for the workflow, which stops the run on it rather than go on unrecorded
    fault: DiskFault | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.workspace = Path(self.workspace).expanduser().resolve()

    @classmethod
    def open(cls, run_dir: str | Path, workspace: str | Path, *, shared: SharedRun | None = None) -> Lineage:
        """Read `<run_dir>/lineage.json` (and the shared store's entry), writing nothing; never raises.

        Missing, unreadable or from another workspace: empty. Damaged: `damage` says why, and
        steps/woke are rebuilt from the manifest (the file itself is left to `repair_now`).
        """
        found = cls._open_file(Path(run_dir) / FILENAME, Path(workspace))
        found.shared = shared
        if shared is not None:
            found._merge_shared()
        return found

    @classmethod
    def _open_file(cls, path: Path, workspace: Path) -> Lineage:
        empty = cls(path, workspace)
        try:
            data: object = read_json(empty.path)
        except Damaged as exc:
            return empty._rebuilt(exc.reason)
        except OSError:
            return empty
        if data is None or _foreign(data, empty.workspace):
            return empty
        problem = _problem(data)
        if problem is not None:
            return empty._rebuilt(problem)
        return cls(
            empty.path,
            empty.workspace,
            _steps(data),
            _woke(data),
            _points(data),
            _rewinds(data),
        )

    def _merge_shared(self) -> None:
        shared = self.shared
        assert shared is not None
        try:
            data: object = shared.book.lineage(shared.identity.key)
        except Exception:  # an unreachable store: the file alone, as for a local run
            return
        if data is None or _problem(data) is not None:
            return  # the store has none: the file (a run from before the store) stands
        self.steps, self.woke = _steps(data), _woke(data)

    def _rebuilt(self, problem: str) -> Lineage:
        rows, _ = read_rows(self.path.parent)
        self.steps, self.woke, self.damage = sessions_by_step(rows), wakes_in(rows), problem
        return self

    def remember(self, step: str, session_id: str) -> None:
        """Record step -> session and write it out at once (the process may be killed any moment)."""
        if not step or not session_id:
            return
        self.steps[step] = session_id
        self._update(lambda data: data["steps"].__setitem__(step, session_id))

    def set_point(self, step: str, point: Mapping[str, object]) -> None:
        """After a rewind: the step continues `point["session"]`, cut at `point["at"]`, next time."""
        self.steps[step], self.points[step] = str(point["session"]), dict(point)

        def change(data: _Books) -> None:
            data["steps"][step] = str(point["session"])
            data["points"][step] = dict(point)

        self._update(change)

    def point(self, step: str) -> dict[str, object] | None:
        """Where `step` resumes after a rewind; None when it simply continues its session."""
        found = self.points.get(step)
        return found if found is not None and found.get("session") == self.steps.get(step) else None

    def clear_point(self, step: str) -> None:
        if step in self.points:
            self.points.pop(step, None)

            def change(data: _Books) -> None:
                data["points"].pop(step, None)

            self._update(change)

    def record_rewind(self, entry: Mapping[str, object]) -> None:
        """Add a rewind or fork to the books (once: a replayed journal records it again)."""
        if any(r.get("id") == entry.get("id") for r in self.rewinds):
            return

        def change(data: _Books) -> None:
            if not any(r.get("id") == entry.get("id") for r in data["rewinds"]):
                data["rewinds"].append(dict(entry))

        self.rewinds.append(dict(entry))
        self._update(change)

    def bump(self) -> int:
        """Count one more wake-up and persist it; the first run gets 1."""
        self._update(lambda data: data.__setitem__("woke", data["woke"] + 1))
        return self.woke

    def repair_now(self) -> Repair | None:
        """Put the rebuilt lineage in place of a damaged file (moved aside first); the repair."""
        if self.damage is None:
            return None
        self._update(lambda data: None)
        return self.repair

    def archive(self, into: str | Path, *, extra: list[Path] | None = None) -> Path:
        """Move the lineage file and `extra` into `<into>/<YYYYmmdd-HHMMSS>/`, then start over.

        Move, never delete: the archived files are the history of the previous piece of work.
        """
        dest = _fresh_dir(Path(into), time.strftime("%Y%m%d-%H%M%S"))

        def move() -> None:
            for src in [self.path, *(Path(p) for p in extra or [])]:
                if src.exists():
                    move_file(src, _free_name(dest / src.name))

        try:
            with run_dir_lock(self.path.parent):
                move()  # no other process rewrites the lineage half-way through
        except OSError:
            move()
        self.steps = {}
        self.woke = 0
        self.damage = None
        if self.shared is not None:
            # the store's copy is archived with the file: no other checkout continues it now
            with contextlib.suppress(Exception):
                self.shared.book.update_lineage(self.shared.identity.key, lambda data: self._record())
        return dest

    def _record(self) -> dict[str, object]:
        return _pruned(self._books())

    def _books(self) -> _Books:
        """What this process knows, as a change sees it (a copy: the change may be undone)."""
        return {
            "workspace": str(self.workspace),
            "woke": self.woke,
            "steps": dict(self.steps),
            "points": {k: dict(v) for k, v in self.points.items()},
            "rewinds": [dict(r) for r in self.rewinds],
        }

    def _update(self, change: Callable[[_Books], None]) -> None:
        """Apply `change` to the shared store's entry (if any) and to the file, each re-read first."""
        merged = self._update_shared(change)
        if merged is not None:
            # the file mirrors what the store now holds
            def mirror(data: _Books) -> None:
                data["steps"], data["woke"] = _steps(merged), _woke(merged)
                data["points"], data["rewinds"] = _points(merged), _rewinds(merged)

            change = mirror
        self._update_file(change)

    def _update_shared(self, change: Callable[[_Books], None]) -> dict[str, object] | None:
        shared = self.shared
        if shared is None:
            return None

        def merge(data: object) -> dict[str, object]:
            if data is None or _problem(data) is not None:
                base = self._books()  # the store's first copy: what this process knows
            else:
                base = {
                    "workspace": str(self.workspace),  # the folder that wrote last
                    "woke": _woke(data),
                    "steps": _steps(data),
                    # the store's own books: the file mirrors this whole, so what is left out is lost
                    "points": _points(data),
                    "rewinds": _rewinds(data),
                }
            change(base)
            return _pruned(base)

        try:
            return shared.book.update_lineage(shared.identity.key, merge)
        except Exception:  # losing the shared copy must not take the run down with it
            return None

    def _update_file(self, change: Callable[[_Books], None]) -> None:
        """Re-read under the run_dir lock, apply `change` to what is on disk, write it back."""

        def merge(disk: object, repair: Repair | None) -> dict[str, object]:
            data: _Books
            if disk is None or _foreign(disk, self.workspace):
                # nothing usable here (none yet, a copied folder's, or damaged and set aside):
                # what this process knows, rebuilt from the manifest if it opened a damaged file
                data = self._books()
            else:
                data = {
                    "workspace": str(self.workspace),
                    "woke": _woke(disk),
                    "steps": _steps(disk),
                    "points": _points(disk),
                    "rewinds": _rewinds(disk),
                }
            change(data)
            if repair is not None:
                repair.recovered = _recovered(data)
            return _pruned(data)

        def check(disk: object) -> str | None:
            return None if _foreign(disk, self.workspace) else _problem(disk)

        try:
            written, repair = update_json(self.path, merge, check=check, durable=True)
        except OSError as exc:
            self.fault = fault_of(exc, self.path) or self.fault
            # losing continuity must not take the run down with it; memory stays right (a fresh
            # copy: a write that failed after the merge has already changed the merge's own)
            ours = self._books()
            change(ours)
            self.steps, self.woke = ours["steps"], ours["woke"]
            self.points, self.rewinds = _points(ours), _rewinds(ours)
            return
        self.steps, self.woke = _steps(written), _woke(written)
        self.points, self.rewinds = _points(written), _rewinds(written)
        self.repair = repair or self.repair
        self.damage = None  # repaired now, by this process or by another one first


def _foreign(data: object, workspace: Path) -> bool:
    """A well-formed lineage of another workspace (a copied folder): silently not ours."""
    found = mapping(data).get("workspace")
    return isinstance(found, str) and found != str(workspace)


def _pruned(data: _Books) -> dict[str, object]:
    """The seeds' three keys, and the rewind books only once there are any."""
    out: dict[str, object] = dict(data)
    for key in ("points", "rewinds"):
        if not out.get(key):
            out.pop(key, None)
    return out


# The readers below take any parsed value; on one `_problem` passed they read it whole.


def _steps(data: object) -> dict[str, str]:
    return {k: v for k, v in mapping(mapping(data).get("steps")).items() if isinstance(v, str)}


def _woke(data: object) -> int:
    return integer(mapping(data).get("woke")) or 0


def _points(data: object) -> dict[str, dict[str, object]]:
    found = {k: mapping(v) for k, v in mapping(mapping(data).get("points")).items()}
    return {k: point for k, point in found.items() if isinstance(point.get("session"), str)}


def _rewinds(data: object) -> list[dict[str, object]]:
    return [mapping(r) for r in items(mapping(data).get("rewinds")) if isinstance(r, dict)]


def _problem(data: object) -> str | None:
    """Why a parsed lineage is unusable, for a person; None if it is one."""
    if not isinstance(data, dict):
        return _("应该是 JSON 对象,却是 {name}").format(name=type(data).__name__)
    raw = mapping(data)
    if not isinstance(raw.get("workspace"), str):
        return _("缺 workspace 字段")
    steps, woke = raw.get("steps", {}), raw.get("woke", 0)
    if not isinstance(steps, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in steps.items()
    ):
        return _("steps 不是「步骤名 -> 会话 id」")
    if isinstance(woke, bool) or not isinstance(woke, int) or woke < 0:
        return _("woke 不是非负整数")
    return None


def _recovered(data: _Books) -> str:
    steps = data["steps"]
    if not steps:
        return _("manifest.json 里也没有会话可找回,从头开始")
    names = _("、").join(steps)
    return _("从 manifest.json 找回 {steps} 个步骤的会话({names}),已唤醒 {woke} 次").format(
        steps=len(steps), names=names, woke=data["woke"]
    )


def _fresh_dir(parent: Path, name: str) -> Path:
    # mkdir without exist_ok is the atomic "claim": two archives in one second never share a folder.
    parent.mkdir(parents=True, exist_ok=True)
    candidate, n = parent / name, 1
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            candidate = parent / f"{name}-{n}"
            n += 1


def _free_name(target: Path) -> Path:
    candidate, n = target, 1
    while candidate.exists():
        candidate = target.with_name(f"{target.stem}-{n}{target.suffix}")
        n += 1
    return candidate
