"""`flower submit`, `flower worker`, `flower fleet`: the fleet on the command line.

Each prints what ``flower.fleet`` returns; every line a person reads is said in their language
(the notes a run keeps are message ids, see ``fleet/model.py``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..base.i18n import N_, _
from ..base.loop import run_to_end
from ..cli.builders import store_of
from ..cli.terminal import Screen
from ..core.display import first_line
from ..core.shared import store_setting

NO_STORE = N_("x 队列要一个 PostgreSQL 库:加 --store postgresql://…,或者设环境变量 FLOWER_STORE")
SUBMITTED = N_(". run {run} 进了队列 {where};看它:flower fleet show {run}")
NO_RUNS = N_(". 队列里没有{which} run")
OPEN_WORD = N_("没结束的")
ANSWERED = N_("+ 回答了 run {run} 的提问「{question}」;握着它的 worker 会读到")
CANCELLED = N_(". run {run} 已取消")
DEFAULT_WORK = "~/.local/share/flower/fleet"

HEAD = N_("run {run} · {state} · {repository}@{ref} · 分支 {branch}")
REQUEST = N_("诉求:{request}")
OPTIONS = N_("选项:{rounds} 轮 · 沙箱 {sandbox} · 判定者{can}跑命令 · 提问等 {timeout:.0f} 秒")
CAN, CANNOT = N_("能"), N_("不能")
RESULT_PUSHED = N_("结果:分支 {branch}({commit}){met}")
RESULT_PATCH = N_("结果:补丁 {host}:{patch}(分支推不上去)")
MET, NOT_MET = N_(",目标达成"), N_(",目标没达成")
EXECUTIONS = N_("执行:")
EXECUTION = N_("  {worker}@{host} pid {pid}:{start} → {end} {reason}")
STILL = N_("(还在跑)")
QUESTIONS = N_("提问:")
EVENTS = N_("经过:")
WAITING = N_("    ? {question}")
NOTE = N_("    {note}")


def _clock(at: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.localtime(at)) if at else "-"


def _fleet(args: argparse.Namespace, screen: Screen) -> object | None:
    """The fleet in the store asked for; None (said why) without one or when it cannot be opened."""
    from . import Fleet, FleetError

    url = store_setting(store_of(args))
    if url is None:
        screen.say(_(NO_STORE), err=True)
        return None
    try:
        return Fleet(url)
    except FleetError as exc:
        screen.say(str(exc), err=True)
        return None


def submit_command(args: argparse.Namespace, *, screen: Screen | None = None) -> int:
    from . import Fleet, FleetError, RunRequest, repository_of

    screen = screen or Screen()
    fleet = _fleet(args, screen)
    if not isinstance(fleet, Fleet):
        return 1
    try:
        request = RunRequest(
            repository=repository_of(args.repository),
            ref=args.ref,
            request=args.ask,
            rounds=args.rounds,
            sandbox=args.sandbox,
            judge_can_run=args.judge_can_run,
            timeout_s=max(0.0, args.timeout),
            budget_usd=args.budget,
            round_budget_usd=args.round_budget,
            stall_rounds=args.stall_rounds,
        )
        run_id = fleet.submit(request)
    except FleetError as exc:
        screen.say(str(exc), err=True)
        return 1
    screen.say(run_id)
    screen.say(_(SUBMITTED).format(run=run_id, where=fleet.where), err=True)
    return 0


def worker_command(args: argparse.Namespace, *, screen: Screen | None = None) -> int:
    from ..core.runtime import check_credentials
    from .worker import FleetWorker, WorkerSettings

    screen = screen or Screen()
    url = store_setting(store_of(args))
    if url is None:
        screen.say(_(NO_STORE), err=True)
        return 1
    try:
        check_credentials()  # now, not at the first run an hour from now
    except RuntimeError as exc:
        screen.say(f"x {exc}", err=True)
        return 1
    settings = WorkerSettings(
        url=url,
        work=Path(args.work_dir or DEFAULT_WORK).expanduser(),
        name=args.name,
        concurrency=args.concurrency,
        takeover_s=args.takeover,
    )
    return run_to_end(FleetWorker(settings, say=lambda line: screen.say(line, err=True)).run())


def fleet_command(args: argparse.Namespace, *, screen: Screen | None = None) -> int:
    from . import ACTIVE, Fleet, FleetError

    screen = screen or Screen()
    fleet = _fleet(args, screen)
    if not isinstance(fleet, Fleet):
        return 1
    action = getattr(args, "fleet_command", None)
    try:
        if action == "show":
            return _show(fleet, args.run, screen)
        if action == "answer":
            question = fleet.answer(args.run, args.text)
            screen.say(_(ANSWERED).format(run=args.run, question=first_line(question, 80)))
            return 0
        if action == "cancel":
            fleet.cancel(args.run)
            screen.say(_(CANCELLED).format(run=args.run))
            return 0
        runs = fleet.runs(None if args.all else ACTIVE)
    except FleetError as exc:
        screen.say(str(exc), err=True)
        return 1
    if not runs:
        screen.say(_(NO_RUNS).format(which="" if args.all else _(OPEN_WORD)))
        return 0
    for run in runs:
        worker = run.worker or "-"
        screen.say(
            f"{run.id}  {run.state_text()}  {worker}  {_clock(run.updated_at)}  "
            f"{run.repository}@{run.ref}  {first_line(run.request, 60)}"
        )
        if run.question:
            screen.say(_(WAITING).format(question=first_line(run.question, 100)))
        elif run.note is not None:
            screen.say(_(NOTE).format(note=first_line(run.note.text(), 160)))
    return 0


def _show(fleet: object, run_id: str, screen: Screen) -> int:
    from . import Fleet

    assert isinstance(fleet, Fleet)
    detail = fleet.show(run_id)
    run, asked = detail.summary, detail.request
    say = screen.say
    say(
        _(HEAD).format(
            run=run.id, state=run.state_text(), repository=run.repository, ref=run.ref, branch=run.branch
        )
    )
    say(_(REQUEST).format(request=run.request))
    say(
        _(OPTIONS).format(
            rounds=asked.rounds,
            sandbox=asked.sandbox,
            can=_(CAN) if asked.judge_can_run else _(CANNOT),
            timeout=asked.timeout_s,
        )
    )
    outcome = run.outcome
    if outcome is not None and outcome.pushed:
        met = _(MET) if outcome.goal_met else _(NOT_MET)
        say(_(RESULT_PUSHED).format(branch=outcome.branch, commit=outcome.commit[:10], met=met))
    elif outcome is not None and outcome.patch:
        say(_(RESULT_PATCH).format(host=outcome.host, patch=outcome.patch))
    if run.note is not None:
        say(_(NOTE).format(note=run.note.text()))
    if detail.executions:
        say(_(EXECUTIONS))
        for ex in detail.executions:
            end = _clock(ex.ended_at) if ex.ended_at else _(STILL)
            say(
                _(EXECUTION).format(
                    worker=ex.worker,
                    host=ex.host,
                    pid=ex.pid,
                    start=_clock(ex.started_at),
                    end=end,
                    reason=ex.reason,
                )
            )
    if detail.questions:
        say(_(QUESTIONS))
        for q in detail.questions:
            answer = f" → {q.answer}" if q.answer else ""
            say(f"  [{q.state}] {q.question}{answer}")
    if detail.events:
        say(_(EVENTS))
        for event in detail.events:
            say(f"  {_clock(event.at)} {event.worker or '-'}  {event.text()}")
    return 0
