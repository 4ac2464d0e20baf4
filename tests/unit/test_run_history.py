"""The history read from a run folder: wakes, steps, rounds and verdicts from the manifest, the
context of every main-thread turn from sessions.db, questions from the Q&A log placed where they
were asked, handoffs with their documents, the live run's part from what its watcher saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from history_folder import T0, RunFolder

from flower.core.agent import HandoffPolicy
from flower.workflow.goal import DEFAULT_REASON
from flower.workflow.history import (
    LiveRun,
    QuestionRecord,
    Turn,
    assemble,
    extend,
    read_disk,
    read_history,
)

NOT_YET = "## 结论\n未达成\n\n## 理由\n少了 README。\n\n## 未通过\n- B 条"
ACHIEVED = "## 结论\n达成\n\n## 理由\n都齐了。\n\n## 未通过\n无"
C, G, W1, W2, J1, J2, J3 = "clarify-1", "goal-1", "work-1", "work-2", "judge-1", "judge-2", "judge-3"


@pytest.fixture
def folder(tmp_path: Path) -> RunFolder:
    """Two wakes: clarify (with a question), goal, work judged twice (rejected, then accepted)
    with a handoff in round 2; the second wake continues the successor and is accepted."""
    f = RunFolder(tmp_path / "ws")
    f.goal("A 条", "B 条", "C 条")
    f.row("确认需求", C, run="r1", start=0, end=5, cost=0.07, turns=2)
    f.turn(C, 1, 13_000, blocks=2)
    f.ask_call(C, 2.4, "用哪个?", 13_100)
    f.turn(C, 4, 13_200)
    f.row("设定目标", G, run="r1", start=5, end=8, cost=0.06)
    f.turn(G, 6, 13_500)
    f.row("干活", W1, run="r1", start=8, end=20, cost=0.5, turns=2)
    f.turn(W1, 9, 30_000, blocks=3)
    f.turn(W1, 12, 50_000)
    f.row("干活·判定#1", J1, run="r1", start=20, end=22, cost=0.02, text=NOT_YET)
    f.turn(J1, 21, 13_600)
    f.row("干活#round2", W2, run="r1", start=22, end=40, cost=0.9, turns=4, retired=(W1,))
    f.prompt(W1, 22.5, "判定者复核了这一轮的产出,目标还没达成。")
    f.turn(W1, 23, 150_000)
    f.handoff_prompt(W1, 24)
    f.turn(W1, 25, 151_000)  # the handoff document itself: the runtime reports no such turn
    f.handoff_doc("干活#round2", 26)
    f.prompt(W2, 26.5, "你在接手一件做到一半的活。")
    f.turn(W2, 27, 30_000)
    f.turn(W2, 30, 40_000)
    f.row("干活·判定#2", J2, run="r1", start=40, end=42, cost=0.02, text=ACHIEVED)
    f.turn(J2, 41, 13_700)
    f.row("干活", W2, run="r2", start=100, end=110, cost=0.3)
    f.turn(W2, 101, 45_000)
    f.row("干活·判定#1", J3, run="r2", start=110, end=112, cost=0.02, text=ACHIEVED)
    f.turn(J3, 111, 13_800)
    f.log(("q1", "answered", 2, "用哪个?", "a", 1.5))
    f.lineage, f.woke = {"确认需求": C, "设定目标": G, "干活": W2}, 2
    f.write()
    return f


def history(f: RunFolder, **kw: object) -> object:
    return read_history(f.workspace, policy=HandoffPolicy(window=200_000), **kw)  # type: ignore[arg-type]


def test_wakes_steps_and_rounds_come_from_the_manifest(folder):
    h = read_history(folder.workspace, policy=HandoffPolicy(window=200_000))
    assert (h.woke, len(h.wakes), [w.run for w in h.wakes]) == (2, 2, ["r1", "r2"])
    first, second = h.wakes
    assert [s.name for s in first.steps] == ["确认需求", "设定目标", "干活"]
    work = first.steps[2]
    assert [(r.number, r.step, r.status) for r in work.rounds] == [
        (1, "干活", "done"),
        (2, "干活#round2", "done"),
    ]
    assert work.sessions == [W1, W2]
    assert [(s.name, [r.step for r in s.rounds]) for s in second.steps] == [("干活", ["干活"])]
    # the books: a step's cost and time include its judges', the wake's its steps', the total every row's
    assert work.cost_usd == pytest.approx(0.5 + 0.02 + 0.9 + 0.02)
    assert work.duration_s == pytest.approx(12 + 2 + 18 + 2)
    assert first.cost_usd == pytest.approx(0.07 + 0.06 + 1.44)
    assert h.cost_usd == pytest.approx(sum(r["cost_usd"] for r in folder.rows))
    assert h.num_turns == sum(r["num_turns"] for r in folder.rows)
    assert (first.started_at, first.ended_at) == (T0, T0 + 42)
    assert h.sessions == {"确认需求": C, "设定目标": G, "干活": W2}
    assert (h.window, h.at, h.warn_at) == (200_000, 150_000, 130_000) and not h.live


def test_each_round_carries_the_judges_verdict_as_the_goal_guard_read_it(folder):
    h = read_history(folder.workspace)
    first, second = (r.verdict for r in h.wakes[0].steps[2].rounds)
    assert first is not None and second is not None
    assert (first.state, first.failed, first.reason, first.round, first.session_id) == (
        "not_yet",
        ["B 条"],
        "少了 README。",
        1,
        J1,
    )
    assert (second.state, second.failed, second.round, second.at) == ("achieved", [], 2, T0 + 42)
    assert [c.text for c in h.checks] == ["A 条", "B 条", "C 条"] and h.checks[1].line == 5


def test_every_main_thread_turn_once_with_its_lane_and_generation(folder):
    h = read_history(folder.workspace)
    assert [(t.used, t.step, t.lane, t.generation, t.wake) for t in h.turns] == [
        (13_000, "确认需求", "确认需求", 1, 1),  # two content blocks, one turn
        (13_100, "确认需求", "确认需求", 1, 1),  # the turn that called the ask tool
        (13_200, "确认需求", "确认需求", 1, 1),
        (13_500, "设定目标", "设定目标", 1, 1),
        (30_000, "干活", "干活", 1, 1),
        (50_000, "干活", "干活", 1, 1),
        (13_600, "干活·判定#1", "干活·判定", 1, 1),
        (150_000, "干活#round2", "干活", 1, 1),  # the handoff's own turn is not one of them
        (30_000, "干活#round2", "干活", 2, 1),
        (40_000, "干活#round2", "干活", 2, 1),
        (13_700, "干活·判定#2", "干活·判定", 2, 1),
        (45_000, "干活", "干活", 2, 2),  # the successor, woken again
        (13_800, "干活·判定#1", "干活·判定", 3, 2),
    ]
    assert [(m.kind, m.turn, m.label, m.state) for m in h.marks] == [
        ("verdict", 6, "干活", "not_yet"),
        ("handoff", 7, "干活#round2", ""),
        ("verdict", 10, "干活#round2", "achieved"),
        ("wake", 11, "wake 2", ""),
        ("verdict", 12, "干活", "achieved"),
    ]


def test_a_handoff_has_its_sessions_figures_and_document(folder):
    h = read_history(folder.workspace)
    (handoff,) = h.wakes[0].steps[2].rounds[1].handoffs
    assert (handoff.retired, handoff.successor, handoff.generation, handoff.used) == (W1, W2, 2, 150_000)
    assert handoff.path == str(folder.notes / "交接-干活#round2.md") and handoff.degraded is False
    assert handoff.at == pytest.approx(T0 + 23, abs=0.01)


def test_a_question_goes_to_the_round_whose_session_asked_it_at_the_transcripts_time(folder):
    h = read_history(folder.workspace)
    (question,) = h.wakes[0].steps[0].rounds[0].questions
    assert (question.id, question.question, question.options, question.state, question.answer) == (
        "q1",
        "用哪个?",
        ["a", "b"],
        "answered",
        "a",
    )
    assert question.asked_at == pytest.approx(T0 + 2.4, abs=0.01) and question.waited_s == 1.5
    assert sum(len(r.questions) for w in h.wakes for s in w.steps for r in s.rounds) == 1


def test_a_question_the_goal_guard_asked_goes_to_the_round_its_verdict_ruled_on(tmp_path):
    f = RunFolder(tmp_path / "ws")
    f.row("干活", W1, run="r1", start=0, end=10)
    f.row(
        "干活·判定#1",
        J1,
        run="r1",
        start=10,
        end=10.2,
        text="## 结论\n无法达成\n\n## 理由\n看不到\n\n## 未通过\n- A",
    )
    f.row("干活#round2", W1, run="r1", start=10.6, end=15)  # started within the same second as the question
    f.log(("q1", "answered", 10, "目标被判为**无法达成**:看不到\n怎么办?", "你判断错了,继续做", 0.3))
    f.write()
    h = read_history(f.workspace)
    first, second = h.wakes[0].steps[0].rounds
    assert first.verdict is not None and first.verdict.state == "unreachable"
    assert [q.question for q in first.questions] == ["目标被判为**无法达成**:看不到\n怎么办?"]
    assert second.questions == []


def test_a_judge_without_a_conclusion_is_not_yet_with_the_guards_reason_and_a_fatal_one_has_none(tmp_path):
    f = RunFolder(tmp_path / "ws")
    f.row("干活", W1, run="r1", start=0, end=1)
    f.row("干活·判定#1", J1, run="r1", start=1, end=2, text="看起来还行吧")
    f.row("干活#round2", W1, run="r1", start=2, end=3)
    f.row(
        "干活·判定#2",
        J2,
        run="r1",
        start=3,
        end=4,
        ok=False,
        text="",
        error="API error 401: invalid x-api-key",
    )
    f.write()
    first, second = read_history(f.workspace).wakes[0].steps[0].rounds
    assert first.verdict is not None and (first.verdict.state, first.verdict.reason) == ("", DEFAULT_REASON)
    assert second.verdict is None and second.judge_error == "API error 401: invalid x-api-key"


def test_a_process_that_died_in_a_step_leaves_it_unfinished(tmp_path):
    f = RunFolder(tmp_path / "ws")
    f.row("干活", W1, run="r1", start=0, end=None, ok=False, attempts=3, errors=("API Error: overloaded",))
    f.write()
    h = read_history(f.workspace)
    (wake,) = h.wakes
    (record,) = wake.steps[0].rounds
    assert (record.status, record.attempts, record.errors, wake.ended_at, wake.live) == (
        "unfinished",
        3,
        ["API Error: overloaded"],
        0.0,
        False,
    )


def test_an_earlier_handoff_of_the_same_step_gets_its_archived_document(tmp_path):
    f = RunFolder(tmp_path / "ws")
    f.row("干活", "w-b", run="r1", start=0, end=10, retired=("w-a",))
    f.turn("w-a", 1, 150_000)
    f.turn("w-b", 5, 20_000)
    f.row("干活", "w-c", run="r2", start=100, end=110, retired=("w-b",))
    f.turn("w-b", 101, 152_000)
    f.turn("w-c", 105, 21_000)
    early = f.handoff_doc("干活", 3, archived=True, degraded=True)
    late = f.handoff_doc("干活", 103)
    f.write()
    h = read_history(f.workspace)
    (one,), (two,) = (w.steps[0].rounds[0].handoffs for w in h.wakes)
    assert (one.retired, one.successor, one.path, one.degraded) == ("w-a", "w-b", str(early), True)
    assert (two.retired, two.successor, two.path, two.degraded) == ("w-b", "w-c", str(late), False)
    assert [(t.used, t.generation) for t in h.turns] == [(150_000, 1), (20_000, 2), (152_000, 2), (21_000, 3)]


def archived(folder: RunFolder, steps: dict[str, str], mtime: float) -> None:
    """What `--new` leaves: the earlier work's lineage moved into notes/archive/<stamp>/."""
    archive = folder.notes / "archive" / "20270115-080000"
    archive.mkdir(parents=True)
    lineage = {"workspace": str(folder.workspace), "woke": 1, "steps": steps}
    (archive / "lineage.json").write_text(json.dumps(lineage), encoding="utf-8")
    os.utime(archive, (mtime, mtime))


def test_work_archived_by_new_is_left_out(folder):
    archived(folder, {"确认需求": C, "设定目标": G}, T0 + 60)  # between the two wakes
    h = read_history(folder.workspace)
    assert (h.earlier, [w.run for w in h.wakes]) == (1, ["r2"])
    assert [t.used for t in h.turns] == [45_000, 13_800]
    assert all(not r.questions for w in h.wakes for s in w.steps for r in s.rounds)  # q1 was before


def test_a_wake_whose_clock_is_behind_the_archive_is_kept_in_the_manifests_order(folder):
    # the archive's folder time is hours after both wakes (a clock set right after they ran)
    archived(folder, {"确认需求": "s-of-other-work"}, T0 + 7200)
    h = read_history(folder.workspace)
    assert (h.earlier, [w.run for w in h.wakes]) == (0, ["r1", "r2"])


@pytest.mark.parametrize("jump", [-7200.0, -86_400.0, 3 * 3600.0])
def test_wakes_keep_the_manifests_order_when_the_clock_jumped(tmp_path, jump):
    f = RunFolder(tmp_path / "ws")
    f.goal("A 条")
    f.row("干活", W1, run="r1", start=0, end=10)
    f.turn(W1, 1, 30_000)
    f.row("干活", W1, run="r2", start=20 + jump, end=30 + jump)  # the clock jumped between the wakes
    f.turn(W1, 21 + jump, 40_000)
    f.lineage, f.woke = {"干活": W1}, 2
    f.write()
    h = read_history(f.workspace)
    assert [w.run for w in h.wakes] == ["r1", "r2"]
    assert [w.number for w in h.wakes] == [1, 2]
    assert all(w.duration_s >= 0 for w in h.wakes)


def test_a_damaged_manifest_gives_what_still_reads_and_says_so(folder):
    path = folder.run_dir / "manifest.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index('"run": "r2"')], encoding="utf-8")  # cut inside the r2 rows
    h = read_history(folder.workspace)
    assert [w.run for w in h.wakes] == ["r1"]
    assert h.problems and "manifest.json" in h.problems[0]


def test_an_unreadable_sessions_db_costs_the_chart_not_the_story(folder):
    (folder.run_dir / "sessions.db").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    h = read_history(folder.workspace)
    assert h.turns == [] and len(h.wakes) == 2
    assert any("cannot be read" in p for p in h.problems)


def test_reading_writes_not_one_byte(folder):
    def snapshot() -> dict[str, tuple[bytes, float]]:
        return {
            str(p): (p.read_bytes(), p.stat().st_mtime) for p in sorted(folder.root.rglob("*")) if p.is_file()
        }

    before = snapshot()
    read_history(folder.workspace)
    assert snapshot() == before


def test_a_live_run_takes_its_turns_and_questions_from_the_watcher(folder):
    folder.row("干活", W2, run="r3", start=200, end=None, ok=False)
    folder.turn(W2, 201, 99_999)  # mirrored to the store already: the watcher's reading counts
    folder.write()
    pending = QuestionRecord("q1", "继续吗?", ["是"], "asked", "", T0 + 203)
    live = LiveRun(
        run="r3",
        started_at=T0 + 199,
        turns=[Turn(T0 + 201, 60_000, W2, "干活")],
        questions=[pending],
        step="干活",
        cost_usd=0.25,
        window=1_000_000,
        at=950_000,
        warn_at=930_000,
    )
    h = read_history(folder.workspace, live=live, now=T0 + 210)
    wake = h.wakes[-1]
    (step,) = wake.steps
    (record,) = step.rounds
    assert (wake.live, step.live, record.status, record.cost_usd, record.duration_s) == (
        True,
        True,
        "running",
        0.25,
        10,
    )
    assert record.questions == [pending]
    assert [(t.used, t.generation, t.wake) for t in h.turns[-2:]] == [(13_800, 3, 2), (60_000, 2, 3)]
    assert (h.live, h.live_step, h.window, wake.ended_at) == (True, "干活", 1_000_000, 0.0)


def test_a_live_step_before_its_session_starts_is_a_running_round(folder):
    live = LiveRun(run="r3", started_at=T0 + 199, step="干活", step_started_at=T0 + 200)
    h = read_history(folder.workspace, live=live, now=T0 + 202)
    wake = h.wakes[-1]
    assert (wake.number, wake.live, wake.started_at) == (3, True, T0 + 199)
    (step,) = wake.steps
    assert [(r.step, r.status, r.started_at, r.duration_s) for r in step.rounds] == [
        ("干活", "running", T0 + 200, 2)
    ]


def test_a_turn_the_watcher_adds_is_placed_as_the_next_assembly_places_it(folder):
    disk = read_disk(folder.workspace)
    live = LiveRun(run="r3", started_at=T0 + 199, step="干活")
    folder_history = assemble(disk, live=live, now=T0 + 200)
    readings = [Turn(T0 + 201, 50_000, W2, "干活"), Turn(T0 + 202, 14_000, "judge-4", "干活·判定#1")]
    added = []
    for seen in readings:
        live.turns.append(seen)
        added.append(extend(folder_history, seen))
    again = assemble(disk, live=live, now=T0 + 203)
    assert added == again.turns[-2:] == folder_history.turns[-2:]
    assert [(t.lane, t.generation, t.wake) for t in added] == [("干活", 2, 3), ("干活·判定", 4, 3)]


def test_a_flower_working_in_another_process_is_running_elsewhere(tmp_path):
    f = RunFolder(tmp_path / "ws")
    f.row("干活", W1, run="r1", start=0, end=None, ok=False)
    f.write()
    lock = f.run_dir / "flow-starter.lock"
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            lock.write_text(
                json.dumps({"pid": other.pid, "who": "flower go 写个脚本", "since": T0}), encoding="utf-8"
            )
            h = read_history(f.workspace)
            assert h.elsewhere.startswith("flower go 写个脚本(pid ") and not h.live
            assert h.wakes[0].steps[0].rounds[0].status == "running"
        finally:
            other.kill()
    other.wait()
    h = read_history(f.workspace)  # the note of a process that is gone
    assert h.elsewhere == "" and h.wakes[0].steps[0].rounds[0].status == "unfinished"


def test_the_books_of_a_previous_flower_tell_their_story(tmp_path: Path) -> None:
    """A manifest written before rows were typed (`flower demo`, a rewind, a fork): its wakes,
    rounds, verdicts and branches, read from the typed rows."""
    previous = Path(__file__).parent.parent / "data" / "manifests" / "demo-rewind-fork.json"
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "manifest.json").write_bytes(previous.read_bytes())
    h = read_history(tmp_path)
    assert h.problems == []
    assert [[(s.name, [r.step for r in s.rounds]) for s in w.steps] for w in h.wakes] == [
        [("确认需求", ["确认需求"]), ("设定目标", ["设定目标"]), ("干活", ["干活", "干活#round2"])],
        [("干活", ["干活"])],
    ]
    verdicts = [r.verdict for w in h.wakes for s in w.steps for r in s.rounds if r.verdict]
    assert [(v.step, v.round, v.state) for v in verdicts] == [
        ("干活·判定#1", 1, "not_yet"),
        ("干活·判定#2", 2, "achieved"),
        ("干活·判定#1", 1, "achieved"),
    ]
    rows = json.loads(previous.read_text(encoding="utf-8"))
    assert h.cost_usd == pytest.approx(sum(r.get("cost_usd", 0.0) for r in rows))
    assert [(b.kind, b.round, b.from_round, b.remark, b.after_wake) for b in h.branches] == [
        ("rewind", 1, 3, "回到第一轮", 2),
        ("fork", 1, 1, "另起一支", 2),
    ]


def test_a_kept_trail_of_the_wrong_shape_is_read_as_no_trail_not_a_crash(folder):
    # the evidence folder is a file on disk: hand-edited or cut off, its fields may be anything
    kept = folder.run_dir / "evidence" / "干活·判定#1.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    entry = {"step": "干活·判定#1", "session_id": J1, "evidence": 3, "trail": 4, "unproven": 5, "claimed": 6}
    kept.write_text(json.dumps([entry, "not an entry"]), encoding="utf-8")
    first = read_history(folder.workspace).wakes[0].steps[2].rounds[0].verdict
    assert first is not None and (first.state, first.evidence, first.trail) == ("not_yet", [], [])
