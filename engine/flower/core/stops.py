"""How a wake that stopped short of its end stopped: "stopped: budget" (a money ceiling reached)
or "stopped: no progress" (rounds failing the same checks with the workspace unchanged, and the
person chose to stop or nobody answered). Kept in the run folder (``stops.json``), so the next
banner, the history and the Flower view say which stop it was and what continuing will do.

``last`` is the latest wake's stop, cleared as a wake begins (a wake killed half-way stopped on
neither); ``stops`` every wake's stop by its run id (the manifest rows' ``run``), for the history.
A write the disk refuses never fails the run: the stop is then only in the run's own last line.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, get_args

from ..base import loose
from ..base.files import atomic_write
from ..base.i18n import N_, _

STOPS_FILE = "stops.json"

StopKind = Literal["budget", "no_progress"]
KINDS: tuple[str, ...] = get_args(StopKind)

# the states' names stay English in every language, as "stopped: budget" always has
LABELS = {"budget": "stopped: budget", "no_progress": "stopped: no progress"}
# what continuing does, after the stop's own line
NEXT = {
    "budget": N_("要接着做,用新的预算再跑 flower(--budget / --round-budget,编辑器里是 flower.budget)"),
    "no_progress": N_("再跑 flower 就接着做(还是没有进展会再问你),也可以先改目标(目标.md)再跑,或者就此停下"),
}


@dataclass(frozen=True)
class Stop:
    kind: StopKind
    line: str  # the run's last line: why it stopped
    run: str  # the Runtime's run id of the wake that stopped
    at: float  # epoch seconds

    def label(self) -> str:
        return LABELS[self.kind]

    def next(self) -> str:
        """What continuing does, for a person."""
        return _(NEXT[self.kind])

    def summary(self) -> str:
        """Which stop it was, why, and what continuing will do, in one line."""
        if self.kind == "budget" and self.line.startswith(self.label()):
            return self.line  # the budget's own line names the state and the new budget to give
        why = self.line.rstrip("。.") or "?"
        return _("{label} —— {why}。{next}").format(label=self.label(), why=why, next=self.next())

    def banner_line(self) -> str:
        """The banner's stop line, under the seeds' one."""
        return _("   上次停在 {summary}").format(summary=self.summary())

    @classmethod
    def of(cls, data: object) -> Stop | None:
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            return None
        at = data.get("at")
        return cls(
            kind=data["kind"],
            line=str(data.get("line") or ""),
            run=str(data.get("run") or ""),
            at=float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else 0.0,
        )


def _read(run_dir: Path) -> dict[str, object]:
    try:
        data = json.loads((Path(run_dir) / STOPS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or damaged: no stop is known, never a reason to stop a run
    return loose.mapping(data)


def last_stop(run_dir: str | Path) -> Stop | None:
    """The latest wake's stop, None when it ended otherwise (or is running, or was killed)."""
    return Stop.of(_read(Path(run_dir)).get("last"))


def stops_by_run(run_dir: str | Path) -> dict[str, Stop]:
    """Every wake's stop, by the wake's run id."""
    found = _read(Path(run_dir)).get("stops")
    out: dict[str, Stop] = {}
    for item in found if isinstance(found, list) else []:
        stop = Stop.of(item)
        if stop is not None and stop.run:
            out[stop.run] = stop
    return out


def _write(run_dir: Path, data: dict[str, object]) -> None:
    with contextlib.suppress(OSError):  # the run's last line still says it; the books are a bonus
        atomic_write(run_dir / STOPS_FILE, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def begin_wake(run_dir: str | Path) -> None:
    """A wake begins: the one before no longer is the latest (only a file that says so is written)."""
    data = _read(Path(run_dir))
    if data.get("last") is not None:
        data["last"] = None
        _write(Path(run_dir), data)


def end_wake(run_dir: str | Path, run: str, kind: StopKind | None, line: str = "") -> Stop | None:
    """The wake `run` ended: stopped in `kind` with `line`, or (None) otherwise."""
    run_dir = Path(run_dir)
    data = _read(run_dir)
    if kind is None:
        if data.get("last") is not None:
            data["last"] = None
            _write(run_dir, data)
        return None
    stop = Stop(kind=kind, line=line, run=run, at=time.time())
    record = asdict(stop)
    earlier = [s for s in loose.items(data.get("stops")) if isinstance(s, dict) and s.get("run") != run]
    _write(run_dir, {"last": record, "stops": [*earlier, record]})
    return stop


__all__ = ["KINDS", "STOPS_FILE", "Stop", "StopKind", "begin_wake", "end_wake", "last_stop", "stops_by_run"]
