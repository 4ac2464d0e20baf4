"""The commands that run work: go (the default), run and once."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.i18n import N_, _
from ..base.loose import nonempty
from ..core.display import first_line
from ..core.notify import Notifier, notifier_for
from .builders import build_runtime, once_call, once_spec, settings_of, store_of, workspace_of
from .credentials import credential_problem, describe_credentials, env_file_of, looks_like_auth
from .driver import QUIT_NOTE, Driver, drive
from .problems import EnvFileError, check_env_file, unwritable
from .target import Flow, TargetError, load_target
from .terminal import CANCELLED, LineSource, Screen, ask_for_request
from .text import format_duration

if TYPE_CHECKING:
    from ..core.events import Event
    from ..core.run_settings import RunSettings
    from ..core.runtime import Runtime, StepResult
    from ..core.workbench import Workbench
    from ..workflow.base import Step

WORK_STEP = "干活"  # the starter flow's work step: its session's context goes on the banner

EMPTY_REQUEST = N_('诉求是空的。直接 `flower` 然后按提示输入,或者 flower "帮我做一个 X"。')
NOT_A_TERMINAL = N_("! 标准输入不是终端,没人能回答提问。想让它自己判断就加 --timeout 0")
ISOLATE_NEEDS_GIT = N_(
    "--isolate 要求 {path} 是 git 仓库(每个 subagent 要分一份 worktree)。先 git init,或者去掉 --isolate。"
)
ABORTED_AT = N_("在步骤 '{step}' 中止")
BUSY_HINT = N_("等它跑完再来,或者加 --wait 排队。")
WAITING = N_(". {busy}:排队等它跑完(Ctrl-C 放弃)")
BROKEN_BRIEF = N_(
    '{path} 没法接着用:{problem}。补好它再跑 `flower`,或者 flower "一句诉求" 重新确认(旧文件会先备份)。'
)
STARTER = "starter"  # the name of the flow `go` runs (starter_flow)
STORE_LINE = N_(". 会话库 {where};这份工作认的是:{why}")
CLOSING = N_("总花费 ${cost:.4f} · 清单 {manifest}")
QUIT_ONCE = N_('! 退出。这一次没跑完;会话还在库里,接着聊:flower once --resume {session} "…"')
QUIT_ONCE_FRESH = N_("! 退出。这一次没跑完,也还没开出会话:没有可以接的,再跑一次 flower once 就是。")


def _closing(screen: Screen, runtime: Runtime, driver: Driver | None) -> None:
    cost = driver.cost_so_far() if driver is not None else runtime.total_cost()
    screen.say("")
    screen.say(_(CLOSING).format(cost=cost, manifest=runtime.manifest_path))


def _ready(args: argparse.Namespace, screen: Screen, *, verbose: bool) -> Path | None:
    """The workspace, once a credential is known to be there; None (said why) otherwise."""
    try:
        ws = workspace_of(args)
    except OSError as exc:
        screen.say(unwritable(exc, args.workspace), err=True)
        return None
    from ..core.projectkey import unkeyable

    refused = unkeyable(ws)
    if refused is not None:  # before any lock or folder is made: nothing of a run is left here
        screen.say(refused, err=True)
        return None
    env = env_file_of(ws)
    if env is not None:
        try:
            for warning in check_env_file(env):
                screen.say(warning, err=True)
        except EnvFileError as exc:
            screen.say(str(exc), err=True)
            return None
    problem = credential_problem(ws)
    if problem:
        screen.say(problem, err=True)
        return None
    if verbose:
        for line in describe_credentials():
            screen.say(line)
    return ws


def _claim(args: argparse.Namespace, flow: str, screen: Screen, who: str) -> ExitStack | None:
    """Hold the flow's lock in this run_dir (waiting with --wait) and, with a shared store, the
    flow of this work on every machine; None, said why, if not. Closing the stack releases them."""
    from ..core.rundir import FlowBusy, FlowLock
    from ..core.shared import SharedFlowLock, shared_run

    held = ExitStack()
    lock = FlowLock(args.run_dir, flow, who=who)
    try:
        lock.acquire(
            wait=bool(getattr(args, "wait", False)),
            waiting=lambda busy: screen.say(_(WAITING).format(busy=busy), err=True),
        )
        held.callback(lock.release)
        shared = shared_run(store_of(args), workspace_of(args))
        if shared is not None:
            claim = SharedFlowLock(shared, flow, run_dir=args.run_dir, who=who)
            claim.acquire()
            held.callback(claim.release)
    except FlowBusy as busy:
        held.close()
        screen.say(_("x {busy}。{hint}").format(busy=busy, hint=_(BUSY_HINT)), err=True)
        return None
    except OSError as exc:
        held.close()
        screen.say(unwritable(exc, Path(args.run_dir).expanduser().resolve()), err=True)
        return None
    except (ValueError, RuntimeError) as exc:  # a store URL that is not one, a store out of reach
        held.close()
        screen.say(_("x 打不开会话库:{exc}").format(exc=exc), err=True)
        return None
    return held


def go_command(
    args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None
) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    ws = _ready(args, screen, verbose=args.verbose)
    if ws is None:
        return 1
    held: list[ExitStack] = []
    try:
        return _go(args, ws, screen=screen, source=source, held=held)
    finally:
        for claims in held:
            claims.close()


def _go(
    args: argparse.Namespace, ws: Path, *, screen: Screen, source: LineSource, held: list[ExitStack]
) -> int:
    from ..workflow.assemble import flow_of, wake_of
    from ..workflow.starter import banner_line

    if getattr(args, "wait", False):
        # queue first: what to ask, and whether this is a wake-up, is decided by what the
        # flow ahead leaves behind
        lock = _claim(args, STARTER, screen, "flower go")
        if lock is None:
            return 1
        held.append(lock)
    settings = settings_of(args)
    state = wake_of(settings)
    new = bool(args.new)
    ask = args.ask
    if ask is None:
        got = ask_for_request(source, screen, waking=state["waking"] and not new)
        if got is None:
            screen.say(_(CANCELLED), err=True)
            return 1
        ask, typed_new = got
        new = new or typed_new
    ask = ask.strip()
    waking = state["waking"] and not new
    if not ask and not waking:
        screen.say(_broken_brief(state["brief"]) or _(EMPTY_REQUEST), err=True)
        return 1
    if not source.tty and args.timeout > 0:
        screen.say(_(NOT_A_TERMINAL), err=True)
    if args.isolate and not in_git_repo(ws):
        screen.say(_(ISOLATE_NEEDS_GIT).format(path=ws), err=True)
        return 1
    if args.clarify_only and waking:
        screen.say(
            _(". 需求已经确认过({brief}),--clarify-only 没有要做的;要重新确认就加 --new").format(
                brief=state["brief"]
            ),
            err=True,
        )
    if not held:
        lock = _claim(args, STARTER, screen, "flower go")  # before --new archives anything
        if lock is None:
            return 1
        held.append(lock)
    try:
        flow = flow_of(ask, settings.but(new=new))
    except ValueError as exc:
        screen.say(str(exc), err=True)
        return 1
    except OSError as exc:
        screen.say(unwritable(exc, ws), err=True)
        return 1
    runtime = _runtime(args, screen, workbench=flow.workbench, settings=settings)
    if runtime is None:
        return 1
    _say_store(screen, runtime)
    try:
        if waking:
            sid = state["steps"].get(WORK_STEP)
            context = runtime.context_of(sid) if sid else 0
            screen.say(banner_line(state, workspace=ws, context=context or None))

        return _run_workflow(flow, runtime, args, screen=screen, source=source, handover=not args.no_handover)
    finally:
        runtime.close()


def _runtime(
    args: argparse.Namespace,
    screen: Screen,
    *,
    workbench: Workbench | bool | None = None,
    settings: RunSettings | None = None,
) -> Runtime | None:
    """The command's Runtime (under `settings`, else the arguments' own); None, said why, when it
    cannot be made (no credential, a run directory or workbench that cannot be written)."""
    import sqlite3

    from ..workflow.assemble import runtime_of

    try:
        if settings is not None:
            return runtime_of(settings, workbench=workbench if workbench is not None else True)
        return build_runtime(args, workbench=workbench)
    except RuntimeError as exc:
        screen.say(str(exc), err=True)
    except (OSError, sqlite3.Error) as exc:
        screen.say(unwritable(exc, Path(args.run_dir).expanduser().resolve()), err=True)
    return None


def _notifier(args: argparse.Namespace, screen: Screen) -> Notifier:
    """The run's notices: the bell and title on a terminal, and `--notify` / $FLOWER_NOTIFY."""

    def warn(line: str) -> None:
        screen.say(line, err=True)

    return notifier_for(getattr(args, "notify", None), warn=warn, ring=screen.ring)


def _end_text(ctx: object, cost: float) -> str:
    """The one line of a run's end notice: why it stopped, or what the last verdict said."""
    from ..workflow.outcome import Outcome

    outcome = Outcome.of(ctx if isinstance(ctx, dict) else {})
    if outcome.fault:
        return outcome.fault
    if outcome.budget:
        return outcome.budget
    if outcome.aborted:
        return outcome.aborted
    if outcome.failed_at:
        return _("在步骤 {step} 失败").format(step=outcome.failed_at)
    verdict = outcome.verdict
    if verdict is not None and verdict.reason:
        return first_line(verdict.reason, 200)
    return _("累计 ${cost:.4f}").format(cost=cost)


def _say_store(screen: Screen, runtime: Runtime) -> None:
    """Which shared store the run keeps its books in, and what names this work there."""
    shared = runtime.shared
    if shared is not None:
        screen.say(_(STORE_LINE).format(where=shared.where, why=shared.identity.why), err=True)


def _run_workflow(
    flow: Flow,
    runtime: Runtime,
    args: argparse.Namespace,
    *,
    screen: Screen,
    source: LineSource,
    handover: bool = False,
) -> int:
    """Drive a workflow to its end on the terminal and say how it went; the exit code.
    `handover`: end it with the handover to the next tool (CLAUDE.md / AGENTS.md)."""

    async def work(driver: Driver) -> dict[str, object]:
        return await work_then_hand_over(
            flow,
            runtime,
            screen=screen,
            on_event=driver.on_event,
            on_step=say_failed_steps(screen, runtime),
            handover=handover,
        )

    from ..core.human import HumanChannel

    channel = getattr(flow, "channel", None)  # a Workflow's; a flow of another shape may have none
    ran = drive(
        runtime,
        work,
        screen=screen,
        source=source,
        channel=channel if isinstance(channel, HumanChannel) else None,
        verbose=args.verbose,
        notifier=_notifier(args, screen),
    )
    driver = ran[2]
    _closing(screen, runtime, driver)
    if ran[1] is not None:
        code = ran[1]
        if code == 130:
            screen.say(_(QUIT_NOTE), err=True)
        else:  # a quit is the person at the keyboard: nobody to tell
            driver.ended(False, _("运行出错了"))
        return code
    ctx = ran[0]
    rc = _outcome(screen, ctx, runtime)
    from ..workflow.outcome import Outcome

    budget = bool(Outcome.of(ctx).budget)
    driver.ended(rc == 0, _end_text(ctx, driver.cost_so_far()), budget=budget)
    return rc


async def work_then_hand_over(
    flow: Flow,
    runtime: Runtime,
    *,
    screen: Screen,
    on_event: Callable[[Event], None],
    on_step: Callable[[Step, StepResult], None] | None,
    handover: bool,
) -> dict[str, object]:
    """The work of a run: the flow, then (with `handover`) the handover to the next tool, said on
    `screen`; the flow's ctx. Every front end that runs the starter flow runs it through here."""
    ctx = await flow.run(runtime, on_event=on_event, on_step=on_step)
    # a fatal error (a refused key, billing) stops everything at once: no handover turn either
    if handover and not ctx.get("_fatal"):
        from .handover import hand_over_on_screen

        refused = await hand_over_on_screen(flow, runtime, ctx, screen=screen, on_event=on_event)
        if refused is not None:
            from ..workflow.base import FAULT_KEY

            ctx[FAULT_KEY] = refused  # the run ends on the disk's line, as a step's fault would
    if handover:
        _end_checkpoint(runtime)
    return ctx


def _end_checkpoint(runtime: Runtime) -> None:
    """The handover writes files after the last verdict: recorded as the run's, so that a rewind
    does not take CLAUDE.md / AGENTS.md for the person's own edits."""
    from ..core.checkpoints import CheckpointError, Checkpoints

    run_dir, workspace = getattr(runtime, "run_dir", None), getattr(runtime, "workspace", None)
    if run_dir is None or workspace is None:
        return
    store = Checkpoints(run_dir, workspace)
    try:
        head = store.head()
        if head is not None:
            store.take(
                round_no=head.round,
                phase="end",
                step=head.step,
                flow=head.flow,
                session=head.session,
                at=head.at,
            )
    except (OSError, CheckpointError):
        pass  # a way back, never a precondition: the round's own checkpoints stand


def _quit_once(runtime: Runtime) -> str:
    """What `once` says on quitting: how to continue the very session it had, if it had one."""
    step = runtime.results[-1] if runtime.results else getattr(runtime, "_inflight", None)
    session = getattr(step, "session_id", None)
    return _(QUIT_ONCE).format(session=session) if session else _(QUIT_ONCE_FRESH)


def in_git_repo(path: Path) -> bool:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def say_failed_steps(screen: Screen, runtime: Runtime) -> Callable[[Step, StepResult], None]:
    def on_step(step: Step, result: StepResult) -> None:
        if getattr(runtime, "fault", None) is not None:
            return  # the disk refused a write: the run ends on that one line, said once
        if getattr(result, "stopped", "") == "budget":
            return  # not a failure: the run's last line says the budget, once
        if not result.ok and result.error:
            screen.say(
                _("  x {step} 没成:{error}").format(step=result.step, error=first_line(result.error, 200))
            )

    return on_step


def _broken_brief(path: Path | None) -> str:
    """Why an existing 需求.md cannot be continued from, naming it; "" if there is none."""
    from ..core.brief import Brief

    brief = Brief.load(path) if path else None
    problem = brief.problem() if brief is not None else ""
    return _(BROKEN_BRIEF).format(path=path, problem=problem) if problem else ""


def _outcome(screen: Screen, ctx: dict[str, object], runtime: Runtime) -> int:
    from ..workflow.outcome import Outcome  # the workflow package is slow to import: only at the end

    outcome = Outcome.of(ctx)
    if outcome.ok:
        return 0
    if outcome.fault:
        # the disk refused a write: the one line says which folder, why, and what to do
        screen.say(_("x {fault}").format(fault=outcome.fault), err=True)
        return 1
    if outcome.budget:
        # not a failure of the work: the books are whole, a new budget continues from here
        screen.say(_("x {line}").format(line=outcome.budget), err=True)
        return 1
    message = _(ABORTED_AT).format(step=outcome.failed_at or "?")
    if outcome.aborted:
        message += _(":{aborted}").format(aborted=outcome.aborted)
    verdict = outcome.verdict
    if verdict is not None and not verdict.achieved and verdict.reason:
        message += _("\n  最后一轮判定:{reason}").format(reason=first_line(verdict.reason, 200))
    screen.say(message, err=True)
    fatal = nonempty(ctx.get("_fatal"))
    if fatal:
        from ..core.resilience import what_to_fix

        # stopped at once: a fatal error is the same on every retry, in every fresh session
        screen.say(
            _("! 停下了,没有再试:{fatal}\n  {fix}").format(
                fatal=first_line(fatal, 160), fix=what_to_fix(fatal)
            ),
            err=True,
        )
        return 1
    last = runtime.results[-1] if runtime.results else None
    if last is not None and looks_like_auth(last.error):
        screen.say(
            _(
                "! 看起来是凭证不对:{error}\n"
                "  跑 `flower setup` 重配,再跑一次刚才的命令 —— 同一目录会接着上次。"
            ).format(error=first_line(last.error, 120)),
            err=True,
        )
    return 1


def run_command(
    args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None
) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    ws = _ready(args, screen, verbose=False)
    if ws is None:
        return 1
    try:
        flow = load_target(args.target)
    except TargetError as exc:
        screen.say(str(exc), err=True)
        return 1
    if args.verbose:
        for line in describe_credentials():
            screen.say(line)
    lock = _claim(args, str(getattr(flow, "name", "workflow")), screen, f"flower run {args.target}")
    if lock is None:
        return 1
    try:
        runtime = _runtime(args, screen, workbench=getattr(flow, "workbench", None))
        if runtime is None:
            return 1
        try:
            return _run_workflow(flow, runtime, args, screen=screen, source=source)
        finally:
            runtime.close()
    finally:
        lock.close()


def once_command(
    args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None
) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    ws = _ready(args, screen, verbose=args.verbose)
    if ws is None:
        return 1
    spec = once_spec(args)
    runtime = _runtime(args, screen)
    if runtime is None:
        return 1
    for line in runtime.notices:  # what was found damaged in the run_dir, and what was done
        screen.say(f"  x {line}", err=True)
    try:

        async def work(driver: Driver) -> StepResult:
            return await runtime.run(spec, args.prompt, on_event=driver.on_event, **once_call(args))

        ran = drive(
            runtime,
            work,
            screen=screen,
            source=source,
            channel=None,
            verbose=args.verbose,
            quit_note=lambda: _quit_once(runtime),
            notifier=_notifier(args, screen),
        )
        driver = ran[2]
        if ran[1] is not None:
            code = ran[1]
            _closing(screen, runtime, driver)
            if code == 130:
                screen.say(_quit_once(runtime), err=True)
            else:
                driver.ended(False, _("运行出错了"))
            return code
        result = ran[0]
        elapsed = format_duration(result.duration_s)
        if result.ok:
            screen.say(
                _("  = ad-hoc:{num_turns} 轮 · ${cost_usd:.4f} · 用时 {elapsed}").format(
                    num_turns=result.num_turns, cost_usd=result.cost_usd, elapsed=elapsed
                )
            )
        else:
            screen.say(
                _("  x ad-hoc 没成:{error}(用时 {elapsed})").format(
                    error=first_line(result.error or "", 200), elapsed=elapsed
                ),
                err=True,
            )
        if result.session_id:
            screen.say(
                _('  - 会话 {session_id}(要接着聊:flower once --resume {session_id} "…")').format(
                    session_id=result.session_id
                )
            )
        _closing(screen, runtime, driver)
        budget = getattr(result, "stopped", "") == "budget"
        driver.ended(result.ok, first_line(result.error or "", 200) if not result.ok else "", budget=budget)
        return 0 if result.ok else 1
    finally:
        runtime.close()
