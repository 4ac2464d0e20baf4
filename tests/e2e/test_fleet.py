"""The fleet end to end: a real PostgreSQL, worker processes standing for machines (each its own
HOME, Claude Code config and work folder), local bare repositories, the real `flower` command and
the real Claude Code CLI against flower.sim. What a person checks: every run finishes and its
branch is in the repository, a worker killed with SIGKILL mid-round loses nothing and no run is
ever executed by two workers at once (from the executions the store recorded), a question waits
in the database until `flower fleet answer`, bad input ends its run with a clear state."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flower.core.identity import identify
from flower.fleet.records import FleetBook
from flower.sim.fleet import ANSWER, FleetRig, fleet_scenario, overlaps
from flower.sim.scenario import content_text
from flower.stores.postgres import PostgresRunBook
from flower.workflow.starter import WORK

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

REQUEST = "写一个 hello.py"
HELLO = 'print("hello")'


@pytest.fixture
def rig(pg_url, sim_factory, tmp_path, request):
    scenario, takeover = request.param if hasattr(request, "param") else (fleet_scenario(), 12.0)
    sim = sim_factory(scenario)
    made = FleetRig(tmp_path / "fleet", pg_url, sim.base_url, takeover_s=takeover)
    made.sim = sim  # type: ignore[attr-defined]
    yield made
    made.stop()


def checkout_of(rig: FleetRig, worker: str, run_id: str):
    return rig.root / worker / "work" / "runs" / run_id / "checkout"


@pytest.mark.parametrize("rig", [(fleet_scenario(bash_seconds=8), 20.0)], indirect=True)
def test_two_workers_three_runs_one_killed_mid_round_finish_all_and_never_overlap(rig: FleetRig):
    origins = [rig.origin(f"proj{i}") for i in range(3)]
    runs = [rig.submit(origin, REQUEST, "--timeout", "0") for origin in origins]
    listed = rig.flower("fleet")
    assert listed.returncode == 0 and all(r in listed.stdout for r in runs) and "排队中" in listed.stdout
    # three slots each: the survivor has room for every run it takes over (the victim may hold
    # two), so the time measured is the takeover's, not a wait for a free slot
    a, b = rig.start_worker("a", concurrency=3), rig.start_worker("b", concurrency=3)

    # kill -9 a worker while its coder's command runs: in the middle of a round of work
    def working() -> str | None:
        for run_id in runs:
            for line in rig.events(run_id):
                if "| * Bash" in line:
                    return run_id
        return None

    rig.wait(lambda: working() is not None, "a coder at work")
    victim_run = working()
    assert victim_run is not None
    holder = rig.summary(victim_run).worker
    victim, survivor = (a, b) if holder == "a" else (b, a)
    killed_at = victim.kill()

    took = rig.wait(lambda: rig.over(runs), "all runs over", timeout=1200)
    assert took > 0
    summaries = {r: rig.summary(r) for r in runs}
    for run_id, origin in zip(runs, origins, strict=True):
        summary = summaries[run_id]
        assert summary.state == "finished", rig.events(run_id)
        assert summary.outcome is not None and summary.outcome.pushed and summary.outcome.goal_met
        branch = f"flower/{run_id}"
        assert rig.branches(origin)[branch] == summary.outcome.commit
        assert rig.show_file(origin, branch, "hello.py") == HELLO
        assert ".flower/notes/需求.md" in rig.git(
            "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", branch, cwd=origin
        )

    # 0 run twice at the same time: from the store's execution intervals
    intervals = FleetBook(rig.url).intervals()
    assert overlaps(intervals) == []
    # every run the victim held (it may hold more than one) was taken over once, the others ran once
    held = [r for r in runs if intervals[r][0].worker == victim.name]
    assert victim_run in held
    for run_id in runs:
        executions = intervals[run_id]
        if run_id not in held:
            assert [(e.worker, e.reason) for e in executions] == [(survivor.name, "finished")]
            continue
        assert [(e.worker, e.reason) for e in executions] == [
            (victim.name, "lost"),
            (survivor.name, "finished"),
        ]
        first, second = executions
        assert first.ended_at >= killed_at - 1.0  # the recorded end covers the moment it really died
        assert second.started_at - killed_at < rig.takeover_s  # taken over within the bound
    # the other worker continued the same work: the same identity, the same work session
    ids = {identify(checkout_of(rig, w, victim_run)) for w in ("a", "b")}
    assert len(ids) == 1
    identity = ids.pop()
    assert (
        identity.key
        == f"git:file:{str(origins[runs.index(victim_run)]).removesuffix('.git')}#flower/{victim_run}"
    )
    rows = PostgresRunBook.direct(rig.url).manifest(identity.key)
    work_sessions = {r["session_id"] for r in rows if r["step"] == WORK}
    assert len(work_sessions) == 1 and len({r["run"] for r in rows}) == 2, rows
    events = rig.events(victim_run)
    assert any("没了心跳" in e for e in events) and any("从分支" in e for e in events)
    assert survivor.proc.poll() is None  # the survivor is still at work


@pytest.mark.parametrize("rig", [(fleet_scenario(asks=True), 12.0)], indirect=True)
def test_a_question_waits_in_the_database_and_its_answer_reaches_the_run_after_a_takeover(rig: FleetRig):
    origin = rig.origin("asking")
    run_id = rig.submit(origin, REQUEST, "--timeout", "900")
    a = rig.start_worker("a")
    rig.wait(lambda: rig.state(run_id) == "waiting", "the run waiting for an answer")
    listed = rig.flower("fleet")
    assert "等人回答" in listed.stdout and "hello.py 要打印什么?" in listed.stdout

    # nobody is attached to it; its machine dies; the person answers from anywhere
    a.kill()
    answered = rig.flower("fleet", "answer", run_id, ANSWER)
    assert answered.returncode == 0, answered.stderr
    assert "hello.py 要打印什么?" in answered.stdout
    rig.start_worker("b")
    rig.wait(lambda: rig.over([run_id]), "the run over", timeout=900)
    assert rig.state(run_id) == "finished", rig.events(run_id)
    # the run asked again on b and got the answer given meanwhile, as the tool's result
    sim = rig.sim  # type: ignore[attr-defined]
    results = [
        content_text(r.tool_results()[-1]["content"])
        for r in sim.requests_for("clarifier")
        if r.tool_results()
    ]
    assert ANSWER in results
    detail = rig.detail(run_id)
    assert [e.worker for e in detail.executions] == ["a", "b"]
    assert any(q.answer == ANSWER for q in detail.questions)
    shown = rig.flower("fleet", "show", run_id)
    assert "在换 worker 前已经答过了" in shown.stdout and ANSWER in shown.stdout
    # answering a run that waits for nothing says so, in one line
    again = rig.flower("fleet", "answer", run_id, "more")
    assert again.returncode == 1 and "没有在等回答" in again.stderr and "Traceback" not in again.stderr


def test_bad_input_ends_each_run_with_its_reason_and_the_worker_goes_on(rig: FleetRig):
    good = rig.origin("good")
    refusing = rig.origin("refusing")
    hook = refusing / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'flower branches are not accepted here' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    nowhere = rig.root / "repos" / "gone.git"
    nowhere.mkdir(parents=True)
    unreachable = rig.submit(nowhere, REQUEST, "--timeout", "0")
    nowhere.rmdir()  # it existed when submitted; the worker cannot reach it
    no_ref = rig.submit(good, REQUEST, "--ref", "no-such-branch", "--timeout", "0")
    refused = rig.submit(refusing, REQUEST, "--timeout", "0")
    worker = rig.start_worker("a")
    rig.wait(lambda: rig.over([unreachable, no_ref, refused]), "all three over", timeout=900)

    assert rig.state(unreachable) == "failed" and rig.state(no_ref) == "failed"
    assert "连不上" in rig.note(unreachable)
    assert "no-such-branch" in rig.note(no_ref)
    pushed = rig.summary(refused)
    assert pushed.state == "finished" and pushed.outcome is not None and not pushed.outcome.pushed
    patch = pushed.outcome.patch
    assert patch.endswith(f"{refused}.patch") and "hello.py" in Path(patch).read_text(encoding="utf-8")
    assert "补丁" in rig.note(refused) and f"flower/{refused}" not in rig.branches(refusing)
    assert any("flower branches are not accepted here" in e for e in rig.events(refused))
    assert worker.proc.poll() is None, worker.output  # never a worker crash
    assert "Traceback" not in worker.output
    shown = rig.flower("fleet", "show", no_ref)
    assert shown.returncode == 0 and "no-such-branch" in shown.stdout
    listed = rig.flower("fleet", "--all")
    assert listed.stdout.count("失败") == 2


@pytest.mark.parametrize("rig", [(fleet_scenario(bash_seconds=30), 12.0)], indirect=True)
def test_sigterm_hands_the_run_back_at_once_and_another_worker_continues_it(rig: FleetRig):
    origin = rig.origin("handback")
    run_id = rig.submit(origin, REQUEST, "--timeout", "0")
    a = rig.start_worker("a")
    rig.wait(lambda: any("| * Bash" in e for e in rig.events(run_id)), "the coder at work")
    b = rig.start_worker("b")
    rig.wait(lambda: rig.engines() == 2, "b fetching jobs, with a free slot")
    asked = time.time()  # this machine's clock, the database's too
    a.terminate()
    a.proc.wait(120)
    assert a.proc.returncode == 0, a.output
    # back in the queue at once: not after the takeover window
    rig.wait(lambda: any(e.worker == "b" for e in rig.detail(run_id).executions), "b took it")
    first, second = rig.detail(run_id).executions[:2]
    assert first.reason == "handed-back" and second.worker == "b"
    # a stopped its coder's command mid-way and let go of the run, and b, free and waiting, took it
    # at once: well before a's silence could have made the run stale (the takeover path)
    assert second.started_at - asked < rig.takeover_s / 3, (asked, first, second)
    rig.wait(lambda: rig.over([run_id]), "the run over", timeout=900)
    assert rig.state(run_id) == "finished"
    assert overlaps(rig.book.intervals()) == []
    assert any("收到停止信号" in e for e in rig.events(run_id))
    b.terminate()
    b.proc.wait(120)
    outcome = rig.summary(run_id).outcome
    assert outcome is not None and outcome.pushed


@pytest.mark.parametrize("rig", [(fleet_scenario(bash_seconds=40), 12.0)], indirect=True)
def test_cancel_stops_a_queued_run_outright_and_a_running_one_promptly_and_the_worker_goes_on(
    rig: FleetRig,
):
    origin = rig.origin("cancelling")
    running = rig.submit(origin, REQUEST, "--timeout", "0")
    queued = rig.submit(origin, REQUEST, "--timeout", "0")
    after = rig.submit(rig.origin("after"), REQUEST, "--timeout", "0")

    # a queued run, cancelled before any worker exists: no worker ever executes it
    cancelled = rig.flower("fleet", "cancel", queued)
    assert cancelled.returncode == 0, cancelled.stderr
    assert rig.state(queued) == "cancelled"

    worker = rig.start_worker("a")  # one slot: `running` first, `after` once it is let go
    rig.wait(lambda: any("| * Bash" in e for e in rig.events(running)), "the coder at work")
    assert rig.summary(running).worker == "a" and rig.state(after) == "queued"
    stopped = rig.flower("fleet", "cancel", running)
    assert stopped.returncode == 0, stopped.stderr
    rig.wait(lambda: rig.detail(running).executions[0].ended_at > 0, "the worker let it go")
    execution = rig.detail(running).executions[0]
    assert execution.reason == "cancelled" and rig.state(running) == "cancelled"
    # stopped mid-command: well before the coder's 40 s command could have ended by itself
    events = rig.detail(running).events
    bash_at = next(e.at for e in events if "| * Bash" in e.line)
    assert execution.ended_at - bash_at < 25, (execution, bash_at)  # both the database's clock

    # the branch holds what the worker had: its checkout's last commit, with the clarified needs
    branch = f"flower/{running}"
    checkout = checkout_of(rig, "a", running)
    assert rig.branches(origin)[branch] == rig.git("rev-parse", "HEAD", cwd=checkout)
    assert rig.git("status", "--porcelain", cwd=checkout) == ""
    assert ".flower/notes/需求.md" in rig.git(
        "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", branch, cwd=origin
    )
    assert any("已取消" in e for e in rig.events(running))

    # the worker goes on with the next run; the cancelled ones stay cancelled
    rig.wait(lambda: rig.over([after]), "the next run over", timeout=900)
    assert rig.state(after) == "finished", rig.events(after)
    assert rig.state(running) == "cancelled" and rig.state(queued) == "cancelled"
    assert rig.detail(queued).executions == []
    assert f"flower/{queued}" not in rig.branches(origin)
    assert [e.reason for e in rig.detail(running).executions] == ["cancelled"]
    assert worker.proc.poll() is None and "Traceback" not in worker.output, worker.output
    assert overlaps(rig.book.intervals()) == []
    # cancelling what is over says so, in one line
    again = rig.flower("fleet", "cancel", running)
    assert again.returncode == 1 and "已经结束" in again.stderr and "Traceback" not in again.stderr


def test_each_run_gets_its_own_repositorys_model_settings_even_beside_another_run(rig: FleetRig):
    import json

    models = {"alpha": "claude-sim-alpha", "beta": "claude-sim-beta"}
    origins = {n: rig.origin(n, {".env": f"ANTHROPIC_MODEL={m}\n"}) for n, m in models.items()}
    runs = {n: rig.submit(origins[n], REQUEST, "--timeout", "0") for n in models}
    worker = rig.start_worker("a", concurrency=2)  # both at once, in one worker process
    rig.wait(lambda: rig.over(list(runs.values())), "both runs over", timeout=900)
    unfinished = {
        n: (rig.state(r), rig.events(r)[-30:]) for n, r in runs.items() if rig.state(r) != "finished"
    }
    assert unfinished == {}, (unfinished, worker.output[-4000:])
    executions = {n: rig.detail(r).executions[0] for n, r in runs.items()}
    assert executions["alpha"].started_at < executions["beta"].ended_at
    assert executions["beta"].started_at < executions["alpha"].ended_at  # side by side
    sim = rig.sim  # type: ignore[attr-defined]
    for name, run_id in runs.items():
        where = str(checkout_of(rig, "a", run_id))
        used = {
            str(r.body.get("model")) for r in sim.requests if where in json.dumps(r.body, ensure_ascii=False)
        }
        other = next(m for n, m in models.items() if n != name)
        assert models[name] in used and other not in used, (name, used)
    assert "ANTHROPIC_MODEL" not in worker.output


def test_the_database_going_away_briefly_or_for_long_loses_no_run_and_never_runs_one_twice(
    private_postgres, sim_factory, tmp_path
):
    sim = sim_factory(fleet_scenario(bash_seconds=20))
    # fenced after 10 s without a heartbeat, taken over after 15 s
    rig = FleetRig(tmp_path / "fleet", private_postgres.url(), sim.base_url, takeover_s=30.0)
    try:
        origins = [rig.origin("brief"), rig.origin("long")]
        a = rig.start_worker("a")

        def at_work(run_id: str) -> bool:
            return any("| * Bash" in e for e in rig.events(run_id))

        # shorter than the fencing bound: down until the worker has said so, then back at once
        brief = rig.submit(origins[0], REQUEST, "--timeout", "0")
        rig.wait(lambda: at_work(brief), "the coder at work")
        private_postgres.pause()
        rig.wait(lambda: "断了" in a.output, "the worker saying the database is gone", timeout=120)
        private_postgres.resume()
        rig.wait(lambda: "又连上了" in a.output, "the worker connected again", timeout=120)
        rig.wait(lambda: rig.over([brief]), "the first run over", timeout=900)

        # longer than the fencing bound: down until the worker stopped its run by itself
        long = rig.submit(origins[1], REQUEST, "--timeout", "0")
        rig.wait(lambda: at_work(long), "the coder at work again")
        private_postgres.pause()
        rig.wait(lambda: "自己停下了这个 run" in a.output, "the worker fencing its run", timeout=120)
        private_postgres.resume()
        rig.wait(lambda: rig.over([long]), "the second run over", timeout=900)

        for run_id, origin in zip((brief, long), origins, strict=True):
            summary = rig.summary(run_id)
            assert summary.state == "finished", rig.events(run_id)
            assert summary.outcome is not None and summary.outcome.pushed and summary.outcome.goal_met
            assert rig.branches(origin)[f"flower/{run_id}"] == summary.outcome.commit
            assert rig.show_file(origin, f"flower/{run_id}", "hello.py") == HELLO
        intervals = rig.book.intervals()
        assert overlaps(intervals) == [], intervals
        # the fenced run was let go and taken over: by the same worker, once it could tell
        assert len(intervals[long]) >= 2 and intervals[long][-1].reason == "finished", intervals[long]
        said = [line for line in a.output.splitlines() if "断了" in line]
        assert said and all(line.startswith("! 队列库") for line in said), a.output
        # one line each: the worker's own, no library's log nor a reason over several lines
        assert all(line[:1] in ". ><~!" or "自己停下了" in line for line in a.output.splitlines()), a.output
        assert "Traceback" not in a.output and a.proc.poll() is None, a.output
    finally:
        rig.stop()
