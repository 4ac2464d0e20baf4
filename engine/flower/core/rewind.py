"""Rewind a run to a judged round, or fork a new run from one: files and conversation together.

A rewind is planned first (what each file becomes, which of the person's own edits are kept),
then written down whole in `checkpoints/journal.json` before anything changes; only then are the
files put back, the lineage told where the step's session resumes (cut at the end of the round,
forked, so the later transcript is kept), the manifest given a row and the checkpoints' head
moved. A process killed anywhere in between leaves the journal, and the next flower that opens
the run replays it to the end (`recover`): the workspace is the old one or the new one, never a
mix of both once flower has looked at it.

Files the person changed by hand since the newest checkpoint are kept and named; with
`restore_edits` they are put back too, their bytes kept first among the checkpoints' blobs.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..base.files import write_bytes
from ..base.i18n import _
from ..base.loose import integer, items, mapping, text
from .checkpoints import Checkpoint, CheckpointError, Checkpoints, Entry, restore_file
from .lineage import Lineage
from .manifest import ManifestRow
from .recovery import MANIFEST
from .rundir import FlowLock, Repair, read_json, update_json

JOURNAL = "journal.json"
KILL_AFTER = "FLOWER_FAULT_REWIND_KILL_AFTER"  # fault injection: die after that many writes


@dataclass
class Plan:
    """What a rewind to `target` would do to the workspace as it is now."""

    target: Checkpoint
    latest: Checkpoint
    changes: dict[str, Entry | None]  # path -> what it becomes (None: removed)
    kept: list[str] = field(default_factory=list)  # the person's edits, left as they are
    restored_edits: list[str] = field(default_factory=list)  # the person's edits, put back too
    untouched: list[str] = field(default_factory=list)  # not kept by a checkpoint: left alone
    now: dict[str, Entry] = field(default_factory=dict)

    @property
    def round(self) -> int:
        return self.target.round

    @property
    def put_back(self) -> list[str]:
        """The paths given the round's bytes again, in path order."""
        return [rel for rel, entry in self.changes.items() if entry is not None]

    @property
    def removed(self) -> list[str]:
        """The paths removed (made after the round), in path order."""
        return [rel for rel, entry in self.changes.items() if entry is None]


@dataclass
class Report:
    plan: Plan
    id: str
    saved: dict[str, str] = field(default_factory=dict)  # a put-back edit -> the blob holding it
    session_cut: bool = False  # the step's session resumes at the end of the round


def hold_flows(store: Checkpoints, *, who: str) -> ExitStack:
    """Every flow of the run claimed without waiting (the lock a run holds while it works):
    raises FlowBusy, naming the holder, while one runs here or in another process."""
    held = ExitStack()
    try:
        for flow in sorted({cp.flow for cp in store.all() if cp.flow} or {"starter"}):
            lock = FlowLock(store.run_dir, flow, who=who)
            lock.acquire()
            held.callback(lock.release)
    except BaseException:
        held.close()
        raise
    return held


def _same(a: Entry | None, b: Entry | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.same(b)


def plan(store: Checkpoints, round_no: int, *, restore_edits: bool = False) -> Plan:
    """The rewind to round `round_no` (the checkpoint after its verdict); CheckpointError if none."""
    target = store.at_round(round_no)
    latest = store.head()
    if target is None or latest is None:
        rounds = store.rounds()
        known = _("、").join(str(n) for n in rounds) if rounds else _("没有")
        raise CheckpointError(
            _("第 {round} 轮没有检查点(这次运行判定过的轮:{known})").format(round=round_no, known=known)
        )
    now, skipped_now, _fresh = store.scan(latest)
    out = Plan(target=target, latest=latest, changes={}, now=now)
    unkept = set(target.skipped) | set(latest.skipped) | set(skipped_now)
    for rel in sorted(set(target.files) | set(latest.files) | set(now) | unkept):
        if rel in unkept:
            if rel in target.skipped or rel in target.files:
                out.untouched.append(rel)
            continue
        want, cur = target.files.get(rel), now.get(rel)
        if _same(cur, want):
            continue
        if not _same(cur, latest.files.get(rel)):  # changed since the newest checkpoint: by hand
            if not restore_edits:
                out.kept.append(rel)
                continue
            out.restored_edits.append(rel)
        out.changes[rel] = want
    return out


def rewind(
    store: Checkpoints, round_no: int, *, remark: str = "", restore_edits: bool = False, kind: str = "rewind"
) -> Report:
    """Put the workspace and the step's session back to the end of round `round_no`."""
    found = plan(store, round_no, restore_edits=restore_edits)
    report = Report(plan=found, id=time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6])
    for rel in found.restored_edits:
        path = store.workspace / rel
        if rel in found.now and not path.is_symlink():
            report.saved[rel] = store.store_blob(path.read_bytes())  # the person's bytes, kept first
    target = found.target
    after = dict(found.now)
    for rel, entry in found.changes.items():
        if entry is None:
            after.pop(rel, None)
        else:
            after[rel] = entry
    head = Checkpoint(
        seq=store._next_seq(),
        round=target.round,
        phase=kind,
        parent=target.seq,
        step=target.step,
        flow=target.flow,
        session=target.session,
        at=target.at,
        files=after,
        skipped=dict(target.skipped),
        created=time.time(),
    )
    point = (
        {"session": target.session, "at": target.at, "round": target.round, "remark": remark, "id": report.id}
        if target.step and target.session
        else None
    )
    record = {
        "id": report.id,
        "kind": kind,
        "round": target.round,
        "from_round": found.latest.round,
        "checkpoint": target.seq,
        "left": found.latest.seq,
        "at": time.time(),
        "remark": remark,
        "changed": sorted(found.changes),
        "kept": found.kept,
        "restored_edits": found.restored_edits,
        "saved": report.saved,
    }
    journal = {
        "id": report.id,
        "changes": {rel: (asdict(e) if e is not None else None) for rel, e in found.changes.items()},
        "head": head.record(),
        "step": target.step,
        "point": point,
        "record": record,
    }
    write_bytes(store.root / JOURNAL, json.dumps(journal, ensure_ascii=False).encode("utf-8"))
    _tick()
    _apply(store, journal)
    report.session_cut = bool(point and point["at"])
    return report


def recover(store: Checkpoints) -> str | None:
    """Replay a rewind a killed process left half-done; the line that says so, or None."""
    path = store.root / JOURNAL
    try:
        journal = read_json(path)
    except ValueError:
        journal = None  # written whole or not at all: a torn one was never acted on
        path.unlink(missing_ok=True)
    except OSError:
        return None
    if not isinstance(journal, dict):
        return None
    _apply(store, journal)
    record = mapping(journal.get("record"))
    return _("上次退回到第 {round} 轮时被打断了:已经把它做完(文件、会话、清单都到了第 {round} 轮)").format(
        round=record.get("round", "?")
    )


def _apply(store: Checkpoints, journal: Mapping[str, object]) -> None:
    """Do (or finish) what the journal says; every part may run again without harm."""
    changes = mapping(journal["changes"])
    for rel in sorted(changes):
        raw = changes[rel]
        restore_file(store, rel, _entry(raw) if raw is not None else None)
        _tick()
    lineage = Lineage.open(store.run_dir, store.workspace, shared=store.shared)
    point, step = mapping(journal.get("point")), str(journal.get("step") or "")
    if point and step:
        lineage.set_point(step, point)
        _tick()
    record = mapping(journal["record"])
    lineage.record_rewind(record)
    _tick()
    _manifest_row(store.run_dir, record)
    _tick()
    head = Checkpoint.of(journal["head"])
    store.write(head)
    store.set_head(head.seq)
    _tick()
    (store.root / JOURNAL).unlink(missing_ok=True)


def _entry(raw: object) -> Entry:
    """A file's entry as the journal holds it (`asdict` of an Entry); a missing field is the default."""
    data, default = mapping(raw), Entry()
    size, mode, mtime_ns = (integer(data.get(k)) for k in ("size", "mode", "mtime_ns"))
    return Entry(
        sha=text(data.get("sha"), default.sha),
        size=default.size if size is None else size,
        mode=default.mode if mode is None else mode,
        mtime_ns=default.mtime_ns if mtime_ns is None else mtime_ns,
        link=text(data.get("link"), default.link),
    )


def _manifest_row(run_dir: Path, record: Mapping[str, object]) -> None:
    row = ManifestRow.of_branch(record)

    def earlier(found: object) -> bool:
        return isinstance(found, dict) and ManifestRow.of_json(found).run == row.run

    def merge(rows: object, _repair: Repair | None) -> list[object]:
        # every other row, and whatever is not a row at all, stays as it is
        return [*(r for r in items(rows) if not earlier(r)), row.as_json()]

    update_json(run_dir / MANIFEST, merge)


_ticks = 0


def _tick() -> None:
    """Count one write; with the fault-injection variable set, die (SIGKILL) after that many."""
    global _ticks
    _ticks += 1
    limit = os.environ.get(KILL_AFTER)
    if limit and limit.isdigit() and _ticks >= int(limit):
        os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["JOURNAL", "Plan", "Report", "plan", "recover", "rewind"]
