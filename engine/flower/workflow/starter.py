"""The starter flow the `flower` command runs: clarify -> set the goal -> work under a judge.

Also the read-only wake probe and the resume banner, so every front end (terminal, editor)
says the same thing about "where we left off".
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import NotRequired, TypedDict

from ..base.i18n import _, ngettext
from ..core.brief import Brief
from ..core.display import columns, format_tokens
from ..core.goal import Goal
from ..core.human import HumanChannel
from ..core.lineage import Lineage
from ..core.roles import coordinator, worker
from ..core.shared import SharedRun, shared_run, store_setting
from ..core.stops import Stop, last_stop
from ..core.workbench import Workbench
from .base import Ctx, Step, Workflow
from .clarify import clarify_step
from .goal import GOAL_KEY, goal_step, with_goal

CLARIFY = "确认需求"
SET_GOAL = "设定目标"
WORK = "干活"
NEED_A_REQUEST = "要给一句诉求,例如 flower '帮我做一个 X'"
DEFAULT_WORKER_PROMPT = "你负责实现。每改一处就跑一次验证,别攒到最后。"

WORK_PROMPT = (
    "按下面的需求确认书和目标把活干完。自己不动手:拆成任务,派给手下,读他们的汇报,做决定。"
    "\n\n{brief}\n\n{goal}"
)
WORK_RESUME = "接着上次没做完的活继续。先看工作台里已经落盘的东西,从断开的地方接着做,不要重头来过。"
WORK_RESUME_SAID = (
    "人又补充了一句:{said}\n\n目标清单已经按这句话重新核定过(见 目标.md),按新的清单接着做,不要重头来过。"
)


def workbench_for(workspace: str | Path, *, isolate: bool = False) -> Workbench:
    """The one place the workbench's location is decided (besides nothing else).

    Isolated workers cannot write into the shared checkout, so then it lives beside it.
    """
    ws = Path(workspace).expanduser().resolve()
    return Workbench(ws, home=ws.parent / f".flower-{ws.name}") if isolate else Workbench(ws)


class WakeState(TypedDict):
    """What wake_state() returns: a plain dict, with these keys."""

    waking: bool  # 需求.md exists with its four sections
    brief: Path
    goal: Path
    checks: int  # items in the goal's checklist, 0 without a goal
    woke: int
    steps: dict[str, str]  # step name -> session id, from the lineage
    # how the last wake stopped short of its end (stopped: budget / no progress); None otherwise
    stopped: NotRequired[Stop | None]


def wake_state(
    workspace: str | Path = ".",
    *,
    run_dir: str | Path = "runs",
    isolate: bool = False,
    brief_name: str = "需求.md",
    goal_name: str = "目标.md",
    store: str | None = None,
) -> WakeState:
    """Is this folder a continuation? Read-only: writes not one byte.

    ``store``: a shared store's URL (None: ``$FLOWER_STORE``, if set), whose copy of the lineage
    counts too: a fresh run folder on another machine then knows the run it continues.
    """
    wb = workbench_for(workspace, isolate=isolate)
    brief_path, goal_path = wb.notes / brief_name, wb.notes / goal_name
    brief = Brief.load(brief_path)
    goal = Goal.load(goal_path)
    lineage = Lineage.open(run_dir, wb.workspace, shared=_shared(store, wb.workspace, read_only=True))
    return {
        "waking": bool(brief is not None and brief.complete()),
        "brief": brief_path,
        "goal": goal_path,
        "checks": len(goal.checks) if goal is not None and not goal.damage else 0,
        "woke": lineage.woke,
        "steps": dict(lineage.steps),
        "stopped": last_stop(run_dir),
    }


def banner_line(state: WakeState, *, workspace: str | Path, context: int | None = None) -> str:
    """`<- 在 ~/proj 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒`, and under it,
    when the last wake stopped short (stopped: budget, stopped: no progress), which stop it was
    and what continuing will do."""
    parts = [_("需求已确认")]
    if state["checks"]:
        parts.append(ngettext("目标 {n} 条", "目标 {n} 条", state["checks"]).format(n=state["checks"]))
    if context:
        parts.append(_("{step}上下文 {tokens}").format(step=WORK, tokens=format_tokens(context)))
    parts.append(_("第 {n} 次唤醒").format(n=state["woke"] + 1))
    line = _("<- 在 {workspace} 接上上次  ").format(workspace=_home_relative(Path(workspace))) + " · ".join(
        parts
    )
    stop = state.get("stopped")
    return f"{line}\n{stop.banner_line()}" if stop is not None else line


def banner(
    workspace: str | Path = ".",
    *,
    run_dir: str | Path = "runs",
    isolate: bool = False,
    store: str | None = None,
) -> str | None:
    """The resume banner for this folder, or None when there is nothing to continue.

    Reads the work session's last context size from sessions.db when it is there (from a
    shared store, the caller's Runtime knows it: ``Runtime.context_of``).
    """
    state = wake_state(workspace, run_dir=run_dir, isolate=isolate, store=store)
    if not state["waking"]:
        return None
    context = None
    work = state["steps"].get(WORK)
    db = Path(run_dir) / "sessions.db"
    if work and db.is_file() and store_setting(store) is None:
        from ..core.projectkey import project_key
        from ..stores.sqlite import SqliteSessionStore

        try:
            sessions = SqliteSessionStore(db)
            try:
                context = sessions.last_context(project_key(Path(workspace)), work) or None
            finally:
                sessions.close()
        except Exception:
            context = None  # the banner is a courtesy; an unreadable store just omits the figure
    return banner_line(state, workspace=workspace, context=context)


def step_line(name: str, index: int, total: int, *, resumed: bool, woke: int, width: int = 38) -> str:
    """`== 干活 ==============================  3/3  <- 接上次 · 第 3 次唤醒`"""
    head = f"== {name} "
    fill = max(3, width - columns(head))
    line = f"{head}{'=' * fill}  {index}/{total}"
    if resumed:
        line += _("  <- 接上次 · 第 {n} 次唤醒").format(n=woke)
    return line


def starter_flow(
    ask: str,
    *,
    workspace: str | Path = ".",
    run_dir: str | Path = "runs",
    new: bool = False,
    isolate: bool = False,
    clarify_only: bool = False,
    goal: bool = True,
    rounds: int = 3,
    stall_rounds: int | None = None,
    evidence: str | None = None,
    judge_can_run: bool = False,
    max_asks: int | None = None,
    timeout_s: float | None = 1800.0,
    instructions: str = "",
    worker_prompt: str = DEFAULT_WORKER_PROMPT,
    brief_name: str = "需求.md",
    goal_name: str = "目标.md",
    log_name: str = "问答记录.md",
    store: str | None = None,
) -> Workflow:
    """Three steps: clarify the request, set the goal, work under the goal guard.

    ``store``: the shared store the run will use (None: ``$FLOWER_STORE``, if set); ``new``
    archives its copy of the lineage along with the files.
    """
    wb = workbench_for(workspace, isolate=isolate)
    ws = wb.workspace
    if isolate and not _is_git_repo(ws):
        # fail now: the Agent tool would only say "not in a git repository" after money is spent
        raise ValueError(f"isolate=True gives each worker a git worktree, but {ws} is not a git repository")
    wb.ensure()
    brief_path, goal_path = wb.notes / brief_name, wb.notes / goal_name
    if new:
        # archive, never delete: lineage, brief and goal are three faces of one piece of history
        lineage = Lineage.open(run_dir, ws, shared=_shared(store, ws))
        lineage.archive(wb.notes / "archive", extra=[brief_path, goal_path])
    frozen = Brief.load(brief_path)
    waking = bool(frozen is not None and frozen.complete())
    said = (ask or "").strip()
    if not waking and not said:
        raise ValueError(NEED_A_REQUEST)

    channel = HumanChannel(
        log_path=wb.notes / log_name, amend_path=brief_path, max_asks=max_asks, timeout_s=timeout_s
    )
    if waking and said and said not in _read(brief_path):
        channel.amend(said, label="唤醒时追加")  # 1 of 3: the brief carries it past step boundaries
    steps: list[Step] = [
        clarify_step(channel, brief_path=brief_path, prompt=said, name=CLARIFY, instructions=instructions)
    ]
    if clarify_only:
        return Workflow(steps, name="starter", channel=channel, workbench=wb)

    boss = coordinator(
        "协调者",
        "",
        {"coder": worker("写代码与测试。要动手实现的活派给它。", worker_prompt, isolate=isolate)},
        channel=channel,
    )

    def work_prompt(ctx: Ctx) -> str:
        goal_doc = ctx.get(GOAL_KEY)
        return WORK_PROMPT.format(
            brief=ctx.get(CLARIFY, ""), goal=goal_doc.prompt_block() if isinstance(goal_doc, Goal) else ""
        )

    # 3 of 3: on wake the person's words go straight to the coordinator, whose context holds the old goal
    resume_prompt = WORK_RESUME_SAID.format(said=said) if (waking and said) else WORK_RESUME
    work = Step(WORK, boss, work_prompt, resume_prompt=resume_prompt)
    if goal:
        # 2 of 3: words added on wake re-derive the checklist, or the judge reads the old one
        steps.append(
            goal_step(
                channel,
                goal_path=goal_path,
                brief_key=CLARIFY,
                name=SET_GOAL,
                always_set=waking and bool(said),
            )
        )
        work = with_goal(
            work,
            channel,
            goal_path=goal_path,
            rounds=rounds,
            can_run=judge_can_run,
            stall_rounds=stall_rounds,
            evidence=evidence,
        )
    steps.append(work)
    return Workflow(steps, name="starter", channel=channel, workbench=wb)


def _shared(store: str | None, workspace: Path, *, read_only: bool = False) -> SharedRun | None:
    """The shared books for ``store`` (None without one); a bad URL reads as no store here:
    the Runtime, built next, says what is wrong with it."""
    try:
        return shared_run(store, workspace, read_only=read_only)
    except ValueError:
        return None


def _is_git_repo(path: Path) -> bool:
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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _home_relative(path: Path) -> str:
    path = path.expanduser().resolve()
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


__all__ = ["WakeState", "banner", "banner_line", "starter_flow", "step_line", "wake_state", "workbench_for"]
