"""The story of a folder's work, read from what is on disk: read-only, it writes not one byte.

manifest.json gives the wakes (one per process: the rows' `run`), the steps and their judged
rounds (`干活`, `干活#round2`, the judge's `干活·判定#1` ...) with sessions, attempts, cost,
turns and durations; the judge's text is parsed into its verdict as the goal guard parses it;
lineage.json the wake count and the sessions the steps continue; 问答记录.md the questions and how
each settled; the workbench's notes the handoff documents; and sessions.db, each main-thread
model turn with the context it saw, which is what the chart of context growth draws.

A run in progress is on disk only in part (a step's row is written when its session starts,
its books when it ends, a transcript a moment after each turn). Whoever watches it (the language
server) passes what it saw as a `LiveRun`: that run's turns and questions come from it, the
rest still from disk, so a history asked for mid-run and one read days later tell one story.
"""

from __future__ import annotations

import json
import os
import re
import string
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..base.i18n import _ as _t
from ..base.loose import items, mapping
from ..core.agent import HandoffPolicy
from ..core.events import AskState, VerdictState, ask_state, verdict_state
from ..core.evidence import Evidence, Trail, TrailCall
from ..core.goal import Verdict, check_lines
from ..core.handoff import HANDOFF_PROMPT, Handoff
from ..core.human import Ask, HumanChannel, read_log
from ..core.labels import LabelKind, StepLabel
from ..core.lineage import Lineage
from ..core.manifest import ManifestRow
from ..core.recovery import read_rows
from ..core.resilience import classify
from ..core.rundir import FlowLock
from ..core.stops import Stop, stops_by_run
from ..stores.usage import StoredMessage, UnreadableStore, read_messages
from .goal import DEFAULT_REASON, EVIDENCE_DIR
from .starter import workbench_for

RoundStatus = Literal["running", "done", "failed", "unfinished"]
MarkKind = Literal["wake", "verdict", "handoff"]

HANDOFF_DOCS = (
    "交接-*.md",
    "archive/交接/*.md",
)  # under notes/: the current ones, and earlier ones moved aside
_ARCHIVE_DIR = re.compile(r"^\d{8}-\d{6}(?:-\d+)?$")  # a `--new` archive: notes/archive/<stamp>/
# how far a log's whole-second time and a file's mtime may sit from the rows' float times
_SLACK_S = 1.5
ASK_TOOL = HumanChannel().tool_name  # mcp__human__ask


# -- what a history is ----------------------------------------------------------------------------


@dataclass
class Turn:
    """One model turn of a main thread (subagents are not in it): the context it saw."""

    at: float  # epoch seconds
    used: int  # input + cache reads + cache writes
    session_id: str
    step: str  # the row's step name: 干活#round2, 干活·判定#1
    lane: str = ""  # the step it belongs to (干活), or the judge's (干活·判定)
    generation: int = 0  # the lane's sessions so far, this one included (a handoff starts the next)
    wake: int = 0  # 1-based


@dataclass
class Mark:
    """A point of the run worth marking on the chart, at the index of a turn in `History.turns`."""

    kind: MarkKind
    turn: int
    label: str  # the step name it happened in (a verdict: the round it ruled on), or "wake N"
    state: str = ""  # a verdict's state


@dataclass
class QuestionRecord:
    id: str  # q1, q2 ... (counted per process)
    question: str
    options: list[str]
    state: AskState
    answer: str  # the answer, or the reason a question was skipped
    asked_at: float
    waited_s: float | None = None  # None while it waits


@dataclass
class HandoffRecord:
    step: str  # the row it happened in
    retired: str  # the session that handed over
    successor: str | None  # the session that took over (None while the handoff is written)
    generation: int  # the successor's generation in its lane
    at: float
    used: int  # the retired session's context at its last turn
    path: str | None = None  # the handoff document, when it is still on disk
    degraded: bool = False  # written by flower because the session could not write it


@dataclass
class VerdictRecord:
    state: VerdictState  # as the goal guard took it (an achieved verdict without evidence: not_yet)
    reason: str
    failed: list[str]
    round: int  # the judge's own count (restarts with every wake)
    step: str  # the judge's row: 干活·判定#2
    session_id: str | None
    at: float
    cost_usd: float  # the judge's own books
    num_turns: int
    duration_s: float
    # how each check was verified, from the trail kept beside the row (runs/evidence/<step>.json);
    # empty when none was kept (a flower before evidence, or a judge that never finished)
    evidence: list[Evidence] = field(default_factory=list)
    trail: list[TrailCall] = field(default_factory=list)  # every tool call of the judge's turn
    unproven: list[str] = field(default_factory=list)  # checks claimed achieved without evidence
    claimed: VerdictState = ""  # the judge's own conclusion when flower overruled it


@dataclass
class RoundRecord:
    """One manifest row of a step: its first round, a judged round of work, or a retry."""

    number: int  # 1-based within its step and wake
    step: str  # the row's step name
    status: RoundStatus
    session_id: str | None
    retired: list[str]
    started_at: float
    ended_at: float  # 0 while running or when the process died in it
    duration_s: float
    cost_usd: float  # the row's own; the judge's is in its verdict
    num_turns: int
    attempts: int
    errors: list[str]  # what went wrong in attempts that were retried
    error: str | None
    resumed: bool  # continued the session of an earlier run or attempt
    verdict: VerdictRecord | None = None
    judge_error: str | None = None  # the judge ran but gave no verdict (a fatal error)
    handoffs: list[HandoffRecord] = field(default_factory=list)
    questions: list[QuestionRecord] = field(default_factory=list)


@dataclass
class StepRecord:
    name: str  # 确认需求 / 设定目标 / 干活
    rounds: list[RoundRecord]
    sessions: list[str]  # every session the step ran in, handed-over ones included, in order
    cost_usd: float  # rounds and their judges
    num_turns: int
    duration_s: float
    live: bool


@dataclass
class WakeRecord:
    number: int  # 1-based
    run: str  # the process's run id (manifest rows' `run`)
    started_at: float
    ended_at: float  # 0 while it runs
    cost_usd: float
    num_turns: int
    duration_s: float
    live: bool
    steps: list[StepRecord]
    # how it stopped short of its end: budget / no_progress ("" otherwise), and that stop in one
    # line: which stop it was, why, what continuing will do (stops.json)
    stopped: str = ""
    stop_line: str = ""


@dataclass
class BranchRecord:
    """A rewind or a fork (core/rewind.py): the work went back to the end of `round`, and the
    wakes after `after_wake` continue from there, a branch beside rounds `round`+1..`from_round`."""

    kind: str  # rewind / fork
    round: int  # the judged round the work went back to
    from_round: int  # the round the work had reached
    at: float
    remark: str
    after_wake: int  # how many wakes came before it (0: before the first one of this folder)


@dataclass
class CheckLine:
    line: int  # 0-based, in 目标.md
    text: str


@dataclass
class History:
    workspace: str
    run_dir: str
    brief: str  # 需求.md
    goal: str  # 目标.md
    brief_exists: bool
    goal_exists: bool
    checks: list[CheckLine]  # the goal's checklist, where each check is
    woke: int  # the lineage's count of wake-ups
    sessions: dict[str, str]  # step -> the session it continues (lineage.json)
    wakes: list[WakeRecord]
    turns: list[Turn]  # every main-thread turn of every wake, in order
    marks: list[Mark]  # wakes, verdicts and handoffs, on the turns
    window: int
    at: int  # the handoff threshold
    warn_at: int
    cost_usd: float
    num_turns: int
    duration_s: float
    live: bool  # a run is in progress (as the caller saw it)
    live_step: str  # the step name in flight ("" between steps)
    elsewhere: str  # who else is working on the folder's flow now (a terminal's `flower`), or ""
    earlier: int  # wakes of work archived with `--new`, left out
    problems: list[str]  # what could not be read, one line each
    branches: list[BranchRecord] = field(default_factory=list)  # rewinds and forks, in order


@dataclass
class LiveRun:
    """What the watcher of a run in progress saw that the disk may not have yet."""

    run: str | None  # the Runtime's run id: its manifest rows; None when not known
    started_at: float
    turns: list[Turn] = field(default_factory=list)  # at, used, session_id and step are read
    questions: list[QuestionRecord] = field(default_factory=list)
    handoffs: list[HandoffRecord] = field(default_factory=list)
    step: str = ""  # the step name in flight, as last seen (干活, then 干活#round2 ...); "" between steps
    step_started_at: float = 0.0
    cost_usd: float = 0.0  # the step in flight's books so far
    window: int = 0  # of the last reading; 0 = none yet
    at: int = 0
    warn_at: int = 0


# -- reading ----------------------------------------------------------------------------------------


@dataclass
class DiskRecord:
    """Everything `read_history` reads from disk, before it is arranged: the slow part."""

    workspace: Path
    run_dir: Path
    brief: Path
    goal: Path
    rows: list[ManifestRow]  # the current piece of work's manifest rows
    earlier: int  # wakes archived with `--new`
    woke: int
    sessions: dict[str, str]
    goal_text: str | None
    brief_exists: bool
    asks: list[Ask]  # the Q&A log
    documents: list[Handoff]  # every handoff document, with its step
    stored: dict[str, list[StoredMessage]]  # the sessions' turns, prompts and ask calls
    cutoff: float  # when the current piece of work began (0: no `--new` yet)
    elsewhere: str  # who holds the flow's lock, when another live process does
    problems: list[str]
    branches: list[BranchRecord] = field(default_factory=list)
    # the judges' trails (runs/evidence/*.json), by the judge's session
    trails: dict[str, dict[str, object]] = field(default_factory=dict)
    stops: dict[str, Stop] = field(default_factory=dict)  # each wake's stop, by its run id


def read_disk(
    workspace: str | Path,
    *,
    run_dir: str | Path = "runs",
    isolate: bool = False,
    brief_name: str = "需求.md",
    goal_name: str = "目标.md",
    log_name: str = "问答记录.md",
    flow: str = "starter",
) -> DiskRecord:
    """Read the folder's run files, read-only; never raises for damaged files (what could not be
    read is in `problems`). `flow` names the flow whose lock says whether another process is at
    the work now."""
    wb = workbench_for(workspace, isolate=isolate)
    run_path = Path(run_dir)
    if not run_path.is_absolute():
        run_path = wb.workspace / run_path
    notes = wb.notes
    problems: list[str] = []
    rows, damage = read_rows(run_path)
    if damage:
        problems.append(f"{run_path / 'manifest.json'}: {damage}")
    lineage = Lineage.open(run_path, wb.workspace)
    if lineage.damage:
        problems.append(f"{lineage.path}: {lineage.damage}")
    cutoff = _archived_at(notes / "archive")
    branches = _branches(rows)
    rows = [r for r in rows if _is_row(r)]
    earlier = _earlier_runs(rows, _archived_sessions(notes / "archive"))
    rows = [r for r in rows if r.run not in earlier]
    sessions = {s for r in rows for s in r.sessions}
    try:
        stored = read_messages(run_path / "sessions.db", sessions, calls=(ASK_TOOL,))
    except UnreadableStore as exc:
        problems.append(f"the context of past turns cannot be read: {exc}")
        stored = {}
    goal_path, brief_path = notes / goal_name, notes / brief_name
    return DiskRecord(
        workspace=wb.workspace,
        run_dir=run_path,
        brief=brief_path,
        goal=goal_path,
        rows=rows,
        earlier=len(earlier),
        woke=lineage.woke,
        sessions=dict(lineage.steps),
        goal_text=_read(goal_path),
        brief_exists=brief_path.is_file(),
        asks=[a for a in read_log(notes / log_name) if a.asked_at >= cutoff - _SLACK_S],
        documents=_documents(notes),
        stored=stored,
        cutoff=cutoff,
        elsewhere=_held_elsewhere(run_path, flow),
        problems=problems,
        branches=branches,
        trails=_trails(run_path / EVIDENCE_DIR, problems),
        stops=stops_by_run(run_path),
    )


def _trails(folder: Path, problems: list[str]) -> dict[str, dict[str, object]]:
    """Every kept judge trail by its session; a file that does not parse is said, not fatal."""
    out: dict[str, dict[str, object]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        for entry in items(entries):
            kept = mapping(entry)
            session = kept.get("session_id")
            if isinstance(session, str):
                out[session] = kept
    return out


def _held_elsewhere(run_dir: Path, flow: str) -> str:
    """Who holds the flow's lock, if it is a live process other than this one ("" otherwise).
    Only the lock file's note is read: taking the lock, even for a moment, could refuse the
    process that wants it."""
    holder = FlowLock(run_dir, flow).holder()
    if not holder.pid or holder.pid == os.getpid():
        return ""
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return ""  # the note of a process that died holding it
    except PermissionError:
        pass  # alive, another user's
    return holder.describe()


def assemble(
    disk: DiskRecord,
    *,
    policy: HandoffPolicy | None = None,
    live: LiveRun | None = None,
    now: float | None = None,
) -> History:
    """Arrange what was read as the story, with what the watcher of a live run saw on top; fast
    and pure (no file is touched), so a watcher can run it whenever its run moves. `policy` is
    the handoff policy runs here use: the window is not on disk, so it gives the chart's lines
    until a live reading says otherwise."""
    policy = policy or HandoffPolicy()
    now = time.time() if now is None else now
    problems = list(disk.problems)
    elsewhere = "" if live is not None else disk.elsewhere
    book = _Book(disk.rows, live, now, running_elsewhere=bool(elsewhere), trails=disk.trails)
    turns, calls = _turns(disk.stored, book, live)
    book.place_questions(_questions(disk.asks, live, calls))
    book.place_handoffs(turns, disk.documents, live)
    marks = book.marks(turns)
    window, at, warn_at = (
        (live.window, live.at, live.warn_at)
        if live and live.window
        else (policy.window, policy.at, policy.warn_at)
    )
    wakes = book.wakes()
    for wake in wakes:
        stop = None if wake.live else disk.stops.get(wake.run)
        if stop is not None:
            wake.stopped, wake.stop_line = stop.kind, stop.summary()
    return History(
        workspace=str(disk.workspace),
        run_dir=str(disk.run_dir),
        brief=str(disk.brief),
        goal=str(disk.goal),
        brief_exists=disk.brief_exists,
        goal_exists=disk.goal_text is not None,
        checks=[CheckLine(n, c) for n, c in check_lines(disk.goal_text or "")],
        woke=disk.woke,
        sessions=dict(disk.sessions),
        wakes=wakes,
        turns=turns,
        marks=marks,
        window=window,
        at=at,
        warn_at=warn_at,
        cost_usd=round(sum(w.cost_usd for w in wakes), 6),
        num_turns=sum(w.num_turns for w in wakes),
        duration_s=round(sum(w.duration_s for w in wakes), 2),
        live=live is not None,
        live_step=live.step if live else "",
        elsewhere=elsewhere,
        earlier=disk.earlier,
        problems=problems,
        branches=list(disk.branches),
    )


def read_history(
    workspace: str | Path,
    *,
    run_dir: str | Path = "runs",
    isolate: bool = False,
    policy: HandoffPolicy | None = None,
    live: LiveRun | None = None,
    brief_name: str = "需求.md",
    goal_name: str = "目标.md",
    log_name: str = "问答记录.md",
    now: float | None = None,
) -> History:
    """The whole story of the folder's current piece of work (see `read_disk` and `assemble`)."""
    disk = read_disk(
        workspace,
        run_dir=run_dir,
        isolate=isolate,
        brief_name=brief_name,
        goal_name=goal_name,
        log_name=log_name,
    )
    return assemble(disk, policy=policy, live=live, now=now)


def extend(history: History, seen: Turn) -> Turn:
    """Append a turn the watcher of the live run just saw, as `assemble` would place it (its
    lane, generation and wake); returns it. What the next `assemble` gives agrees."""
    lane = _lane(seen.step)
    generation = 0
    for turn in reversed(history.turns):
        if turn.lane == lane:
            # the same session as the lane's last turn: one more turn of its generation (the
            # usual case, found at once); another one: count the lane's sessions
            if turn.session_id == seen.session_id:
                generation = turn.generation
            break
    if not generation:
        order: list[str] = []
        for turn in history.turns:
            if turn.lane == lane and turn.session_id not in order:
                order.append(turn.session_id)
        generation = order.index(seen.session_id) + 1 if seen.session_id in order else len(order) + 1
    live = next((w.number for w in history.wakes if w.live), history.wakes[-1].number if history.wakes else 1)
    turn = Turn(seen.at, seen.used, seen.session_id, seen.step, lane, generation, live)
    history.turns.append(turn)
    return turn


# -- rows into wakes, steps and rounds ------------------------------------------------------------


class _Book:
    """The manifest rows of the current piece of work, arranged as wakes, steps and rounds."""

    def __init__(
        self,
        rows: list[ManifestRow],
        live: LiveRun | None,
        now: float,
        *,
        running_elsewhere: bool = False,
        trails: dict[str, dict[str, object]] | None = None,
    ) -> None:
        self.live = live
        self.trails = trails or {}
        self.now = now
        # the manifest's order, never the clocks': each process appends its rows as its steps
        # run, so a wake whose clock was behind (or jumped back) keeps its place
        by_run: dict[str, list[ManifestRow]] = {}
        for row in rows:
            by_run.setdefault(row.run, []).append(row)
        runs = list(by_run)
        if live is not None and live.run is not None and live.run not in by_run:
            by_run[live.run] = []  # started, no session yet
            runs.append(live.run)
        self._wakes: list[WakeRecord] = []
        self.rows: list[tuple[ManifestRow, RoundRecord, WakeRecord]] = []  # every row, by start
        self.judges: list[tuple[ManifestRow, RoundRecord]] = []
        for number, run in enumerate(runs, 1):
            is_live = live is not None and run == live.run
            wake = WakeRecord(number, run, 0.0, 0.0, 0.0, 0, 0.0, is_live, [])
            # another process at the work now: its last wake's open rows are running, not dead
            running = is_live or (running_elsewhere and number == len(runs))
            for row in by_run[run]:
                self._add(wake, row, running)
            if is_live and live is not None and live.step:
                self._mark_live(wake, live)
            self._wakes.append(wake)

    def _add(self, wake: WakeRecord, row: ManifestRow, running: bool) -> None:
        label = row.step
        name = str(label)
        if label.kind is LabelKind.VERDICT:
            target = self._judged_round(wake, label.step)
            if target is not None:
                self.judges.append((row, target))
                self._judge(target, row)
                self.rows.append((row, target, wake))
            return
        base = label.lineage_key or name  # a side turn (the handover) is a record of its own
        step = wake.steps[-1] if wake.steps and wake.steps[-1].name == base else None
        if step is None:
            step = StepRecord(base, [], [], 0.0, 0, 0.0, False)
            wake.steps.append(step)
        record = self._round(row, len(step.rounds) + 1, running)
        step.rounds.append(record)
        for sid in [*record.retired, record.session_id]:
            if sid and sid not in step.sessions:
                step.sessions.append(sid)
        self.rows.append((row, record, wake))

    def _round(self, row: ManifestRow, number: int, running: bool) -> RoundRecord:
        if row.ended_at:
            status: RoundStatus = "done" if row.ok else "failed"
        else:
            status = "running" if running else "unfinished"
        return RoundRecord(
            number=number,
            step=str(row.step),
            status=status,
            session_id=row.session_id,
            retired=list(row.retired),
            started_at=row.started_at,
            ended_at=row.ended_at,
            duration_s=max(0.0, row.duration_s),  # an older flower wrote clock jumps
            cost_usd=row.cost_usd,
            num_turns=row.num_turns,
            attempts=max(1, row.attempts),
            errors=list(row.errors),
            error=row.error,
            resumed=row.resumed,
        )

    @staticmethod
    def _judged_round(wake: WakeRecord, base: str) -> RoundRecord | None:
        """The round a judge's row rules on: the last of the step it is named after."""
        steps = [s for s in wake.steps if s.name == base and s.rounds] or [s for s in wake.steps if s.rounds]
        return steps[-1].rounds[-1] if steps else None

    def _judge(self, target: RoundRecord, row: ManifestRow) -> None:
        """The verdict the goal guard read from this judge's text, as it read it."""
        error = row.error or None
        if not row.ended_at:
            return  # the judge is still at it (or died at it): no verdict yet
        if not row.ok and classify(error) == "fatal":
            target.judge_error = error
            return
        verdict = Verdict.parse(row.text)
        reason = verdict.reason if (verdict.ok or verdict.reason) else DEFAULT_REASON
        name = str(row.step)
        sid = row.session_id
        kept = self.trails.get(sid or "")
        evidence: list[Evidence] = []
        trail: list[TrailCall] = []
        unproven: list[str] = []
        claimed: VerdictState = ""
        if kept is not None and kept.get("step") == name:
            # a file on disk: each field is read for its shape (a wrong one is no evidence)
            evidence = [Evidence.from_json(e) for e in items(kept.get("evidence"))]
            trail = list(Trail.from_json(kept.get("trail")).calls)
            unproven = [c for c in items(kept.get("unproven")) if isinstance(c, str)]
            claimed = verdict_state(str(kept.get("claimed") or ""))
            if claimed:  # the goal guard overruled the judge: the history tells what counted
                verdict.state = str(kept.get("state") or verdict.state)
                verdict.failed = _kept_failed(unproven, verdict.failed)
                why = _t("没有证据:{checks}").format(checks=";".join(unproven))
                reason = f"{why}\n{reason}".strip() if unproven else reason
        target.verdict = VerdictRecord(
            state=verdict_state(verdict.state),
            reason=reason,
            failed=list(verdict.failed),
            round=row.step.number,
            step=name,
            session_id=row.session_id,
            at=row.ended_at,
            cost_usd=row.cost_usd,
            num_turns=row.num_turns,
            duration_s=max(0.0, row.duration_s),  # an older flower wrote clock jumps
            evidence=evidence,
            trail=trail,
            unproven=unproven,
            claimed=claimed,
        )

    def _mark_live(self, wake: WakeRecord, live: LiveRun) -> None:
        """The step in flight is live; its row (written when its session started) gets its books
        so far. Before its session starts it has no row yet: it is shown as a running round."""
        label = StepLabel.parse(live.step)
        base = label.lineage_key or (label.step if label.kind is LabelKind.VERDICT else live.step)
        step = next((s for s in reversed(wake.steps) if s.name == base), None)
        if step is None:
            step = StepRecord(base, [], [], 0.0, 0, 0.0, True)
            wake.steps.append(step)
        step.live = True
        running = [r for r in step.rounds if r.status == "running"]
        if label.kind is LabelKind.VERDICT:
            return  # the judge's books arrive with its row
        if not running:
            started = live.step_started_at or self.now
            step.rounds.append(
                RoundRecord(
                    len(step.rounds) + 1,
                    live.step,
                    "running",
                    None,
                    [],
                    started,
                    0.0,
                    0.0,
                    0.0,
                    0,
                    1,
                    [],
                    None,
                    False,
                )
            )
            running = step.rounds[-1:]
        for record in running:
            if record.step == live.step:
                record.cost_usd = max(record.cost_usd, live.cost_usd)
            record.duration_s = round(max(0.0, self.now - record.started_at), 2)

    # -- what else hangs on the rounds --------------------------------------------------------
    def place_questions(self, questions: list[_Asked]) -> None:
        """A question goes to the round it was asked in: the row of the session that called the
        ask tool; a question the workflow asked itself (an unreachable goal) to the round whose
        verdict raised it. The log's times are whole seconds: only a transcript pins them down."""
        for asked in questions:
            question = asked.record
            if asked.session is not None:
                owners = [item for item in self.rows if asked.session in item[0].sessions]
                target = _owner(owners, question.asked_at)[1] if owners else self._at(question.asked_at)
            elif asked.exact:
                target = self._at(question.asked_at)
            else:
                ruled = [r for _, r, _ in self.rows if r.verdict and r.verdict.at <= question.asked_at + 1]
                target = ruled[-1] if ruled else self._at(question.asked_at + 1)
            if target is not None and question not in target.questions:
                target.questions.append(question)

    def _at(self, when: float) -> RoundRecord | None:
        """The round whose row started last before `when` (a judge's row counts for its round)."""
        found = None
        for row, record, _ in self.rows:
            if row.started_at <= when:
                found = record
        if found is None and self.rows:
            found = self.rows[0][1]
        return found

    def place_handoffs(self, turns: list[Turn], documents: list[Handoff], live: LiveRun | None) -> None:
        last_turn: dict[str, Turn] = {}
        first_turn: dict[str, Turn] = {}
        for turn in turns:
            last_turn[turn.session_id] = turn
            first_turn.setdefault(turn.session_id, turn)
        seen: set[str] = set()
        pending: list[tuple[HandoffRecord, RoundRecord]] = []
        for row, record, _ in self.rows:
            if row.step.kind is LabelKind.VERDICT:
                continue
            chain = [*record.retired, record.session_id]
            for i, retired in enumerate(record.retired):
                successor = chain[i + 1]
                before = last_turn.get(retired)
                after = first_turn.get(successor or "")
                at = before.at if before else (after.at if after else record.started_at)
                handoff = HandoffRecord(
                    step=record.step,
                    retired=retired,
                    successor=successor,
                    generation=after.generation if after else 0,
                    at=at,
                    used=before.used if before else 0,
                )
                record.handoffs.append(handoff)
                pending.append((handoff, record))
                seen.add(retired)
        for said in live.handoffs if live else []:
            if said.retired in seen:
                continue
            target = next((r for _, r, _ in reversed(self.rows) if r.step == said.step), None)
            if target is not None:
                target.handoffs.append(said)
        _assign_documents(pending, documents)

    def marks(self, turns: list[Turn]) -> list[Mark]:
        out: list[Mark] = []
        first_of_wake: dict[int, int] = {}
        for index, turn in enumerate(turns):
            first_of_wake.setdefault(turn.wake, index)
        for wake in self._wakes:
            if wake.number in first_of_wake and wake.number > 1:
                out.append(Mark("wake", first_of_wake[wake.number], f"wake {wake.number}"))
        for wake in self._wakes:
            for step in wake.steps:
                for record in step.rounds:
                    for handoff in record.handoffs:
                        where = _last_of_session(turns, handoff.retired)
                        if where is not None:
                            out.append(Mark("handoff", where, handoff.step))
                    verdict = record.verdict
                    if verdict is not None:
                        where = _last_before(turns, verdict.at + 0.001)
                        if where is not None:
                            out.append(Mark("verdict", where, record.step, verdict.state))
        out.sort(key=lambda m: m.turn)
        return out

    def wakes(self) -> list[WakeRecord]:
        for wake in self._wakes:
            for step in wake.steps:
                step.cost_usd = round(
                    sum(r.cost_usd + (r.verdict.cost_usd if r.verdict else 0.0) for r in step.rounds), 6
                )
                step.num_turns = sum(
                    r.num_turns + (r.verdict.num_turns if r.verdict else 0) for r in step.rounds
                )
                step.duration_s = round(
                    sum(r.duration_s + (r.verdict.duration_s if r.verdict else 0.0) for r in step.rounds), 2
                )
            wake.cost_usd = round(sum(s.cost_usd for s in wake.steps), 6)
            wake.num_turns = sum(s.num_turns for s in wake.steps)
            wake.duration_s = round(sum(s.duration_s for s in wake.steps), 2)
            starts = [r.started_at for s in wake.steps for r in s.rounds if r.started_at]
            if wake.live and self.live is not None:
                starts.append(self.live.started_at)
            wake.started_at = min(starts) if starts else 0.0
            ends = [r.ended_at for s in wake.steps for r in s.rounds] + [
                r.verdict.at for s in wake.steps for r in s.rounds if r.verdict
            ]
            # a wake whose process died in a step has no end
            wake.ended_at = 0.0 if wake.live or not ends or not all(ends) else max(ends)
        return self._wakes


def _assign_documents(pending: list[tuple[HandoffRecord, RoundRecord]], documents: list[Handoff]) -> None:
    """Each handoff gets the document written for its step at it: the first one not older than it
    (a document names its step in its title; an earlier one of the same step was moved aside)."""
    docs = sorted((d for d in documents if d.path is not None), key=lambda d: _mtime(d.path))
    for handoff, _ in sorted(pending, key=lambda item: item[0].at):
        doc = next(
            (d for d in docs if d.step == handoff.step and _mtime(d.path) >= handoff.at - _SLACK_S), None
        )
        if doc is None:
            continue
        docs.remove(doc)
        handoff.path = str(doc.path)
        handoff.degraded = doc.degraded


# -- turns -----------------------------------------------------------------------------------------


def _handoff_prompt() -> re.Pattern[str]:
    """The start of the prompt a session is sent to write its handoff, placeholders as wildcards."""
    first = HANDOFF_PROMPT.split("\n", 1)[0]
    parts = [
        re.escape(literal) + (r".*?" if name is not None else "")
        for literal, name, _, _ in string.Formatter().parse(first)
    ]
    return re.compile("".join(parts))


_HANDOFF_PROMPT = _handoff_prompt()


def _turns(
    stored: dict[str, list[StoredMessage]], book: _Book, live: LiveRun | None
) -> tuple[list[Turn], list[tuple[str, StoredMessage]]]:
    """Every main-thread turn: from sessions.db for finished wakes, from the watcher for a live one;
    and the calls of the ask tool found on the way (which session asked what, when)."""
    disk_rows = [(row, record, wake) for row, record, wake in book.rows if not wake.live]
    live_wake = next((w for w in book._wakes if w.live), None)
    # a session the live run continues has its earlier turns on disk, its new ones from the watcher
    live_from = (
        min([live.started_at, *(r.started_at for _, r, w in book.rows if w.live)]) if live else float("inf")
    )
    sessions: dict[str, list[tuple[ManifestRow, RoundRecord, WakeRecord]]] = {}
    for item in disk_rows:
        for sid in item[0].sessions:
            sessions.setdefault(sid, []).append(item)
    turns: list[Turn] = []
    calls: list[tuple[str, StoredMessage]] = []
    place = {id(item[0]): index for index, item in enumerate(book.rows)}
    placed: list[tuple[int, int, int, Turn]] = []  # (wake, row in the manifest, seq in the store)
    for sid, messages in stored.items():
        if sid not in sessions:
            continue  # only the live run's: its turns are the watcher's
        owners = sessions[sid]  # in the manifest's order
        first = min(item[0].started_at for item in owners) - _SLACK_S
        for message in _work_turns(messages):
            if message.at >= live_from or message.at < first:
                continue  # the live run's (the watcher has them), or work archived with `--new`
            if message.kind == "call":
                calls.append((sid, message))
                continue
            row, _, wake = _owner(owners, message.at)
            turn = Turn(message.at, message.used, sid, str(row.step), wake=wake.number)
            placed.append((wake.number, place.get(id(row), 0), len(placed), turn))
    placed.sort(key=lambda item: item[:3])  # recorded order: a clock that jumped reorders nothing
    turns.extend(item[3] for item in placed)
    if live is not None and live_wake is not None:
        for seen in live.turns:
            turns.append(Turn(seen.at, seen.used, seen.session_id, seen.step, wake=live_wake.number))
    _lanes(turns)
    return turns, calls


def _work_turns(messages: list[StoredMessage]) -> Iterable[StoredMessage]:
    """The turns, without those answering the handoff prompt (the runtime does not report them)."""
    handing_over = False
    for message in messages:
        if message.kind == "prompt":
            handing_over = bool(_HANDOFF_PROMPT.match(message.text))
        elif not handing_over:
            yield message


def _owner(
    owners: list[tuple[ManifestRow, RoundRecord, WakeRecord]], at: float
) -> tuple[ManifestRow, RoundRecord, WakeRecord]:
    """The row a turn of a session was made in: the last one of that session started before it
    (a row's start is stamped before its CLI starts, a turn's time by that CLI: one clock)."""
    found = owners[0]
    for item in owners:
        if item[0].started_at <= at:
            found = item
    return found


def _lanes(turns: list[Turn]) -> None:
    """Lane and generation: a lane's sessions are numbered in the order they first speak."""
    seen: dict[str, list[str]] = {}
    for turn in turns:
        lane = turn.lane = _lane(turn.step)
        order = seen.setdefault(lane, [])
        if turn.session_id not in order:
            order.append(turn.session_id)
        turn.generation = order.index(turn.session_id) + 1


def _lane(step: str) -> str:
    """The step a row's turns belong to (干活#round2 -> 干活), or its judge's (干活·判定#2 -> 干活·判定)."""
    return StepLabel.parse(step).lane


def _last_of_session(turns: Sequence[Turn], session_id: str) -> int | None:
    found = None
    for index, turn in enumerate(turns):
        if turn.session_id == session_id:
            found = index
    return found


def _last_before(turns: Sequence[Turn], when: float) -> int | None:
    found = None
    for index, turn in enumerate(turns):
        if turn.at <= when:
            found = index
    return found


# -- questions and documents -------------------------------------------------------------------------


@dataclass
class _Asked:
    record: QuestionRecord
    session: str | None = None  # the session whose ask tool call it was, when a transcript says
    exact: bool = False  # asked_at is exact (from a transcript or the watcher), not whole seconds


def _questions(asks: list[Ask], live: LiveRun | None, calls: list[tuple[str, StoredMessage]]) -> list[_Asked]:
    """The log's questions (matched to the ask calls that made them) and the watcher's."""
    out: list[_Asked] = []
    unclaimed = sorted(calls, key=lambda c: c[1].at)
    for a in asks:
        record = QuestionRecord(
            a.id, a.question, list(a.options), ask_state(a.state), a.answer, a.asked_at, a.waited_s
        )
        call = next((c for c in unclaimed if _made(c[1], a)), None)
        if call is None:
            out.append(_Asked(record))
            continue
        unclaimed.remove(call)
        record.asked_at = call[1].at
        out.append(_Asked(record, call[0], exact=True))
    for said in live.questions if live else []:
        same = next(
            (
                q
                for q in out
                if q.record.id == said.id and abs(q.record.asked_at - said.asked_at) <= 1 + _SLACK_S
            ),
            None,
        )
        if same is None:
            out.append(_Asked(said, exact=True))
        elif said.state != "asked":
            same.record, same.exact = said, True  # the watcher's time is exact, the log's whole seconds
    out.sort(key=lambda q: q.record.asked_at)
    return out


def _made(call: StoredMessage, ask: Ask) -> bool:
    """Whether this ask tool call asked the logged question (the log has whole seconds)."""
    asked = str(call.input.get("question", "")).strip()
    return asked == ask.question and -_SLACK_S <= call.at - ask.asked_at <= 1 + _SLACK_S


def _documents(notes: Path) -> list[Handoff]:
    """Every handoff document on disk, the current ones and those moved aside, with its step."""
    out: list[Handoff] = []
    try:
        paths = [p for pattern in HANDOFF_DOCS for p in notes.glob(pattern)]
    except OSError:
        return out
    for path in paths:
        doc = Handoff.load(path)
        if doc is not None and doc.step:
            out.append(doc)
    return out


def _archived_sessions(archive: Path) -> set[str]:
    """Every session a `--new` archive's lineage names: the work before the current one."""
    found: set[str] = set()
    try:
        folders = [c for c in archive.iterdir() if c.is_dir() and _ARCHIVE_DIR.match(c.name)]
    except OSError:
        return found
    for folder in folders:
        try:
            data = json.loads((folder / "lineage.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        steps = data.get("steps") if isinstance(data, dict) else None
        if isinstance(steps, dict):
            found.update(s for s in steps.values() if isinstance(s, str))
    return found


def _earlier_runs(rows: list[ManifestRow], archived: set[str]) -> set[str]:
    """The wakes of work archived with `--new`, by the manifest's own order, never by a clock:
    every run up to the last one that used a session the archives name."""
    order = list(dict.fromkeys(r.run for r in rows))
    last = -1
    for index, run in enumerate(order):
        if any(r.sessions & archived for r in rows if r.run == run):
            last = index
    return set(order[: last + 1])


def _archived_at(archive: Path) -> float:
    """When the current piece of work began: the latest `--new` archive's time (0 when none)."""
    latest = 0.0
    try:
        for child in archive.iterdir() if archive.is_dir() else []:
            if child.is_dir() and _ARCHIVE_DIR.match(child.name):
                latest = max(latest, child.stat().st_mtime)
    except OSError:
        return latest
    return latest


# -- small readers ------------------------------------------------------------------------------------


def _is_row(row: ManifestRow) -> bool:
    return (
        row.well_formed
        # the row a handoff's own turn may leave behind when the process dies in it
        and not row.is_handoff
        and row.rewind is None  # a rewind's row: a branch, not a wake
    )


def _branches(rows: list[ManifestRow]) -> list[BranchRecord]:
    """The rewinds and forks of the manifest, each placed after the wakes whose rows precede it."""
    found: list[BranchRecord] = []
    runs: set[str] = set()
    for row in rows:
        record = row.rewind
        if record is not None:
            found.append(
                BranchRecord(
                    kind=record.kind or "rewind",
                    round=record.round,
                    from_round=record.from_round,
                    at=record.at,
                    remark=record.remark,
                    after_wake=len(runs),
                )
            )
        elif _is_row(row):
            runs.add(row.run)
    return found


def _mtime(path: Path | None) -> float:
    try:
        return path.stat().st_mtime if path is not None else 0.0
    except OSError:
        return 0.0


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


__all__ = [
    "BranchRecord",
    "CheckLine",
    "HandoffRecord",
    "History",
    "LiveRun",
    "Mark",
    "QuestionRecord",
    "RoundRecord",
    "StepRecord",
    "Turn",
    "VerdictRecord",
    "WakeRecord",
    "read_history",
]


def _kept_failed(unproven: list[str], failed: list[str]) -> list[str]:
    """The failed checks of an overruled verdict, as the goal guard listed them: unproven first."""
    return [*unproven, *(c for c in failed if c not in unproven)]
